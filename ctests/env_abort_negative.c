/* oxmpi-test: np=1,2,8 expect-exit=255 expect-output="abort" oxmpi-strict=output max-wall=10 */
/* MPI_Abort(MPI_COMM_WORLD, -1) from the last rank while the others block in
 * MPI_Recv: the job ends with status 255 (-1 modulo 256, as with MPICH), never
 * 0, and no rank prints "No Errors". */
#include "mtest.h"

int main(int argc, char **argv)
{
    int x = 0;
    mt_init(&argc, &argv);
    if (mt_rank == mt_size - 1)
        MPI_Abort(MPI_COMM_WORLD, -1);
    MPI_Recv(&x, 1, MPI_INT, mt_size - 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    printf("No Errors\n");
    return mt_finalize();
}
