/* oxmpi-test: np=4 timeout=180 env=OXMPI_SPARSE=0 */
/* The same results with sparse reductions off (see coll_sparse.h). */
#include "coll_sparse.h"
