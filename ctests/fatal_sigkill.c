/* oxmpi-test: np=2,4 expect-exit=nonzero expect-output="signal" max-wall=10 one-node="oxmpi's mpiexec ending a job (across hosts it is Hydra's job until mpiexec launches on many hosts)" */
/* A rank killed by SIGKILL while the others block in MPI_Recv from it: the
 * launcher must end the job promptly with a nonzero status (the harness
 * allows 10 s wall time, for loaded machines). */
#include "mtest.h"
#include <signal.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    int x = 0;
    mt_init(&argc, &argv);
    if (mt_rank == mt_size - 1) {
        /* let the others enter MPI_Recv first */
        usleep(100000);
        kill(getpid(), SIGKILL);
        pause();
    }
    MPI_Recv(&x, 1, MPI_INT, mt_size - 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    printf("No Errors\n");
    MPI_Finalize();
    return 0;
}
