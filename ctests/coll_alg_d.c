/* oxmpi-test: np=2,3,5,8 timeout=180 env=OXMPI_ALLREDUCE_ALG=reduce_bcast env=OXMPI_ALLGATHER_ALG=recdbl */
/* Collective results with reduce + bcast allreduce (see coll_algs.h). */
#include "coll_algs.h"
