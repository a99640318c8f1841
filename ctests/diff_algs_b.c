/* oxmpi-test: np=2,3,4,5,8 timeout=240 env=OXMPI_COLL_SHM=0 env=OXMPI_ALLREDUCE_ALG=rabenseifner env=OXMPI_BCAST_ALG=scatter_allgather env=OXMPI_ALLGATHER_ALG=recdbl env=OXMPI_ALLTOALL_ALG=pairwise env=OXMPI_GATHER_ALG=binomial env=OXMPI_REDUCE_SCATTER_ALG=halving */
/* Differential harness with a second set of algorithm overrides (see diff_harness.h). */
#define DIFF_SEEDS "13,14"
#include "diff_harness.h"

int main(int argc, char **argv) { return diff_main(argc, argv); }
