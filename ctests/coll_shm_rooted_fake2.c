/* oxmpi-test: np=4,5 timeout=180 env=OXMPI_FAKE_NODES=2 env=OXMPI_COLL_SHM_SCATTER_MAX=2048 env=OXMPI_COLL_SHM_EXCHANGE_MAX=2048 */
/* The gathers and scatters of coll_shm_rooted.h on two simulated nodes (point to point between
   them; the lanes are used on one node only). */
#include "coll_shm_rooted.h"
