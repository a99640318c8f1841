/* oxmpi-test: np=1,2,4 timeout=120 env=OXMPI_CMA=0 */
/* rma_basic.c with single copy disabled: windows over the program's memory reach the other
 * ranks by messages applied by their agents (the allocating flavours map memory as before). */
#include "rma_basic.c"
