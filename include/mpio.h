/* mpio.h for oxmpi: the MPI-IO declarations are part of mpi.h. */
#ifndef MPIO_INCLUDE
#define MPIO_INCLUDE
#include "mpi.h"
#endif
