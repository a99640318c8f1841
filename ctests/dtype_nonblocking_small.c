/* oxmpi-test: np=1,2,3,4,8 timeout=120 */
/* Derived datatypes on the nonblocking and blocking fast paths: contiguous derived types (a
 * one-block vector, MPI_Type_contiguous, a type whose data starts 24 bytes after the buffer
 * pointer) go the way of builtin types, small non-contiguous ones are packed into the slot at
 * MPI_Isend and unpacked from it. Seven layouts of doubles sent and received against each other
 * (vector sent, contiguous received and the reverse), at sizes around the compact slot header
 * (48 B), the eager limit (12 KiB), one slot (16 KiB) and the shared-copy threshold (64 KiB);
 * windows of requests in flight: receives posted first, messages queued first and taken with
 * MPI_ANY_SOURCE / MPI_ANY_TAG into larger buffers (MPI_Get_count, MPI_Get_elements), both
 * directions at once, and blocking calls. Every data byte and every byte around the data is
 * checked. Then ping-pongs of 4-12 KiB non-contiguous messages, which travel in pieces (taken
 * by blocking receives, posted receives, after MPI_Iprobe, with wildcards, truncated), MPI_BOTTOM
 * with absolute addresses and bad arguments with MPI_ERRORS_RETURN.
 * Ranks pair up (0-1, 2-3, ...); an odd last rank (np 1, 3) talks to itself. */
#include "mtest.h"
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define GAP 0xA5
#define NSHAPES 7
#define MAXWIN 16

typedef struct {
    const char *name;
    MPI_Datatype type;
    int k;          /* doubles per element */
    int nb;         /* blocks per element */
    MPI_Aint disp[2], len[2]; /* bytes from the element's origin (the buffer pointer for 0) */
    MPI_Aint extent;
} shape;

static shape shapes[NSHAPES];

static void make_shapes(void)
{
    MPI_Datatype t;
    int i;
    shapes[0] = (shape){"double", MPI_DOUBLE, 1, 1, {0, 0}, {8, 0}, 8};
    /* A one-block vector: contiguous, as in bench_vector's single-element messages. */
    shapes[1] = (shape){"vector(1,1,8)", MPI_DATATYPE_NULL, 1, 1, {0, 0}, {8, 0}, 8};
    MPI_CHECK(MPI_Type_vector(1, 1, 8, MPI_DOUBLE, &shapes[1].type));
    /* Contiguous from 24 bytes after the pointer: lb 24, extent 16. */
    {
        MPI_Aint d = 24;
        shapes[2] = (shape){"hindexed_block(2 at 24)", MPI_DATATYPE_NULL, 2, 1, {24, 0}, {16, 0}, 16};
        MPI_CHECK(MPI_Type_create_hindexed_block(1, 2, &d, MPI_DOUBLE, &shapes[2].type));
    }
    shapes[3] = (shape){"contiguous(3)", MPI_DATATYPE_NULL, 3, 1, {0, 0}, {24, 0}, 24};
    MPI_CHECK(MPI_Type_contiguous(3, MPI_DOUBLE, &shapes[3].type));
    /* Two doubles 16 bytes apart, elements 40 bytes apart. */
    shapes[4] = (shape){"vector(2,1,2) extent 40", MPI_DATATYPE_NULL, 2, 2, {0, 16}, {8, 8}, 40};
    MPI_CHECK(MPI_Type_vector(2, 1, 2, MPI_DOUBLE, &t));
    MPI_CHECK(MPI_Type_create_resized(t, 0, 40, &shapes[4].type));
    MPI_Type_free(&t);
    /* One double every 64 bytes (bench_vector's b8_s64 as a resized type). */
    shapes[5] = (shape){"double extent 64", MPI_DATATYPE_NULL, 1, 1, {0, 0}, {8, 0}, 64};
    MPI_CHECK(MPI_Type_create_resized(MPI_DOUBLE, 0, 64, &shapes[5].type));
    /* Descending displacements: 1 double at 32, then 2 at 0; extent 48. */
    {
        int lens[2] = {1, 2};
        MPI_Aint disps[2] = {32, 0};
        MPI_Datatype types[2] = {MPI_DOUBLE, MPI_DOUBLE};
        shapes[6] = (shape){"struct{32:1, 0:2} extent 48", MPI_DATATYPE_NULL, 3, 2, {32, 0}, {8, 16}, 48};
        MPI_CHECK(MPI_Type_create_struct(2, lens, disps, types, &t));
        MPI_CHECK(MPI_Type_create_resized(t, 0, 48, &shapes[6].type));
        MPI_Type_free(&t);
    }
    for (i = 1; i < NSHAPES; i++)
        MPI_CHECK(MPI_Type_commit(&shapes[i].type));
}

/* Bytes a buffer of `count` elements needs (data and the first 24 bytes of lb). */
static size_t span(const shape *s, long count)
{
    return (size_t)(s->extent * (count + 1) + 32);
}

static unsigned char byte_at(long k, int salt)
{
    return (unsigned char)(k * 13 + salt * 7 + 1);
}

static void fill(const shape *s, long count, unsigned char *buf, int salt)
{
    long e, k = 0;
    int b;
    MPI_Aint i;
    memset(buf, 0x5A, span(s, count));
    for (e = 0; e < count; e++)
        for (b = 0; b < s->nb; b++)
            for (i = 0; i < s->len[b]; i++)
                buf[e * s->extent + s->disp[b] + i] = byte_at(k++, salt);
}

/* The first `n` data bytes of `count` elements hold the stream; every other byte is GAP. */
static int verify(const shape *s, long count, long n, const unsigned char *buf, int salt, const char *what)
{
    long e, k = 0, errs = 0, total = (long)span(s, count);
    int b;
    MPI_Aint i;
    unsigned char *mark = calloc((size_t)total, 1);
    for (e = 0; e < count && k < n; e++)
        for (b = 0; b < s->nb && k < n; b++)
            for (i = 0; i < s->len[b] && k < n; i++, k++) {
                long off = e * s->extent + s->disp[b] + i;
                mark[off] = 1;
                if (buf[off] != byte_at(k, salt) && errs++ < 3)
                    CHECK(0, "%s: data byte %ld is %d, want %d", what, k, buf[off], byte_at(k, salt));
            }
    for (i = 0; i < total; i++)
        if (!mark[i] && buf[i] != GAP && errs++ < 3)
            CHECK(0, "%s: byte at offset %ld outside the data was overwritten (%d)", what, (long)i, buf[i]);
    free(mark);
    return errs == 0;
}

static void check_status(const shape *s, MPI_Status *st, long ndoubles, int src, int tag, const char *what)
{
    int count, elements;
    MPI_CHECK(MPI_Get_elements(st, s->type, &elements));
    CHECK(elements == ndoubles, "%s: MPI_Get_elements gives %d, want %ld", what, elements, ndoubles);
    MPI_CHECK(MPI_Get_count(st, s->type, &count));
    CHECK(count == ndoubles / s->k, "%s: MPI_Get_count gives %d, want %ld", what, count, ndoubles / s->k);
    CHECK(st->MPI_SOURCE == src && st->MPI_TAG == tag, "%s: status source %d tag %d, want %d %d", what,
          st->MPI_SOURCE, st->MPI_TAG, src, tag);
}

static unsigned char *sbufs[MAXWIN], *rbufs[MAXWIN];

enum { POSTED_FIRST, QUEUED_FIRST, BOTH_WAYS, BLOCKING, NMODES };
static const char *mode_names[NMODES] = {"posted first", "queued first, wildcards", "both ways", "blocking"};

/* One window of `win` messages of `nd` doubles from layout `ss` to layout `rs` between this
 * rank and `peer` (perhaps itself). `lower` sends (and, in BOTH_WAYS, both do). */
static void window(int peer, const shape *ss, const shape *rs, long nd, int win, int mode, int salt)
{
    MPI_Request req[2 * MAXWIN];
    MPI_Status st[2 * MAXWIN];
    long scount = nd / ss->k, rcount = nd / rs->k;
    int self = peer == mt_rank, sends = self || mt_rank < peer || mode == BOTH_WAYS;
    int recvs = self || mt_rank > peer || mode == BOTH_WAYS;
    int j, nreq = 0, extra = mode == QUEUED_FIRST; /* receive one element more than sent */
    int wild = mode == QUEUED_FIRST;
    char what[192];
    if (self && mode == BLOCKING)
        return; /* a blocking send to oneself of a large message would wait for its receive */
    snprintf(what, sizeof what, "%ld doubles, %s -> %s, %s", nd, ss->name, rs->name, mode_names[mode]);
    for (j = 0; j < win; j++) {
        if (sends)
            fill(ss, scount, sbufs[j], salt + j + (mt_rank > peer ? 100 : 0));
        if (recvs)
            memset(rbufs[j], GAP, span(rs, rcount + extra));
    }
    if (mode == POSTED_FIRST || mode == BOTH_WAYS) {
        if (recvs)
            for (j = 0; j < win; j++)
                MPI_CHECK(MPI_Irecv(rbufs[j], (int)rcount, rs->type, peer, j, MPI_COMM_WORLD, &req[nreq++]));
        if (!self && mode == POSTED_FIRST) { /* the receiver says its receives are posted */
            if (recvs)
                MPI_CHECK(MPI_Send(NULL, 0, MPI_BYTE, peer, 99, MPI_COMM_WORLD));
            else
                MPI_CHECK(MPI_Recv(NULL, 0, MPI_BYTE, peer, 99, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        }
        if (sends)
            for (j = 0; j < win; j++)
                MPI_CHECK(MPI_Isend(sbufs[j], (int)scount, ss->type, peer, j, MPI_COMM_WORLD, &req[nreq++]));
        MPI_CHECK(MPI_Waitall(nreq, req, st));
        if (recvs)
            for (j = 0; j < win; j++) {
                char w[224];
                snprintf(w, sizeof w, "%s, message %d", what, j);
                check_status(rs, &st[j], nd, peer, j, w);
                verify(rs, rcount, nd * 8, rbufs[j], salt + j + (peer > mt_rank ? 100 : 0), w);
            }
    } else if (mode == QUEUED_FIRST) {
        if (sends) {
            for (j = 0; j < win; j++)
                MPI_CHECK(MPI_Isend(sbufs[j], (int)scount, ss->type, peer, j, MPI_COMM_WORLD, &req[nreq++]));
            if (!self) /* behind the messages in the ring: they are all queued when it arrives */
                MPI_CHECK(MPI_Send(NULL, 0, MPI_BYTE, peer, 99, MPI_COMM_WORLD));
        }
        if (recvs) {
            int first = nreq;
            if (!self)
                MPI_CHECK(MPI_Recv(NULL, 0, MPI_BYTE, peer, 99, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            for (j = 0; j < win; j++)
                MPI_CHECK(MPI_Irecv(rbufs[j], (int)(rcount + extra), rs->type, wild && j % 2 ? MPI_ANY_SOURCE : peer,
                                    wild && j % 3 ? MPI_ANY_TAG : j, MPI_COMM_WORLD, &req[nreq++]));
            MPI_CHECK(MPI_Waitall(nreq, req, st));
            for (j = 0; j < win; j++) {
                char w[224];
                snprintf(w, sizeof w, "%s, message %d", what, j);
                check_status(rs, &st[first + j], nd, peer, j, w);
                verify(rs, rcount + extra, nd * 8, rbufs[j], salt + j, w);
            }
        } else {
            MPI_CHECK(MPI_Waitall(nreq, req, st));
        }
    } else { /* BLOCKING */
        MPI_Status s1;
        for (j = 0; j < win; j++) {
            char w[224];
            snprintf(w, sizeof w, "%s, message %d", what, j);
            if (sends) {
                MPI_CHECK(MPI_Send(sbufs[j], (int)scount, ss->type, peer, j, MPI_COMM_WORLD));
            } else {
                MPI_CHECK(MPI_Recv(rbufs[j], (int)rcount, rs->type, peer, j, MPI_COMM_WORLD, &s1));
                check_status(rs, &s1, nd, peer, j, w);
                verify(rs, rcount, nd * 8, rbufs[j], salt + j, w);
            }
        }
    }
}

/* Ping-pongs of non-contiguous messages of 4-12 KiB, which go in pieces (one slot each) to a
 * peer that answered the last message: taken whole by a blocking receive, into a receive
 * posted first, queued whole before the receive (found by MPI_Iprobe), with wildcards, and
 * truncated. Each round: the lower rank sends, the higher one receives and sends back. */
static void pieces(int peer)
{
    static const long sizes[] = {510, 512, 514, 768, 1024, 1530, 1536};
    int i, how, salt = 300;
    if (peer == mt_rank)
        return;
    for (i = 0; i < (int)(sizeof sizes / sizeof sizes[0]); i++)
        for (how = 0; how < 5; how++) {
            const shape *s = &shapes[how % 2 ? 4 : 5];
            long nd = sizes[i], count = nd / s->k;
            int round, first = mt_rank < peer;
            char what[160];
            for (round = 0; round < 4; round++, salt++) {
                int sender = (round % 2 == 0) == first, tag = how * 10 + round;
                snprintf(what, sizeof what, "pieces: %ld doubles of %s, way %d, round %d", nd, s->name, how, round);
                if (sender) {
                    fill(s, count, sbufs[0], salt);
                    MPI_CHECK(MPI_Send(sbufs[0], (int)count, s->type, peer, tag, MPI_COMM_WORLD));
                } else {
                    MPI_Status st;
                    MPI_Request r;
                    int flag = 0, rc, cls = MPI_SUCCESS;
                    memset(rbufs[0], GAP, span(s, count));
                    switch (how) {
                    case 0:
                        MPI_CHECK(MPI_Recv(rbufs[0], (int)count, s->type, peer, tag, MPI_COMM_WORLD, &st));
                        break;
                    case 1:
                        MPI_CHECK(MPI_Irecv(rbufs[0], (int)count, s->type, peer, tag, MPI_COMM_WORLD, &r));
                        MPI_CHECK(MPI_Wait(&r, &st));
                        break;
                    case 2:
                        while (!flag)
                            MPI_CHECK(MPI_Iprobe(peer, tag, MPI_COMM_WORLD, &flag, &st));
                        MPI_CHECK(MPI_Recv(rbufs[0], (int)count, s->type, peer, tag, MPI_COMM_WORLD, &st));
                        break;
                    case 3:
                        MPI_CHECK(MPI_Recv(rbufs[0], (int)count, s->type, MPI_ANY_SOURCE, MPI_ANY_TAG,
                                           MPI_COMM_WORLD, &st));
                        break;
                    default: /* one element short */
                        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
                        rc = MPI_Recv(rbufs[0], (int)count - 1, s->type, peer, tag, MPI_COMM_WORLD, &st);
                        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
                        if (rc != MPI_SUCCESS)
                            MPI_Error_class(rc, &cls);
                        CHECK(cls == MPI_ERR_TRUNCATE, "%s: error class %d, want MPI_ERR_TRUNCATE", what, cls);
                        break;
                    }
                    if (how < 4) {
                        check_status(s, &st, nd, peer, tag, what);
                        verify(s, count, nd * 8, rbufs[0], salt, what);
                    } else {
                        /* The fitting elements delivered (MPICH delivers nothing). */
                        long k, n = (count - 1) * s->k * 8, bad = 0;
                        (void)k;
                        if (MT_OXMPI)
                            bad = !verify(s, count - 1, n, rbufs[0], salt, what);
                        CHECK(!bad, "%s: truncated data", what);
                    }
                }
            }
        }
}

/* Contiguous data sent from MPI_BOTTOM with absolute addresses, received into a type whose
 * data starts away from the pointer. */
static void bottom(int peer)
{
    double *src = malloc(64 * sizeof(double)), *dst = malloc(64 * sizeof(double));
    MPI_Aint addr;
    MPI_Datatype abs_t;
    MPI_Request r[2];
    MPI_Status st[2];
    int i, nr = 0;
    for (i = 0; i < 64; i++) {
        src[i] = i * 1.5 + mt_rank;
        dst[i] = -1;
    }
    MPI_CHECK(MPI_Get_address(&src[3], &addr));
    MPI_CHECK(MPI_Type_create_hindexed_block(1, 2, &addr, MPI_DOUBLE, &abs_t));
    MPI_CHECK(MPI_Type_commit(&abs_t));
    if (mt_rank >= peer) /* receive 10 doubles into shapes[2]: from dst + 3 */
        MPI_CHECK(MPI_Irecv(dst, 5, shapes[2].type, peer, 7, MPI_COMM_WORLD, &r[nr++]));
    if (mt_rank <= peer) /* 5 elements of 2 doubles from src + 3 */
        MPI_CHECK(MPI_Isend(MPI_BOTTOM, 5, abs_t, peer, 7, MPI_COMM_WORLD, &r[nr++]));
    MPI_CHECK(MPI_Waitall(nr, r, st));
    if (mt_rank >= peer)
        for (i = 0; i < 64; i++) {
            double want = i >= 3 && i < 13 ? i * 1.5 + peer : -1;
            CHECK(dst[i] == want, "MPI_BOTTOM: dst[%d] = %g, want %g", i, dst[i], want);
        }
    MPI_Type_free(&abs_t);
    free(src);
    free(dst);
}

static void expect_class(int rc, int cls, const char *what)
{
    int got = MPI_SUCCESS;
    if (rc != MPI_SUCCESS)
        MPI_Error_class(rc, &got);
    CHECK(got == cls, "%s: error class %d, want %d", what, got, cls);
}

/* Bad arguments (MPI_ERRORS_RETURN), each on a derived type that would take a fast path. */
static void bad_input(int peer)
{
    double buf[64];
    MPI_Datatype unc, freed;
    MPI_Request r = MPI_REQUEST_NULL;
    MPI_Status st;
    int rc;
    memset(buf, 0, sizeof buf);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_CHECK(MPI_Type_vector(1, 1, 8, MPI_DOUBLE, &unc)); /* never committed */
    rc = MPI_Isend(buf, 1, unc, peer, 1, MPI_COMM_WORLD, &r);
    expect_class(rc, MPI_ERR_TYPE, "MPI_Isend of an uncommitted type");
    rc = MPI_Irecv(buf, 1, unc, peer, 1, MPI_COMM_WORLD, &r);
    expect_class(rc, MPI_ERR_TYPE, "MPI_Irecv of an uncommitted type");
    rc = MPI_Send(buf, 1, unc, peer, 1, MPI_COMM_WORLD);
    expect_class(rc, MPI_ERR_TYPE, "MPI_Send of an uncommitted type");
    MPI_Type_free(&unc);
    MPI_CHECK(MPI_Type_contiguous(2, MPI_DOUBLE, &freed));
    MPI_CHECK(MPI_Type_commit(&freed));
    MPI_CHECK(MPI_Isend(buf, 1, freed, mt_rank, 3, MPI_COMM_WORLD, &r)); /* cached, then freed */
    MPI_CHECK(MPI_Recv(buf + 8, 1, freed, mt_rank, 3, MPI_COMM_WORLD, &st));
    MPI_CHECK(MPI_Wait(&r, &st));
    {
        MPI_Datatype stale = freed;
        MPI_Type_free(&freed);
        /* A freed handle is erroneous; MPICH does not always detect it (its handles are
         * recycled), so only checked on oxmpi. */
        if (MT_OXMPI) {
            rc = MPI_Isend(buf, 1, stale, peer, 1, MPI_COMM_WORLD, &r);
            expect_class(rc, MPI_ERR_TYPE, "MPI_Isend of a freed type");
            rc = MPI_Irecv(buf, 1, stale, peer, 1, MPI_COMM_WORLD, &r);
            expect_class(rc, MPI_ERR_TYPE, "MPI_Irecv of a freed type");
        }
    }
    rc = MPI_Irecv(buf, 1, MPI_DATATYPE_NULL, peer, 1, MPI_COMM_WORLD, &r);
    expect_class(rc, MPI_ERR_TYPE, "MPI_Irecv of MPI_DATATYPE_NULL");
    rc = MPI_Isend(buf, -1, shapes[1].type, peer, 1, MPI_COMM_WORLD, &r);
    expect_class(rc, MPI_ERR_COUNT, "MPI_Isend of count -1");
    rc = MPI_Irecv(buf, -3, shapes[4].type, peer, 1, MPI_COMM_WORLD, &r);
    expect_class(rc, MPI_ERR_COUNT, "MPI_Irecv of count -3");
    rc = MPI_Isend(buf, 1, shapes[2].type, peer, -5, MPI_COMM_WORLD, &r);
    expect_class(rc, MPI_ERR_TAG, "MPI_Isend with tag -5");
    rc = MPI_Send(buf, 1, shapes[3].type, mt_size, 1, MPI_COMM_WORLD);
    expect_class(rc, MPI_ERR_RANK, "MPI_Send to rank = size");
    rc = MPI_Irecv(buf, 1, shapes[4].type, -7, 1, MPI_COMM_WORLD, &r);
    expect_class(rc, MPI_ERR_RANK, "MPI_Irecv from rank -7");
    rc = MPI_Isend(NULL, 2, shapes[1].type, peer, 1, MPI_COMM_WORLD, &r);
    expect_class(rc, MPI_ERR_BUFFER, "MPI_Isend of 2 elements from NULL");
    /* Truncation on the fast paths: 4 doubles into 2 (one element of shapes[2]). */
    MPI_CHECK(MPI_Isend(buf, 4, shapes[1].type, mt_rank, 5, MPI_COMM_WORLD, &r));
    rc = MPI_Recv(buf + 16, 1, shapes[2].type, mt_rank, 5, MPI_COMM_WORLD, &st);
    expect_class(rc, MPI_ERR_TRUNCATE, "MPI_Recv of 4 doubles into 2");
    MPI_CHECK(MPI_Wait(&r, MPI_STATUS_IGNORE));
    MPI_CHECK(MPI_Isend(buf, 3, shapes[3].type, mt_rank, 6, MPI_COMM_WORLD, &r));
    {
        MPI_Request rr;
        MPI_CHECK(MPI_Irecv(buf + 32, 2, shapes[4].type, mt_rank, 6, MPI_COMM_WORLD, &rr));
        rc = MPI_Wait(&rr, &st);
        expect_class(rc, MPI_ERR_TRUNCATE, "MPI_Irecv of 9 doubles into 4");
    }
    MPI_CHECK(MPI_Wait(&r, MPI_STATUS_IGNORE));
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
}

int main(int argc, char **argv)
{
    static const long sizes[] = {1, 2, 3, 6, 12, 60, 510, 1530, 1536, 1542, 2046, 2052, 8190, 8196};
    int peer, a, b, m, j, salt = 1;
    size_t i, maxspan = 0;
    mt_init(&argc, &argv);
    make_shapes();
    for (a = 0; a < NSHAPES; a++) {
        size_t sp = span(&shapes[a], 8196 / shapes[a].k + 1);
        if (sp > maxspan)
            maxspan = sp;
    }
    for (j = 0; j < MAXWIN; j++) {
        sbufs[j] = malloc(maxspan);
        rbufs[j] = malloc(maxspan);
    }
    peer = (mt_rank ^ 1) < mt_size ? mt_rank ^ 1 : mt_rank;
    for (i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        long nd = sizes[i];
        int win = nd <= 2052 ? MAXWIN : 4;
        for (a = 0; a < NSHAPES; a++)
            for (b = 0; b < NSHAPES; b++) {
                if (nd % shapes[a].k || nd % shapes[b].k)
                    continue;
                for (m = 0; m < NMODES; m++)
                    window(peer, &shapes[a], &shapes[b], nd, win, m, salt++ % 200);
            }
    }
    pieces(peer);
    bottom(peer);
    bad_input(peer);
    MPI_Barrier(MPI_COMM_WORLD);
    for (a = 1; a < NSHAPES; a++)
        MPI_Type_free(&shapes[a].type);
    for (j = 0; j < MAXWIN; j++) {
        free(sbufs[j]);
        free(rbufs[j]);
    }
    return mt_finalize();
}
