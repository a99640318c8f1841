/* oxmpi-test: np=2,3,8 timeout=180 */
/* The collectives of coll_shm_rooted.h with the default settings (gather, allgather and
   all-to-all through the lanes, scatter point to point). */
#include "coll_shm_rooted.h"
