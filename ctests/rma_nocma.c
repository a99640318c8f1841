/* oxmpi-test: np=1,2,4 timeout=120 env=OXMPI_CMA=0 one-node="windows whose members span nodes are not implemented yet" */
/* rma_basic.c with single copy disabled: windows over the program's memory reach only their
 * own process; the other flavours work as before. */
#define RMA_NOCMA 1
#include "rma_basic.c"
