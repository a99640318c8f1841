! oxmpi-test: np=1,2,4
! Generalized requests started from Fortran: the query, free and cancel callbacks are
! Fortran subroutines (arguments by reference). The query fills the INTEGER status (source,
! tag, element count), the free routine runs once per request and changes the caller's
! EXTRA_STATE variable (MPICH passes its address), cancel is told whether the request is
! complete, and a query error is the error of MPI_WAIT. (The callbacks make no MPI calls but
! status ones: oxmpi runs them inside the library, where communicator calls are refused.)
subroutine query_fn(extra, status, ierr)
    use mpi
    implicit none
    integer (kind=MPI_ADDRESS_KIND) :: extra
    integer :: status(MPI_STATUS_SIZE), ierr
    integer :: nfree, ncancel, ncancel_complete, rank
    common /greqstate/ nfree, ncancel, ncancel_complete, rank
    status(MPI_SOURCE) = rank
    status(MPI_TAG) = 100 + int(extra)
    call mpi_status_set_cancelled(status, .false., ierr)
    call mpi_status_set_elements(status, MPI_INTEGER, 3, ierr)
    ierr = MPI_SUCCESS
    ! A state of 99 asks for a failing query.
    if (extra == 99) ierr = MPI_ERR_OTHER
end subroutine query_fn

subroutine free_fn(extra, ierr)
    use mpi
    implicit none
    integer (kind=MPI_ADDRESS_KIND) :: extra
    integer :: ierr
    integer :: nfree, ncancel, ncancel_complete, rank
    common /greqstate/ nfree, ncancel, ncancel_complete, rank
    nfree = nfree + 1
    extra = extra + 1000
    ierr = MPI_SUCCESS
end subroutine free_fn

subroutine cancel_fn(extra, complete, ierr)
    use mpi
    implicit none
    integer (kind=MPI_ADDRESS_KIND) :: extra
    logical :: complete
    integer :: ierr
    integer :: nfree, ncancel, ncancel_complete, rank
    common /greqstate/ nfree, ncancel, ncancel_complete, rank
    ncancel = ncancel + 1
    if (complete) ncancel_complete = ncancel_complete + 1
    ierr = MPI_SUCCESS
    if (extra == 99) ierr = MPI_ERR_OTHER
end subroutine cancel_fn

program grequest
    use mpi
    implicit none
    external :: query_fn, free_fn, cancel_fn
    integer :: nfree, ncancel, ncancel_complete, rank
    common /greqstate/ nfree, ncancel, ncancel_complete, rank
    integer :: ierr, errs, count, req, reqs(2), class, i
    integer :: status(MPI_STATUS_SIZE), statuses(MPI_STATUS_SIZE, 2)
    integer (kind=MPI_ADDRESS_KIND) :: state, states(2)
    logical :: flag

    errs = 0
    nfree = 0
    ncancel = 0
    ncancel_complete = 0
    call mpi_init(ierr)
    call mpi_comm_rank(MPI_COMM_WORLD, rank, ierr)

    ! Incomplete until MPI_GREQUEST_COMPLETE; then the query fills the status.
    state = 7
    call mpi_grequest_start(query_fn, free_fn, cancel_fn, state, req, ierr)
    if (ierr /= MPI_SUCCESS) call fail('grequest_start')
    call mpi_test(req, flag, status, ierr)
    if (flag) call fail('complete before MPI_GREQUEST_COMPLETE')
    call mpi_grequest_complete(req, ierr)
    call mpi_wait(req, status, ierr)
    if (ierr /= MPI_SUCCESS .or. req /= MPI_REQUEST_NULL) call fail('wait')
    if (status(MPI_SOURCE) /= rank) call fail('MPI_SOURCE from query_fn')
    if (status(MPI_TAG) /= 107) call fail('MPI_TAG from query_fn')
    call mpi_get_count(status, MPI_INTEGER, count, ierr)
    if (count /= 3) call fail('count from query_fn')
    call mpi_test_cancelled(status, flag, ierr)
    if (flag) call fail('cancelled from query_fn')
    if (nfree /= 1) call fail('free_fn calls after wait')
    if (state /= 1007) call fail('free_fn did not update EXTRA_STATE')

    ! MPI_CANCEL calls cancel_fn with COMPLETE false, then (once complete) true.
    state = 1
    call mpi_grequest_start(query_fn, free_fn, cancel_fn, state, req, ierr)
    call mpi_cancel(req, ierr)
    if (ncancel /= 1 .or. ncancel_complete /= 0) call fail('cancel_fn before completion')
    call mpi_grequest_complete(req, ierr)
    call mpi_cancel(req, ierr)
    if (ncancel /= 2 .or. ncancel_complete /= 1) call fail('cancel_fn after completion')
    call mpi_wait(req, MPI_STATUS_IGNORE, ierr)
    if (nfree /= 2 .or. state /= 1001) call fail('free_fn after cancel')

    ! Several at once through MPI_WAITALL, each with its own state.
    do i = 1, 2
        states(i) = i + 10
        call mpi_grequest_start(query_fn, free_fn, cancel_fn, states(i), reqs(i), ierr)
    end do
    call mpi_grequest_complete(reqs(2), ierr)
    call mpi_grequest_complete(reqs(1), ierr)
    call mpi_waitall(2, reqs, statuses, ierr)
    do i = 1, 2
        if (statuses(MPI_TAG, i) /= 110 + i) call fail('MPI_TAG from waitall')
        if (states(i) /= 1010 + i) call fail('free_fn state from waitall')
    end do
    if (nfree /= 4) call fail('free_fn calls after waitall')

    ! MPI_REQUEST_FREE of a running request: free_fn at once, nothing at completion.
    state = 2
    call mpi_grequest_start(query_fn, free_fn, cancel_fn, state, req, ierr)
    call mpi_request_free(req, ierr)
    if (nfree /= 5 .or. state /= 1002) call fail('free_fn at MPI_REQUEST_FREE')

    ! The query's error code is the error of MPI_WAIT.
    call mpi_comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN, ierr)
    state = 99
    call mpi_grequest_start(query_fn, free_fn, cancel_fn, state, req, ierr)
    call mpi_grequest_complete(req, ierr)
    call mpi_wait(req, status, ierr)
    call mpi_error_class(ierr, class, i)
    if (class /= MPI_ERR_OTHER) call fail('query_fn error through MPI_WAIT')
    if (nfree /= 6) call fail('free_fn after a failed query')

    ! Bad input: completing MPI_REQUEST_NULL.
    req = MPI_REQUEST_NULL
    call mpi_grequest_complete(req, ierr)
    call mpi_error_class(ierr, class, i)
    if (class /= MPI_ERR_REQUEST) call fail('MPI_GREQUEST_COMPLETE(MPI_REQUEST_NULL)')

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
end program grequest
