/* oxmpi-test: np=2,8 timeout=120 env=OXMPI_CMA_SPLIT=32768 */
/* dtype_blocklists.c with shared single-copy transfers forced from 32 KiB at every rank count
 * (more ranks than cores included): large transfers of dense block lists (and contiguous data
 * into dense blocks, or the reverse) are copied by both ranks at once, the receiver reading
 * byte ranges from the front, the sender writing byte ranges from the back into the
 * receiver's blocks (whose list it reads out of band). */
#include "dtype_blocklists.c"
