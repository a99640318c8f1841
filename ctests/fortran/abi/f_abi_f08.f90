! ABI test: built with Debian's MPICH (mpif90.mpich, `use mpi_f08` with MPICH's module files,
! linked with libmpichfort.so.12), run on oxmpi by swapping the library: the program calls
! MPICH's f08 procedure names (mpi_send_f08ts_, mpi_comm_rank_f08_, ...), the handle
! comparison functions of MPICH's mpi_f08_types module, and passes MPICH's sentinel objects
! (MPIR_F08_MPI_STATUS_IGNORE_OBJ, MPIR_F08_MPI_IN_PLACE). With the argument "expect-oxmpi" it
! fails if the library that answers is MPICH itself.
program fabi_f08
    use mpi_f08
    implicit none
    integer :: rank, nprocs, errs, len, left, right, i, n, ierr
    integer :: a(12), b(12)
    type(MPI_Status) :: st
    type(MPI_Request) :: reqs(2)
    type(MPI_Comm) :: dup
    integer(kind=MPI_COUNT_KIND) :: big
    logical :: flag
    character(len=MPI_MAX_LIBRARY_VERSION_STRING) :: lib
    character(len=20) :: arg

    errs = 0
    call MPI_Init()
    call MPI_Comm_rank(MPI_COMM_WORLD, rank)
    call MPI_Comm_size(MPI_COMM_WORLD, nprocs)
    call MPI_Get_library_version(lib, len)
    arg = ' '
    if (command_argument_count() >= 1) call get_command_argument(1, arg)
    if (arg == 'expect-oxmpi' .and. lib(1:5) == 'MPICH') call fail('the MPICH library answered, not oxmpi')
    right = mod(rank + 1, nprocs)
    left = mod(rank + nprocs - 1, nprocs)

    ! A strided section each way, with a status.
    a = [(100 * rank + i, i = 1, 12)]
    b = -1
    call MPI_Sendrecv(a(1:12:2), 6, MPI_INTEGER, right, 4, b(12:1:-2), 6, MPI_INTEGER, left, 4, &
                      MPI_COMM_WORLD, st, ierr)
    if (ierr /= MPI_SUCCESS) call fail('sendrecv ierror')
    do i = 1, 6
        if (b(14 - 2 * i) /= 100 * left + 2 * i - 1) call fail('sendrecv section data')
    end do
    if (count(b /= -1) /= 6) call fail('sendrecv wrote outside the section')
    if (st%MPI_SOURCE /= left .or. st%MPI_TAG /= 4) call fail('status fields')
    call MPI_Get_count(st, MPI_INTEGER, n)
    if (n /= 6) call fail('get_count')

    ! Nonblocking with the large-count overload and MPI_STATUSES_IGNORE / MPI_STATUS_IGNORE.
    big = 3
    b = -1
    call MPI_Irecv(b, big, MPI_INTEGER, left, 5, MPI_COMM_WORLD, reqs(1))
    call MPI_Isend(a(4:6), big, MPI_INTEGER, right, 5, MPI_COMM_WORLD, reqs(2))
    call MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE)
    if (any(b(1:3) /= [(100 * left + i, i = 4, 6)]) .or. any(b(4:) /= -1)) call fail('isend/irecv data')
    call MPI_Test(reqs(1), flag, MPI_STATUS_IGNORE)
    if (.not. flag) call fail('test of a null request')

    ! Handles and MPI_IN_PLACE.
    call MPI_Comm_dup(MPI_COMM_WORLD, dup)
    if (dup == MPI_COMM_WORLD .or. dup == MPI_COMM_NULL) call fail('dup handle comparison')
    n = rank + 1
    call MPI_Allreduce(MPI_IN_PLACE, n, 1, MPI_INTEGER, MPI_SUM, dup)
    if (n /= nprocs * (nprocs + 1) / 2) call fail('allreduce in place')
    call MPI_Comm_free(dup)
    if (dup /= MPI_COMM_NULL) call fail('comm_free')

    call MPI_Allreduce(MPI_IN_PLACE, errs, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD)
    if (rank == 0) then
        if (errs == 0) then
            print '(a)', ' No Errors'
        else
            print '(a,i0,a)', ' Found ', errs, ' errors'
        end if
    end if
    call MPI_Finalize()

contains

    subroutine fail(what)
        character(len=*) :: what
        errs = errs + 1
        print '(a,i0,2a)', 'rank ', rank, ': wrong: ', what
    end subroutine fail
end program fabi_f08
