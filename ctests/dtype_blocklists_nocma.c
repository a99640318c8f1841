/* oxmpi-test: np=2 env=OXMPI_CMA=0 */
/* dtype_blocklists.c with single-copy reads disabled: rendezvous data of non-contiguous
 * layouts streams through the rings, packed straight into the slots and unpacked from them. */
#include "dtype_blocklists.c"
