/* oxmpi-test: np=2,3,8 timeout=180 */
/* The collectives of coll_shm_rooted.h with the default settings (gather through the lanes;
   scatter, allgather, all-to-all and reduce-scatter through them while the node has a core
   per rank, else point to point). */
#include "coll_shm_rooted.h"
