/* oxmpi-test: np=1,2,3,4,8 timeout=180 */
/* Shared-memory collectives on one node (see coll_shm.h). */
#include "coll_shm.h"
