/* oxmpi-test: np=2,3,4 timeout=240 env=OXMPI_COLL_SHM_REDUCE_ROOT_RANKS=0 */
/* coll_shm_copy.h with every single-copy reduce split among the ranks (also at 2 ranks, where
 * the root combines alone by default). */
#include "coll_shm_copy.h"
