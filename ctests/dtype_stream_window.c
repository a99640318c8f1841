/* oxmpi-test: np=2,3,8 timeout=180 env=OXMPI_CMA_SPLIT=65536 */
/* Windows of non-contiguous rendezvous messages between rank pairs (0-1, 2-3, ...; an odd last
 * rank idles): a receiver that finds more packets queued behind a request to send of dense
 * blocks shorter than the shared-copy threshold (64 KiB here, forced at every rank count) asks
 * for a stream through the ring instead of reading the blocks itself; a lone message is read.
 * Sizes around the eager limit and the threshold; layouts of MPI_BYTE blocks per element,
 * resized to a larger extent: contiguous, a 4 KiB-block vector, a 1 KiB-block vector (dense
 * for the receiver only), a struct with descending displacements and a 128-byte-block vector
 * (sparse: always streamed), every sender layout against every receiver layout. Receives posted
 * first, posted after the messages arrived (unexpected), and windows both ways at once; the
 * receive buffer holds more elements than arrive (MPI_Get_elements / MPI_Get_count of a partial
 * element). Every data byte is checked and every gap byte must stay untouched. */
#include "mtest.h"
#include <stdlib.h>
#include <string.h>

#define GAP_FILL 0xA5
#define SEND_GAP_FILL 0x5A
#define WINDOW 12

typedef struct {
    int nb;           /* blocks per element */
    long disp[2], len[2];
    long extent, size; /* of one element */
} shape;

static const shape shapes[] = {
    {1, {0, 0}, {4096, 0}, 4096, 4096},           /* contiguous */
    {1, {0, 0}, {4096, 0}, 5096, 4096},           /* vector of 4 KiB blocks */
    {1, {0, 0}, {1024, 0}, 1500, 1024},           /* vector of 1 KiB blocks */
    {2, {6000, 0}, {4096, 2048}, 11000, 6144},    /* struct, descending displacements */
    {1, {0, 0}, {128, 0}, 256, 128},              /* vector of 128-byte blocks */
};
#define NSHAPES ((int)(sizeof shapes / sizeof shapes[0]))

static MPI_Datatype make_type(const shape *s)
{
    MPI_Datatype blocks, t;
    int lens[2] = {(int)s->len[0], (int)s->len[1]};
    MPI_Aint disps[2] = {s->disp[0], s->disp[1]};
    MPI_CHECK(MPI_Type_create_hindexed(s->nb, lens, disps, MPI_BYTE, &blocks));
    MPI_CHECK(MPI_Type_create_resized(blocks, 0, s->extent, &t));
    MPI_CHECK(MPI_Type_commit(&t));
    MPI_Type_free(&blocks);
    return t;
}

static unsigned char data_byte(long k, int salt)
{
    return (unsigned char)((k * 7 + (k >> 9) * 13 + salt) & 0xff);
}

/* Calls f(offset, k) for each of the first `n` data bytes of `count` elements of `s`. */
#define FOR_DATA(s, count, n, body)                                                                   \
    do {                                                                                              \
        long e_, b_, i_, k = 0;                                                                       \
        for (e_ = 0; e_ < (count) && k < (n); e_++)                                                   \
            for (b_ = 0; b_ < (s)->nb && k < (n); b_++)                                               \
                for (i_ = 0; i_ < (s)->len[b_] && k < (n); i_++, k++) {                               \
                    long off = e_ * (s)->extent + (s)->disp[b_] + i_;                                 \
                    body;                                                                             \
                }                                                                                     \
    } while (0)

static long span(const shape *s, long count)
{
    return count * s->extent;
}

static void fill(const shape *s, long count, unsigned char *buf, int salt)
{
    memset(buf, SEND_GAP_FILL, span(s, count));
    FOR_DATA(s, count, count * s->size, buf[off] = data_byte(k, salt));
}

static void verify(const shape *s, long count, long n, const unsigned char *buf, int salt, const char *what)
{
    long errs = 0, i, sp = span(s, count);
    unsigned char *mark = calloc(sp, 1);
    FOR_DATA(s, count, n, {
        mark[off] = 1;
        if (buf[off] != data_byte(k, salt) && errs++ < 3)
            CHECK(0, "%s: data byte %ld is %d, want %d", what, k, buf[off], data_byte(k, salt));
    });
    for (i = 0; i < sp; i++)
        if (!mark[i] && buf[i] != GAP_FILL && errs++ < 3)
            CHECK(0, "%s: byte at offset %ld outside the received data was overwritten (%d)", what, i, buf[i]);
    free(mark);
}

enum { POSTED_FIRST, UNEXPECTED, BOTH_WAYS };

/* A window of WINDOW messages of about `nominal` bytes from the lower rank of the pair (both
 * ranks with BOTH_WAYS), layout `a` sent, `b` received. */
static void run_window(int peer, int a, int b, long nominal, int mode, int salt)
{
    const shape *ss = &shapes[a], *rs = &shapes[b];
    long scount = nominal / ss->size, n = scount * ss->size;
    long rcount = n / rs->size + 2; /* room for more than arrives, with a partial element */
    MPI_Datatype st = make_type(ss), rt = make_type(rs);
    long sspan = span(ss, scount), rspan = span(rs, rcount);
    unsigned char *sbuf = malloc(sspan * WINDOW), *rbuf = malloc(rspan * WINDOW);
    MPI_Request req[2 * WINDOW];
    MPI_Status sts[2 * WINDOW];
    int sending = mt_rank < peer || mode == BOTH_WAYS, receiving = mt_rank > peer || mode == BOTH_WAYS;
    int j, nreq = 0;
    char what[128];
    if (sending)
        for (j = 0; j < WINDOW; j++)
            fill(ss, scount, sbuf + j * sspan, salt + j);
    if (receiving)
        memset(rbuf, GAP_FILL, rspan * WINDOW);
    if (receiving && mode != UNEXPECTED)
        for (j = 0; j < WINDOW; j++)
            MPI_CHECK(MPI_Irecv(rbuf + j * rspan, (int)rcount, rt, peer, 100 + j, MPI_COMM_WORLD, &req[nreq++]));
    if (mode != BOTH_WAYS)
        MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD)); /* receives posted first; unexpected: not yet */
    if (sending)
        for (j = 0; j < WINDOW; j++)
            MPI_CHECK(MPI_Isend(sbuf + j * sspan, (int)scount, st, peer, 100 + j, MPI_COMM_WORLD, &req[nreq++]));
    if (mode == UNEXPECTED) {
        /* Let the requests to send arrive (and queue up) before the receives exist. */
        if (receiving) {
            int flag = 0;
            MPI_Status pst;
            while (!flag)
                MPI_CHECK(MPI_Iprobe(peer, 100 + WINDOW - 1, MPI_COMM_WORLD, &flag, &pst));
            for (j = 0; j < WINDOW; j++)
                MPI_CHECK(MPI_Irecv(rbuf + j * rspan, (int)rcount, rt, peer, 100 + j, MPI_COMM_WORLD, &req[nreq++]));
        }
    }
    MPI_CHECK(MPI_Waitall(nreq, req, sts));
    if (receiving) {
        for (j = 0; j < WINDOW; j++) {
            int elements, count;
            MPI_Status *s = &sts[j]; /* the receives come first */
            snprintf(what, sizeof what, "shapes %d->%d, %ld bytes, mode %d, message %d", a, b, n, mode, j);
            MPI_CHECK(MPI_Get_elements(s, rt, &elements));
            CHECK(elements == n, "%s: MPI_Get_elements gives %d, want %ld", what, elements, n);
            MPI_CHECK(MPI_Get_count(s, rt, &count));
            CHECK(n % rs->size ? count == MPI_UNDEFINED : count == n / rs->size, "%s: MPI_Get_count gives %d", what,
                  count);
            verify(rs, rcount, n, rbuf + j * rspan, salt + j, what);
        }
    }
    if (mode != BOTH_WAYS)
        MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
    MPI_Type_free(&st);
    MPI_Type_free(&rt);
    free(sbuf);
    free(rbuf);
}

int main(int argc, char **argv)
{
    /* Just above the eager limit (12 KiB), one and two ring slots (16 KiB payloads), just
     * below, at and above the 64 KiB threshold. */
    const long sizes[] = {12288 + 1024, 16384, 32768 + 1024, 65536 - 1024, 65536, 65536 + 4096};
    int peer, a, b, s, mode, salt = 1;
    mt_init(&argc, &argv);
    peer = mt_rank ^ 1;
    for (s = 0; s < (int)(sizeof sizes / sizeof sizes[0]); s++)
        for (mode = POSTED_FIRST; mode <= BOTH_WAYS; mode++)
            for (a = 0; a < NSHAPES; a++)
                for (b = 0; b < NSHAPES; b++) {
                    if (peer < mt_size)
                        run_window(peer, a, b, sizes[s], mode, salt);
                    else if (mode != BOTH_WAYS) { /* the odd rank out joins the barriers */
                        MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
                        MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
                    }
                    salt = (salt + 7) % 200;
                }
    return mt_finalize();
}
