! oxmpi-test: np=1,2,4
! Point-to-point from Fortran (mpif.h, free form): blocking and nonblocking
! transfers, status arrays, 1-based indices of waitany/waitsome, probe,
! sendrecv_replace, MPI_STATUS_IGNORE.
program pt2pt
    implicit none
    include 'mpif.h'
    integer :: ierr, rank, nprocs, left, right, errs, i, count, idx, outcount
    integer :: status(MPI_STATUS_SIZE), statuses(MPI_STATUS_SIZE, 4)
    integer :: reqs(4), indices(4)
    integer :: sbuf(10), rbuf(10), a, b
    double precision :: d(3), e(3)
    logical :: flag

    errs = 0
    call mpi_init(ierr)
    call mpi_comm_rank(MPI_COMM_WORLD, rank, ierr)
    call mpi_comm_size(MPI_COMM_WORLD, nprocs, ierr)
    right = mod(rank + 1, nprocs)
    left = mod(rank + nprocs - 1, nprocs)

    ! Ring: isend to the right, receive from the left.
    sbuf = [(rank * 100 + i, i = 1, 10)]
    rbuf = -1
    call mpi_isend(sbuf, 10, MPI_INTEGER, right, 5, MPI_COMM_WORLD, reqs(1), ierr)
    call mpi_recv(rbuf, 10, MPI_INTEGER, left, 5, MPI_COMM_WORLD, status, ierr)
    call mpi_wait(reqs(1), MPI_STATUS_IGNORE, ierr)
    if (ierr /= MPI_SUCCESS) errs = errs + 1
    if (any(rbuf /= [(left * 100 + i, i = 1, 10)])) then
        errs = errs + 1
        print *, 'ring: wrong data ', rbuf
    end if
    if (status(MPI_SOURCE) /= left .or. status(MPI_TAG) /= 5) then
        errs = errs + 1
        print *, 'ring: status source/tag ', status(MPI_SOURCE), status(MPI_TAG)
    end if
    call mpi_get_count(status, MPI_INTEGER, count, ierr)
    if (count /= 10) then
        errs = errs + 1
        print *, 'get_count: ', count
    end if

    ! Nonblocking both ways with a status array.
    d = [1d0, 2d0, 3d0] * (rank + 1)
    call mpi_irecv(e, 3, MPI_DOUBLE_PRECISION, left, 11, MPI_COMM_WORLD, reqs(1), ierr)
    call mpi_irecv(a, 1, MPI_INTEGER, right, 12, MPI_COMM_WORLD, reqs(2), ierr)
    call mpi_isend(d, 3, MPI_DOUBLE_PRECISION, right, 11, MPI_COMM_WORLD, reqs(3), ierr)
    call mpi_isend(rank, 1, MPI_INTEGER, left, 12, MPI_COMM_WORLD, reqs(4), ierr)
    call mpi_waitall(4, reqs, statuses, ierr)
    if (ierr /= MPI_SUCCESS) errs = errs + 1
    if (any(e /= [1d0, 2d0, 3d0] * (left + 1)) .or. a /= right) then
        errs = errs + 1
        print *, 'waitall: wrong data ', e, a
    end if
    if (statuses(MPI_SOURCE, 1) /= left .or. statuses(MPI_TAG, 1) /= 11 .or. &
        statuses(MPI_SOURCE, 2) /= right .or. statuses(MPI_TAG, 2) /= 12) then
        errs = errs + 1
        print *, 'waitall: statuses ', statuses(:, 1:2)
    end if
    do i = 1, 4
        if (reqs(i) /= MPI_REQUEST_NULL) errs = errs + 1
    end do

    ! Waitany reports a Fortran (1-based) index.
    call mpi_irecv(a, 1, MPI_INTEGER, rank, 21, MPI_COMM_WORLD, reqs(1), ierr)
    call mpi_irecv(b, 1, MPI_INTEGER, rank, 22, MPI_COMM_WORLD, reqs(2), ierr)
    call mpi_send(77, 1, MPI_INTEGER, rank, 22, MPI_COMM_WORLD, ierr)
    call mpi_waitany(2, reqs, idx, status, ierr)
    if (idx /= 2 .or. b /= 77 .or. status(MPI_TAG) /= 22) then
        errs = errs + 1
        print *, 'waitany: index ', idx, ' value ', b
    end if
    call mpi_send(66, 1, MPI_INTEGER, rank, 21, MPI_COMM_WORLD, ierr)
    call mpi_waitsome(2, reqs, outcount, indices, statuses, ierr)
    if (outcount /= 1 .or. indices(1) /= 1 .or. a /= 66) then
        errs = errs + 1
        print *, 'waitsome: ', outcount, indices(1), a
    end if
    call mpi_waitany(2, reqs, idx, status, ierr)
    if (idx /= MPI_UNDEFINED) then
        errs = errs + 1
        print *, 'waitany on null requests: index ', idx
    end if

    ! Probe with a LOGICAL flag, then receive.
    call mpi_isend(sbuf, 4, MPI_INTEGER, rank, 31, MPI_COMM_WORLD, reqs(1), ierr)
    flag = .false.
    do while (.not. flag)
        call mpi_iprobe(MPI_ANY_SOURCE, 31, MPI_COMM_WORLD, flag, status, ierr)
    end do
    call mpi_get_count(status, MPI_INTEGER, count, ierr)
    if (count /= 4 .or. status(MPI_SOURCE) /= rank) then
        errs = errs + 1
        print *, 'iprobe: count ', count
    end if
    ! Receive exactly the probed message (other ranks may already send tag 41).
    call mpi_recv(rbuf, 4, MPI_INTEGER, status(MPI_SOURCE), status(MPI_TAG), MPI_COMM_WORLD, status, ierr)
    call mpi_wait(reqs(1), status, ierr)
    call mpi_test(reqs(1), flag, status, ierr)
    if (.not. flag) errs = errs + 1

    ! Sendrecv_replace around the ring.
    a = rank
    call mpi_sendrecv_replace(a, 1, MPI_INTEGER, right, 41, left, 41, MPI_COMM_WORLD, status, ierr)
    if (a /= left) then
        errs = errs + 1
        print *, 'sendrecv_replace: ', a
    end if

    ! Sending to MPI_PROC_NULL completes at once.
    call mpi_send(sbuf, 1, MPI_INTEGER, MPI_PROC_NULL, 0, MPI_COMM_WORLD, ierr)
    call mpi_recv(rbuf, 1, MPI_INTEGER, MPI_PROC_NULL, 0, MPI_COMM_WORLD, status, ierr)
    if (status(MPI_SOURCE) /= MPI_PROC_NULL) errs = errs + 1

    call mpi_allreduce(MPI_IN_PLACE, errs, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
    if (rank == 0) then
        if (errs == 0) then
            print *, 'No Errors'
        else
            print *, ' Found ', errs, ' errors'
        end if
    end if
    call mpi_finalize(ierr)
end program pt2pt
