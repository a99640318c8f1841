/* oxmpi-test: np=2,4,8 timeout=120 env=OXMPI_SPIN_US=20 */
/* Blocking receives posted before their message arrives (the receiver watches the sender's
 * ring for a few microseconds before it posts a request; OXMPI_SPIN_US=20 keeps that on
 * when ranks outnumber cores). Pairs (2k, 2k+1) ping-pong; the replier waits a little
 * before replying, so the first rank is inside MPI_Recv when the message comes:
 *   1. every size 0..200 B and around the eager limit, data checked, status checked;
 *   2. a message with another tag arriving first (not taken by the watch; received after);
 *   3. a synchronous send arriving (MPI_Ssend must complete);
 *   4. a rendezvous message (1 MiB) arriving during the watch;
 *   5. truncated messages, eager and rendezvous (MPI_ERR_TRUNCATE with MPI_ERRORS_RETURN; oxmpi
 *      delivers what fits);
 *   6. a message from a third rank arriving while rank 0 watches rank 1 (np >= 4);
 *   7. bad arguments on the blocking receive (MPI_ERR_TAG, MPI_ERR_RANK, MPI_ERR_COUNT). */
#include "mtest.h"

#include <stdlib.h>
#include <string.h>

#define BIG (1 << 20)

static unsigned char sbuf[BIG], rbuf[BIG + 64];

static void delay(double us)
{
    double t0 = MPI_Wtime();
    while ((MPI_Wtime() - t0) * 1e6 < us)
        ;
}

static void fill(unsigned char *p, int n, int seed)
{
    int i;
    for (i = 0; i < n; i++)
        p[i] = (unsigned char)(seed * 31 + i * 7 + 1);
}

static int verify(const unsigned char *p, int n, int seed)
{
    int i;
    for (i = 0; i < n; i++)
        if (p[i] != (unsigned char)(seed * 31 + i * 7 + 1))
            return i;
    return -1;
}

/* The first rank of the pair sends `n` bytes and receives the reply (sent after `wait_us`);
 * both sides check data, count, source and tag. */
static void round_trip(int peer, int first, int n, int tag, double wait_us)
{
    MPI_Status st;
    int count, bad;
    if (first) {
        fill(sbuf, n, n);
        memset(rbuf, 0, (size_t)n + 64);
        MPI_CHECK(MPI_Send(sbuf, n, MPI_BYTE, peer, tag, MPI_COMM_WORLD));
        MPI_CHECK(MPI_Recv(rbuf, n, MPI_BYTE, peer, tag, MPI_COMM_WORLD, &st));
        MPI_Get_count(&st, MPI_BYTE, &count);
        bad = verify(rbuf, n, n + 1);
        CHECK(bad < 0, "size %d: reply byte %d wrong", n, bad);
        CHECK(count == n && st.MPI_SOURCE == peer && st.MPI_TAG == tag, "size %d: status count %d src %d tag %d",
              n, count, st.MPI_SOURCE, st.MPI_TAG);
        CHECK(rbuf[n] == 0, "size %d: wrote past the message", n);
    } else {
        MPI_CHECK(MPI_Recv(rbuf, n, MPI_BYTE, peer, tag, MPI_COMM_WORLD, &st));
        bad = verify(rbuf, n, n);
        CHECK(bad < 0, "size %d: request byte %d wrong", n, bad);
        fill(sbuf, n, n + 1);
        delay(wait_us);
        MPI_CHECK(MPI_Send(sbuf, n, MPI_BYTE, peer, tag, MPI_COMM_WORLD));
    }
}

int main(int argc, char **argv)
{
    int n, peer, first, count, code, cls, i;
    int v = 0, w = 0;
    MPI_Status st;
    mt_init(&argc, &argv);
    if (mt_size % 2) {
        CHECK(0, "needs an even number of ranks, got %d", mt_size);
        return mt_finalize();
    }
    peer = mt_rank ^ 1;
    first = mt_rank % 2 == 0;
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);

    /* 1. sizes, replies after 0, 1 and 3 us (inside the watch) and 30 us (after it) */
    for (n = 0; n <= 200; n++)
        round_trip(peer, first, n, 1, (double)(n % 4 == 3 ? 30 : n % 3 * 1.5));
    for (n = 12 * 1024 - 64; n <= 12 * 1024 + 64; n += 8)
        round_trip(peer, first, n, 2, 1.0);

    /* 2. another tag first: the receive for tag 4 must not take the tag-3 message */
    if (first) {
        MPI_CHECK(MPI_Recv(&v, 1, MPI_INT, peer, 4, MPI_COMM_WORLD, &st));
        CHECK(v == 44 && st.MPI_TAG == 4, "tag 4: got %d tag %d", v, st.MPI_TAG);
        MPI_CHECK(MPI_Recv(&w, 1, MPI_INT, peer, 3, MPI_COMM_WORLD, &st));
        CHECK(w == 33 && st.MPI_TAG == 3, "tag 3: got %d tag %d", w, st.MPI_TAG);
    } else {
        delay(2);
        v = 33;
        MPI_CHECK(MPI_Send(&v, 1, MPI_INT, peer, 3, MPI_COMM_WORLD));
        delay(2);
        w = 44;
        MPI_CHECK(MPI_Send(&w, 1, MPI_INT, peer, 4, MPI_COMM_WORLD));
    }

    /* 3. a synchronous send arrives during the watch */
    for (i = 0; i < 20; i++) {
        if (first) {
            MPI_CHECK(MPI_Recv(&v, 1, MPI_INT, peer, 5, MPI_COMM_WORLD, &st));
            CHECK(v == i, "ssend %d: got %d", i, v);
        } else {
            delay(i % 3);
            MPI_CHECK(MPI_Ssend(&i, 1, MPI_INT, peer, 5, MPI_COMM_WORLD));
        }
    }

    /* 4. a rendezvous message arrives during the watch */
    if (first) {
        memset(rbuf, 0, BIG);
        MPI_CHECK(MPI_Recv(rbuf, BIG, MPI_BYTE, peer, 6, MPI_COMM_WORLD, &st));
        MPI_Get_count(&st, MPI_BYTE, &count);
        CHECK(count == BIG && verify(rbuf, BIG, 6) < 0, "rendezvous: count %d", count);
    } else {
        fill(sbuf, BIG, 6);
        delay(2);
        MPI_CHECK(MPI_Send(sbuf, BIG, MPI_BYTE, peer, 6, MPI_COMM_WORLD));
    }

    /* 5. truncation: 16 bytes into an 8-byte buffer */
    if (first) {
        memset(rbuf, 0, 64);
        code = MPI_Recv(rbuf, 8, MPI_BYTE, peer, 7, MPI_COMM_WORLD, &st);
        MPI_Error_class(code, &cls);
        CHECK(cls == MPI_ERR_TRUNCATE, "truncation: class %d", cls);
        CHECK(rbuf[8] == 0, "truncation: wrote past the buffer");
        /* MPI leaves the buffer's contents undefined here; oxmpi delivers what fits. */
        CHECK_STRICT(verify(rbuf, 8, 7) < 0, "truncation: delivered bytes wrong");
    } else {
        fill(sbuf, 16, 7);
        delay(1);
        MPI_CHECK(MPI_Send(sbuf, 16, MPI_BYTE, peer, 7, MPI_COMM_WORLD));
    }

    /* 5b. a rendezvous message (20000 B) arriving for a 4 KiB buffer (watched): truncated */
    if (first) {
        memset(rbuf, 0, 4096 + 64);
        code = MPI_Recv(rbuf, 4096, MPI_BYTE, peer, 9, MPI_COMM_WORLD, &st);
        MPI_Error_class(code, &cls);
        CHECK(cls == MPI_ERR_TRUNCATE, "rendezvous truncation: class %d", cls);
        CHECK(rbuf[4096] == 0, "rendezvous truncation: wrote past the buffer");
        CHECK_STRICT(verify(rbuf, 4096, 9) < 0, "rendezvous truncation: delivered bytes wrong");
    } else {
        fill(sbuf, 20000, 9);
        delay(1);
        MPI_CHECK(MPI_Send(sbuf, 20000, MPI_BYTE, peer, 9, MPI_COMM_WORLD));
    }

    /* 6. rank 0 watches rank 1 while rank 2 sends to it; both messages arrive */
    if (mt_size >= 4) {
        if (mt_rank == 0) {
            MPI_CHECK(MPI_Recv(&v, 1, MPI_INT, 1, 8, MPI_COMM_WORLD, &st));
            CHECK(v == 1, "from rank 1: got %d", v);
            MPI_CHECK(MPI_Recv(&w, 1, MPI_INT, 2, 8, MPI_COMM_WORLD, &st));
            CHECK(w == 2, "from rank 2: got %d", w);
        } else if (mt_rank == 1 || mt_rank == 2) {
            v = mt_rank;
            delay(mt_rank == 1 ? 3 : 0);
            MPI_CHECK(MPI_Send(&v, 1, MPI_INT, 0, 8, MPI_COMM_WORLD));
        }
    }

    /* 7. bad arguments */
    code = MPI_Recv(&v, 1, MPI_INT, peer, -5, MPI_COMM_WORLD, &st);
    MPI_Error_class(code, &cls);
    CHECK(cls == MPI_ERR_TAG, "bad tag: class %d", cls);
    code = MPI_Recv(&v, 1, MPI_INT, mt_size, 1, MPI_COMM_WORLD, &st);
    MPI_Error_class(code, &cls);
    CHECK(cls == MPI_ERR_RANK, "bad rank: class %d", cls);
    code = MPI_Recv(&v, -1, MPI_INT, peer, 1, MPI_COMM_WORLD, &st);
    MPI_Error_class(code, &cls);
    CHECK(cls == MPI_ERR_COUNT, "bad count: class %d", cls);

    return mt_finalize();
}
