! oxmpi-test: np=1,2,3,4
! One-sided communication from Fortran (`use mpi`): MPI_Win_create with fence, Put, Get and
! Accumulate; a dynamic window reached at an address built with MPI_Aint_add and
! MPI_Aint_diff. Those two return INTEGER(KIND=MPI_ADDRESS_KIND): the module once left them
! untyped, so implicit typing cut the 64-bit address to a default INTEGER (MPICH's
! f90/rma/aintf90 then read the wrong address). No IMPLICIT NONE, as in that test.
program f_rma
    use mpi
    integer :: ierr, rank, nprocs, errs, win, dwin, right, left, i, got
    integer :: buf(0:9), array(0:1023)
    integer (kind=MPI_ADDRESS_KIND) :: winsize, disp, base, addr, back
    integer (kind=MPI_ADDRESS_KIND), allocatable :: bases(:)

    call mpi_init(ierr)
    call mpi_comm_rank(MPI_COMM_WORLD, rank, ierr)
    call mpi_comm_size(MPI_COMM_WORLD, nprocs, ierr)
    errs = 0
    right = mod(rank + 1, nprocs)
    left = mod(rank + nprocs - 1, nprocs)

    ! full-width address arithmetic
    call mpi_get_address(array(512), base, ierr)
    disp = 4 * 100
    addr = mpi_aint_add(base, disp)
    back = mpi_aint_diff(addr, base)
    if (addr /= base + disp .or. back /= disp) errs = errs + 1

    ! fence: put my rank into buf(1) of the right neighbour, add rank+1 into buf(2) of all
    buf = -1
    buf(2) = 0
    winsize = 10 * 4
    call mpi_win_create(buf, winsize, 4, MPI_INFO_NULL, MPI_COMM_WORLD, win, ierr)
    call mpi_win_fence(0, win, ierr)
    disp = 1
    call mpi_put(rank, 1, MPI_INTEGER, right, disp, 1, MPI_INTEGER, win, ierr)
    disp = 2
    do i = 0, nprocs - 1
        call mpi_accumulate(rank + 1, 1, MPI_INTEGER, i, disp, 1, MPI_INTEGER, MPI_SUM, win, ierr)
    end do
    call mpi_win_fence(0, win, ierr)
    if (buf(1) /= left) errs = errs + 1
    if (buf(2) /= nprocs * (nprocs + 1) / 2) errs = errs + 1
    disp = 1
    call mpi_get(got, 1, MPI_INTEGER, right, disp, 1, MPI_INTEGER, win, ierr)
    call mpi_win_fence(0, win, ierr)
    if (got /= rank) errs = errs + 1
    call mpi_win_free(win, ierr)

    ! dynamic window: read array(511 + rank-dependent) of the right neighbour
    array = -1
    array(511) = 1000 + rank
    allocate(bases(0:nprocs - 1))
    call mpi_get_address(array(512), bases(rank), ierr)
    call mpi_allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, bases, 1, MPI_AINT, MPI_COMM_WORLD, ierr)
    call mpi_win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, dwin, ierr)
    winsize = 1024 * 4
    call mpi_win_attach(dwin, array, winsize, ierr)
    disp = 4
    addr = mpi_aint_diff(bases(right), disp)
    call mpi_win_fence(MPI_MODE_NOPRECEDE, dwin, ierr)
    call mpi_get(got, 1, MPI_INTEGER, right, addr, 1, MPI_INTEGER, dwin, ierr)
    call mpi_win_fence(MPI_MODE_NOSUCCEED, dwin, ierr)
    if (got /= 1000 + right) errs = errs + 1
    call mpi_win_detach(dwin, array, ierr)
    call mpi_win_free(dwin, ierr)

    call mpi_allreduce(MPI_IN_PLACE, errs, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
    if (rank == 0) then
        if (errs == 0) then
            print *, 'No Errors'
        else
            print *, ' Found ', errs, ' errors'
        end if
    end if
    call mpi_finalize(ierr)
end program f_rma
