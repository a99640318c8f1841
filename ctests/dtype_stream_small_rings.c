/* oxmpi-test: np=2 timeout=180 env=OXMPI_SHM_SLOTS=4 env=OXMPI_CMA=0 */
/* dtype_stream.c with rings of 4 slots and single-copy transfers off: every rendezvous message
 * streams, and a stream waits for slots again and again (the receiver frees them while the
 * sender packs the next ones). */
#include "dtype_stream.c"
