/* oxmpi-test: np=1,2,4 expect-exit=nonzero expect-stderr="MPI_Send" oxmpi-strict=output max-wall=10 */
/* (MPICH 4.0.2 Hydra sometimes loses the message at np=4, hence oxmpi-strict=output.) */
/* Default error handler (MPI_ERRORS_ARE_FATAL): MPI_Send with a negative
 * count on rank 0 ends the whole job with a nonzero exit status and a message
 * naming the function, while the other ranks wait in MPI_Recv. */
#include "mtest.h"

int main(int argc, char **argv)
{
    int buf[4] = {0};
    mt_init(&argc, &argv);
    if (mt_rank == 0) {
        MPI_Send(buf, -1, MPI_INT, mt_size - 1, 0, MPI_COMM_WORLD);
        fprintf(stderr, "MPI_Send with count -1 returned under MPI_ERRORS_ARE_FATAL\n");
        return 0;
    }
    MPI_Recv(buf, 4, MPI_INT, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    printf("No Errors\n");
    MPI_Finalize();
    return 0;
}
