/* oxmpi-test: np=2,3,5,8 timeout=180 env=OXMPI_ALLREDUCE_ALG=ring */
/* Sparse-aware Allreduce around the ring (see coll_sparse.h). */
#include "coll_sparse.h"
