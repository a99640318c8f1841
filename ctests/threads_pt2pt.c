/* oxmpi-test: np=1,2,4,8 timeout=120 */
/* MPI_THREAD_MULTIPLE point-to-point: 4 threads per rank each run a ping-pong with the
 * partner rank (rank ^ 1; itself when it has none) on their own tag, half of them on
 * MPI_COMM_WORLD and half on a communicator of their own; small (eager) and large
 * (rendezvous) messages; every payload is checked. */
#include "mtest.h"
#include <pthread.h>

#define NT 4
#define ITERS 100
#define BIG 65536

static MPI_Comm comms[NT];
static int partner;
static int errs[NT];

static void *pingpong(void *arg)
{
    int t = (int) (long) arg, i, k;
    MPI_Comm comm = comms[t];
    int *out = malloc(BIG * sizeof(int)), *in = malloc(BIG * sizeof(int));
    for (i = 0; i < ITERS; i++) {
        int n = (i % 25 == 24) ? BIG : 1 + (i % 8);
        MPI_Status st;
        for (k = 0; k < n; k++)
            out[k] = mt_rank * 1000003 + t * 10007 + i * 31 + k;
        for (k = 0; k < n; k++)
            in[k] = -1;
        if (partner == mt_rank) {
            MPI_Sendrecv(out, n, MPI_INT, partner, t, in, n, MPI_INT, partner, t, comm, &st);
        } else if (mt_rank < partner) {
            MPI_Send(out, n, MPI_INT, partner, t, comm);
            MPI_Recv(in, n, MPI_INT, partner, t, comm, &st);
        } else {
            MPI_Recv(in, n, MPI_INT, partner, t, comm, &st);
            MPI_Send(out, n, MPI_INT, partner, t, comm);
        }
        if (st.MPI_SOURCE != partner || st.MPI_TAG != t)
            errs[t]++;
        for (k = 0; k < n; k++)
            if (in[k] != partner * 1000003 + t * 10007 + i * 31 + k) {
                errs[t]++;
                break;
            }
    }
    free(out);
    free(in);
    return NULL;
}

int main(int argc, char **argv)
{
    int provided, t, qt;
    pthread_t th[NT];

    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &mt_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &mt_size);
    CHECK(provided == MPI_THREAD_MULTIPLE, "provided %d, not MPI_THREAD_MULTIPLE", provided);
    MPI_Query_thread(&qt);
    CHECK(qt == MPI_THREAD_MULTIPLE, "MPI_Query_thread gave %d", qt);
    partner = (mt_rank ^ 1) < mt_size ? (mt_rank ^ 1) : mt_rank;
    for (t = 0; t < NT; t++) {
        if (t % 2)
            MPI_Comm_dup(MPI_COMM_WORLD, &comms[t]);
        else
            comms[t] = MPI_COMM_WORLD;
    }
    for (t = 0; t < NT; t++)
        pthread_create(&th[t], NULL, pingpong, (void *) (long) t);
    for (t = 0; t < NT; t++) {
        pthread_join(th[t], NULL);
        CHECK(errs[t] == 0, "thread %d: %d wrong messages", t, errs[t]);
    }
    for (t = 1; t < NT; t += 2)
        MPI_Comm_free(&comms[t]);
    return mt_finalize();
}
