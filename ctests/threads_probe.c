/* oxmpi-test: np=1,2,4,8 timeout=120 */
/* MPI_THREAD_MULTIPLE matched probes: every other rank (on a job of one, a thread of rank
 * 0) sends N messages to rank 0, whose 4 threads take them with MPI_Mprobe/MPI_Mrecv and
 * MPI_Improbe/MPI_Mrecv from the same stream (any source, one tag). Each message must be
 * received exactly once, whole. */
#include "mtest.h"
#include <pthread.h>

#define NT 4
#define N 200

static int total, claimed;
static int *seen;
static int errs[NT];

static void send_all(void)
{
    int i, msg[3];
    for (i = 0; i < N; i++) {
        msg[0] = mt_rank;
        msg[1] = i;
        msg[2] = mt_rank * 7 + i;
        MPI_Send(msg, 3, MPI_INT, 0, 7, MPI_COMM_WORLD);
    }
}

static void *sender(void *arg)
{
    (void) arg;
    send_all();
    return NULL;
}

static void *taker(void *arg)
{
    int t = (int) (long) arg, msg[3], flag, count;
    MPI_Message m;
    MPI_Status st;
    while (__atomic_fetch_add(&claimed, 1, __ATOMIC_SEQ_CST) < total) {
        if (t % 2) {
            MPI_Mprobe(MPI_ANY_SOURCE, 7, MPI_COMM_WORLD, &m, &st);
        } else {
            do
                MPI_Improbe(MPI_ANY_SOURCE, 7, MPI_COMM_WORLD, &flag, &m, &st);
            while (!flag);
        }
        MPI_Get_count(&st, MPI_INT, &count);
        MPI_Mrecv(msg, 3, MPI_INT, &m, MPI_STATUS_IGNORE);
        if (count != 3 || msg[0] != st.MPI_SOURCE || msg[1] < 0 || msg[1] >= N || msg[2] != msg[0] * 7 + msg[1]) {
            errs[t]++;
            continue;
        }
        __atomic_fetch_add(&seen[msg[0] * N + msg[1]], 1, __ATOMIC_SEQ_CST);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    int provided, t, i;
    pthread_t th[NT], snd;

    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &mt_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &mt_size);
    CHECK(provided == MPI_THREAD_MULTIPLE, "provided %d", provided);
    if (mt_rank == 0) {
        int senders = mt_size == 1 ? 1 : mt_size - 1;
        total = senders * N;
        seen = calloc(mt_size * N, sizeof(int));
        if (mt_size == 1)
            pthread_create(&snd, NULL, sender, NULL);
        for (t = 0; t < NT; t++)
            pthread_create(&th[t], NULL, taker, (void *) (long) t);
        for (t = 0; t < NT; t++) {
            pthread_join(th[t], NULL);
            CHECK(errs[t] == 0, "thread %d: %d corrupt messages", t, errs[t]);
        }
        if (mt_size == 1)
            pthread_join(snd, NULL);
        for (i = (mt_size == 1 ? 0 : N); i < mt_size * N; i++)
            CHECK(seen[i] == 1, "message %d of rank %d received %d times", i % N, i / N, seen[i]);
        free(seen);
    } else {
        send_all();
    }
    return mt_finalize();
}
