/* oxmpi-test: np=1,2,3,4,8 one-node="across nodes waiting threads at MPI_THREAD_MULTIPLE nap instead of sleeping on the doorbell (about 12% of a CPU, above the threshold)" */
/* At MPI_THREAD_MULTIPLE a blocking call waits outside the library lock and, once idle, sleeps
 * on the rank's doorbell. The thread leaving the library used to ring that doorbell for every
 * announced sleeper, including its own announcement, so a waiting thread never slept: it spun
 * through membarrier and futex calls, and collectives ran 100x slower than at
 * MPI_THREAD_SERIALIZED (mpi4py's test_cco_vec, whose thousands of Barrier/Gatherv calls at
 * np 4 ran for many minutes and looked hung). Checked: ranks that wait ~0.4 s for a late rank
 * in MPI_Barrier, MPI_Recv, and in two threads at once use a small part of that as CPU time;
 * and a Barrier/Gatherv loop in the pattern of mpi4py's testGatherv3 (every root, counts 0 to
 * size, receive arguments only at the root) gives the right values. */
#include "mtest.h"
#include <pthread.h>
#include <time.h>
#include <unistd.h>

#define LATE_US 400000
/* A sleeping waiter wakes every 20 ms at most, for a short poll; spinning takes all the CPU it
 * gets (some 15% or more of the wait even with 8 ranks on a loaded 2-core machine). */
#define MAX_CPU_SHARE 0.05

static double now(clockid_t clock)
{
    struct timespec ts;
    clock_gettime(clock, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

struct waiter {
    int tag;
    int got;
};

static void *recv_from_zero(void *arg)
{
    struct waiter *w = arg;
    MPI_CHECK(MPI_Recv(&w->got, 1, MPI_INT, 0, w->tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    return NULL;
}

/* Runs `wait` on every rank but 0, which joins LATE_US later through `release`; the waiting
 * ranks check their CPU time over the wait. */
static void check_idle_wait(const char *what, void (*wait)(void), void (*release)(void))
{
    if (mt_size == 1)
        return;
    mt_barrier();
    if (mt_rank == 0) {
        usleep(LATE_US);
        release();
        return;
    }
    double wall0 = now(CLOCK_MONOTONIC), cpu0 = now(CLOCK_PROCESS_CPUTIME_ID);
    wait();
    double wall = now(CLOCK_MONOTONIC) - wall0, cpu = now(CLOCK_PROCESS_CPUTIME_ID) - cpu0;
    CHECK(wall > LATE_US * 0.5e-6, "%s: returned after %.3f s, before the late rank joined", what, wall);
    /* oxmpi only: MPICH busy-polls while it waits. */
    CHECK_STRICT(cpu < MAX_CPU_SHARE * wall, "%s: waiting %.3f s took %.3f s of CPU time (the waiter did not sleep)",
          what, wall, cpu);
}

static void barrier(void)
{
    MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
}

static void recv_one(void)
{
    struct waiter w = {1, -1};
    recv_from_zero(&w);
    CHECK(w.got == 7, "MPI_Recv: got %d, expected 7", w.got);
}

static void send_one(void)
{
    int i, v = 7;
    for (i = 1; i < mt_size; i++)
        MPI_CHECK(MPI_Send(&v, 1, MPI_INT, i, 1, MPI_COMM_WORLD));
}

/* Two threads of a rank wait at once (each one's sleep must not wake the other for nothing). */
static void recv_two_threads(void)
{
    struct waiter a = {2, -1}, b = {3, -1};
    pthread_t t;
    pthread_create(&t, NULL, recv_from_zero, &a);
    recv_from_zero(&b);
    pthread_join(t, NULL);
    CHECK(a.got == 20 && b.got == 30, "two threads: got %d and %d, expected 20 and 30", a.got, b.got);
}

static void send_two(void)
{
    int i, a = 20, b = 30;
    for (i = 1; i < mt_size; i++) {
        MPI_CHECK(MPI_Send(&b, 1, MPI_INT, i, 3, MPI_COMM_WORLD));
        MPI_CHECK(MPI_Send(&a, 1, MPI_INT, i, 2, MPI_COMM_WORLD));
    }
}

/* mpi4py's testGatherv3: Barrier, Gatherv with the counts at the root only, Barrier, again. */
static void gatherv_rounds(void)
{
    int n = mt_size, root, count, i, k;
    int *counts = mt_malloc(n * sizeof(int)), *displs = mt_malloc(n * sizeof(int));
    int *sbuf = mt_malloc((n + 1) * sizeof(int)), *rbuf = mt_malloc(n * (n + 1) * sizeof(int));
    for (root = 0; root < n; root++) {
        for (count = 0; count <= n; count++) {
            for (k = 0; k < 2; k++) {
                for (i = 0; i < count; i++)
                    sbuf[i] = 1000 * mt_rank + 10 * count + i;
                for (i = 0; i < n * count; i++)
                    rbuf[i] = -1;
                for (i = 0; i < n; i++) {
                    counts[i] = count;
                    displs[i] = i * count;
                }
                if (k == 0)
                    MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
                if (mt_rank == root)
                    MPI_CHECK(MPI_Gatherv(sbuf, count, MPI_INT, rbuf, counts, displs, MPI_INT, root,
                                          MPI_COMM_WORLD));
                else
                    MPI_CHECK(MPI_Gatherv(sbuf, count, MPI_INT, NULL, NULL, NULL, MPI_INT, root, MPI_COMM_WORLD));
                MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
                if (mt_rank == root)
                    for (i = 0; i < n * count; i++) {
                        int want = 1000 * (i / count) + 10 * count + i % count;
                        CHECK(rbuf[i] == want, "gatherv root %d count %d: [%d] = %d, expected %d", root, count,
                              i, rbuf[i], want);
                    }
            }
        }
    }
    free(counts);
    free(displs);
    free(sbuf);
    free(rbuf);
}

int main(int argc, char **argv)
{
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &mt_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &mt_size);
    CHECK(provided == MPI_THREAD_MULTIPLE, "provided %d", provided);

    check_idle_wait("MPI_Barrier", barrier, barrier);
    check_idle_wait("MPI_Recv", recv_one, send_one);
    check_idle_wait("MPI_Recv in two threads", recv_two_threads, send_two);
    gatherv_rounds();
    return mt_finalize();
}
