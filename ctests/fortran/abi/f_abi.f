!     ABI test: built with Debian's MPICH (mpif77.mpich, against MPICH's
!     mpif.h and libmpichfort.so.12), run on oxmpi by swapping the
!     library. With the argument "expect-oxmpi" it fails if the library
!     that answers is MPICH itself.
      program fabi
      implicit none
      include 'mpif.h'
      integer ierr, rank, nprocs, errs, left, right, x, y, len
      integer status(MPI_STATUS_SIZE), reqs(2), bufs(2)
      integer (kind=MPI_ADDRESS_KIND) tag_ub
      logical flag
      character*(MPI_MAX_LIBRARY_VERSION_STRING) lib
      character*(MPI_MAX_OBJECT_NAME) name
      character*20 arg
      double precision t
      errs = 0
      call mpi_init(ierr)
      call mpi_comm_rank(MPI_COMM_WORLD, rank, ierr)
      call mpi_comm_size(MPI_COMM_WORLD, nprocs, ierr)
      call mpi_get_library_version(lib, len, ierr)
      arg = ' '
      if (command_argument_count() .ge. 1) call get_command_argument(1,
     &     arg)
      if (arg .eq. 'expect-oxmpi' .and. lib(1:5) .eq. 'MPICH') then
         errs = errs + 1
         print *, 'the MPICH library answered, not oxmpi: ', lib(1:60)
      end if
      right = mod(rank + 1, nprocs)
      left = mod(rank + nprocs - 1, nprocs)
      call mpi_sendrecv(rank, 1, MPI_INTEGER, right, 3, y, 1,
     &     MPI_INTEGER, left, 3, MPI_COMM_WORLD, status, ierr)
      if (y .ne. left .or. status(MPI_SOURCE) .ne. left .or.
     &     status(MPI_TAG) .ne. 3) then
         errs = errs + 1
         print *, 'sendrecv: ', y, status(MPI_SOURCE), status(MPI_TAG)
      end if
      x = rank + 1
      call mpi_allreduce(MPI_IN_PLACE, x, 1, MPI_INTEGER, MPI_SUM,
     &     MPI_COMM_WORLD, ierr)
      if (x .ne. nprocs * (nprocs + 1) / 2) then
         errs = errs + 1
         print *, 'allreduce in place: ', x
      end if
      call mpi_irecv(bufs(1), 1, MPI_INTEGER, left, 4, MPI_COMM_WORLD,
     &     reqs(1), ierr)
      call mpi_isend(rank, 1, MPI_INTEGER, right, 4, MPI_COMM_WORLD,
     &     reqs(2), ierr)
      call mpi_waitall(2, reqs, MPI_STATUSES_IGNORE, ierr)
      if (bufs(1) .ne. left) errs = errs + 1
      call mpi_recv(y, 0, MPI_INTEGER, MPI_PROC_NULL, 0,
     &     MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
      if (MPI_STATUS_IGNORE(MPI_SOURCE) .ne. 0 .or.
     &     MPI_STATUSES_IGNORE(MPI_TAG, 1) .ne. 0) then
         errs = errs + 1
         print *, 'a status was written into the IGNORE sentinels'
      end if
      call mpi_comm_set_name(MPI_COMM_SELF, 'self  ', ierr)
      call mpi_comm_get_name(MPI_COMM_SELF, name, len, ierr)
      if (name .ne. 'self' .or. len .ne. 4) then
         errs = errs + 1
         print *, 'comm name: ', name(1:20), len
      end if
      call mpi_comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, tag_ub, flag,
     &     ierr)
      if (.not. flag .or. tag_ub .lt. 32767) then
         errs = errs + 1
         print *, 'MPI_TAG_UB: ', tag_ub
      end if
      t = MPI_WTIME()
      if (t .le. 0d0 .or. MPI_WTICK() .le. 0d0) errs = errs + 1
      call mpi_allreduce(MPI_IN_PLACE, errs, 1, MPI_INTEGER, MPI_SUM,
     &     MPI_COMM_WORLD, ierr)
      if (rank .eq. 0) then
         if (errs .eq. 0) then
            print *, 'No Errors'
         else
            print *, ' Found ', errs, ' errors'
         end if
      end if
      call mpi_finalize(ierr)
      end
