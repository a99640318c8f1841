/* oxmpi-test: np=2,3,5,8 timeout=240 env=OXMPI_COLL_SHM=0 */
/* Differential harness with point-to-point collectives only (no shared-memory path) (see diff_harness.h). */
#define DIFF_SEEDS "5,6"
#include "diff_harness.h"

int main(int argc, char **argv) { return diff_main(argc, argv); }
