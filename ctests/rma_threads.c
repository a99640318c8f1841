/* oxmpi-test: np=1,2,4 timeout=180 */
/* MPI_THREAD_MULTIPLE one-sided communication: 4 threads per rank share one window inside
 * one MPI_Win_lock_all epoch; each takes tickets from a counter on rank 0 with
 * Fetch_and_op, adds into every rank's counter with Accumulate, puts into its own slots of
 * the next rank and flushes, all at once. Every ticket is handed out exactly once, the sums
 * are exact, and the puts land. Then each thread fences a window of its own, threads
 * starting in a different order on each rank: a fence once held the library for its whole
 * barrier, and ranks whose threads fenced different windows first waited for each other
 * forever (MPICH's threads/rma/multifence). */
#include "mtest.h"
#include <pthread.h>

#define NT 4
#define ITERS 200

static MPI_Win win;
static long *mem; /* [0]: ticket counter, [1]: sum, [2 + t]: thread t's put slot */
static long tickets[NT][ITERS];

static void *run(void *arg)
{
    int t = (int)(long)arg, n = mt_size, right = (mt_rank + 1) % n;
    for (int i = 0; i < ITERS; i++) {
        long one = 1, v = mt_rank * 1000 + t * 100 + i;
        MPI_Fetch_and_op(&one, &tickets[t][i], MPI_LONG, 0, 0, MPI_SUM, win);
        MPI_Win_flush(0, win);
        MPI_Accumulate(&one, 1, MPI_LONG, i % n, 1, 1, MPI_LONG, MPI_SUM, win);
        MPI_Put(&v, 1, MPI_LONG, right, 2 + t, 1, MPI_LONG, win);
        MPI_Win_flush_all(win);
    }
    return NULL;
}

#define FENCES 20
static MPI_Win wins[NT];
static int *wmem[NT];
static int fence_errs[NT];

static void *fence_run(void *arg)
{
    int t = (int)(long)arg, n = mt_size, right = (mt_rank + 1) % n, left = (mt_rank + n - 1) % n;
    for (int i = 0; i < FENCES; i++) {
        int v = mt_rank * 1000 + t * 100 + i;
        MPI_Win_fence(0, wins[t]);
        MPI_Put(&v, 1, MPI_INT, right, 0, 1, MPI_INT, wins[t]);
        MPI_Win_fence(0, wins[t]);
        if (wmem[t][0] != left * 1000 + t * 100 + i)
            fence_errs[t]++;
    }
    return NULL;
}

int main(int argc, char **argv)
{
    int provided, n;
    pthread_t th[NT];
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &mt_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &mt_size);
    n = mt_size;
    CHECK(provided == MPI_THREAD_MULTIPLE, "provided %d", provided);
    MPI_Win_allocate((2 + NT) * sizeof(long), sizeof(long), MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &win);
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, mt_rank, 0, win);
    for (int i = 0; i < 2 + NT; i++)
        mem[i] = -1;
    mem[0] = mem[1] = 0;
    MPI_Win_unlock(mt_rank, win);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_lock_all(0, win);
    for (int t = 0; t < NT; t++)
        pthread_create(&th[t], NULL, run, (void *)(long)t);
    for (int t = 0; t < NT; t++)
        pthread_join(th[t], NULL);
    MPI_Win_unlock_all(win);
    MPI_Barrier(MPI_COMM_WORLD);

    /* every ticket once */
    long *all = malloc(sizeof(long) * NT * ITERS * n);
    MPI_Allgather(tickets, NT * ITERS, MPI_LONG, all, NT * ITERS, MPI_LONG, MPI_COMM_WORLD);
    char *seen = calloc((size_t)(NT * ITERS * n), 1);
    for (long i = 0; i < (long)NT * ITERS * n; i++) {
        CHECK(all[i] >= 0 && all[i] < (long)NT * ITERS * n && !seen[all[i]], "ticket %ld twice or out of range",
              all[i]);
        if (all[i] >= 0 && all[i] < (long)NT * ITERS * n)
            seen[all[i]] = 1;
    }
    MPI_Win_lock(MPI_LOCK_SHARED, mt_rank, 0, win);
    if (mt_rank == 0)
        CHECK(mem[0] == (long)NT * ITERS * n, "counter %ld", mem[0]);
    /* rank r's sum: every thread of every rank added 1 at iterations i with i % n == r */
    long per_thread = 0;
    for (int i = 0; i < ITERS; i++)
        per_thread += i % n == mt_rank;
    CHECK(mem[1] == per_thread * NT * n, "sum %ld, expected %ld", mem[1], per_thread * NT * n);
    int left = (mt_rank + n - 1) % n;
    for (int t = 0; t < NT; t++)
        CHECK(mem[2 + t] == left * 1000 + t * 100 + ITERS - 1, "slot %d is %ld", t, mem[2 + t]);
    MPI_Win_unlock(mt_rank, win);
    free(all);
    free(seen);
    MPI_Win_free(&win);

    for (int t = 0; t < NT; t++)
        MPI_Win_allocate(sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &wmem[t], &wins[t]);
    for (int t = 0; t < NT; t++) {
        int tt = (t + mt_rank) % NT; /* a different first thread on each rank */
        pthread_create(&th[tt], NULL, fence_run, (void *)(long)tt);
    }
    for (int t = 0; t < NT; t++) {
        pthread_join(th[t], NULL);
        /* MPICH 4.0.2 reads the previous round's value here now and then */
        CHECK_STRICT(fence_errs[t] == 0, "thread %d: %d fences read the wrong value", t, fence_errs[t]);
    }
    for (int t = 0; t < NT; t++)
        MPI_Win_free(&wins[t]);
    return mt_finalize();
}
