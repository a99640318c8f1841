/* oxmpi-test: np=2,3,5,8 timeout=180 env=OXMPI_ALLGATHER_ALG=direct env=OXMPI_REDUCE_SCATTER_ALG=direct */
/* Persistent collective results with the direct allgather and reduce-scatter schedules (see
 * coll_algs.h). */
#define COLL_ALGS_PERSISTENT
#include "coll_algs.h"
