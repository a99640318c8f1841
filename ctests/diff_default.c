/* oxmpi-test: np=1,2,3,4,5,8 timeout=240 */
/* Differential harness with oxmpi's default paths (see diff_harness.h). */
#define DIFF_SEEDS "1,2"
#include "diff_harness.h"

int main(int argc, char **argv) { return diff_main(argc, argv); }
