/* oxmpi-test: singleton np=2,8 env=OXMPI_SHM_SLOTS=0 env=OXMPI_EAGER_LIMIT=abc expect-exit=nonzero oxmpi-strict=exit,output expect-stderr="OXMPI_SHM_SLOTS=0 is not valid" expect-stderr="OXMPI_EAGER_LIMIT=abc is not valid" max-wall=10 */
/* OXMPI_SHM_SLOTS=0 (once a SIGBUS) and OXMPI_EAGER_LIMIT=abc (once silently
 * ignored) are refused by name: by mpiexec, which reads both, before it starts
 * anything, and by MPI_Init of a singleton. Another MPI ignores OXMPI_*
 * variables: there every rank just exits 1. */
#include "mtest.h"

int main(int argc, char **argv)
{
    int x = 1, y = 0;
    if (!MT_OXMPI)
        return 1; /* another MPI ignores OXMPI_* variables: nothing to test */
    mt_init(&argc, &argv);
    MPI_Allreduce(&x, &y, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    CHECK(y == mt_size, "allreduce gave %d", y);
    return mt_finalize();
}
