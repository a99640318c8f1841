/* oxmpi-test: np=1,2,3,4,5,8 timeout=240 */
/* Gather/scatter blocks around the eager and piece limits at the default settings: where
 * ranks outnumber cores, pieces below 32 KiB blocks and single copy from there (see
 * coll_pieces.h; coll_pieces_nocopy.c keeps the pieces up to the piece limit). */
#include "coll_pieces.h"
