/* oxmpi-test: np=1,2,3,4,5,8 timeout=240 env=OXMPI_COLL_SHM_ROOTED_COPY_MIN=0 */
/* The blocks of coll_pieces.h with single copy off, so blocks from 32 KiB up to the piece
 * limit travel in pieces where ranks outnumber cores (by default they move by single copy
 * there; coll_pieces.c). */
#include "coll_pieces.h"
