/* oxmpi-test: np=2,3,4,5,8 timeout=180 env=OXMPI_ALLREDUCE_ALG=rabenseifner env=OXMPI_SPARSE_RATIO=100 */
/* Sparse-aware Allreduce by Rabenseifner, sparse kept up to the dense size (see coll_sparse.h). */
#include "coll_sparse.h"
