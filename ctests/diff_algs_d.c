/* oxmpi-test: np=2,3,4,5,8 timeout=240 env=OXMPI_COLL_SHM=0 env=OXMPI_ALLREDUCE_ALG=reduce_bcast env=OXMPI_ALLGATHER_ALG=direct env=OXMPI_REDUCE_SCATTER_ALG=reduce_scatter */
/* Differential harness with a fourth set of algorithm overrides (see diff_harness.h). */
#define DIFF_SEEDS "17,18"
#include "diff_harness.h"

int main(int argc, char **argv) { return diff_main(argc, argv); }
