! oxmpi-test: np=1,2,4
! A small kernel in the style of the NAS benchmarks: conjugate gradients
! for the 1-D Poisson problem -u'' = 2 on (0,1), u(0)=u(1)=0, whose solution
! x(1-x) the second-order scheme reproduces exactly; block-distributed, with
! halo exchange by MPI_SENDRECV and global dot products by MPI_ALLREDUCE.
! Checks the iteration count, the solution and a checksum of the whole
! solution gathered with MPI_ALLGATHER, at every rank count.
program cg_solver
    implicit none
    include 'mpif.h'
    integer, parameter :: n = 256
    integer :: ierr, rank, nprocs, errs, nloc, first, i, it, left, right
    double precision :: h, alpha, beta, rr, rr_new, pap, err_max, tmp, checksum
    double precision, allocatable :: x(:), r(:), p(:), ap(:), b(:), pfull(:)

    errs = 0
    call mpi_init(ierr)
    call mpi_comm_rank(MPI_COMM_WORLD, rank, ierr)
    call mpi_comm_size(MPI_COMM_WORLD, nprocs, ierr)
    nloc = n / nprocs
    first = rank * nloc
    left = rank - 1
    right = rank + 1
    if (left < 0) left = MPI_PROC_NULL
    if (right >= nprocs) right = MPI_PROC_NULL
    h = 1d0 / (n + 1)
    ! p carries one ghost cell on each side: p(0) and p(nloc+1).
    allocate(x(nloc), r(nloc), p(0:nloc + 1), ap(nloc), b(nloc))
    do i = 1, nloc
        b(i) = 2d0 * h * h
    end do
    x = 0d0
    r = b
    p = 0d0
    p(1:nloc) = r
    rr = dot(r, r)
    do it = 1, 2 * n
        call halo(p)
        do i = 1, nloc
            ap(i) = 2d0 * p(i) - p(i - 1) - p(i + 1)
        end do
        pap = dot(p(1:nloc), ap)
        alpha = rr / pap
        x = x + alpha * p(1:nloc)
        r = r - alpha * ap
        rr_new = dot(r, r)
        if (sqrt(rr_new) < 1d-12) exit
        beta = rr_new / rr
        rr = rr_new
        p(1:nloc) = r + beta * p(1:nloc)
    end do
    ! CG on an n x n SPD system converges in at most n steps (in exact arithmetic);
    ! this right-hand side needs n/2 of them.
    if (it > n + 10 .or. it < n / 4) then
        errs = errs + 1
        print *, 'CG did not converge: ', it, ' iterations, residual ', sqrt(rr_new)
    end if
    err_max = 0d0
    do i = 1, nloc
        tmp = (first + i) * h
        err_max = max(err_max, abs(x(i) - tmp * (1d0 - tmp)))
    end do
    call mpi_allreduce(MPI_IN_PLACE, err_max, 1, MPI_DOUBLE_PRECISION, MPI_MAX, MPI_COMM_WORLD, ierr)
    if (err_max > 1d-9) then
        errs = errs + 1
        print *, 'error of the solution: ', err_max
    end if
    ! A weighted checksum of the whole solution, gathered on every rank.
    allocate(pfull(n))
    call mpi_allgather(x, nloc, MPI_DOUBLE_PRECISION, pfull, nloc, MPI_DOUBLE_PRECISION, &
        MPI_COMM_WORLD, ierr)
    checksum = 0d0
    do i = 1, n
        checksum = checksum + i * pfull(i)
    end do
    tmp = 0d0
    do i = 1, n
        tmp = tmp + i * (i * h) * (1d0 - i * h)
    end do
    if (abs(checksum - tmp) > 1d-9 * tmp) then
        errs = errs + 1
        print *, 'checksum ', checksum, ' expected about ', tmp
    end if
    if (rank == 0) print '(a, i4, a, es10.3, a, f14.6)', ' iterations', it, ', error', err_max, &
        ', checksum', checksum

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

    double precision function dot(u, v)
        double precision, intent(in) :: u(:), v(:)
        double precision :: local
        local = sum(u * v)
        call mpi_allreduce(local, dot, 1, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
    end function dot

    subroutine halo(q)
        double precision, intent(inout) :: q(0:)
        integer :: status(MPI_STATUS_SIZE)
        ! To the right, from the left; then to the left, from the right.
        call mpi_sendrecv(q(nloc), 1, MPI_DOUBLE_PRECISION, right, 1, &
            q(0), 1, MPI_DOUBLE_PRECISION, left, 1, MPI_COMM_WORLD, status, ierr)
        call mpi_sendrecv(q(1), 1, MPI_DOUBLE_PRECISION, left, 2, &
            q(nloc + 1), 1, MPI_DOUBLE_PRECISION, right, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
    end subroutine halo

end program cg_solver
