/* oxmpi-test: np=1,2,3,4,5 timeout=120 */
/* Partitions move as they become ready, not at the end: the sender marks its first
 * partition ready and then waits for the receiver to say it arrived (by MPI_Parrived, polled)
 * before it marks the others. The receiver checks that the data of that partition is there
 * and that the last partition has not arrived, then answers. Ranks pair up (rank ^ 1); a rank
 * without a partner sends to itself. Receiver partitions are half the sender's (two per sender
 * partition), with small (eager) and large (rendezvous-sized) partitions, over several cycles. */
#include "mtest.h"

#define CYCLES 3
#define ACK_TAG 99

static double value(int who, int cycle, long i)
{
    return who * 1e7 + cycle * 1e6 + (double)i;
}

static void run(int peer, int sparts, int scount)
{
    long total = (long)sparts * scount, i;
    int rparts = 2 * sparts, rcount = scount / 2, c, p;
    double *sbuf = mt_malloc(sizeof(double) * total), *rbuf = mt_malloc(sizeof(double) * total);
    MPI_Request s, r;
    MPI_CHECK(MPI_Psend_init(sbuf, sparts, scount, MPI_DOUBLE, peer, 3, MPI_COMM_WORLD, MPI_INFO_NULL, &s));
    MPI_CHECK(MPI_Precv_init(rbuf, rparts, rcount, MPI_DOUBLE, peer, 3, MPI_COMM_WORLD, MPI_INFO_NULL, &r));
    for (c = 0; c < CYCLES; c++) {
        for (i = 0; i < total; i++) {
            sbuf[i] = value(mt_rank, c, i);
            rbuf[i] = -1;
        }
        MPI_CHECK(MPI_Start(&r));
        MPI_CHECK(MPI_Start(&s));
        MPI_CHECK(MPI_Pready(0, s));
        /* Receive side (both roles run on every rank: each rank sends to and receives from
         * its partner): the first sender partition is receiver partitions 0 and 1. */
        int first = 0, second = 0, last = 0, ack = 0;
        double t0 = MPI_Wtime();
        while (!(first && second) && MPI_Wtime() - t0 < 30) {
            MPI_CHECK(MPI_Parrived(r, 0, &first));
            MPI_CHECK(MPI_Parrived(r, 1, &second));
        }
        CHECK(first && second, "%dx%d: the first partition did not arrive while the others were not ready", sparts,
              scount);
        MPI_CHECK(MPI_Parrived(r, rparts - 1, &last));
        CHECK(!last, "%dx%d: the last partition arrived before it was marked ready", sparts, scount);
        for (i = 0; i < scount; i++)
            if (rbuf[i] != value(peer, c, i)) {
                CHECK(0, "early partition: element %ld is %g", i, rbuf[i]);
                break;
            }
        CHECK(rbuf[scount] == -1, "data past the first partition was written early");
        if (peer != mt_rank) {
            MPI_CHECK(MPI_Sendrecv(&ack, 1, MPI_INT, peer, ACK_TAG, &ack, 1, MPI_INT, peer, ACK_TAG, MPI_COMM_WORLD,
                                   MPI_STATUS_IGNORE));
        }
        for (p = sparts - 1; p >= 1; p--)
            MPI_CHECK(MPI_Pready(p, s));
        MPI_CHECK(MPI_Wait(&s, MPI_STATUS_IGNORE));
        MPI_Status st;
        MPI_CHECK(MPI_Wait(&r, &st));
        CHECK(st.MPI_SOURCE == peer && st.MPI_TAG == 3, "status source %d tag %d", st.MPI_SOURCE, st.MPI_TAG);
        for (i = 0; i < total; i++)
            if (rbuf[i] != value(peer, c, i)) {
                CHECK(0, "%dx%d cycle %d: element %ld is %g", sparts, scount, c, i, rbuf[i]);
                break;
            }
    }
    MPI_Request_free(&s);
    MPI_Request_free(&r);
    free(sbuf);
    free(rbuf);
}

int main(int argc, char **argv)
{
    mt_init(&argc, &argv);
    int peer = mt_rank ^ 1;
    if (peer >= mt_size)
        peer = mt_rank;
    run(peer, 4, 64);
    run(peer, 8, 1000);
    run(peer, 3, 131072);
    return mt_finalize();
}
