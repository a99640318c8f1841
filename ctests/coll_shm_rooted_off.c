/* oxmpi-test: np=2,4 timeout=180 env=OXMPI_COLL_SHM_GATHER_MAX=0 env=OXMPI_COLL_SHM_SCATTER_MAX=0 env=OXMPI_COLL_SHM_EXCHANGE_MAX=0 */
/* The gathers and scatters of coll_shm_rooted.h and the allgathers and all-to-alls with the lane paths turned off (point to point). */
#include "coll_shm_rooted.h"
