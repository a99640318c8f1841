/* oxmpi-test: np=3,4 timeout=180 env=OXMPI_ALLREDUCE_ALG=reduce_bcast env=OXMPI_SPARSE_RATIO=10 */
/* Sparse-aware Allreduce by reduce + bcast, sparse only below 10 % of the dense size (see coll_sparse.h). */
#include "coll_sparse.h"
