/* oxmpi-test: np=1,4 expect-stdout="ring of" */
/* hello_ring: every rank says hello, then a token goes around the ring once,
 * each rank adding its rank. Point-to-point only.
 *
 *   mpicc hello_ring.c -o hello_ring && mpiexec -n 4 ./hello_ring
 */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    int rank, size, len;
    long token;
    char host[MPI_MAX_PROCESSOR_NAME];

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Get_processor_name(host, &len);
    printf("hello from rank %d of %d on %s\n", rank, size, host);

    if (size == 1) {
        token = 0;
    } else if (rank == 0) {
        token = 0;
        MPI_Send(&token, 1, MPI_LONG, 1, 0, MPI_COMM_WORLD);
        MPI_Recv(&token, 1, MPI_LONG, size - 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else {
        MPI_Recv(&token, 1, MPI_LONG, rank - 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        token += rank;
        MPI_Send(&token, 1, MPI_LONG, (rank + 1) % size, 0, MPI_COMM_WORLD);
    }
    if (rank == 0) {
        long want = (long)size * (size - 1) / 2;
        printf("ring of %d ranks: token %ld (%s)\n", size, token, token == want ? "ok" : "WRONG");
        /* the harness convention for a passing test */
        if (token == want)
            printf("No Errors\n");
    }
    MPI_Finalize();
    return token == (long)size * (size - 1) / 2 || rank != 0 ? 0 : 1;
}
