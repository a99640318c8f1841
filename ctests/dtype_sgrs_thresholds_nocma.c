/* oxmpi-test: np=2 timeout=120 env=OXMPI_CMA=0 */
/* dtype_sgrs_thresholds.c with single-copy reads disabled: every rendezvous message of a
 * non-contiguous layout is packed by the sender (announced as being packed) and streams through
 * the rings; block lists are never read. */
#include "dtype_sgrs_thresholds.c"
