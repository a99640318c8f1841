/* oxmpi-test: np=2,3,4,5,8 timeout=240 env=OXMPI_ALLGATHER_ALG=ring env=OXMPI_ALLTOALL_ALG=pairwise env=OXMPI_GATHER_ALG=binomial env=OXMPI_REDUCE_SCATTER_ALG=pairwise env=OXMPI_BCAST_ALG=scatter_allgather env=OXMPI_COLL_SHM=0 */
/* coll_datapaths.c with ring allgather, pairwise all-to-all, binomial gather/scatter at every
 * size, pairwise reduce-scatter and scatter + allgather broadcast (point to point). */
#include "coll_datapaths.c"
