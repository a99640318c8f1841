! oxmpi-test: np=1,2,4,8
! use mpi_f08: non-contiguous array sections sent and received where they lie (blocking,
! nonblocking, collective, 2-D, a count shorter than the section), MPI_IN_PLACE, the
! large-count overloads, TYPE(MPI_Status) fields, MPI_Status_f082f, MPI_Sizeof and
! MPI_STATUS(ES)_IGNORE, optional
! ierror, handle comparison, strings, LOGICAL and attribute arguments, and the error a
! section gets where only a contiguous buffer is allowed.
program f08_sections
    use mpi_f08
    implicit none
    integer :: rank, nprocs, left, right, errs, i, j, n, ierr, cls
    integer :: a(30), b(30), c(4, 6), m(4, 6), g(8)
    integer, allocatable :: all(:)
    double precision :: d(10)
    type(MPI_Status) :: st, sts(2)
    type(MPI_Request) :: reqs(2)
    type(MPI_Comm) :: dup
    integer(kind=MPI_COUNT_KIND) :: big
    integer(kind=MPI_ADDRESS_KIND) :: tag_ub
    logical :: flag
    character(len=MPI_MAX_OBJECT_NAME) :: name
    integer :: namelen, fst(MPI_STATUS_SIZE)

    errs = 0
    call MPI_Init()
    call MPI_Comm_rank(MPI_COMM_WORLD, rank)
    call MPI_Comm_size(MPI_COMM_WORLD, nprocs, ierr)
    if (ierr /= MPI_SUCCESS) call fail('comm_size ierror')
    right = mod(rank + 1, nprocs)
    left = mod(rank + nprocs - 1, nprocs)
    if (.not. MPI_SUBARRAYS_SUPPORTED) call fail('MPI_SUBARRAYS_SUPPORTED is false')

    ! Blocking: every third element to the right, into every second element from the left.
    a = [(rank * 1000 + i, i = 1, 30)]
    b = -1
    call MPI_Sendrecv(a(1:30:3), 10, MPI_INTEGER, right, 7, b(2:21:2), 10, MPI_INTEGER, left, 7, &
                      MPI_COMM_WORLD, st)
    do i = 1, 10
        if (b(2 * i) /= left * 1000 + 3 * i - 2) call fail('sendrecv section data')
        if (b(2 * i - 1) /= -1) call fail('sendrecv wrote between the section elements')
    end do
    if (b(22) /= -1) call fail('sendrecv wrote past the section')
    if (st%MPI_SOURCE /= left .or. st%MPI_TAG /= 7) call fail('status fields')
    call MPI_Get_count(st, MPI_INTEGER, n)
    if (n /= 10) call fail('get_count')
    call MPI_Get_count(st, MPI_INTEGER, big)
    if (big /= 10_MPI_COUNT_KIND) call fail('get_count (large)')
    call MPI_Status_f082f(st, fst)
    if (fst(MPI_SOURCE) /= left .or. fst(MPI_TAG) /= 7) call fail('MPI_Status_f082f')
    call MPI_Sizeof(d, n, ierr)
    if (n /= 8 .or. ierr /= MPI_SUCCESS) call fail('MPI_Sizeof')

    ! Nonblocking: sections stay where they are until the wait (the derived type made for
    ! them is freed as soon as the operation starts).
    b = -1
    call MPI_Irecv(b(30:1:-3), 10, MPI_INTEGER, left, 8, MPI_COMM_WORLD, reqs(1))
    call MPI_Isend(a(2:30:3), 10, MPI_INTEGER, right, 8, MPI_COMM_WORLD, reqs(2))
    call MPI_Waitall(2, reqs, sts)
    if (reqs(1) /= MPI_REQUEST_NULL .or. reqs(2) /= MPI_REQUEST_NULL) call fail('waitall requests')
    if (sts(1)%MPI_SOURCE /= left .or. sts(1)%MPI_TAG /= 8) call fail('waitall statuses')
    do i = 1, 10
        if (b(30 - 3 * (i - 1)) /= left * 1000 + 3 * i - 1) call fail('isend/irecv section data')
    end do
    if (count(b /= -1) /= 10) call fail('irecv wrote outside the section')

    ! Large-count overloads with a section, MPI_STATUSES_IGNORE.
    b = -1
    big = 5
    call MPI_Irecv(b(1:10:2), big, MPI_INTEGER, left, 9, MPI_COMM_WORLD, reqs(1))
    call MPI_Isend(a(1:5), big, MPI_INTEGER, right, 9, MPI_COMM_WORLD, reqs(2), ierr)
    if (ierr /= MPI_SUCCESS) call fail('isend (large) ierror')
    call MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE)
    do i = 1, 5
        if (b(2 * i - 1) /= left * 1000 + i .or. b(2 * i) /= -1) call fail('large-count section data')
    end do

    ! A count shorter than the section: only the first elements move.
    b = -1
    call MPI_Sendrecv(a(1:30:2), 4, MPI_INTEGER, right, 10, b(1:30:2), 4, MPI_INTEGER, left, 10, &
                      MPI_COMM_WORLD, MPI_STATUS_IGNORE)
    do i = 1, 4
        if (b(2 * i - 1) /= left * 1000 + 2 * i - 1) call fail('short count data')
    end do
    if (count(b /= -1) /= 4) call fail('short count wrote too much')

    ! 2-D section: rows 2-3 of every other column, broadcast from the last rank.
    c = -1
    if (rank == nprocs - 1) c = reshape([(i, i = 1, 24)], [4, 6])
    call MPI_Bcast(c(2:3, 1:6:2), 6, MPI_INTEGER, nprocs - 1, MPI_COMM_WORLD)
    m = -1
    m(2:3, 1:6:2) = reshape([2, 3, 10, 11, 18, 19], [2, 3])
    if (rank == nprocs - 1) m = reshape([(i, i = 1, 24)], [4, 6])
    if (any(c /= m)) call fail('2-D section bcast')

    ! Reductions: MPI_IN_PLACE and a contiguous buffer.
    d = rank + 1
    call MPI_Allreduce(MPI_IN_PLACE, d, 10, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD)
    if (any(d /= dble(nprocs * (nprocs + 1) / 2))) call fail('allreduce in place')

    ! Gathers take contiguous buffers only: a section is an error, not wrong data.
    call MPI_Comm_dup(MPI_COMM_WORLD, dup)
    if (dup == MPI_COMM_WORLD .or. dup == MPI_COMM_NULL) call fail('dup handle comparison')
    if (.not. (dup /= MPI_COMM_NULL)) call fail('/= of handles')
    call MPI_Comm_set_errhandler(dup, MPI_ERRORS_RETURN)
    ! (oxmpi reports MPI_ERR_BUFFER; an MPI that describes this section too must deliver it.)
    allocate(all(2 * nprocs))
    g = [(10 * rank + i, i = 1, 8)]
    all = -1
    call MPI_Allgather(g(1:4:2), 2, MPI_INTEGER, all, 2, MPI_INTEGER, dup, ierr)
    if (ierr == MPI_SUCCESS) then
        do j = 0, nprocs - 1
            if (all(2 * j + 1) /= 10 * j + 1 .or. all(2 * j + 2) /= 10 * j + 3) call fail('allgather section data')
        end do
    else
        call MPI_Error_class(ierr, cls)
        if (cls /= MPI_ERR_BUFFER) call fail('allgather of a section: wrong error class')
    end if
    call MPI_Allgather(g(1:2), 2, MPI_INTEGER, all, 2, MPI_INTEGER, dup, ierr)
    if (ierr /= MPI_SUCCESS) call fail('allgather')
    do j = 0, nprocs - 1
        if (all(2 * j + 1) /= 10 * j + 1 .or. all(2 * j + 2) /= 10 * j + 2) call fail('allgather data')
    end do

    ! Strings, LOGICAL and attribute arguments.
    call MPI_Comm_set_name(dup, 'f08 dup')
    call MPI_Comm_get_name(dup, name, namelen)
    if (name /= 'f08 dup' .or. namelen /= 7) call fail('comm name')
    call MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, tag_ub, flag)
    if (.not. flag .or. tag_ub < 32767) call fail('MPI_TAG_UB attribute')
    call MPI_Initialized(flag)
    if (.not. flag) call fail('initialized')
    call MPI_Comm_free(dup)
    if (dup /= MPI_COMM_NULL) call fail('comm_free')

    call MPI_Allreduce(MPI_IN_PLACE, errs, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD)
    if (rank == 0 .and. errs == 0) print '(a)', ' No Errors'
    call MPI_Finalize()
contains
    subroutine fail(what)
        character(len=*), intent(in) :: what
        errs = errs + 1
        print '(a, i0, 2a)', 'rank ', rank, ': Found error: ', what
    end subroutine fail
end program f08_sections
