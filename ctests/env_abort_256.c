/* oxmpi-test: np=1,2,8 expect-exit=nonzero expect-output="abort" oxmpi-strict=exit,output max-wall=10 */
/* MPI_Abort(MPI_COMM_WORLD, 256) from rank 0 while the others block in
 * MPI_Recv: 256 modulo 256 is 0, yet an aborted job must not look like
 * success, so the status is non-zero. (MPICH 4.0's mpiexec exits 0 here,
 * hence oxmpi-strict.) */
#include "mtest.h"

int main(int argc, char **argv)
{
    int x = 0;
    mt_init(&argc, &argv);
    if (mt_rank == 0)
        MPI_Abort(MPI_COMM_WORLD, 256);
    MPI_Recv(&x, 1, MPI_INT, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    printf("No Errors\n");
    return mt_finalize();
}
