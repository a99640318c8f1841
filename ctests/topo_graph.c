/* oxmpi-test: np=1 */
#include "comm_mtest.h"
int main(int argc, char **argv) { cm_init(&argc, &argv); return cm_finalize(); }
