/* oxmpi-test: np=2,3,4,5,8 timeout=240 env=OXMPI_COLL_SHM=0 env=OXMPI_ALLREDUCE_ALG=ring env=OXMPI_ALLGATHER_ALG=bruck env=OXMPI_ALLTOALL_ALG=bruck env=OXMPI_REDUCE_SCATTER_ALG=pairwise */
/* Differential harness with a third set of algorithm overrides (see diff_harness.h). */
#define DIFF_SEEDS "15,16"
#include "diff_harness.h"

int main(int argc, char **argv) { return diff_main(argc, argv); }
