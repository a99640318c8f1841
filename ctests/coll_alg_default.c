/* oxmpi-test: np=1,2,3,4,5,8 timeout=180 */
/* Collective results with the default algorithm selection (see coll_algs.h). */
#include "coll_algs.h"
