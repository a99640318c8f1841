/* oxmpi-test: np=2,4,8 timeout=120 */
/* The eager fast paths: sends written straight into the peer's ring (no request of their
 * own), blocking receives taken straight from the ring head, posted-receive matching.
 *   1. every size 0..130 B (each slot cache-line boundary) and around the eager limit
 *      (12 KiB; also around 16 KiB, the former one), with Send/Recv pairs, Isend + Recv, Irecv + Send, in both orders;
 *   2. many messages in flight with receives posted in another tag order;
 *   3. wildcard receives interleaved with specific ones (non-overtaking per source);
 *   4. the handles of sends that completed at once: Wait, Test, Request_get_status,
 *      Request_free, Cancel + Test_cancelled, Waitall / Testall / Waitany / Waitsome;
 *   5. truncation and bad arguments (MPI_ERRORS_RETURN) on the fast paths. */
#include "mtest.h"

#define GUARD 0xa5
#define MAXLEN (16 * 1024 + 256)

static unsigned char sbuf[MAXLEN], rbuf[MAXLEN + 64];

static int sizes[400], nsizes;

static void make_sizes(void)
{
    int s;
    for (s = 0; s <= 130; s++)
        sizes[nsizes++] = s;
    for (s = 12 * 1024 - 80; s <= 12 * 1024 + 80; s += 4)
        sizes[nsizes++] = s;
    for (s = 16 * 1024 - 80; s <= 16 * 1024 + 80; s += 4)
        sizes[nsizes++] = s;
    sizes[nsizes++] = MAXLEN;
}

static unsigned seed_of(int size, int src, int round)
{
    return (unsigned)(size * 3 + src * 101 + round * 17);
}

/* Checks `size` received bytes from `src` and the guard byte after them. */
static void check_recv(int size, int src, int round, MPI_Status *st, int tag)
{
    size_t bad = mt_check_bytes(rbuf, (size_t)size, seed_of(size, src, round));
    int count = -1;
    CHECK(bad == (size_t)-1, "size %d from %d round %d: byte %zu wrong", size, src, round, bad);
    CHECK(rbuf[size] == GUARD, "size %d: byte after the message overwritten", size);
    if (st) {
        MPI_Get_count(st, MPI_BYTE, &count);
        CHECK(count == size, "size %d: count %d", size, count);
        CHECK(st->MPI_SOURCE == src, "size %d: source %d, want %d", size, st->MPI_SOURCE, src);
        CHECK(st->MPI_TAG == tag, "size %d: tag %d, want %d", size, st->MPI_TAG, tag);
    }
}

/* 1. Every size, ring neighbours: each rank sends right and receives from the left. */
static void sizes_ring(void)
{
    int right = (mt_rank + 1) % mt_size, left = (mt_rank + mt_size - 1) % mt_size;
    int i, round;
    MPI_Status st;
    MPI_Request rq;
    for (round = 0; round < 3; round++) {
        for (i = 0; i < nsizes; i++) {
            int size = sizes[i];
            mt_fill_bytes(sbuf, (size_t)size, seed_of(size, mt_rank, round));
            memset(rbuf, GUARD, (size_t)size + 1);
            if (round == 0) {
                /* Isend (completes at once when eager), blocking Recv, Wait. */
                MPI_CHECK(MPI_Isend(sbuf, size, MPI_BYTE, right, 1, MPI_COMM_WORLD, &rq));
                MPI_CHECK(MPI_Recv(rbuf, size, MPI_BYTE, left, 1, MPI_COMM_WORLD, &st));
                MPI_CHECK(MPI_Wait(&rq, MPI_STATUS_IGNORE));
                CHECK(rq == MPI_REQUEST_NULL, "Wait left the send request non-null");
            } else if (round == 1) {
                /* Irecv posted first, then a blocking Send (even ranks) or the reverse. */
                MPI_CHECK(MPI_Irecv(rbuf, size, MPI_BYTE, left, 2, MPI_COMM_WORLD, &rq));
                MPI_CHECK(MPI_Send(sbuf, size, MPI_BYTE, right, 2, MPI_COMM_WORLD));
                MPI_CHECK(MPI_Wait(&rq, &st));
            } else {
                /* Blocking pairs, wildcard tag on odd sizes. */
                int tag = size % 2 ? MPI_ANY_TAG : 3;
                if (mt_rank % 2 == 0) {
                    MPI_CHECK(MPI_Send(sbuf, size, MPI_BYTE, right, 3, MPI_COMM_WORLD));
                    MPI_CHECK(MPI_Recv(rbuf, size, MPI_BYTE, left, tag, MPI_COMM_WORLD, &st));
                } else {
                    MPI_CHECK(MPI_Recv(rbuf, size, MPI_BYTE, left, tag, MPI_COMM_WORLD, &st));
                    MPI_CHECK(MPI_Send(sbuf, size, MPI_BYTE, right, 3, MPI_COMM_WORLD));
                }
            }
            check_recv(size, left, round, &st, round + 1);
        }
    }
}

/* 2. Many in flight: 300 messages to every other rank, tags 0..6, receives posted per tag
 * from the highest tag down; the k-th receive of (source, tag) gets the k-th such message. */
#define NFLIGHT 300
static void many_in_flight(void)
{
    int n = mt_size - 1, p, i, t, k;
    int *out = mt_malloc(sizeof(int) * NFLIGHT * (size_t)mt_size);
    int *in = mt_malloc(sizeof(int) * NFLIGHT * (size_t)mt_size * 4);
    MPI_Request *rq = mt_malloc(sizeof(MPI_Request) * NFLIGHT * (size_t)mt_size * 2);
    int nrq = 0;
    if (n == 0)
        return;
    for (p = 0; p < mt_size; p++) {
        if (p == mt_rank)
            continue;
        for (t = 6; t >= 0; t--)
            for (i = t; i < NFLIGHT; i += 7)
                MPI_CHECK(MPI_Irecv(&in[(p * NFLIGHT + i) * 4], 4, MPI_INT, p, t, MPI_COMM_WORLD, &rq[nrq++]));
    }
    for (i = 0; i < NFLIGHT; i++)
        for (p = 0; p < mt_size; p++) {
            if (p == mt_rank)
                continue;
            out[p * NFLIGHT + i] = mt_rank * 100000 + i;
            /* 1 to 4 ints: the seq number repeated */
            {
                int len = 1 + i % 4, *msg = &out[p * NFLIGHT + i];
                static int tmp[NFLIGHT * 8][4];
                int *m = tmp[(p * NFLIGHT + i) % (NFLIGHT * 8)];
                for (k = 0; k < len; k++)
                    m[k] = *msg;
                MPI_CHECK(MPI_Isend(m, len, MPI_INT, p, i % 7, MPI_COMM_WORLD, &rq[nrq++]));
            }
        }
    MPI_CHECK(MPI_Waitall(nrq, rq, MPI_STATUSES_IGNORE));
    for (p = 0; p < mt_size; p++) {
        if (p == mt_rank)
            continue;
        for (i = 0; i < NFLIGHT; i++)
            for (k = 0; k < 1 + i % 4; k++)
                CHECK(in[(p * NFLIGHT + i) * 4 + k] == p * 100000 + i, "from %d message %d int %d: %d", p, i, k,
                      in[(p * NFLIGHT + i) * 4 + k]);
    }
    free(out);
    free(in);
    free(rq);
}

/* 3. Wildcards interleaved with specific receives at rank 0; the others send K messages
 * each (payload: sequence number, tag: seq % 3). Per source, a receive must get the earliest
 * message it accepts that was not received yet. */
#define K 60
static void wildcards(void)
{
    int i, s;
    MPI_Comm comm; /* of its own: the senders go on to mt_barrier's messages meanwhile */
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    if (mt_rank != 0) {
        /* Synchronous sends are nonblocking here: a blocking MPI_Ssend with tag t would wait
         * for rank 0, which may be waiting for a later message of another tag (deadlock). */
        int sync_v[K / 5][2], nsync = 0;
        MPI_Request sync_rq[K / 5];
        for (i = 0; i < K; i++) {
            int v[2] = {i, mt_rank};
            if (i % 5 == 0) {
                sync_v[nsync][0] = i;
                sync_v[nsync][1] = mt_rank;
                MPI_CHECK(MPI_Issend(sync_v[nsync], 2, MPI_INT, 0, i % 3, comm, &sync_rq[nsync]));
                nsync++;
            } else
                MPI_CHECK(MPI_Send(v, 2, MPI_INT, 0, i % 3, comm));
        }
        MPI_CHECK(MPI_Waitall(nsync, sync_rq, MPI_STATUSES_IGNORE));
        MPI_Comm_free(&comm);
        return;
    }
    {
        int total = (mt_size - 1) * K, got[8][K], left_tag[3] = {0, 0, 0};
        memset(got, 0, sizeof got);
        for (s = 1; s < mt_size; s++)
            for (i = 0; i < K; i++)
                left_tag[i % 3]++;
        for (i = 0; i < total; i++) {
            int src = MPI_ANY_SOURCE, tag = MPI_ANY_TAG, v[2] = {-1, -1}, q;
            MPI_Status st;
            MPI_Request rq;
            if (i % 4 == 1) {
                /* a specific source with messages left */
                for (q = 0; q < mt_size - 1; q++) {
                    int cand = 1 + (i / 4 + q) % (mt_size - 1), left = 0, j;
                    for (j = 0; j < K; j++)
                        left += !got[cand][j];
                    if (left) {
                        src = cand;
                        break;
                    }
                }
            } else if (i % 4 == 2 && left_tag[i % 3]) {
                tag = i % 3;
            }
            if (i % 2)
                MPI_CHECK(MPI_Recv(v, 2, MPI_INT, src, tag, comm, &st));
            else {
                MPI_CHECK(MPI_Irecv(v, 2, MPI_INT, src, tag, comm, &rq));
                MPI_CHECK(MPI_Wait(&rq, &st));
            }
            CHECK(v[1] == st.MPI_SOURCE && v[1] >= 1 && v[1] < mt_size, "source %d, payload says %d",
                  st.MPI_SOURCE, v[1]);
            if (v[1] < 1 || v[1] >= mt_size || v[0] < 0 || v[0] >= K)
                continue;
            CHECK(st.MPI_TAG == v[0] % 3, "tag %d for seq %d", st.MPI_TAG, v[0]);
            CHECK(src == MPI_ANY_SOURCE || src == v[1], "asked for %d, got %d", src, v[1]);
            CHECK(tag == MPI_ANY_TAG || tag == st.MPI_TAG, "asked for tag %d, got %d", tag, st.MPI_TAG);
            CHECK(!got[v[1]][v[0]], "seq %d from %d received twice", v[0], v[1]);
            /* non-overtaking: no earlier message this receive accepts is still unreceived */
            for (q = 0; q < v[0]; q++)
                CHECK(got[v[1]][q] || (tag != MPI_ANY_TAG && q % 3 != tag),
                      "seq %d from %d overtook seq %d (tag %d)", v[0], v[1], q, tag);
            got[v[1]][v[0]] = 1;
            left_tag[v[0] % 3]--;
        }
    }
    MPI_Comm_free(&comm);
}

/* 4. Handles of sends that completed as they started. */
static void completed_handles(void)
{
    int right = (mt_rank + 1) % mt_size, left = (mt_rank + mt_size - 1) % mt_size;
    int v = mt_rank, r[8], flag, i, idx, outcount, indices[4], cancelled;
    MPI_Request rq[4];
    MPI_Status st;
    for (i = 0; i < 8; i++)
        r[i] = -1;
    MPI_CHECK(MPI_Isend(&v, 1, MPI_INT, right, 10, MPI_COMM_WORLD, &rq[0]));
    flag = 0;
    MPI_CHECK(MPI_Request_get_status(rq[0], &flag, &st));
    MPI_CHECK(MPI_Wait(&rq[0], &st)); /* get_status left it alive */
    CHECK(rq[0] == MPI_REQUEST_NULL, "request not null after Wait");
    MPI_CHECK(MPI_Wait(&rq[0], &st)); /* a null request: returns at once */
    MPI_CHECK(MPI_Isend(&v, 1, MPI_INT, right, 11, MPI_COMM_WORLD, &rq[0]));
    do {
        MPI_CHECK(MPI_Test(&rq[0], &flag, MPI_STATUS_IGNORE));
    } while (!flag);
    CHECK(rq[0] == MPI_REQUEST_NULL, "request not null after a successful Test");
    MPI_CHECK(MPI_Isend(&v, 1, MPI_INT, right, 12, MPI_COMM_WORLD, &rq[0]));
    MPI_CHECK(MPI_Request_free(&rq[0]));
    CHECK(rq[0] == MPI_REQUEST_NULL, "request not null after Request_free");
    MPI_CHECK(MPI_Isend(&v, 1, MPI_INT, right, 13, MPI_COMM_WORLD, &rq[0]));
    MPI_CHECK(MPI_Cancel(&rq[0]));
    MPI_CHECK(MPI_Wait(&rq[0], &st));
    MPI_CHECK(MPI_Test_cancelled(&st, &cancelled));
    /* MPI allows a cancel to succeed or fail; the message then must (not) arrive. */
    for (i = 0; i < 4; i++)
        MPI_CHECK(MPI_Isend(&v, 1, MPI_INT, right, 14, MPI_COMM_WORLD, &rq[i]));
    MPI_CHECK(MPI_Waitany(4, rq, &idx, &st));
    MPI_CHECK(MPI_Waitsome(4, rq, &outcount, indices, MPI_STATUSES_IGNORE));
    do {
        MPI_CHECK(MPI_Testall(4, rq, &flag, MPI_STATUSES_IGNORE));
    } while (!flag);
    for (i = 0; i < 4; i++)
        CHECK(rq[i] == MPI_REQUEST_NULL, "request %d not null after Testall", i);
    for (i = 0; i < 4; i++)
        MPI_CHECK(MPI_Recv(&r[i], 1, MPI_INT, left, 10 + i, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    for (i = 0; i < 4; i++)
        MPI_CHECK(MPI_Recv(&r[4 + i], 1, MPI_INT, left, 14, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    for (i = 0; i < 8; i++)
        CHECK(r[i] == left || (i == 3 && cancelled), "message %d: %d, want %d", i, r[i], left);
}

/* 5. Truncation on the blocking fast path, and argument errors. */
static void errors(void)
{
    int right = (mt_rank + 1) % mt_size, left = (mt_rank + mt_size - 1) % mt_size;
    int rc, cls, v[8] = {0}, big[5] = {1, 2, 3, 4, 5};
    MPI_Request rq;
    MPI_Status st;
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    MPI_CHECK(MPI_Send(big, 5, MPI_INT, right, 20, MPI_COMM_WORLD));
    mt_barrier(); /* the message is in the ring before the receive */
    rc = MPI_Recv(v, 2, MPI_INT, left, 20, MPI_COMM_WORLD, &st);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_TRUNCATE, "truncated Recv: class %d", cls);
    CHECK(v[2] == 0, "truncated Recv wrote past the buffer: %d", v[2]);
#define EXPECT(call, want)                                                                         \
    do {                                                                                           \
        rc = (call);                                                                               \
        cls = MPI_SUCCESS;                                                                         \
        MPI_Error_class(rc, &cls);                                                                 \
        CHECK(cls == (want), #call ": class %d, want %d", cls, want);                              \
    } while (0)
    EXPECT(MPI_Send(v, -1, MPI_INT, right, 1, MPI_COMM_WORLD), MPI_ERR_COUNT);
    EXPECT(MPI_Isend(v, -1, MPI_INT, right, 1, MPI_COMM_WORLD, &rq), MPI_ERR_COUNT);
    EXPECT(MPI_Send(v, 1, MPI_INT, right, -5, MPI_COMM_WORLD), MPI_ERR_TAG);
    EXPECT(MPI_Isend(v, 1, MPI_INT, right, MPI_ANY_TAG, MPI_COMM_WORLD, &rq), MPI_ERR_TAG);
    EXPECT(MPI_Send(v, 1, MPI_INT, mt_size, 1, MPI_COMM_WORLD), MPI_ERR_RANK);
    EXPECT(MPI_Isend(v, 1, MPI_INT, -7, 1, MPI_COMM_WORLD, &rq), MPI_ERR_RANK);
    EXPECT(MPI_Send(v, 1, MPI_INT, right, 1, MPI_COMM_NULL), MPI_ERR_COMM);
    EXPECT(MPI_Send(NULL, 1, MPI_INT, right, 1, MPI_COMM_WORLD), MPI_ERR_BUFFER);
    EXPECT(MPI_Send(v, 1, MPI_DATATYPE_NULL, right, 1, MPI_COMM_WORLD), MPI_ERR_TYPE);
    EXPECT(MPI_Recv(v, 1, MPI_INT, mt_size, 1, MPI_COMM_WORLD, &st), MPI_ERR_RANK);
    EXPECT(MPI_Recv(v, 1, MPI_INT, left, -7, MPI_COMM_WORLD, &st), MPI_ERR_TAG);
    EXPECT(MPI_Irecv(v, -2, MPI_INT, left, 1, MPI_COMM_WORLD, &rq), MPI_ERR_COUNT);
    EXPECT(MPI_Recv(NULL, 1, MPI_INT, left, 1, MPI_COMM_WORLD, &st), MPI_ERR_BUFFER);
    /* MPI_PROC_NULL stays on the general path */
    EXPECT(MPI_Send(v, 1, MPI_INT, MPI_PROC_NULL, 1, MPI_COMM_WORLD), MPI_SUCCESS);
    EXPECT(MPI_Recv(v, 1, MPI_INT, MPI_PROC_NULL, 1, MPI_COMM_WORLD, &st), MPI_SUCCESS);
    CHECK(st.MPI_SOURCE == MPI_PROC_NULL, "Recv from MPI_PROC_NULL: source %d", st.MPI_SOURCE);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
}

int main(int argc, char **argv)
{
    mt_init(&argc, &argv);
    make_sizes();
    sizes_ring();
    mt_barrier();
    many_in_flight();
    mt_barrier();
    wildcards();
    mt_barrier();
    completed_handles();
    mt_barrier();
    errors();
    return mt_finalize();
}
