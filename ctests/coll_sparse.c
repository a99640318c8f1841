/* oxmpi-test: np=1,2,3,4,5,8 timeout=180 */
/* Sparse-aware Allreduce/Reduce with the default algorithms (see coll_sparse.h). */
#include "coll_sparse.h"
