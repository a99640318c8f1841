! oxmpi-test: np=1,2
! Fortran-specific parts of the binding: MPI_SIZEOF of the `use mpi` module
! (scalars and arrays), info keys and values without their leading and
! trailing blanks, MPI_INFO_GET_STRING with BUFLEN 0 (length only), and the
! MPI-1 MPI_TYPE_HINDEXED / MPI_TYPE_STRUCT with INTEGER displacements.
program mpi_module
    use mpi
    implicit none
    integer :: ierr, rank, errs, sz, info, buflen, newtype, tsize
    integer (kind=MPI_ADDRESS_KIND) :: lb, extent
    integer :: ivec(3, 2), blens(2), displs(2), types(2)
    integer (kind=8) :: i8
    integer (kind=2) :: i2
    real :: r4v(5)
    double precision :: d
    complex :: z
    logical :: l, flag
    character (len=1) :: ch
    character (len=MPI_MAX_INFO_VAL) :: value
    character (len=MPI_MAX_INFO_KEY) :: key

    errs = 0
    call mpi_init(ierr)
    call mpi_comm_rank(MPI_COMM_WORLD, rank, ierr)

    ! MPI_SIZEOF: the size of one element, in bytes.
    call check_size(ivec(:, 1), 4)
    call mpi_sizeof(i8, sz, ierr)
    if (sz /= 8 .or. ierr /= MPI_SUCCESS) errs = errs + 1
    call mpi_sizeof(i2, sz, ierr)
    if (sz /= 2) errs = errs + 1
    call mpi_sizeof(r4v, sz, ierr)
    if (sz /= 4) errs = errs + 1
    call mpi_sizeof(d, sz, ierr)
    if (sz /= 8) errs = errs + 1
    call mpi_sizeof(z, sz, ierr)
    if (sz /= 8) errs = errs + 1
    call mpi_sizeof(l, sz, ierr)
    call mpi_type_size(MPI_LOGICAL, tsize, ierr)
    if (sz /= tsize) errs = errs + 1
    call mpi_sizeof(ch, sz, ierr)
    if (sz /= 1) errs = errs + 1

    ! Info: leading and trailing blanks are not part of keys and values.
    call mpi_info_create(info, ierr)
    call mpi_info_set(info, '  spaced key ', '  some value  ', ierr)
    call mpi_info_get_nthkey(info, 0, key, ierr)
    if (key /= 'spaced key') then
        errs = errs + 1
        print *, 'info key: "', trim(key), '"'
    end if
    call mpi_info_get(info, ' spaced key', MPI_MAX_INFO_VAL, value, flag, ierr)
    if (.not. flag .or. value /= 'some value') then
        errs = errs + 1
        print *, 'info value: ', flag, ' "', trim(value), '"'
    end if
    ! BUFLEN 0 asks for the length and leaves VALUE alone; a short BUFLEN truncates.
    value = 'canary'
    buflen = 0
    call mpi_info_get_string(info, 'spaced key', buflen, value, flag, ierr)
    if (.not. flag .or. buflen /= 10 .or. value /= 'canary') then
        errs = errs + 1
        print *, 'info_get_string with buflen 0: ', flag, buflen, ' "', trim(value), '"'
    end if
    buflen = 4
    call mpi_info_get_string(info, 'spaced key', buflen, value, flag, ierr)
    if (.not. flag .or. buflen /= 10 .or. value /= 'some') then
        errs = errs + 1
        print *, 'info_get_string with buflen 4: ', flag, buflen, ' "', trim(value), '"'
    end if
    call mpi_info_free(info, ierr)

    ! MPI-1 constructors with INTEGER displacements (in bytes).
    blens = (/ 1, 2 /)
    displs = (/ 0, 16 /)
    call mpi_type_hindexed(2, blens, displs, MPI_INTEGER, newtype, ierr)
    if (ierr /= MPI_SUCCESS) errs = errs + 1
    call mpi_type_get_extent(newtype, lb, extent, ierr)
    call mpi_type_size(newtype, tsize, ierr)
    if (lb /= 0 .or. extent /= 24 .or. tsize /= 12) then
        errs = errs + 1
        print *, 'type_hindexed: ', lb, extent, tsize
    end if
    call mpi_type_free(newtype, ierr)
    types = (/ MPI_INTEGER, MPI_DOUBLE_PRECISION /)
    displs = (/ 4, 8 /)
    blens = (/ 1, 1 /)
    call mpi_type_struct(2, blens, displs, types, newtype, ierr)
    if (ierr /= MPI_SUCCESS) errs = errs + 1
    call mpi_type_get_extent(newtype, lb, extent, ierr)
    call mpi_type_size(newtype, tsize, ierr)
    if (lb /= 4 .or. extent < 12 .or. tsize /= 12) then
        errs = errs + 1
        print *, 'type_struct: ', lb, extent, tsize
    end if
    call mpi_type_free(newtype, ierr)

    call mpi_allreduce(MPI_IN_PLACE, errs, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
    if (rank == 0) then
        if (errs == 0) then
            print *, 'No Errors'
        else
            print *, ' Found ', errs, ' errors'
        end if
    end if
    call mpi_finalize(ierr)

contains

    subroutine check_size(a, want)
        integer, intent(in) :: a(:), want
        integer :: s, e
        call mpi_sizeof(a, s, e)
        if (s /= want .or. e /= MPI_SUCCESS) then
            errs = errs + 1
            print *, 'mpi_sizeof of an array: ', s
        end if
    end subroutine check_size
end program mpi_module
