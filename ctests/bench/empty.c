/* Startup cost: MPI_Init and MPI_Finalize only (timed by scripts/compare.sh around mpiexec). */
#include <mpi.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Finalize();
    return 0;
}
