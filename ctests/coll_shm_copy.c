/* oxmpi-test: np=1,2,3,4,8 timeout=240 */
/* Single-copy bcast/reduce/allreduce and the sparse single-copy allreduce with the default
 * thresholds (see coll_shm_copy.h). */
/* The defaults: reduce by single copy from 2 MiB on 8 ranks (below, and on fewer ranks,
 * through the slots), exchanges from 16 KiB blocks. */
#define REDUCE_UNIT (2L * 1024 * 1024)
#define EXCHANGE_UNIT 16384
#include "coll_shm_copy.h"
