/* oxmpi-test: np=2,8 timeout=180 env=OXMPI_CMA_SPLIT=32768 */
/* dtype_sgrs_thresholds.c with shared single-copy transfers forced from 32 KiB at every rank
 * count: block lists on either side are split between the two ranks (receiver from the front,
 * sender from the back), including several at once (the window of concurrent sends). */
#include "dtype_sgrs_thresholds.c"
