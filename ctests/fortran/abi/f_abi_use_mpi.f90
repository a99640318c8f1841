! ABI test: built with Debian's MPICH (mpif90.mpich, `use mpi` with MPICH's module files,
! linked with libmpichfort.so.12), run on oxmpi by swapping the library. It calls the module
! procedures that live in libmpichfort (MPI_SIZEOF) and Fortran callbacks. With the argument
! "expect-oxmpi" it fails if the library that answers is MPICH itself.
subroutine query_fn(extra, status, ierr)
    use mpi
    implicit none
    integer (kind=MPI_ADDRESS_KIND) :: extra
    integer :: status(MPI_STATUS_SIZE), ierr
    status(MPI_SOURCE) = 5
    status(MPI_TAG) = int(extra)
    call mpi_status_set_elements(status, MPI_INTEGER, 2, ierr)
    call mpi_status_set_cancelled(status, .false., ierr)
    ierr = MPI_SUCCESS
end subroutine query_fn

subroutine free_fn(extra, ierr)
    use mpi
    implicit none
    integer (kind=MPI_ADDRESS_KIND) :: extra
    integer :: ierr
    extra = -extra
    ierr = MPI_SUCCESS
end subroutine free_fn

subroutine cancel_fn(extra, complete, ierr)
    use mpi
    implicit none
    integer (kind=MPI_ADDRESS_KIND) :: extra
    logical :: complete
    integer :: ierr
    ierr = MPI_SUCCESS
    if (complete .and. extra < 0) ierr = MPI_ERR_OTHER
end subroutine cancel_fn

program fabi_use_mpi
    use mpi
    implicit none
    external :: query_fn, free_fn, cancel_fn
    integer :: ierr, rank, nprocs, errs, len, size, count, req, key, left, right, y
    integer :: status(MPI_STATUS_SIZE)
    integer (kind=MPI_ADDRESS_KIND) :: state, val, extra
    integer (kind=8) :: i8
    integer (kind=2) :: i2
    double precision :: d
    real :: r(3)
    logical :: flag
    character (len=MPI_MAX_LIBRARY_VERSION_STRING) :: lib
    character (len=20) :: arg

    errs = 0
    call mpi_init(ierr)
    call mpi_comm_rank(MPI_COMM_WORLD, rank, ierr)
    call mpi_comm_size(MPI_COMM_WORLD, nprocs, ierr)
    call mpi_get_library_version(lib, len, ierr)
    arg = ' '
    if (command_argument_count() >= 1) call get_command_argument(1, arg)
    if (arg == 'expect-oxmpi' .and. lib(1:5) == 'MPICH') then
        errs = errs + 1
        print *, 'the MPICH library answered, not oxmpi: ', lib(1:60)
    end if

    ! MPI_SIZEOF: module procedures of MPICH's MPI_SIZEOFS, in libmpichfort.
    i8 = 0
    i2 = 0
    d = 0
    r = 0
    call mpi_sizeof(i8, size, ierr)
    if (size /= 8 .or. ierr /= MPI_SUCCESS) call fail('MPI_SIZEOF(INTEGER*8)')
    call mpi_sizeof(i2, size, ierr)
    if (size /= 2) call fail('MPI_SIZEOF(INTEGER*2)')
    call mpi_sizeof(d, size, ierr)
    if (size /= 8) call fail('MPI_SIZEOF(DOUBLE PRECISION)')
    call mpi_sizeof(r, size, ierr)
    if (size /= 4) call fail('MPI_SIZEOF(REAL array)')

    ! Point-to-point through the module's interfaces.
    right = mod(rank + 1, nprocs)
    left = mod(rank + nprocs - 1, nprocs)
    call mpi_sendrecv(rank, 1, MPI_INTEGER, right, 3, y, 1, MPI_INTEGER, left, 3, MPI_COMM_WORLD, status, ierr)
    if (y /= left .or. status(MPI_SOURCE) /= left .or. status(MPI_TAG) /= 3) call fail('sendrecv')

    ! Attributes: an address-sized value, and MPI_TAG_UB by value.
    extra = 0
    call mpi_comm_create_keyval(MPI_COMM_NULL_COPY_FN, MPI_COMM_NULL_DELETE_FN, key, extra, ierr)
    val = 2_MPI_ADDRESS_KIND ** 40 + 1
    call mpi_comm_set_attr(MPI_COMM_WORLD, key, val, ierr)
    val = 0
    call mpi_comm_get_attr(MPI_COMM_WORLD, key, val, flag, ierr)
    if (.not. flag .or. val /= 2_MPI_ADDRESS_KIND ** 40 + 1) call fail('attribute value')
    call mpi_comm_free_keyval(key, ierr)
    call mpi_comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, val, flag, ierr)
    if (.not. flag .or. val < 32767) call fail('MPI_TAG_UB')

    ! A generalized request with Fortran callbacks.
    state = 21
    call mpi_grequest_start(query_fn, free_fn, cancel_fn, state, req, ierr)
    call mpi_grequest_complete(req, ierr)
    call mpi_wait(req, status, ierr)
    call mpi_get_count(status, MPI_INTEGER, count, ierr)
    if (status(MPI_SOURCE) /= 5 .or. status(MPI_TAG) /= 21 .or. count /= 2) call fail('generalized request status')
    if (state /= -21) call fail('generalized request free_fn')

    call mpi_allreduce(MPI_IN_PLACE, errs, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
    if (rank == 0) then
        if (errs == 0) then
            print '(a)', ' No Errors'
        else
            print '(a,i0,a)', ' Found ', errs, ' errors'
        end if
    end if
    call mpi_finalize(ierr)

contains

    subroutine fail(what)
        character (len=*) :: what
        errs = errs + 1
        print '(a,i0,2a)', 'rank ', rank, ': wrong: ', what
    end subroutine fail
end program fabi_use_mpi
