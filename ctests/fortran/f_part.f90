! oxmpi-test: np=1,2,3
! Partitioned communication from Fortran around a ring: MPI_PSEND_INIT / MPI_PRECV_INIT
! (the count an INTEGER(KIND=MPI_COUNT_KIND)), MPI_START, MPI_PREADY, MPI_PREADY_RANGE,
! MPI_PREADY_LIST, MPI_PARRIVED (a LOGICAL flag), MPI_WAIT and MPI_REQUEST_FREE, over
! several cycles, with 4 partitions sent and 2 received.
program part
    use mpi
    implicit none
    integer, parameter :: n = 40
    integer :: ierr, rank, size, left, right, errs, sreq, rreq, it, i, list(2)
    ! The library reads and writes the buffers between calls that do not name them: VOLATILE
    ! keeps the compiler from caching their elements across those calls.
    integer, volatile :: sbuf(n), rbuf(n)
    integer (kind=MPI_COUNT_KIND) :: scount, rcount
    logical :: flag

    errs = 0
    call mpi_init(ierr)
    call mpi_comm_rank(MPI_COMM_WORLD, rank, ierr)
    call mpi_comm_size(MPI_COMM_WORLD, size, ierr)
    right = mod(rank + 1, size)
    left = mod(rank + size - 1, size)
    scount = n / 4
    rcount = n / 2
    call mpi_psend_init(sbuf, 4, scount, MPI_INTEGER, right, 3, MPI_COMM_WORLD, MPI_INFO_NULL, sreq, ierr)
    if (ierr /= MPI_SUCCESS) errs = errs + 1
    call mpi_precv_init(rbuf, 2, rcount, MPI_INTEGER, left, 3, MPI_COMM_WORLD, MPI_INFO_NULL, rreq, ierr)
    if (ierr /= MPI_SUCCESS) errs = errs + 1
    do it = 1, 3
        do i = 1, n
            sbuf(i) = rank * 1000 + it * 100 + i
            rbuf(i) = -1
        end do
        call mpi_start(rreq, ierr)
        call mpi_start(sreq, ierr)
        call mpi_pready(0, sreq, ierr)
        if (ierr /= MPI_SUCCESS) errs = errs + 1
        list(1) = 3
        list(2) = 1
        call mpi_pready_list(2, list, sreq, ierr)
        call mpi_pready_range(2, 2, sreq, ierr)
        if (ierr /= MPI_SUCCESS) errs = errs + 1
        flag = .false.
        do while (.not. flag)
            call mpi_parrived(rreq, 1, flag, ierr)
        end do
        call mpi_wait(sreq, MPI_STATUS_IGNORE, ierr)
        call mpi_wait(rreq, MPI_STATUS_IGNORE, ierr)
        do i = 1, n
            if (rbuf(i) /= left * 1000 + it * 100 + i) then
                errs = errs + 1
                print *, 'cycle ', it, ' element ', i, ' is ', rbuf(i)
                exit
            end if
        end do
    end do
    call mpi_request_free(sreq, ierr)
    call mpi_request_free(rreq, ierr)
    if (sreq /= MPI_REQUEST_NULL) errs = errs + 1

    call mpi_allreduce(MPI_IN_PLACE, errs, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
    if (rank == 0) then
        if (errs == 0) then
            print *, 'No Errors'
        else
            print *, ' Found ', errs, ' errors'
        end if
    end if
    call mpi_finalize(ierr)
end program part
