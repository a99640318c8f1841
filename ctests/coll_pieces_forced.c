/* oxmpi-test: np=2,3,4,5,8 timeout=240 env=OXMPI_COLL_PIECES=1 env=OXMPI_EAGER_LIMIT=1000 env=OXMPI_COLL_PIECE_MAX=40000 env=OXMPI_GATHER_ALG=binomial */
/* Gather/scatter in eager pieces forced at every rank count, at tiny sizes (1000-byte pieces,
 * blocks * ranks up to 40000 bytes): binomial trees only (see
 * coll_pieces.h). */
#include "coll_pieces.h"
