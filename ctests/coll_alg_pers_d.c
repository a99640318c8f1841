/* oxmpi-test: np=2,3,5,8 timeout=180 env=OXMPI_ALLREDUCE_ALG=reduce_bcast env=OXMPI_ALLGATHER_ALG=recdbl */
/* Persistent collective results with reduce + bcast allreduce and recursive-doubling
 * allgather (see coll_algs.h). */
#define COLL_ALGS_PERSISTENT
#include "coll_algs.h"
