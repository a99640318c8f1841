! oxmpi-test: np=1,2,4,8
! use mpi_f08 callbacks with the standard's abstract interfaces: a user reduction
! (MPI_User_function, TYPE(C_PTR) buffers), attribute copy/delete functions and the
! predefined MPI_COMM_DUP_FN / MPI_COMM_NULL_DELETE_FN, a communicator error handler, and a
! generalized request's query/free/cancel functions.
module f08_callbacks_procs
    use mpi_f08
    use, intrinsic :: iso_c_binding
    implicit none
    integer :: deletes = 0, handled = 0, last_code = 0, frees = 0
contains
    ! inoutvec(i) = max(invec(i), inoutvec(i)) * 1, on INTEGERs: an elementwise "max".
    subroutine my_max(invec, inoutvec, len, datatype)
        type(c_ptr), value :: invec, inoutvec
        integer :: len
        type(MPI_Datatype) :: datatype
        integer, pointer :: a(:), b(:)
        if (datatype /= MPI_INTEGER) return
        call c_f_pointer(invec, a, [len])
        call c_f_pointer(inoutvec, b, [len])
        b = max(a, b)
    end subroutine my_max

    subroutine copy_double(oldcomm, comm_keyval, extra_state, attribute_val_in, attribute_val_out, flag, ierror)
        type(MPI_Comm) :: oldcomm
        integer :: comm_keyval, ierror
        integer(kind=MPI_ADDRESS_KIND) :: extra_state, attribute_val_in, attribute_val_out
        logical :: flag
        attribute_val_out = 2 * attribute_val_in + extra_state
        flag = .true.
        ierror = MPI_SUCCESS
    end subroutine copy_double

    subroutine count_delete(comm, comm_keyval, attribute_val, extra_state, ierror)
        type(MPI_Comm) :: comm
        integer :: comm_keyval, ierror
        integer(kind=MPI_ADDRESS_KIND) :: attribute_val, extra_state
        deletes = deletes + 1
        ierror = MPI_SUCCESS
    end subroutine count_delete

    subroutine on_error(comm, error_code)
        type(MPI_Comm) :: comm
        integer :: error_code
        handled = handled + 1
        last_code = error_code
    end subroutine on_error

    subroutine query(extra_state, status, ierror)
        integer(kind=MPI_ADDRESS_KIND) :: extra_state
        type(MPI_Status) :: status
        integer :: ierror
        status%MPI_SOURCE = int(extra_state)
        status%MPI_TAG = 77
        call MPI_Status_set_elements(status, MPI_INTEGER, 3)
        call MPI_Status_set_cancelled(status, .false.)
        ierror = MPI_SUCCESS
    end subroutine query

    subroutine free_it(extra_state, ierror)
        integer(kind=MPI_ADDRESS_KIND) :: extra_state
        integer :: ierror
        frees = frees + 1
        ierror = MPI_SUCCESS
    end subroutine free_it

    subroutine cancel_it(extra_state, complete, ierror)
        integer(kind=MPI_ADDRESS_KIND) :: extra_state
        logical :: complete
        integer :: ierror
        ierror = MPI_SUCCESS
    end subroutine cancel_it
end module f08_callbacks_procs

program f08_callbacks
    use mpi_f08
    use f08_callbacks_procs
    implicit none
    integer :: rank, nprocs, errs, i, key, key2, n
    integer :: v(4), r(4)
    type(MPI_Op) :: op
    type(MPI_Comm) :: dup, dup2
    type(MPI_Errhandler) :: eh
    type(MPI_Request) :: req
    type(MPI_Status) :: st
    integer(kind=MPI_ADDRESS_KIND) :: val, extra
    logical :: flag

    errs = 0
    call MPI_Init()
    call MPI_Comm_rank(MPI_COMM_WORLD, rank)
    call MPI_Comm_size(MPI_COMM_WORLD, nprocs)

    ! A user reduction.
    call MPI_Op_create(my_max, .true., op)
    v = [(rank * i, i = 1, 4)]
    call MPI_Allreduce(v, r, 4, MPI_INTEGER, op, MPI_COMM_WORLD)
    if (any(r /= [((nprocs - 1) * i, i = 1, 4)])) call fail('user op')
    call MPI_Op_free(op)
    if (op /= MPI_OP_NULL) call fail('op_free')

    ! Attribute callbacks: copied on dup (doubled, plus the extra state), deleted on free.
    extra = 5
    call MPI_Comm_create_keyval(copy_double, count_delete, key, extra)
    call MPI_Comm_create_keyval(MPI_COMM_DUP_FN, MPI_COMM_NULL_DELETE_FN, key2, extra)
    call MPI_Comm_dup(MPI_COMM_WORLD, dup)
    val = 10 + rank
    call MPI_Comm_set_attr(dup, key, val)
    val = 2_MPI_ADDRESS_KIND**40
    call MPI_Comm_set_attr(dup, key2, val)
    call MPI_Comm_dup(dup, dup2)
    call MPI_Comm_get_attr(dup2, key, val, flag)
    if (.not. flag .or. val /= 2 * (10 + rank) + 5) call fail('copy callback')
    call MPI_Comm_get_attr(dup2, key2, val, flag)
    if (.not. flag .or. val /= 2_MPI_ADDRESS_KIND**40) call fail('MPI_COMM_DUP_FN')
    call MPI_Comm_free(dup2)
    if (deletes /= 1) call fail('delete callback on free')
    call MPI_Comm_delete_attr(dup, key)
    if (deletes /= 2) call fail('delete callback on delete_attr')
    call MPI_Comm_free_keyval(key)
    call MPI_Comm_free_keyval(key2)

    ! A communicator error handler.
    call MPI_Comm_create_errhandler(on_error, eh)
    call MPI_Comm_set_errhandler(dup, eh)
    call MPI_Comm_call_errhandler(dup, MPI_ERR_OTHER)
    if (handled /= 1 .or. last_code /= MPI_ERR_OTHER) call fail('error handler')
    call MPI_Errhandler_free(eh)
    call MPI_Comm_free(dup)

    ! A generalized request.
    extra = rank + 100
    call MPI_Grequest_start(query, free_it, cancel_it, extra, req)
    call MPI_Grequest_complete(req)
    call MPI_Wait(req, st)
    call MPI_Get_count(st, MPI_INTEGER, n)
    if (st%MPI_SOURCE /= rank + 100 .or. st%MPI_TAG /= 77 .or. n /= 3) call fail('generalized request status')
    if (frees /= 1 .or. req /= MPI_REQUEST_NULL) call fail('generalized request free')

    call MPI_Allreduce(MPI_IN_PLACE, errs, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD)
    if (rank == 0 .and. errs == 0) print '(a)', ' No Errors'
    call MPI_Finalize()
contains
    subroutine fail(what)
        character(len=*), intent(in) :: what
        errs = errs + 1
        print '(a, i0, 2a)', 'rank ', rank, ': Found error: ', what
    end subroutine fail
end program f08_callbacks
