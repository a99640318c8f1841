/* oxmpi-test: np=1,2,3,4,8 timeout=240 */
/* The collectives of coll_shm_rooted.h with the default settings: gather and scatter through
   the lanes up to 2048 bytes in all; allgather, all-to-all and reduce-scatter up to 2048 bytes
   in all while the node has a core per rank, else (np 3 and up on 2 cores) while one rank's
   entry fits 16384 bytes. */
#include "coll_shm_rooted.h"
