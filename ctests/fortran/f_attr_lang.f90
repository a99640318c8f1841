! oxmpi-test: np=1,2,4 with=helpers/f_attr_lang_c.c
! Attributes across languages (MPI 4.0, 19.3.7), with a C helper: a value set from Fortran
! (MPI_COMM_SET_ATTR, MPI_TYPE_SET_ATTR: INTEGER(KIND=MPI_ADDRESS_KIND); MPI_ATTR_PUT:
! INTEGER) reads in C as a pointer to the integer; a value set in C reads in Fortran as the
! integer (MPI_ATTR_GET keeps its low bytes); predefined attributes read in Fortran as their
! value; C copy and delete callbacks of a Fortran-set value get a pointer to it.
program attr_lang
    use mpi
    implicit none
    integer :: ierr, rank, errs, kf, k1, kt, kc, dup, dtype, cflag, ival, class, ndel, i
    integer (kind=MPI_ADDRESS_KIND) :: extra, val, cval, big
    logical :: flag

    errs = 0
    call mpi_init(ierr)
    call mpi_comm_rank(MPI_COMM_WORLD, rank, ierr)
    extra = 0
    big = 2_MPI_ADDRESS_KIND ** 40

    ! Set in Fortran (address-sized), read in C and in Fortran.
    call mpi_comm_create_keyval(MPI_COMM_NULL_COPY_FN, MPI_COMM_NULL_DELETE_FN, kf, extra, ierr)
    do i = 1, 3
        val = 5555
        if (i == 2) val = big + 5
        if (i == 3) val = -3
        call mpi_comm_set_attr(MPI_COMM_WORLD, kf, val, ierr)
        call c_read_comm_aint(MPI_COMM_WORLD, kf, cval, cflag)
        if (cflag == 0 .or. cval /= val) call fail('F (address) set, C get')
        call mpi_comm_get_attr(MPI_COMM_WORLD, kf, cval, flag, ierr)
        if (.not. flag .or. cval /= val) call fail('F (address) set, F get')
    end do

    ! Set in Fortran (INTEGER, MPI-1), read in C (pointer to int) and Fortran (sign-extended).
    call mpi_keyval_create(MPI_NULL_COPY_FN, MPI_NULL_DELETE_FN, k1, extra, ierr)
    call mpi_attr_put(MPI_COMM_WORLD, k1, -7, ierr)
    call c_read_comm_int(MPI_COMM_WORLD, k1, ival, cflag)
    if (cflag == 0 .or. ival /= -7) call fail('F (INTEGER) set, C get')
    call mpi_comm_get_attr(MPI_COMM_WORLD, k1, cval, flag, ierr)
    if (.not. flag .or. cval /= -7) call fail('F (INTEGER) set, F (address) get')
    call mpi_attr_get(MPI_COMM_WORLD, k1, ival, flag, ierr)
    if (.not. flag .or. ival /= -7) call fail('F (INTEGER) set, F (INTEGER) get')

    ! Set in C: Fortran gets the pointer as an integer; MPI_ATTR_GET its low 4 bytes.
    val = 8 * big + 74565
    call c_set_comm_ptr(MPI_COMM_WORLD, kf, val)
    call c_read_comm_ptr(MPI_COMM_WORLD, kf, cval, cflag)
    if (cflag == 0 .or. cval /= val) call fail('C set, C get')
    call mpi_comm_get_attr(MPI_COMM_WORLD, kf, cval, flag, ierr)
    if (.not. flag .or. cval /= val) call fail('C set, F (address) get')
    call mpi_attr_get(MPI_COMM_WORLD, kf, ival, flag, ierr)
    if (.not. flag .or. ival /= 74565) call fail('C set, F (INTEGER) get truncates')
    val = 4294967295_MPI_ADDRESS_KIND
    call c_set_comm_ptr(MPI_COMM_WORLD, kf, val)
    call mpi_attr_get(MPI_COMM_WORLD, kf, ival, flag, ierr)
    if (.not. flag .or. ival /= -1) call fail('C set 0xffffffff, F (INTEGER) get')

    ! Predefined attributes read in Fortran as their value.
    call mpi_comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, cval, flag, ierr)
    if (.not. flag .or. cval < 32767) call fail('MPI_TAG_UB through MPI_COMM_GET_ATTR')
    call mpi_attr_get(MPI_COMM_WORLD, MPI_TAG_UB, ival, flag, ierr)
    if (.not. flag .or. ival /= cval) call fail('MPI_TAG_UB through MPI_ATTR_GET')

    ! Datatype attributes set in Fortran read in C.
    call mpi_type_create_keyval(MPI_TYPE_NULL_COPY_FN, MPI_TYPE_NULL_DELETE_FN, kt, extra, ierr)
    call mpi_type_dup(MPI_INTEGER, dtype, ierr)
    val = big + 3
    call mpi_type_set_attr(dtype, kt, val, ierr)
    call c_read_type_aint(dtype, kt, cval, cflag)
    if (cflag == 0 .or. cval /= val) call fail('F set type attribute, C get')

    ! C callbacks of a Fortran-set value get a pointer to the integer; the copy keeps its form.
    call c_create_keyval(kc)
    val = 41
    call mpi_comm_set_attr(MPI_COMM_WORLD, kc, val, ierr)
    call mpi_comm_dup(MPI_COMM_WORLD, dup, ierr)
    call mpi_comm_get_attr(dup, kc, cval, flag, ierr)
    if (.not. flag .or. cval /= 42) call fail('C copy callback of a Fortran value, F get')
    call c_read_comm_aint(dup, kc, cval, cflag)
    if (cflag == 0 .or. cval /= 42) call fail('C copy callback of a Fortran value, C get')
    call mpi_comm_free(dup, ierr)
    call c_deleted(cval, ndel)
    if (ndel /= 1 .or. cval /= 42) call fail('C delete callback of a Fortran value')
    call mpi_comm_delete_attr(MPI_COMM_WORLD, kc, ierr)
    call c_deleted(cval, ndel)
    if (ndel /= 2 .or. cval /= 41) call fail('C delete callback at MPI_COMM_DELETE_ATTR')

    ! Bad input: a datatype keyval on a communicator, a predefined keyval set.
    call mpi_comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN, ierr)
    call mpi_comm_get_attr(MPI_COMM_WORLD, kt, cval, flag, ierr)
    call mpi_error_class(ierr, class, i)
    if (class /= MPI_ERR_KEYVAL) call fail('datatype keyval on a communicator')
    call mpi_attr_put(MPI_COMM_WORLD, MPI_TAG_UB, 5, ierr)
    call mpi_error_class(ierr, class, i)
    if (class /= MPI_ERR_KEYVAL) call fail('MPI_ATTR_PUT of MPI_TAG_UB')

    call mpi_type_free(dtype, ierr)
    call mpi_comm_free_keyval(kf, ierr)
    call mpi_keyval_free(k1, ierr)
    call mpi_type_free_keyval(kt, ierr)
    call mpi_comm_free_keyval(kc, ierr)

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
end program attr_lang
