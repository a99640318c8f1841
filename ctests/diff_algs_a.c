/* oxmpi-test: np=2,3,4,5,8 timeout=240 env=OXMPI_COLL_SHM=0 env=OXMPI_ALLREDUCE_ALG=recdbl env=OXMPI_BCAST_ALG=binomial env=OXMPI_ALLGATHER_ALG=ring env=OXMPI_ALLTOALL_ALG=post env=OXMPI_GATHER_ALG=linear env=OXMPI_REDUCE_SCATTER_ALG=direct */
/* Differential harness with one set of algorithm overrides (see diff_harness.h). */
#define DIFF_SEEDS "11,12"
#include "diff_harness.h"

int main(int argc, char **argv) { return diff_main(argc, argv); }
