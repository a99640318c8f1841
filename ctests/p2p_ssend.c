/* oxmpi-test: np=1,2,4 */
/* Synchronous mode: MPI_Issend does not complete before the matching receive
 * has started. The receiver is held back by a message with another tag, and
 * a probe of the synchronous message (not a receive) must not complete it
 * either. Also blocking MPI_Ssend of small and large messages, and Issend to
 * self. */
#include "mtest.h"
#include <unistd.h>

static void poll_incomplete(MPI_Request *rq, const char *when)
{
    int i, flag = 0;
    for (i = 0; i < 20 && !flag; i++) {
        MPI_CHECK(MPI_Test(rq, &flag, MPI_STATUS_IGNORE));
        usleep(1000);
    }
    CHECK(!flag, "MPI_Issend completed %s", when);
}

int main(int argc, char **argv)
{
    int big = 300000, i, x = 0;
    int *sb, *rb;
    MPI_Request rq;
    MPI_Status st;

    mt_init(&argc, &argv);
    sb = mt_malloc(sizeof(int) * big);
    rb = mt_malloc(sizeof(int) * big);
    for (i = 0; i < big; i++)
        sb[i] = i ^ mt_rank;

    /* Issend to self: incomplete until the receive is posted. */
    MPI_CHECK(MPI_Issend(sb, 10, MPI_INT, 0, 1, MPI_COMM_SELF, &rq));
    poll_incomplete(&rq, "to self before any receive was posted");
    MPI_CHECK(MPI_Recv(rb, 10, MPI_INT, 0, 1, MPI_COMM_SELF, &st));
    MPI_CHECK(MPI_Wait(&rq, MPI_STATUS_IGNORE));
    CHECK(rb[9] == (9 ^ mt_rank), "self Issend data");

    if (mt_size >= 2 && mt_rank < 2) {
        int n;
        for (n = 1; n <= big; n = n * 30 + 7) {
            if (n > big)
                n = big;
            if (mt_rank == 0) {
                MPI_CHECK(MPI_Issend(sb, n, MPI_INT, 1, 10, MPI_COMM_WORLD, &rq));
                poll_incomplete(&rq, "before the receiver did anything");
                /* Let rank 1 probe the message, and wait for its report. */
                MPI_CHECK(MPI_Send(&x, 0, MPI_INT, 1, 11, MPI_COMM_WORLD));
                MPI_CHECK(MPI_Recv(&x, 0, MPI_INT, 1, 12, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
                poll_incomplete(&rq, "after a probe (no receive was started)");
                /* Now let rank 1 receive it. */
                MPI_CHECK(MPI_Send(&x, 0, MPI_INT, 1, 13, MPI_COMM_WORLD));
                MPI_CHECK(MPI_Wait(&rq, &st));
            } else {
                int count = -1;
                MPI_CHECK(MPI_Recv(&x, 0, MPI_INT, 0, 11, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
                MPI_CHECK(MPI_Probe(0, 10, MPI_COMM_WORLD, &st));
                MPI_CHECK(MPI_Get_count(&st, MPI_INT, &count));
                CHECK(count == n, "probe of the Issend message: count %d want %d", count, n);
                MPI_CHECK(MPI_Send(&x, 0, MPI_INT, 0, 12, MPI_COMM_WORLD));
                MPI_CHECK(MPI_Recv(&x, 0, MPI_INT, 0, 13, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
                memset(rb, 0, sizeof(int) * n);
                MPI_CHECK(MPI_Recv(rb, n, MPI_INT, 0, 10, MPI_COMM_WORLD, &st));
                CHECK(rb[0] == 0 && rb[n - 1] == ((n - 1) ^ 0), "Issend data n=%d", n);
            }
            if (n == big)
                break;
        }
        /* Blocking Ssend both ways, small and large. */
        for (n = 1; n <= big; n *= 100) {
            if (mt_rank == 0) {
                MPI_CHECK(MPI_Ssend(sb, n, MPI_INT, 1, 20, MPI_COMM_WORLD));
                MPI_CHECK(MPI_Recv(rb, n, MPI_INT, 1, 21, MPI_COMM_WORLD, &st));
                CHECK(rb[n - 1] == ((n - 1) ^ 1), "Ssend reply data n=%d", n);
            } else {
                MPI_CHECK(MPI_Recv(rb, n, MPI_INT, 0, 20, MPI_COMM_WORLD, &st));
                CHECK(rb[n - 1] == ((n - 1) ^ 0), "Ssend data n=%d", n);
                MPI_CHECK(MPI_Ssend(sb, n, MPI_INT, 0, 21, MPI_COMM_WORLD));
            }
        }
    }
    free(sb);
    free(rb);
    return mt_finalize();
}
