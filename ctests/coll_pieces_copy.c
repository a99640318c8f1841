/* oxmpi-test: np=1,2,3,4,5,8 timeout=240 env=OXMPI_COLL_SHM_ROOTED_COPY_MIN=1 */
/* The blocks of coll_pieces.h by single copy through the shared-memory area (every
 * MPI_Gather/MPI_Scatter block of at least 1 byte, where the node's ranks outnumber its cores:
 * np 3 and up on 2 cores; point to point or lanes otherwise): the root reads every member's
 * block, or every member its own, strided blocks packed at either side, roots other than 0,
 * MPI_IN_PLACE, many calls back to back. */
#include "coll_pieces.h"
