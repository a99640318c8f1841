/* oxmpi-test: np=3,5,8 timeout=240 env=OXMPI_ALLGATHER_ALG=bruck env=OXMPI_ALLTOALL_ALG=bruck env=OXMPI_GATHER_ALG=linear env=OXMPI_REDUCE_SCATTER_ALG=halving env=OXMPI_BCAST_ALG=binomial env=OXMPI_COLL_SHM=0 */
/* coll_datapaths.c with Bruck allgather and all-to-all, linear gather/scatter, recursive-halving
 * reduce-scatter and binomial broadcast (point to point). */
#include "coll_datapaths.c"
