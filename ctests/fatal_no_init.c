/* oxmpi-test: np=2,4,8 expect-exit=nonzero oxmpi-strict=exit,output expect-stderr="without calling MPI_Init" max-wall=10 timeout=20 one-node="oxmpi's mpiexec ending a job" */
/* The last rank exits with status 0 without ever calling MPI_Init while the
 * others wait for it in MPI_Init: the job ends promptly with a non-zero status
 * and a line naming the rank, and no rank prints "No Errors". (MPICH 4.0's
 * Hydra waits forever here: against another MPI every rank just exits 1.) */
#include "mtest.h"
#include <stdlib.h>

int main(int argc, char **argv)
{
    const char *rank = getenv("PMI_RANK"), *size = getenv("PMI_SIZE");
    if (!MT_OXMPI)
        return 1;
    if (rank && size && atoi(rank) == atoi(size) - 1)
        return 0;
    mt_init(&argc, &argv);
    MPI_Barrier(MPI_COMM_WORLD);
    printf("No Errors\n");
    MPI_Finalize();
    return 0;
}
