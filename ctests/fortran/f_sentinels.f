! oxmpi-test: np=1,2,4
!     Fixed-form mpif.h program: the sentinels of the common blocks
!     (MPI_IN_PLACE, MPI_STATUS_IGNORE, MPI_STATUSES_IGNORE) are
!     recognised by the library by their address.
      program sentinels
      implicit none
      include 'mpif.h'
      integer ierr, rank, nprocs, errs, i, x, y, tot
      integer reqs(2), buf(2)
      errs = 0
      call mpi_init(ierr)
      call mpi_comm_rank(MPI_COMM_WORLD, rank, ierr)
      call mpi_comm_size(MPI_COMM_WORLD, nprocs, ierr)
      if (rank .eq. 0) then
         write (*, '(a, z16, a, z16, a, z16)') ' MPI_BOTTOM at ',
     &        loc(MPI_BOTTOM), ' MPI_IN_PLACE at ', loc(MPI_IN_PLACE),
     &        ' MPI_STATUS_IGNORE at ', loc(MPI_STATUS_IGNORE)
      end if
!     MPI_IN_PLACE: the result overwrites x; MPI_IN_PLACE is untouched.
      x = rank + 1
      call mpi_allreduce(MPI_IN_PLACE, x, 1, MPI_INTEGER, MPI_SUM,
     &     MPI_COMM_WORLD, ierr)
      if (ierr .ne. MPI_SUCCESS .or. x .ne. nprocs*(nprocs+1)/2) then
         errs = errs + 1
         print *, 'allreduce in place: got ', x
      end if
      if (MPI_IN_PLACE .ne. 0) then
         errs = errs + 1
         print *, 'MPI_IN_PLACE was written: ', MPI_IN_PLACE
      end if
!     MPI_IN_PLACE at the root of a reduce.
      y = rank
      if (rank .eq. 0) then
         call mpi_reduce(MPI_IN_PLACE, y, 1, MPI_INTEGER, MPI_MAX, 0,
     &        MPI_COMM_WORLD, ierr)
         if (y .ne. nprocs - 1) then
            errs = errs + 1
            print *, 'reduce in place: got ', y
         end if
      else
         call mpi_reduce(y, tot, 1, MPI_INTEGER, MPI_MAX, 0,
     &        MPI_COMM_WORLD, ierr)
      end if
!     MPI_STATUS_IGNORE: a receive from self with tag 7 must not write
!     the status into the common block.
      call mpi_sendrecv(rank, 1, MPI_INTEGER, rank, 7, y, 1,
     &     MPI_INTEGER, rank, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE,
     &     ierr)
      if (ierr .ne. MPI_SUCCESS .or. y .ne. rank) errs = errs + 1
      call mpi_isend(rank, 1, MPI_INTEGER, rank, 8, MPI_COMM_WORLD,
     &     reqs(1), ierr)
      call mpi_irecv(buf, 1, MPI_INTEGER, rank, 8, MPI_COMM_WORLD,
     &     reqs(2), ierr)
      call mpi_wait(reqs(2), MPI_STATUS_IGNORE, ierr)
      call mpi_wait(reqs(1), MPI_STATUS_IGNORE, ierr)
!     MPI_STATUSES_IGNORE
      call mpi_isend(rank, 1, MPI_INTEGER, rank, 9, MPI_COMM_WORLD,
     &     reqs(1), ierr)
      call mpi_irecv(buf(2), 1, MPI_INTEGER, rank, 9, MPI_COMM_WORLD,
     &     reqs(2), ierr)
      call mpi_waitall(2, reqs, MPI_STATUSES_IGNORE, ierr)
      if (ierr .ne. MPI_SUCCESS .or. buf(1) .ne. rank .or.
     &     buf(2) .ne. rank) then
         errs = errs + 1
         print *, 'isend/irecv to self: got ', buf
      end if
      do i = 1, MPI_STATUS_SIZE
         if (MPI_STATUS_IGNORE(i) .ne. 0 .or.
     &        MPI_STATUSES_IGNORE(i, 1) .ne. 0) then
            errs = errs + 1
            print *, 'a status was written into the IGNORE sentinels'
         end if
      end do
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
