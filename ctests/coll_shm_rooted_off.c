/* oxmpi-test: np=2,4 timeout=180 env=OXMPI_COLL_SHM_ROOTED_MAX=0 */
/* The gathers and scatters of coll_shm_rooted.h with the lane path turned off (point to point). */
#include "coll_shm_rooted.h"
