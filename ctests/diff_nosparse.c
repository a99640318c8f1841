/* oxmpi-test: np=3,4,8 timeout=240 env=OXMPI_SPARSE=0 */
/* Differential harness with sparse reductions off (see diff_harness.h). */
#define DIFF_SEEDS "3,4"
#include "diff_harness.h"

int main(int argc, char **argv) { return diff_main(argc, argv); }
