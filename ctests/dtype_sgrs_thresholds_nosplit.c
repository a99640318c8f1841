/* oxmpi-test: np=2 timeout=120 env=OXMPI_CMA_SPLIT=0 */
/* dtype_sgrs_thresholds.c with shared single-copy transfers off: the receiver alone reads
 * block lists (send-gather / receive-scatter with process_vm_readv). */
#include "dtype_sgrs_thresholds.c"
