/* oxmpi-test: np=2,3,4,8 timeout=180 env=OXMPI_ALLREDUCE_ALG=recdbl */
/* Sparse-aware Allreduce by recursive doubling (see coll_sparse.h). */
#include "coll_sparse.h"
