/* oxmpi-test: np=2,4,8 timeout=180 env=OXMPI_CMA_SPLIT=20000 */
/* Large contiguous messages copied by both ranks at once (the receiver reads chunks from the
 * front while the sender writes chunks from the back; OXMPI_CMA_SPLIT is the threshold, set
 * low here so every rank count uses it):
 *   1. sizes just below, at and above the threshold and around chunk and page boundaries, up
 *      to 4 MiB, ring neighbours, Isend + Recv and Irecv + Send, and Sendrecv pairs (both
 *      directions split at once);
 *   2. more large messages in flight from one sender than it has board entries (8), received
 *      in reverse tag order;
 *   3. truncation (MPI_ERRORS_RETURN): a receive shorter than the message gets
 *      MPI_ERR_TRUNCATE and nothing written past it (on oxmpi also the prefix and its count);
 *   4. wildcard source and tag receives of large messages from every other rank;
 *   5. a non-contiguous receive (vector type) and a synchronous send of large messages;
 *   6. a sender busy outside MPI while the receiver waits (the receiver copies everything);
 *   7. windows of large messages both ways at once between pairs (each rank then reads its own
 *      messages alone while it has sends of its own to that peer in progress), alternating with
 *      windows one way (shared again), every message checked. */
#include "mtest.h"
#include <unistd.h>

#define GUARD 0xa5
#define MAXLEN (4 * 1024 * 1024 + 4097)
#define INFLIGHT 12
#define MANY_LEN 100000

static unsigned char *sbuf, *rbuf;

static unsigned seed_of(int size, int src, int round)
{
    return (unsigned)(size * 3 + src * 101 + round * 17);
}

static void check_data(const unsigned char *buf, int size, int src, int round, const char *what)
{
    size_t bad = mt_check_bytes(buf, (size_t)size, seed_of(size, src, round));
    CHECK(bad == (size_t)-1, "%s: size %d from %d round %d: byte %zu wrong", what, size, src, round, bad);
}

static void check_status(MPI_Status *st, int size, int src, int tag, const char *what)
{
    int count = -1;
    MPI_Get_count(st, MPI_BYTE, &count);
    CHECK(count == size, "%s: size %d: count %d", what, size, count);
    CHECK(st->MPI_SOURCE == src, "%s: size %d: source %d, want %d", what, size, st->MPI_SOURCE, src);
    CHECK(st->MPI_TAG == tag, "%s: size %d: tag %d, want %d", what, size, st->MPI_TAG, tag);
}

/* 1. Sizes around the threshold and chunk boundaries. */
static void sizes_ring(void)
{
    static const int sizes[] = {19999,  20000,   20001,   4096 * 5 - 1, 4096 * 5 + 1, 65535,
                                65536,  65537,   131072 + 7, 1000000, 1048576, 2097152 + 4095,
                                4194304, MAXLEN};
    int right = (mt_rank + 1) % mt_size, left = (mt_rank + mt_size - 1) % mt_size;
    int i, round;
    MPI_Status st;
    MPI_Request rq;
    for (round = 0; round < 3; round++) {
        for (i = 0; i < (int)(sizeof sizes / sizeof sizes[0]); i++) {
            int size = sizes[i];
            mt_fill_bytes(sbuf, (size_t)size, seed_of(size, mt_rank, round));
            memset(rbuf, GUARD, (size_t)size + 1);
            if (round == 0) {
                MPI_CHECK(MPI_Isend(sbuf, size, MPI_BYTE, right, 1, MPI_COMM_WORLD, &rq));
                MPI_CHECK(MPI_Recv(rbuf, size, MPI_BYTE, left, 1, MPI_COMM_WORLD, &st));
                MPI_CHECK(MPI_Wait(&rq, MPI_STATUS_IGNORE));
            } else if (round == 1) {
                MPI_CHECK(MPI_Irecv(rbuf, size, MPI_BYTE, left, 2, MPI_COMM_WORLD, &rq));
                MPI_CHECK(MPI_Send(sbuf, size, MPI_BYTE, right, 2, MPI_COMM_WORLD));
                MPI_CHECK(MPI_Wait(&rq, &st));
            } else {
                MPI_CHECK(MPI_Sendrecv(sbuf, size, MPI_BYTE, right, 3, rbuf, size, MPI_BYTE, left, 3,
                                       MPI_COMM_WORLD, &st));
            }
            check_data(rbuf, size, left, round, "ring");
            CHECK(rbuf[size] == GUARD, "ring: size %d: byte after the message overwritten", size);
            check_status(&st, size, left, round + 1, "ring");
        }
    }
}

/* 2. More transfers from one sender than board entries, matched in reverse order. */
static void many_in_flight(void)
{
    MPI_Request rq[INFLIGHT];
    MPI_Status st[INFLIGHT];
    int i;
    if (mt_rank == 0) {
        for (i = 0; i < INFLIGHT; i++) {
            mt_fill_bytes(sbuf + (size_t)i * MANY_LEN, MANY_LEN, seed_of(MANY_LEN, 0, i));
            MPI_CHECK(MPI_Isend(sbuf + (size_t)i * MANY_LEN, MANY_LEN, MPI_BYTE, 1, 100 + i, MPI_COMM_WORLD, &rq[i]));
        }
        MPI_CHECK(MPI_Waitall(INFLIGHT, rq, st));
    } else if (mt_rank == 1) {
        memset(rbuf, GUARD, (size_t)INFLIGHT * MANY_LEN);
        for (i = INFLIGHT - 1; i >= 0; i--)
            MPI_CHECK(MPI_Irecv(rbuf + (size_t)i * MANY_LEN, MANY_LEN, MPI_BYTE, 0, 100 + i, MPI_COMM_WORLD,
                                &rq[i]));
        MPI_CHECK(MPI_Waitall(INFLIGHT, rq, st));
        for (i = 0; i < INFLIGHT; i++) {
            check_data(rbuf + (size_t)i * MANY_LEN, MANY_LEN, 0, i, "in flight");
            check_status(&st[i], MANY_LEN, 0, 100 + i, "in flight");
        }
    }
}

/* 3. Truncation: the prefix arrives, nothing past the receive buffer is written. */
static void truncation(void)
{
    static const int lens[][2] = {{100000, 70000}, {1048576, 20000}, {1048576, 1048575}, {300001, 19999}};
    int i;
    for (i = 0; i < (int)(sizeof lens / sizeof lens[0]); i++) {
        int len = lens[i][0], cap = lens[i][1];
        if (mt_rank == 0) {
            mt_fill_bytes(sbuf, (size_t)len, seed_of(len, 0, 9));
            MPI_CHECK(MPI_Send(sbuf, len, MPI_BYTE, 1, 7, MPI_COMM_WORLD));
        } else if (mt_rank == 1) {
            MPI_Status st;
            int rc, count = -1, cls = -1;
            size_t bad;
            memset(rbuf, GUARD, (size_t)len + 1);
            rc = MPI_Recv(rbuf, cap, MPI_BYTE, 0, 7, MPI_COMM_WORLD, &st);
            MPI_Error_class(rc, &cls);
            CHECK(cls == MPI_ERR_TRUNCATE, "truncation %d into %d: error class %d", len, cap, cls);
            /* The prefix and its count are oxmpi's behaviour; MPI leaves them open (MPICH 4.0.2
             * reports count 0 and writes nothing for a truncated large message). */
            MPI_Get_count(&st, MPI_BYTE, &count);
            CHECK_STRICT(count == cap, "truncation %d into %d: count %d", len, cap, count);
            bad = mt_check_bytes(rbuf, (size_t)cap, seed_of(len, 0, 9));
            CHECK_STRICT(bad == (size_t)-1, "truncation %d into %d: byte %zu wrong", len, cap, bad);
            CHECK(rbuf[cap] == GUARD && rbuf[len - 1] == GUARD, "truncation %d into %d: wrote past the buffer",
                  len, cap);
        }
    }
}

/* 4. Wildcard receives: every other rank sends two large messages to rank 0. */
static void wildcards(void)
{
    const int len = 250000;
    int i;
    MPI_Comm comm; /* of its own, so the wildcards take no other traffic */
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    if (mt_rank != 0) {
        for (i = 0; i < 2; i++) {
            mt_fill_bytes(sbuf, (size_t)len, seed_of(len, mt_rank, i));
            MPI_CHECK(MPI_Send(sbuf, len, MPI_BYTE, 0, 20 + i, comm));
        }
    } else {
        int got[64] = {0};
        for (i = 0; i < 2 * (mt_size - 1); i++) {
            MPI_Status st;
            int src, count = -1;
            memset(rbuf, GUARD, (size_t)len + 1);
            MPI_CHECK(MPI_Recv(rbuf, len + 1, MPI_BYTE, MPI_ANY_SOURCE, MPI_ANY_TAG, comm, &st));
            src = st.MPI_SOURCE;
            CHECK(src > 0 && src < mt_size, "wildcard: source %d", src);
            if (src <= 0 || src >= mt_size)
                continue;
            /* Non-overtaking: from each source, tag 20 before tag 21. */
            CHECK(st.MPI_TAG == 20 + got[src], "wildcard: from %d tag %d, want %d", src, st.MPI_TAG, 20 + got[src]);
            MPI_Get_count(&st, MPI_BYTE, &count);
            CHECK(count == len, "wildcard: count %d", count);
            check_data(rbuf, len, src, st.MPI_TAG - 20, "wildcard");
            CHECK(rbuf[len] == GUARD, "wildcard: byte after the message overwritten");
            got[src]++;
        }
    }
    MPI_Comm_free(&comm);
}

/* 5. A vector receive (staged, then unpacked) and a synchronous send. */
static void vector_and_ssend(void)
{
    const int blocks = 30000, blen = 8, stride = 12, len = blocks * blen;
    MPI_Datatype vec;
    MPI_Type_vector(blocks, blen, stride, MPI_BYTE, &vec);
    MPI_Type_commit(&vec);
    if (mt_rank == 0) {
        mt_fill_bytes(sbuf, (size_t)len, seed_of(len, 0, 5));
        MPI_CHECK(MPI_Send(sbuf, len, MPI_BYTE, 1, 30, MPI_COMM_WORLD));
        mt_fill_bytes(sbuf, (size_t)len, seed_of(len, 0, 6));
        MPI_CHECK(MPI_Ssend(sbuf, len, MPI_BYTE, 1, 31, MPI_COMM_WORLD));
    } else if (mt_rank == 1) {
        MPI_Status st;
        int b, bad = 0;
        unsigned char *want = mt_malloc((size_t)len);
        memset(rbuf, GUARD, (size_t)blocks * stride);
        MPI_CHECK(MPI_Recv(rbuf, 1, vec, 0, 30, MPI_COMM_WORLD, &st));
        mt_fill_bytes(want, (size_t)len, seed_of(len, 0, 5));
        for (b = 0; b < blocks && !bad; b++) {
            bad |= memcmp(rbuf + (size_t)b * stride, want + (size_t)b * blen, (size_t)blen) != 0;
            bad |= rbuf[(size_t)b * stride + blen] != GUARD;
        }
        CHECK(!bad, "vector receive: block %d wrong or gap overwritten", b - 1);
        MPI_CHECK(MPI_Recv(rbuf, len, MPI_BYTE, 0, 31, MPI_COMM_WORLD, &st));
        check_data(rbuf, len, 0, 6, "ssend");
        free(want);
    }
    MPI_Type_free(&vec);
}

/* 6. The sender stays away from MPI for a while after Isend. */
static void busy_sender(void)
{
    const int len = 2000000;
    if (mt_rank == 0) {
        MPI_Request rq;
        mt_fill_bytes(sbuf, (size_t)len, seed_of(len, 0, 3));
        MPI_CHECK(MPI_Isend(sbuf, len, MPI_BYTE, 1, 40, MPI_COMM_WORLD, &rq));
        usleep(50000);
        MPI_CHECK(MPI_Wait(&rq, MPI_STATUS_IGNORE));
    } else if (mt_rank == 1) {
        MPI_Status st;
        memset(rbuf, GUARD, (size_t)len + 1);
        MPI_CHECK(MPI_Recv(rbuf, len, MPI_BYTE, 0, 40, MPI_COMM_WORLD, &st));
        check_data(rbuf, len, 0, 3, "busy sender");
        check_status(&st, len, 0, 40, "busy sender");
    }
}

/* 7. Pairs (2k, 2k+1): a window both ways (receives posted first, as bench_bibw does), then a
 * window from the even rank only, then from the odd rank only; three rounds. */
static void windows_both_ways(void)
{
    MPI_Request rq[2 * INFLIGHT];
    MPI_Status st[2 * INFLIGHT];
    int peer = mt_rank ^ 1, round, i, n;
    if (peer >= mt_size)
        return;
    for (round = 0; round < 3; round++) {
        int phase;
        for (phase = 0; phase < 3; phase++) {
            int sends = phase == 0 || (phase == 1) == (mt_rank % 2 == 0);
            int recvs = phase == 0 || !sends;
            int tag = 200 + phase;
            n = 0;
            memset(rbuf, GUARD, (size_t)INFLIGHT * MANY_LEN + 1);
            if (recvs)
                for (i = 0; i < INFLIGHT; i++)
                    MPI_CHECK(MPI_Irecv(rbuf + (size_t)i * MANY_LEN, MANY_LEN, MPI_BYTE, peer, tag, MPI_COMM_WORLD,
                                        &rq[n++]));
            if (sends)
                for (i = 0; i < INFLIGHT; i++) {
                    mt_fill_bytes(sbuf + (size_t)i * MANY_LEN, MANY_LEN, seed_of(MANY_LEN, mt_rank, round * 64 + i));
                    MPI_CHECK(MPI_Isend(sbuf + (size_t)i * MANY_LEN, MANY_LEN, MPI_BYTE, peer, tag, MPI_COMM_WORLD,
                                        &rq[n++]));
                }
            MPI_CHECK(MPI_Waitall(n, rq, st));
            if (recvs) {
                for (i = 0; i < INFLIGHT; i++) {
                    check_data(rbuf + (size_t)i * MANY_LEN, MANY_LEN, peer, round * 64 + i, "windows");
                    check_status(&st[i], MANY_LEN, peer, tag, "windows");
                }
                CHECK(rbuf[(size_t)INFLIGHT * MANY_LEN] == GUARD, "windows: byte after the last message overwritten");
            }
        }
    }
}

int main(int argc, char **argv)
{
    mt_init(&argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    sbuf = mt_malloc((size_t)MAXLEN + (size_t)INFLIGHT * MANY_LEN);
    rbuf = mt_malloc((size_t)MAXLEN + (size_t)INFLIGHT * MANY_LEN + 1);
    sizes_ring();
    mt_barrier();
    many_in_flight();
    mt_barrier();
    truncation();
    mt_barrier();
    wildcards();
    mt_barrier();
    vector_and_ssend();
    mt_barrier();
    busy_sender();
    mt_barrier();
    windows_both_ways();
    free(sbuf);
    free(rbuf);
    return mt_finalize();
}
