/* oxmpi-test: np=1,2,3,4,5,8 timeout=180 env=OXMPI_ALLGATHER_ALG=direct env=OXMPI_REDUCE_SCATTER_ALG=direct env=OXMPI_ALLTOALL_ALG=post env=OXMPI_GATHER_ALG=linear env=OXMPI_COLL_DETACH_MAX=100000000 */
/* Collective results with the direct (one-round) allgather and reduce-scatter (also for the
 * non-commutative operation), all-at-once alltoall, linear gather/scatter, and every scatter
 * send of any size detached when ranks outnumber cores (copied when the peer's ring is full;
 * see coll_algs.h). */
#include "coll_algs.h"
