/* oxmpi-test: np=2,4,8 */
/* Oversubscription: a ring of ping-pongs. In phase A even ranks ping their
 * right neighbour, in phase B odd ranks do, so every neighbour pair of the
 * ring exchanges many short round trips. With more ranks than cores this
 * only finishes quickly if waiting ranks yield the CPU. */
#include "mtest.h"

#define ITERS 100 /* MPICH 4.0.2 needs ~2 s for this at np=8 on 2 cores */

static void pingpong(int peer, int initiator, int phase)
{
    int i, v;
    MPI_Status st;
    for (i = 0; i < ITERS; i++) {
        if (initiator) {
            v = i;
            MPI_CHECK(MPI_Send(&v, 1, MPI_INT, peer, phase, MPI_COMM_WORLD));
            MPI_CHECK(MPI_Recv(&v, 1, MPI_INT, peer, phase, MPI_COMM_WORLD, &st));
            CHECK(v == i + 1, "phase %d: reply %d to %d", phase, v, i);
            if (v != i + 1)
                break;
        } else {
            MPI_CHECK(MPI_Recv(&v, 1, MPI_INT, peer, phase, MPI_COMM_WORLD, &st));
            CHECK(v == i, "phase %d: ping %d, want %d", phase, v, i);
            v = v + 1;
            MPI_CHECK(MPI_Send(&v, 1, MPI_INT, peer, phase, MPI_COMM_WORLD));
            if (v != i + 1)
                break;
        }
    }
}

int main(int argc, char **argv)
{
    int right, left;
    double t0;
    mt_init(&argc, &argv);
    if (mt_size % 2) {
        CHECK(mt_size % 2 == 0, "needs an even number of ranks, got %d", mt_size);
        return mt_finalize();
    }
    right = (mt_rank + 1) % mt_size;
    left = (mt_rank + mt_size - 1) % mt_size;
    t0 = MPI_Wtime();
    /* phase A: pairs (0,1), (2,3), ...; phase B: pairs (1,2), (3,4), ..., (n-1,0) */
    if (mt_rank % 2 == 0)
        pingpong(right, 1, 1);
    else
        pingpong(left, 0, 1);
    if (mt_size > 2) {
        if (mt_rank % 2 == 1)
            pingpong(right, 1, 2);
        else
            pingpong(left, 0, 2);
    }
    if (mt_rank == 0 && getenv("OXMPI_CTEST_VERBOSE"))
        fprintf(stderr, "%d round trips per pair in %.3f s\n", ITERS, MPI_Wtime() - t0);
    return mt_finalize();
}
