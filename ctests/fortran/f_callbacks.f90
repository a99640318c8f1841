! oxmpi-test: np=1,2,4,8
! Callbacks written in Fortran: a user reduction (MPI_OP_CREATE), attribute
! copy/delete subroutines of communicator keyvals (MPI-2 with address-sized
! values and MPI-1 MPI_KEYVAL_CREATE with INTEGER values) and of datatype
! keyvals, the predefined MPI_COMM_DUP_FN / MPI_COMM_NULL_COPY_FN, and a
! communicator error handler.
subroutine maxabs(invec, inoutvec, len, dtype)
    implicit none
    integer :: len, dtype, i
    integer :: invec(len), inoutvec(len)
    do i = 1, len
        inoutvec(i) = max(abs(invec(i)), abs(inoutvec(i)))
    end do
end subroutine maxabs

subroutine copy2(oldcomm, keyval, extra, valin, valout, flag, ierr)
    implicit none
    integer :: ncopy, ndelete, nhandled, lastcode
    integer (kind=8) :: lastval, lastextra
    logical :: refusing
    common /cbstate/ lastval, lastextra, ncopy, ndelete, nhandled, lastcode, refusing
    include 'mpif.h'
    integer :: oldcomm, keyval, ierr
    integer (kind=MPI_ADDRESS_KIND) :: extra, valin, valout
    logical :: flag
    ncopy = ncopy + 1
    lastextra = extra
    valout = valin + 1
    flag = .true.
    ierr = MPI_SUCCESS
end subroutine copy2

subroutine delete2(comm, keyval, val, extra, ierr)
    implicit none
    integer :: ncopy, ndelete, nhandled, lastcode
    integer (kind=8) :: lastval, lastextra
    logical :: refusing
    common /cbstate/ lastval, lastextra, ncopy, ndelete, nhandled, lastcode, refusing
    include 'mpif.h'
    integer :: comm, keyval, ierr
    integer (kind=MPI_ADDRESS_KIND) :: val, extra
    ndelete = ndelete + 1
    lastval = val
    lastextra = extra
    ierr = MPI_SUCCESS
end subroutine delete2

subroutine copy1(oldcomm, keyval, extra, valin, valout, flag, ierr)
    implicit none
    integer :: ncopy, ndelete, nhandled, lastcode
    integer (kind=8) :: lastval, lastextra
    logical :: refusing
    common /cbstate/ lastval, lastextra, ncopy, ndelete, nhandled, lastcode, refusing
    include 'mpif.h'
    integer :: oldcomm, keyval, extra, valin, valout, ierr
    logical :: flag
    ncopy = ncopy + 1
    lastextra = extra
    valout = valin * 2
    flag = .true.
    ierr = MPI_SUCCESS
end subroutine copy1

subroutine delete1(comm, keyval, val, extra, ierr)
    implicit none
    integer :: ncopy, ndelete, nhandled, lastcode
    integer (kind=8) :: lastval, lastextra
    logical :: refusing
    common /cbstate/ lastval, lastextra, ncopy, ndelete, nhandled, lastcode, refusing
    include 'mpif.h'
    integer :: comm, keyval, val, extra, ierr
    ndelete = ndelete + 1
    lastval = val
    lastextra = extra
    ierr = MPI_SUCCESS
end subroutine delete1

! A delete callback that refuses: MPI_COMM_DELETE_ATTR must report its code.
subroutine refuse(comm, keyval, val, extra, ierr)
    implicit none
    integer :: ncopy, ndelete, nhandled, lastcode
    integer (kind=8) :: lastval, lastextra
    logical :: refusing
    common /cbstate/ lastval, lastextra, ncopy, ndelete, nhandled, lastcode, refusing
    include 'mpif.h'
    integer :: comm, keyval, ierr
    integer (kind=MPI_ADDRESS_KIND) :: val, extra
    ierr = MPI_SUCCESS
    if (refusing) ierr = MPI_ERR_OTHER
end subroutine refuse

subroutine handler(comm, code)
    implicit none
    integer :: ncopy, ndelete, nhandled, lastcode
    integer (kind=8) :: lastval, lastextra
    logical :: refusing
    common /cbstate/ lastval, lastextra, ncopy, ndelete, nhandled, lastcode, refusing
    integer :: comm, code
    nhandled = nhandled + 1
    lastcode = code
end subroutine handler

program callbacks
    implicit none
    integer :: ncopy, ndelete, nhandled, lastcode
    integer (kind=8) :: lastval, lastextra
    logical :: refusing
    common /cbstate/ lastval, lastextra, ncopy, ndelete, nhandled, lastcode, refusing
    include 'mpif.h'
    external :: maxabs, copy2, delete2, copy1, delete1, refuse, handler
    integer :: ierr, rank, nprocs, errs, op, i, dup, key2, key1, key3, keyt, keyd, eh, class, ival
    integer :: vin(3), vout(3), tdup
    integer (kind=MPI_ADDRESS_KIND) :: extra, val
    logical :: flag, commute

    errs = 0
    ncopy = 0
    ndelete = 0
    nhandled = 0
    lastcode = 0
    lastval = 0
    lastextra = 0
    refusing = .true.
    call mpi_init(ierr)
    call mpi_comm_rank(MPI_COMM_WORLD, rank, ierr)
    call mpi_comm_size(MPI_COMM_WORLD, nprocs, ierr)

    ! A user reduction: max of absolute values, with alternating signs.
    call mpi_op_create(maxabs, .true., op, ierr)
    if (ierr /= MPI_SUCCESS) errs = errs + 1
    call mpi_op_commutative(op, commute, ierr)
    if (.not. commute) errs = errs + 1
    do i = 1, 3
        vin(i) = (rank + i) * (1 - 2 * mod(rank, 2))
    end do
    call mpi_allreduce(vin, vout, 3, MPI_INTEGER, op, MPI_COMM_WORLD, ierr)
    do i = 1, 3
        if (vout(i) /= nprocs - 1 + i) then
            errs = errs + 1
            print *, 'op_create: ', i, vout(i), ' expected ', nprocs - 1 + i
        end if
    end do
    call mpi_op_free(op, ierr)
    if (op /= MPI_OP_NULL) errs = errs + 1

    ! MPI-2 keyval: the copy callback adds one; extra state is the value given.
    extra = 1234567890123_MPI_ADDRESS_KIND
    call mpi_comm_create_keyval(copy2, delete2, key2, extra, ierr)
    if (ierr /= MPI_SUCCESS) errs = errs + 1
    ! MPI-1 keyval: INTEGER values; the copy callback doubles.
    call mpi_keyval_create(copy1, delete1, key1, 77, ierr)
    if (ierr /= MPI_SUCCESS) errs = errs + 1
    ! Predefined Fortran callbacks: copied as is, and not copied.
    call mpi_comm_create_keyval(MPI_COMM_DUP_FN, MPI_COMM_NULL_DELETE_FN, key3, extra, ierr)
    call mpi_comm_create_keyval(MPI_COMM_NULL_COPY_FN, MPI_COMM_NULL_DELETE_FN, keyd, extra, ierr)

    val = 5000000000_MPI_ADDRESS_KIND + rank
    call mpi_comm_set_attr(MPI_COMM_WORLD, key2, val, ierr)
    call mpi_attr_put(MPI_COMM_WORLD, key1, 21 + rank, ierr)
    val = 99
    call mpi_comm_set_attr(MPI_COMM_WORLD, key3, val, ierr)
    call mpi_comm_set_attr(MPI_COMM_WORLD, keyd, val, ierr)
    call mpi_comm_dup(MPI_COMM_WORLD, dup, ierr)
    if (ncopy /= 2) then
        errs = errs + 1
        print *, 'copy callbacks called ', ncopy, ' times, expected 2'
    end if
    call mpi_comm_get_attr(dup, key2, val, flag, ierr)
    if (.not. flag .or. val /= 5000000001_MPI_ADDRESS_KIND + rank) then
        errs = errs + 1
        print *, 'MPI-2 copy: ', flag, val
    end if
    call mpi_attr_get(dup, key1, ival, flag, ierr)
    if (.not. flag .or. ival /= 2 * (21 + rank)) then
        errs = errs + 1
        print *, 'MPI-1 copy: ', flag, ival
    end if
    call mpi_comm_get_attr(dup, key3, val, flag, ierr)
    if (.not. flag .or. val /= 99) then
        errs = errs + 1
        print *, 'MPI_COMM_DUP_FN: ', flag, val
    end if
    call mpi_comm_get_attr(dup, keyd, val, flag, ierr)
    if (flag) then
        errs = errs + 1
        print *, 'MPI_COMM_NULL_COPY_FN copied the attribute'
    end if

    ! Deleting runs the delete callback with the value and the extra state.
    call mpi_comm_delete_attr(dup, key2, ierr)
    if (ndelete /= 1 .or. lastval /= 5000000001_MPI_ADDRESS_KIND + rank .or. lastextra /= extra) then
        errs = errs + 1
        print *, 'MPI-2 delete: ', ndelete, lastval, lastextra
    end if
    call mpi_attr_delete(dup, key1, ierr)
    if (ndelete /= 2 .or. lastval /= 2 * (21 + rank) .or. lastextra /= 77) then
        errs = errs + 1
        print *, 'MPI-1 delete: ', ndelete, lastval, lastextra
    end if
    call mpi_comm_free(dup, ierr)
    if (ndelete /= 2) errs = errs + 1
    call mpi_comm_delete_attr(MPI_COMM_WORLD, key2, ierr)
    call mpi_comm_delete_attr(MPI_COMM_WORLD, key1, ierr)
    if (ndelete /= 4) errs = errs + 1
    call mpi_comm_free_keyval(key2, ierr)
    call mpi_keyval_free(key1, ierr)
    call mpi_comm_free_keyval(key3, ierr)
    call mpi_comm_free_keyval(keyd, ierr)

    ! Datatype keyval: copied by MPI_TYPE_DUP.
    ncopy = 0
    call mpi_type_create_keyval(copy2, delete2, keyt, extra, ierr)
    val = 7
    call mpi_type_set_attr(MPI_INTEGER, keyt, val, ierr)
    call mpi_type_dup(MPI_INTEGER, tdup, ierr)
    call mpi_type_get_attr(tdup, keyt, val, flag, ierr)
    if (ncopy /= 1 .or. .not. flag .or. val /= 8) then
        errs = errs + 1
        print *, 'type keyval: ', ncopy, flag, val
    end if
    call mpi_type_free(tdup, ierr)
    call mpi_type_delete_attr(MPI_INTEGER, keyt, ierr)
    call mpi_type_free_keyval(keyt, ierr)

    ! A delete callback's error code is the routine's error.
    call mpi_comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN, ierr)
    call mpi_comm_create_keyval(MPI_COMM_NULL_COPY_FN, refuse, key2, extra, ierr)
    call mpi_comm_set_attr(MPI_COMM_WORLD, key2, val, ierr)
    call mpi_comm_delete_attr(MPI_COMM_WORLD, key2, ierr)
    call mpi_error_class(ierr, class, ival)
    if (class /= MPI_ERR_OTHER) then
        errs = errs + 1
        print *, 'refusing delete callback: class ', class
    end if
    refusing = .false.
    call mpi_comm_delete_attr(MPI_COMM_WORLD, key2, ierr)
    if (ierr /= MPI_SUCCESS) errs = errs + 1
    call mpi_comm_free_keyval(key2, ierr)

    ! A Fortran error handler sees the communicator and the error code.
    call mpi_comm_dup(MPI_COMM_WORLD, dup, ierr)
    call mpi_comm_create_errhandler(handler, eh, ierr)
    if (ierr /= MPI_SUCCESS) errs = errs + 1
    call mpi_comm_set_errhandler(dup, eh, ierr)
    call mpi_errhandler_free(eh, ierr)
    call mpi_send(rank, 1, MPI_INTEGER, nprocs, 0, dup, ierr)
    call mpi_error_class(lastcode, class, ival)
    if (nhandled /= 1 .or. class /= MPI_ERR_RANK) then
        errs = errs + 1
        print *, 'error handler: called ', nhandled, ' times, class ', class
    end if
    call mpi_comm_call_errhandler(dup, MPI_ERR_TAG, ierr)
    if (nhandled /= 2 .or. lastcode /= MPI_ERR_TAG) then
        errs = errs + 1
        print *, 'comm_call_errhandler: ', nhandled, lastcode
    end if
    call mpi_comm_free(dup, ierr)

    ! The same subroutine as the default file error handler (MPI_FILE_NULL's).
    call mpi_file_create_errhandler(handler, eh, ierr)
    if (ierr /= MPI_SUCCESS) errs = errs + 1
    call mpi_file_set_errhandler(MPI_FILE_NULL, eh, ierr)
    call mpi_errhandler_free(eh, ierr)
    call mpi_file_call_errhandler(MPI_FILE_NULL, MPI_ERR_IO, ierr)
    if (nhandled /= 3 .or. lastcode /= MPI_ERR_IO) then
        errs = errs + 1
        print *, 'file_call_errhandler: ', nhandled, lastcode
    end if
    call mpi_file_set_errhandler(MPI_FILE_NULL, MPI_ERRORS_RETURN, ierr)

    call mpi_allreduce(MPI_IN_PLACE, errs, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
    if (rank == 0) then
        if (errs == 0) then
            print *, 'No Errors'
        else
            print *, ' Found ', errs, ' errors'
        end if
    end if
    call mpi_finalize(ierr)
end program callbacks
