! oxmpi-test: np=1,2
! `use mpi`, and the sentinels seen from C: the C functions MPI_Status_f2c
! and MPI_Status_c2f know the program's MPI_STATUS_IGNORE common-block
! object by its address.
program use_mpi
    use mpi
    use, intrinsic :: iso_c_binding, only: c_int
    implicit none
    interface
        integer(c_int) function status_f2c(f_status, c_status) bind(c, name='MPI_Status_f2c')
            import :: c_int
            integer(c_int) :: f_status(*), c_status(5)
        end function
        integer(c_int) function status_c2f(c_status, f_status) bind(c, name='MPI_Status_c2f')
            import :: c_int
            integer(c_int) :: c_status(5), f_status(*)
        end function
    end interface
    integer :: ierr, rank, nprocs, errs, provided, x
    integer :: status(MPI_STATUS_SIZE), cstatus(5)
    integer (kind=MPI_ADDRESS_KIND) :: tag_ub
    logical :: flag

    errs = 0
    call mpi_init_thread(MPI_THREAD_FUNNELED, provided, ierr)
    if (provided < MPI_THREAD_SINGLE .or. provided > MPI_THREAD_MULTIPLE) errs = errs + 1
    call mpi_comm_rank(MPI_COMM_WORLD, rank, ierr)
    call mpi_comm_size(MPI_COMM_WORLD, nprocs, ierr)
    if (rank == 0) print '(a, z16)', ' MPI_STATUS_IGNORE at ', loc(MPI_STATUS_IGNORE)
    call mpi_comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN, ierr)
    status = [1, 2, 3, 4, 5]
    cstatus = 0
    ! (The calls come first: Fortran may evaluate an expression's operands in any order.)
    x = status_f2c(status, cstatus)
    if (x /= MPI_SUCCESS .or. any(cstatus /= status)) then
        errs = errs + 1
        print *, 'MPI_Status_f2c: ', cstatus
    end if
    status = 0
    x = status_c2f(cstatus, status)
    if (x /= MPI_SUCCESS .or. any(cstatus /= status)) errs = errs + 1
    if (status_f2c(MPI_STATUS_IGNORE, cstatus) == MPI_SUCCESS) then
        errs = errs + 1
        print *, 'MPI_Status_f2c did not recognise MPI_STATUS_IGNORE'
    end if
    call mpi_comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL, ierr)
    call mpi_comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, tag_ub, flag, ierr)
    if (.not. flag .or. tag_ub < 32767) errs = errs + 1
    x = 1
    call mpi_allreduce(MPI_IN_PLACE, x, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
    if (x /= nprocs) errs = errs + 1
    call mpi_sendrecv(rank, 1, MPI_INTEGER, rank, 1, x, 1, MPI_INTEGER, rank, 1, &
        MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
    if (x /= rank .or. any(MPI_STATUS_IGNORE /= 0)) errs = errs + 1

    call mpi_allreduce(MPI_IN_PLACE, errs, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
    if (rank == 0) then
        if (errs == 0) then
            print *, 'No Errors'
        else
            print *, ' Found ', errs, ' errors'
        end if
    end if
    call mpi_finalize(ierr)
end program use_mpi
