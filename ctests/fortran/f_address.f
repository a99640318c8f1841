! oxmpi-test: np=1,2
!     MPI-1's MPI_ADDRESS returns an address in a default INTEGER: the
!     one MPI_GET_ADDRESS returns when it fits, MPI_ERR_ARG (and the
!     output left alone) when it does not, never a truncated address.
!     MPI_BOTTOM's address is 0, which always fits.
      program address
      implicit none
      include 'mpif.h'
      integer ierr, ierr2, rank, errs, a4, cls, tot
      integer (kind=MPI_ADDRESS_KIND) a8
      integer cells(3)
      errs = 0
      call mpi_init(ierr)
      call mpi_comm_rank(MPI_COMM_WORLD, rank, ierr)
      call mpi_comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN,
     &     ierr)
      a4 = -1
      call mpi_address(MPI_BOTTOM, a4, ierr)
      if (ierr .ne. MPI_SUCCESS .or. a4 .ne. 0) then
         errs = errs + 1
         print *, 'MPI_ADDRESS(MPI_BOTTOM): ierr ', ierr, ' got ', a4
      end if
      call mpi_get_address(cells(3), a8, ierr)
      a4 = -1
      call mpi_address(cells(3), a4, ierr)
      if (a8 .ge. -2147483647_MPI_ADDRESS_KIND - 1 .and.
     &    a8 .le. 2147483647_MPI_ADDRESS_KIND) then
         if (ierr .ne. MPI_SUCCESS .or. a4 .ne. a8) then
            errs = errs + 1
            print *, 'MPI_ADDRESS: ierr ', ierr, ' got ', a4,
     &           ' expected ', a8
         end if
      else
         cls = -1
         if (ierr .ne. MPI_SUCCESS) then
            call mpi_error_class(ierr, cls, ierr2)
         end if
         if (cls .ne. MPI_ERR_ARG .or. a4 .ne. -1) then
            errs = errs + 1
            print *, 'MPI_ADDRESS of ', a8, ': class ', cls,
     &           ' value ', a4
         end if
      end if
      call mpi_allreduce(errs, tot, 1, MPI_INTEGER, MPI_SUM,
     &     MPI_COMM_WORLD, ierr)
      if (rank .eq. 0 .and. tot .eq. 0) print *, 'No Errors'
      call mpi_finalize(ierr)
      end
