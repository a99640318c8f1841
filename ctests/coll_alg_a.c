/* oxmpi-test: np=2,3,4,5,8 timeout=180 env=OXMPI_ALLREDUCE_ALG=recdbl env=OXMPI_BCAST_ALG=binomial env=OXMPI_ALLGATHER_ALG=ring env=OXMPI_ALLTOALL_ALG=post env=OXMPI_REDUCE_SCATTER_ALG=reduce_scatter env=OXMPI_SPARSE=0 env=OXMPI_GATHER_ALG=linear */
/* Collective results with recursive-doubling allreduce, binomial bcast, ring allgather,
 * all-at-once alltoall, reduce + scatter, no sparse encoding (see coll_algs.h). */
#include "coll_algs.h"
