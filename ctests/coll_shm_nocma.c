/* oxmpi-test: np=2,3,8 timeout=180 env=OXMPI_CMA=0 */
/* The collectives of coll_shm.h with single-copy reads turned off: large payloads go through
   the shared-memory slots in pieces instead. */
#include "coll_shm.h"
