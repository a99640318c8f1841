/* oxmpi-test: np=1,2,3,4,8 timeout=180 env=OXMPI_COLL_SHM_SCATTER_MAX=2048 env=OXMPI_COLL_SHM_EXCHANGE_MAX=2048 */
/* Small gathers and scatters through the shared-memory lanes (see coll_shm_rooted.h). */
#include "coll_shm_rooted.h"
