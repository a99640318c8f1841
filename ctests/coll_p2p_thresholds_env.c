/* oxmpi-test: np=2,3,4,5,8 timeout=180 env=OXMPI_ALLGATHER_DIRECT=200 env=OXMPI_REDUCE_SCATTER_DIRECT=300 env=OXMPI_COLL_DETACH_MAX=40 env=OXMPI_COLL_DIRECT_PROCS=4 env=OXMPI_ALLTOALL_MIN_PROCS=4 */
/* Point-to-point collectives around overridden selection thresholds: direct algorithms only
 * up to 4 ranks, small direct and detach limits, Bruck alltoall from 4 ranks (see coll_p2p.h). */
#include "coll_p2p.h"
