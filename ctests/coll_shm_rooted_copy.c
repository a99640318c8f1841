/* oxmpi-test: np=1,2,3,4,8 timeout=240 env=OXMPI_COLL_SHM_ROOTED_COPY_MIN=1 */
/* The collectives of coll_shm_rooted.h with every MPI_Gather/MPI_Scatter block by single copy
   through the shared-memory area where ranks outnumber cores (np 3 and up on 2 cores): every
   root, in place, strided types on either side, bursts with a late rank, interleaved with the
   other collectives and nonblocking gathers/scatters, a communicator in reverse order. */
#include "coll_shm_rooted.h"
