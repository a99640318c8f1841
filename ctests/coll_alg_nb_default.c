/* oxmpi-test: np=1,2,3,4,5,8 timeout=180 */
/* Nonblocking collective results with the default algorithm selection (see coll_algs.h). */
#define COLL_ALGS_NONBLOCKING
#include "coll_algs.h"
