/* oxmpi-test: np=2,3,4,5,8 timeout=180 env=OXMPI_ALLREDUCE_ALG=ring env=OXMPI_BCAST_ALG=scatter_allgather env=OXMPI_ALLGATHER_ALG=bruck env=OXMPI_ALLTOALL_ALG=bruck env=OXMPI_REDUCE_SCATTER_ALG=pairwise env=OXMPI_GATHER_ALG=binomial */
/* Nonblocking collective results with ring allreduce, scatter + allgather bcast, Bruck
 * allgather and alltoall, pairwise reduce-scatter (see coll_algs.h). */
#define COLL_ALGS_NONBLOCKING
#include "coll_algs.h"
