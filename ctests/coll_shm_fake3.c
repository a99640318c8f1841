/* oxmpi-test: np=3,4,8 timeout=180 env=OXMPI_FAKE_NODES=3:cyclic */
/* The collectives of coll_shm.h over three simulated nodes with ranks dealt round robin
   (no node's ranks are consecutive: non-commutative reductions take the point-to-point path). */
#include "coll_shm.h"
