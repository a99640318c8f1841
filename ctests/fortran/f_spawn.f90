! oxmpi-test: np=1,2 timeout=120 one-node="MPI_Comm_spawn is implemented under mpiexec on one host only"
! The Fortran bindings of MPI_COMM_SPAWN and MPI_COMM_SPAWN_MULTIPLE: arguments as
! CHARACTER arrays ended by a blank element (one with an inner space), MPI_ARGV_NULL,
! a two-dimensional ARRAY_OF_ARGV, MPI_ERRCODES_IGNORE and error codes. The children (this
! program) check their arguments and send the parents' root a code saying which they got.
program f_spawn
  implicit none
  include 'mpif.h'
  integer :: ierr, rank, parent, inter, errs, code, nargs, rsize
  integer :: errcodes(2), maxprocs(2), infos(2)
  character(len=32) :: args(3), argvs(2, 2), arg1, arg2
  character(len=1024) :: prog

  errs = 0
  call mpi_init(ierr)
  call mpi_comm_get_parent(parent, ierr)
  if (parent .ne. MPI_COMM_NULL) then
     ! A child: 1 = "hello" and "w o r d", 2 = no arguments, 3 = "one", 4 = "two",
     ! 0 = anything else.
     nargs = command_argument_count()
     arg1 = ''
     arg2 = ''
     if (nargs >= 1) call get_command_argument(1, arg1)
     if (nargs >= 2) call get_command_argument(2, arg2)
     code = 0
     if (nargs == 2 .and. arg1 == 'hello' .and. arg2 == 'w o r d') code = 1
     if (nargs == 0) code = 2
     if (nargs == 1 .and. arg1 == 'one') code = 3
     if (nargs == 1 .and. arg1 == 'two') code = 4
     call mpi_comm_rank(MPI_COMM_WORLD, rank, ierr)
     call mpi_send(code, 1, MPI_INTEGER, 0, rank, parent, ierr)
     call mpi_comm_disconnect(parent, ierr)
     call mpi_finalize(ierr)
     stop
  end if
  call mpi_comm_rank(MPI_COMM_WORLD, rank, ierr)
  call get_command_argument(0, prog)

  ! MPI_COMM_SPAWN with arguments, then with MPI_ARGV_NULL.
  args(1) = 'hello'
  args(2) = 'w o r d'
  args(3) = ' '
  errcodes = -1
  call mpi_comm_spawn(prog, args, 2, MPI_INFO_NULL, 0, MPI_COMM_WORLD, inter, errcodes, ierr)
  call check_children(inter, ierr, 2, (/ 1, 1 /))
  if (any(errcodes /= MPI_SUCCESS)) then
     errs = errs + 1
     print *, 'errcodes ', errcodes
  end if
  call mpi_comm_spawn(prog, MPI_ARGV_NULL, 1, MPI_INFO_NULL, 0, MPI_COMM_WORLD, inter, &
       MPI_ERRCODES_IGNORE, ierr)
  call check_children(inter, ierr, 1, (/ 2, 0 /))

  ! MPI_COMM_SPAWN_MULTIPLE: row i of ARRAY_OF_ARGV is command i's arguments.
  argvs(1, 1) = 'one'
  argvs(2, 1) = 'two'
  argvs(1, 2) = ' '
  argvs(2, 2) = ' '
  maxprocs = 1
  infos = MPI_INFO_NULL
  call mpi_comm_spawn_multiple(2, (/ prog(1:len_trim(prog)), prog(1:len_trim(prog)) /), argvs, &
       maxprocs, infos, 0, MPI_COMM_WORLD, inter, errcodes, ierr)
  call check_children(inter, ierr, 2, (/ 3, 4 /))

  ! A program that does not exist: an error code per process, no intercommunicator.
  call mpi_comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN, ierr)
  errcodes = MPI_SUCCESS
  call mpi_comm_spawn('/nonexistent/oxmpi-no-such-program', MPI_ARGV_NULL, 2, MPI_INFO_NULL, &
       0, MPI_COMM_WORLD, inter, errcodes, ierr)
  if (ierr == MPI_SUCCESS .or. inter /= MPI_COMM_NULL .or. any(errcodes == MPI_SUCCESS)) then
     errs = errs + 1
     print *, 'spawn of a missing program: ierr ', ierr, ' errcodes ', errcodes
  end if

  call mpi_allreduce(MPI_IN_PLACE, errs, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (rank == 0) then
     if (errs == 0) then
        print *, 'No Errors'
     else
        print *, 'Found ', errs, ' errors'
     end if
  end if
  call mpi_finalize(ierr)

contains

  ! The children of `comm` (spawned with return code `rc`) each send their code to the
  ! parents' root; they must be `expected` (by child rank).
  subroutine check_children(comm, rc, n, expected)
    integer, intent(inout) :: comm
    integer, intent(in) :: rc, n, expected(2)
    integer :: got, st(MPI_STATUS_SIZE), j, ierr2
    if (rc /= MPI_SUCCESS) then
       errs = errs + 1
       print *, 'spawn returned ', rc
       return
    end if
    call mpi_comm_remote_size(comm, rsize, ierr2)
    if (rsize /= n) then
       errs = errs + 1
       print *, 'remote size ', rsize, ' expected ', n
    end if
    if (rank == 0) then
       do j = 1, rsize
          call mpi_recv(got, 1, MPI_INTEGER, MPI_ANY_SOURCE, MPI_ANY_TAG, comm, st, ierr2)
          if (got /= expected(st(MPI_SOURCE) + 1)) then
             errs = errs + 1
             print *, 'child ', st(MPI_SOURCE), ' got code ', got
          end if
       end do
    end if
    call mpi_comm_disconnect(comm, ierr2)
  end subroutine check_children
end program f_spawn
