/* oxmpi-test: np=2,4,8 timeout=240 env=OXMPI_CMA=0 env=OXMPI_EAGER_PIECE=0 */
/* Differential harness without single-copy transfers or eager pieces (see diff_harness.h). */
#define DIFF_SEEDS "7,8"
#include "diff_harness.h"

int main(int argc, char **argv) { return diff_main(argc, argv); }
