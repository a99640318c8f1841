/* oxmpi-test: np=2 timeout=120 env=OXMPI_CMA=0 */
/* dtype_sgrs_thresholds.c with single-copy reads disabled: every rendezvous message of a
 * non-contiguous layout streams through the rings, packed by the sender straight into the slots
 * and unpacked by the receiver straight from them; block lists are never read. */
#include "dtype_sgrs_thresholds.c"
