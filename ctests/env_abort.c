/* oxmpi-test: np=1,2,4 expect-exit=7 expect-output="abort" oxmpi-strict=output max-wall=10 */
/* (MPICH 4.0.2 sometimes prints no message at np=4, hence oxmpi-strict=output.) */
/* MPI_Abort from the last rank while the others block in MPI_Recv: the job
 * ends promptly with the abort code (7) as exit status, and no rank prints "No Errors". */
#include "mtest.h"

int main(int argc, char **argv)
{
    int x = 0;
    mt_init(&argc, &argv);
    if (mt_rank == mt_size - 1) {
        MPI_Abort(MPI_COMM_WORLD, 7);
        fprintf(stderr, "MPI_Abort returned\n");
        return 0;
    }
    /* Never satisfied: nobody sends this. */
    MPI_Recv(&x, 1, MPI_INT, mt_size - 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    printf("No Errors\n");
    MPI_Finalize();
    return 0;
}
