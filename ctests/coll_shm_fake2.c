/* oxmpi-test: np=2,3,4,8 timeout=180 env=OXMPI_FAKE_NODES=2 */
/* The collectives of coll_shm.h over two simulated nodes (blocks of ranks): shared memory
   within each node, point to point among the node leaders. */
#include "coll_shm.h"
