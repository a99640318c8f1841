! oxmpi-test: np=1,2,4
! Communicators and environment from Fortran: comm_split, comm_dup,
! comm_compare, set/get_name (CHARACTER arguments), processor name, info
! keys, attributes (the keyval +1 rule), MPI_WTIME/MPI_WTICK, error
! strings, and a keyval with the predefined Fortran callbacks.
program comm
    implicit none
    include 'mpif.h'
    integer :: ierr, rank, nprocs, errs, color, sub, subrank, subsize, dup
    integer :: result, len, info, nkeys, keyval, ival, class
    integer (kind=MPI_ADDRESS_KIND) :: attr, extra
    character (len=MPI_MAX_OBJECT_NAME) :: name
    character (len=8) :: short
    character (len=MPI_MAX_PROCESSOR_NAME) :: host
    character (len=MPI_MAX_ERROR_STRING) :: msg
    character (len=MPI_MAX_INFO_VAL) :: value
    character (len=MPI_MAX_INFO_KEY) :: key
    logical :: flag, init
    double precision :: t0, t1, tick

    errs = 0
    call mpi_initialized(init, ierr)
    if (init) errs = errs + 1
    call mpi_init(ierr)
    call mpi_initialized(init, ierr)
    if (.not. init) errs = errs + 1
    call mpi_comm_rank(MPI_COMM_WORLD, rank, ierr)
    call mpi_comm_size(MPI_COMM_WORLD, nprocs, ierr)

    ! Split by parity, keyed by reverse rank.
    color = mod(rank, 2)
    call mpi_comm_split(MPI_COMM_WORLD, color, -rank, sub, ierr)
    call mpi_comm_rank(sub, subrank, ierr)
    call mpi_comm_size(sub, subsize, ierr)
    if (subsize /= (nprocs - color + 1) / 2 .or. subrank /= subsize - 1 - rank / 2) then
        errs = errs + 1
        print *, 'split: rank ', rank, ' -> ', subrank, ' of ', subsize
    end if
    call mpi_allreduce(1, ival, 1, MPI_INTEGER, MPI_SUM, sub, ierr)
    if (ival /= subsize) errs = errs + 1

    ! Dup and compare.
    call mpi_comm_dup(MPI_COMM_WORLD, dup, ierr)
    call mpi_comm_compare(MPI_COMM_WORLD, dup, result, ierr)
    if (result /= MPI_CONGRUENT) then
        errs = errs + 1
        print *, 'compare dup: ', result
    end if
    call mpi_comm_compare(MPI_COMM_WORLD, MPI_COMM_WORLD, result, ierr)
    if (result /= MPI_IDENT) errs = errs + 1

    ! Names: input trimmed of trailing blanks, output blank-padded.
    call mpi_comm_get_name(MPI_COMM_WORLD, name, len, ierr)
    if (name /= 'MPI_COMM_WORLD' .or. len /= 14) then
        errs = errs + 1
        print *, 'world name: [', trim(name), '] ', len
    end if
    call mpi_comm_set_name(dup, 'my dup     ', ierr)
    name = repeat('x', MPI_MAX_OBJECT_NAME)
    call mpi_comm_get_name(dup, name, len, ierr)
    if (name /= 'my dup' .or. len /= 6 .or. name(7:) /= ' ') then
        errs = errs + 1
        print *, 'dup name: [', trim(name), '] ', len
    end if
    call mpi_comm_get_name(dup, short(1:3), len, ierr)
    if (short(1:3) /= 'my ') then
        errs = errs + 1
        print *, 'truncated name: [', short(1:3), ']'
    end if

    call mpi_get_processor_name(host, len, ierr)
    if (len <= 0 .or. len > MPI_MAX_PROCESSOR_NAME .or. host(len + 1:) /= ' ') then
        errs = errs + 1
        print *, 'processor name: ', len
    end if

    ! Info with CHARACTER keys and values.
    call mpi_info_create(info, ierr)
    call mpi_info_set(info, 'color  ', 'blue and green   ', ierr)
    call mpi_info_set(info, 'size', '42', ierr)
    call mpi_info_get_nkeys(info, nkeys, ierr)
    if (nkeys /= 2) errs = errs + 1
    call mpi_info_get(info, 'color', MPI_MAX_INFO_VAL, value, flag, ierr)
    if (.not. flag .or. value /= 'blue and green') then
        errs = errs + 1
        print *, 'info_get: [', trim(value), ']', flag
    end if
    call mpi_info_get_valuelen(info, 'color', len, flag, ierr)
    if (.not. flag .or. len /= 14) then
        errs = errs + 1
        print *, 'info_get_valuelen: ', len
    end if
    call mpi_info_get_nthkey(info, 1, key, ierr)
    if (key /= 'size') then
        errs = errs + 1
        print *, 'info_get_nthkey: [', trim(key), ']'
    end if
    value = 'unchanged'
    call mpi_info_get(info, 'absent', MPI_MAX_INFO_VAL, value, flag, ierr)
    if (flag .or. value /= 'unchanged') then
        errs = errs + 1
        print *, 'info_get of an absent key: [', trim(value), ']', flag
    end if
    call mpi_info_free(info, ierr)
    if (info /= MPI_INFO_NULL) errs = errs + 1

    ! Predefined attributes: Fortran keyvals are the C value + 1 and return
    ! the INTEGER value itself.
    attr = -1
    call mpi_comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, attr, flag, ierr)
    if (.not. flag .or. attr < 32767) then
        errs = errs + 1
        print *, 'MPI_TAG_UB: ', attr, flag
    end if
    call mpi_attr_get(MPI_COMM_WORLD, MPI_TAG_UB, ival, flag, ierr)
    if (.not. flag .or. ival /= attr) then
        errs = errs + 1
        print *, 'MPI_TAG_UB (attr_get): ', ival
    end if
    call mpi_comm_get_attr(MPI_COMM_WORLD, MPI_UNIVERSE_SIZE, attr, flag, ierr)
    if (flag .and. attr < nprocs) then
        errs = errs + 1
        print *, 'MPI_UNIVERSE_SIZE: ', attr
    end if

    ! Timers.
    t0 = MPI_WTIME()
    tick = MPI_WTICK()
    t1 = MPI_WTIME()
    if (tick <= 0d0 .or. tick > 1d0 .or. t1 < t0) then
        errs = errs + 1
        print *, 'wtime/wtick: ', t0, t1, tick
    end if

    ! Errors: strings and classes; a keyval with predefined callbacks.
    call mpi_error_string(MPI_ERR_TRUNCATE, msg, len, ierr)
    if (len <= 0 .or. msg(len + 1:) /= ' ') then
        errs = errs + 1
        print *, 'error_string: ', trim(msg)
    end if
    call mpi_comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN, ierr)
    extra = 0
    call mpi_comm_create_keyval(MPI_COMM_NULL_COPY_FN, MPI_COMM_NULL_DELETE_FN, keyval, extra, ierr)
    if (ierr == MPI_SUCCESS) then
        call mpi_comm_free_keyval(keyval, ierr)
    else
        call mpi_error_class(ierr, class, ival)
        if (class /= MPI_ERR_UNSUPPORTED_OPERATION) then
            errs = errs + 1
            print *, 'comm_create_keyval: error class ', class
        end if
    end if
    call mpi_send(rank, 1, MPI_INTEGER, nprocs, 0, MPI_COMM_WORLD, ierr)
    call mpi_error_class(ierr, class, ival)
    if (class /= MPI_ERR_RANK) then
        errs = errs + 1
        print *, 'send to a bad rank: class ', class
    end if

    call mpi_comm_free(dup, ierr)
    call mpi_comm_free(sub, ierr)
    if (dup /= MPI_COMM_NULL .or. sub /= MPI_COMM_NULL) errs = errs + 1

    call mpi_allreduce(MPI_IN_PLACE, errs, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
    if (rank == 0) then
        if (errs == 0) then
            print *, 'No Errors'
        else
            print *, ' Found ', errs, ' errors'
        end if
    end if
    call mpi_finalize(ierr)
end program comm
