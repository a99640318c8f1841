/* oxmpi-test: np=3,4,8 timeout=240 env=OXMPI_COLL_SHM_COPY_MIN=0 env=OXMPI_COLL_SHM_BCAST_COPY_MIN=0 env=OXMPI_COLL_SHM_REDUCE_COPY_MIN=0 env=OXMPI_COLL_SHM_EXCHANGE_COPY_MIN=0 env=OXMPI_COLL_SHM_ROOTED_COPY_MIN=0 env=OXMPI_COLL_PIECES=1 env=OXMPI_SPARSE_MIN=0 */
/* Differential harness with every single-copy collective path and eager pieces forced at every size, sparse checks on every vector (see diff_harness.h). */
#define DIFF_SEEDS "9,10"
#include "diff_harness.h"

int main(int argc, char **argv) { return diff_main(argc, argv); }
