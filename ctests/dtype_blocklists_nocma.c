/* oxmpi-test: np=2 env=OXMPI_CMA=0 */
/* dtype_blocklists.c with single-copy reads disabled: rendezvous data of non-contiguous
 * layouts is packed by the sender and streams through the rings. */
#include "dtype_blocklists.c"
