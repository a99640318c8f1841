/* oxmpi-test: np=1,2,3,4,8 timeout=240 */
/* Single-copy bcast/reduce/allreduce and the sparse single-copy allreduce with the default
 * thresholds (see coll_shm_copy.h). */
#include "coll_shm_copy.h"
