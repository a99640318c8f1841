/* Which ranks share a host, for tests of node-scoped features (MPI_COMM_TYPE_SHARED, shared
   files in /dev/shm) that must also hold when a job spans hosts. */
#ifndef OXMPI_SAME_HOST_H
#define OXMPI_SAME_HOST_H

#include <mpi.h>
#include <stdlib.h>
#include <string.h>

/* same[w] is 1 for the world ranks whose processor name is ours (this rank included);
   returns how many. `same` has MPI_COMM_WORLD's size. */
static inline int same_host_ranks(int *same)
{
    int size, len, n = 0, w;
    char mine[MPI_MAX_PROCESSOR_NAME] = {0};
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    char *names = (char *)calloc((size_t)size, MPI_MAX_PROCESSOR_NAME);
    if (names == NULL)
        MPI_Abort(MPI_COMM_WORLD, 2);
    MPI_Get_processor_name(mine, &len);
    MPI_Allgather(mine, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, names, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, MPI_COMM_WORLD);
    for (w = 0; w < size; w++) {
        same[w] = strcmp(names + (size_t)w * MPI_MAX_PROCESSOR_NAME, mine) == 0;
        n += same[w];
    }
    free(names);
    return n;
}

#endif
