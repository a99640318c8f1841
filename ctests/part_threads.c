/* oxmpi-test: np=1,2,3,4,5 timeout=180 */
/* Partitioned communication at MPI_THREAD_MULTIPLE around a ring: in each cycle, after the
 * main thread starts both requests, NT threads mark the sender's partitions ready at once
 * (each its own partitions, by MPI_Pready, MPI_Pready_range and MPI_Pready_list) and poll
 * MPI_Parrived on their receiver partitions, checking each one's data as soon as it has
 * arrived; the main thread waits for both requests meanwhile (odd cycles) or after the
 * threads are done (even ones). The receiver cuts the buffer into half as many partitions as
 * the sender. */
#include "mtest.h"
#include <pthread.h>

#define NT 4
#define SPARTS 32
#define SCOUNT 300
#define RPARTS (SPARTS / 2)
#define RCOUNT (2 * SCOUNT)
#define TOTAL (SPARTS * SCOUNT)
#define CYCLES 6

static int next, prev, cycle;
static int sbuf[TOTAL], rbuf[TOTAL];
static MPI_Request sreq, rreq;

static int value(int who, int c, int i)
{
    return who * 1000000 + c * 100000 + i;
}

static void *work(void *arg)
{
    int t = (int)(long)arg, p, i, per = SPARTS / NT;
    int lo = t * per, hi = lo + per - 1;
    /* Partitions lo..hi: the first by MPI_Pready, the next two by MPI_Pready_list, the rest by
     * MPI_Pready_range, in an order that differs from thread to thread. */
    int list[2] = {lo + 2, lo + 1};
    MPI_CHECK(MPI_Pready(lo, sreq));
    MPI_CHECK(MPI_Pready_list(2, list, sreq));
    MPI_CHECK(MPI_Pready_range(lo + 3, hi, sreq));
    int rper = RPARTS / NT, done = 0, seen[RPARTS / NT] = {0};
    double t0 = MPI_Wtime();
    while (done < rper && MPI_Wtime() - t0 < 60) {
        for (p = 0; p < rper; p++) {
            int flag = 0, part = t * rper + p;
            if (seen[p])
                continue;
            MPI_CHECK(MPI_Parrived(rreq, part, &flag));
            if (!flag)
                continue;
            seen[p] = 1;
            done++;
            for (i = part * RCOUNT; i < (part + 1) * RCOUNT; i++)
                if (rbuf[i] != value(prev, cycle, i)) {
                    CHECK(0, "thread %d cycle %d: partition %d element %d is %d", t, cycle, part, i, rbuf[i]);
                    break;
                }
        }
    }
    CHECK(done == rper, "thread %d: %d of %d partitions arrived", t, done, rper);
    return NULL;
}

int main(int argc, char **argv)
{
    int provided = 0, i, t;
    pthread_t th[NT];
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &mt_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &mt_size);
    CHECK(provided == MPI_THREAD_MULTIPLE, "provided %d", provided);
    next = (mt_rank + 1) % mt_size;
    prev = (mt_rank + mt_size - 1) % mt_size;
    MPI_CHECK(MPI_Psend_init(sbuf, SPARTS, SCOUNT, MPI_INT, next, 1, MPI_COMM_WORLD, MPI_INFO_NULL, &sreq));
    MPI_CHECK(MPI_Precv_init(rbuf, RPARTS, RCOUNT, MPI_INT, prev, 1, MPI_COMM_WORLD, MPI_INFO_NULL, &rreq));
    for (cycle = 0; cycle < CYCLES; cycle++) {
        for (i = 0; i < TOTAL; i++) {
            sbuf[i] = value(mt_rank, cycle, i);
            rbuf[i] = -1;
        }
        MPI_Request both[2] = {sreq, rreq};
        MPI_CHECK(MPI_Startall(2, both));
        for (t = 0; t < NT; t++)
            pthread_create(&th[t], NULL, work, (void *)(long)t);
        /* Odd cycles: the main thread waits while the threads still mark partitions ready and
         * poll (on an inactive request MPI_Parrived says arrived, and the data is there). */
        if (cycle % 2)
            MPI_CHECK(MPI_Waitall(2, both, MPI_STATUSES_IGNORE));
        for (t = 0; t < NT; t++)
            pthread_join(th[t], NULL);
        if (cycle % 2 == 0)
            MPI_CHECK(MPI_Waitall(2, both, MPI_STATUSES_IGNORE));
        for (i = 0; i < TOTAL; i++)
            if (rbuf[i] != value(prev, cycle, i)) {
                CHECK(0, "cycle %d: element %d is %d", cycle, i, rbuf[i]);
                break;
            }
    }
    MPI_CHECK(MPI_Request_free(&sreq));
    MPI_CHECK(MPI_Request_free(&rreq));
    return mt_finalize();
}
