/* oxmpi-test: np=2,3,4,5,8 timeout=180 env=OXMPI_ALLREDUCE_ALG=rabenseifner env=OXMPI_BCAST_ALG=scatter_allgather env=OXMPI_ALLGATHER_ALG=recdbl env=OXMPI_ALLTOALL_ALG=pairwise env=OXMPI_REDUCE_SCATTER_ALG=halving env=OXMPI_GATHER_ALG=binomial */
/* Nonblocking collective results with Rabenseifner allreduce, scatter + allgather bcast,
 * recursive-doubling allgather, pairwise alltoall, recursive-halving reduce-scatter (see
 * coll_algs.h). */
#define COLL_ALGS_NONBLOCKING
#include "coll_algs.h"
