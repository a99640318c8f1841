/* oxmpi-test: np=2,4,8 expect-exit=nonzero oxmpi-strict=exit max-wall=10 one-node="oxmpi's mpiexec ending a job (across hosts it is Hydra's job until mpiexec launches on many hosts)" */
/* A rank that exits (status 0) without calling MPI_Finalize while the others
 * block in MPI_Recv from it: the job ends promptly with a nonzero status.
 * (MPICH 4.0.2 Hydra exits 0 here at np=2, hence oxmpi-strict=exit.) */
#include "mtest.h"
#include <unistd.h>

int main(int argc, char **argv)
{
    int x = 0;
    mt_init(&argc, &argv);
    if (mt_rank == mt_size - 1) {
        usleep(100000);
        exit(0);
    }
    MPI_Recv(&x, 1, MPI_INT, mt_size - 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    printf("No Errors\n");
    MPI_Finalize();
    return 0;
}
