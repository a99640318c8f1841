! oxmpi-test: np=1,2,4
! Collectives from Fortran: bcast, reduce, allreduce (also MPI_IN_PLACE),
! gather, scatter, allgather, alltoall, scan, barrier.
program coll
    implicit none
    include 'mpif.h'
    integer :: ierr, rank, nprocs, errs, i, root
    integer :: ival(4), isum(4)
    integer, allocatable :: all(:), parts(:), a2a_in(:), a2a_out(:)
    double precision :: x(5), y(5)
    real :: r

    errs = 0
    call mpi_init(ierr)
    call mpi_comm_rank(MPI_COMM_WORLD, rank, ierr)
    call mpi_comm_size(MPI_COMM_WORLD, nprocs, ierr)
    allocate(all(nprocs), parts(nprocs), a2a_in(nprocs), a2a_out(nprocs))

    do root = 0, nprocs - 1
        x = 0d0
        if (rank == root) x = [(dble(i) / 3d0 + root, i = 1, 5)]
        call mpi_bcast(x, 5, MPI_DOUBLE_PRECISION, root, MPI_COMM_WORLD, ierr)
        if (any(x /= [(dble(i) / 3d0 + root, i = 1, 5)])) then
            errs = errs + 1
            print *, 'bcast from ', root, ': ', x
        end if
    end do

    ival = [rank, 2 * rank, 1, -rank]
    call mpi_reduce(ival, isum, 4, MPI_INTEGER, MPI_SUM, nprocs - 1, MPI_COMM_WORLD, ierr)
    if (rank == nprocs - 1) then
        if (any(isum /= [nprocs * (nprocs - 1) / 2, nprocs * (nprocs - 1), nprocs, -nprocs * (nprocs - 1) / 2])) then
            errs = errs + 1
            print *, 'reduce: ', isum
        end if
    end if

    y = [(dble(rank * i), i = 1, 5)]
    call mpi_allreduce(MPI_IN_PLACE, y, 5, MPI_DOUBLE_PRECISION, MPI_MAX, MPI_COMM_WORLD, ierr)
    if (any(y /= [(dble((nprocs - 1) * i), i = 1, 5)])) then
        errs = errs + 1
        print *, 'allreduce in place: ', y
    end if
    r = real(rank + 1)
    call mpi_allreduce(MPI_IN_PLACE, r, 1, MPI_REAL, MPI_PROD, MPI_COMM_WORLD, ierr)
    if (abs(r - real(product([(i, i = 1, nprocs)]))) > 0.5) then
        errs = errs + 1
        print *, 'allreduce real prod: ', r
    end if

    call mpi_gather(rank * 10, 1, MPI_INTEGER, all, 1, MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)
    if (rank == 0 .and. any(all /= [(i * 10, i = 0, nprocs - 1)])) then
        errs = errs + 1
        print *, 'gather: ', all
    end if
    parts = [(i + 100, i = 0, nprocs - 1)]
    i = -1
    call mpi_scatter(parts, 1, MPI_INTEGER, i, 1, MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)
    if (i /= rank + 100) then
        errs = errs + 1
        print *, 'scatter: ', i
    end if
    all = -1
    all(rank + 1) = rank * rank
    call mpi_allgather(MPI_IN_PLACE, 1, MPI_INTEGER, all, 1, MPI_INTEGER, MPI_COMM_WORLD, ierr)
    if (any(all /= [(i * i, i = 0, nprocs - 1)])) then
        errs = errs + 1
        print *, 'allgather in place: ', all
    end if
    a2a_in = [(rank * 1000 + i, i = 0, nprocs - 1)]
    call mpi_alltoall(a2a_in, 1, MPI_INTEGER, a2a_out, 1, MPI_INTEGER, MPI_COMM_WORLD, ierr)
    if (any(a2a_out /= [(i * 1000 + rank, i = 0, nprocs - 1)])) then
        errs = errs + 1
        print *, 'alltoall: ', a2a_out
    end if
    call mpi_scan(rank + 1, i, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
    if (i /= (rank + 1) * (rank + 2) / 2) then
        errs = errs + 1
        print *, 'scan: ', i
    end if
    call mpi_barrier(MPI_COMM_WORLD, ierr)
    if (ierr /= MPI_SUCCESS) errs = errs + 1

    call mpi_allreduce(MPI_IN_PLACE, errs, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
    if (rank == 0) then
        if (errs == 0) then
            print *, 'No Errors'
        else
            print *, ' Found ', errs, ' errors'
        end if
    end if
    call mpi_finalize(ierr)
end program coll
