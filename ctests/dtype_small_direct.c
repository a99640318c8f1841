/* oxmpi-test: np=2,3,8 */
/* Small non-contiguous messages on the blocking paths that skip requests (a send packed straight
 * into a free slot, a blocking receive unpacked straight from the head of the sender's ring):
 * vectors of 8-byte blocks 64 bytes apart and a resized struct with descending displacements,
 * 1 to 200 elements, received into the same layout, a larger receive (partial: MPI_Get_count,
 * MPI_Get_elements), a smaller one (MPI_ERR_TRUNCATE), with MPI_ANY_SOURCE / MPI_ANY_TAG, in
 * an order other than the sender's (tags), and after several messages queued up (unexpected).
 * Every data byte and every gap byte checked. Ranks pair up (0-1, 2-3, ...); an odd last rank
 * only joins the final barrier. */
#include "mtest.h"
#include <stdlib.h>
#include <string.h>

#define GAP 0xA5
#define NMAX 200

typedef struct {
    MPI_Datatype type;
    int nb;
    MPI_Aint disp[2], len[2], extent, size;
    int basic; /* bytes of the basic type (what MPI_Get_elements counts) */
} shape;

static shape make_vector(void)
{
    shape s = {MPI_DATATYPE_NULL, 1, {0, 0}, {8, 0}, 64, 8, 8};
    MPI_Datatype v;
    MPI_CHECK(MPI_Type_vector(1, 1, 8, MPI_DOUBLE, &v));
    MPI_CHECK(MPI_Type_create_resized(v, 0, 64, &s.type));
    MPI_Type_free(&v);
    MPI_CHECK(MPI_Type_commit(&s.type));
    return s;
}

static shape make_struct(void)
{
    shape s = {MPI_DATATYPE_NULL, 2, {40, 4}, {8, 12}, 56, 20, 1};
    MPI_Datatype t, types[2] = {MPI_BYTE, MPI_BYTE};
    int lens[2] = {8, 12};
    MPI_CHECK(MPI_Type_create_struct(2, lens, s.disp, types, &t));
    MPI_CHECK(MPI_Type_create_resized(t, 0, 56, &s.type));
    MPI_Type_free(&t);
    MPI_CHECK(MPI_Type_commit(&s.type));
    return s;
}

static unsigned char byte_at(long k, int salt)
{
    return (unsigned char)(k * 11 + salt);
}

static void fill(const shape *s, int count, unsigned char *buf, int salt)
{
    long e, b, i, k = 0;
    memset(buf, 0x5A, (size_t)(s->extent * (count + 1)));
    for (e = 0; e < count; e++)
        for (b = 0; b < s->nb; b++)
            for (i = 0; i < s->len[b]; i++)
                buf[e * s->extent + s->disp[b] + i] = byte_at(k++, salt);
}

/* The first `n` data bytes hold the stream, every other byte of `count` elements is GAP. */
static void verify(const shape *s, int count, long n, const unsigned char *buf, int salt, const char *what)
{
    long e, b, i, k = 0, errs = 0, span = s->extent * count;
    unsigned char *mark = calloc((size_t)span, 1);
    for (e = 0; e < count && k < n; e++)
        for (b = 0; b < s->nb && k < n; b++)
            for (i = 0; i < s->len[b] && k < n; i++, k++) {
                long off = e * s->extent + s->disp[b] + i;
                mark[off] = 1;
                if (buf[off] != byte_at(k, salt) && errs++ < 3)
                    CHECK(0, "%s: data byte %ld is %d, want %d", what, k, buf[off], byte_at(k, salt));
            }
    for (i = 0; i < span; i++)
        if (!mark[i] && buf[i] != GAP && errs++ < 3)
            CHECK(0, "%s: byte at offset %ld outside the data was overwritten (%d)", what, i, buf[i]);
    free(mark);
}

static void check_status(const shape *s, MPI_Status *st, long n, int src, int tag, const char *what)
{
    int count, elements;
    MPI_CHECK(MPI_Get_elements(st, s->type, &elements));
    CHECK(elements == n / s->basic, "%s: MPI_Get_elements gives %d, want %ld", what, elements, n / s->basic);
    MPI_CHECK(MPI_Get_count(st, s->type, &count));
    CHECK(n % s->size ? count == MPI_UNDEFINED : count == n / s->size, "%s: MPI_Get_count gives %d", what, count);
    CHECK(st->MPI_SOURCE == src && st->MPI_TAG == tag, "%s: status source %d tag %d", what, st->MPI_SOURCE,
          st->MPI_TAG);
}

static void pair(int peer, const shape *s, unsigned char *sbuf, unsigned char *rbuf)
{
    int n, extra, salt = 3;
    char what[96];
    MPI_Status st;
    for (n = 1; n <= NMAX; n = n < 8 ? n + 1 : n * 3 / 2, salt++) {
        long bytes = (long)n * s->size;
        for (extra = 0; extra <= 2; extra++) { /* same count, then a larger receive */
            snprintf(what, sizeof what, "%d elements of %ld bytes, receive of %d more", n, (long)s->size, extra);
            if (mt_rank < peer) { /* sends, then takes the echo with wildcards */
                fill(s, n, sbuf, salt);
                memset(rbuf, GAP, (size_t)(s->extent * (NMAX + 3)));
                MPI_CHECK(MPI_Send(sbuf, n, s->type, peer, extra, MPI_COMM_WORLD));
                MPI_CHECK(MPI_Recv(rbuf, n + extra, s->type, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st));
                check_status(s, &st, bytes, peer, extra, what);
                verify(s, n + extra, bytes, rbuf, salt, what);
            } else {
                memset(rbuf, GAP, (size_t)(s->extent * (NMAX + 3)));
                MPI_CHECK(MPI_Recv(rbuf, n + extra, s->type, peer, extra, MPI_COMM_WORLD, &st));
                check_status(s, &st, bytes, peer, extra, what);
                verify(s, n + extra, bytes, rbuf, salt, what);
                MPI_CHECK(MPI_Send(rbuf, n, s->type, peer, extra, MPI_COMM_WORLD)); /* echo */
            }
        }
        /* A receive too small: MPI_ERR_TRUNCATE. */
        if (n > 1) {
            snprintf(what, sizeof what, "%d elements into %d", n, n - 1);
            if (mt_rank < peer) {
                fill(s, n, sbuf, salt);
                MPI_CHECK(MPI_Send(sbuf, n, s->type, peer, 50, MPI_COMM_WORLD));
            } else {
                int rc, cls;
                MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
                rc = MPI_Recv(rbuf, n - 1, s->type, peer, 50, MPI_COMM_WORLD, &st);
                MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
                MPI_Error_class(rc, &cls);
                CHECK(cls == MPI_ERR_TRUNCATE, "%s: error class %d, want MPI_ERR_TRUNCATE", what, cls);
            }
        }
    }
    /* Queued up, then taken out of order: tags 10..14 sent, received 14, 12, 10, 11, 13. */
    if (mt_rank < peer) {
        int t;
        for (t = 10; t < 15; t++) {
            fill(s, 5, sbuf, t);
            MPI_CHECK(MPI_Send(sbuf, 5, s->type, peer, t, MPI_COMM_WORLD));
        }
    } else {
        static const int order[] = {14, 12, 10, 11, 13};
        int i;
        for (i = 0; i < 5; i++) {
            snprintf(what, sizeof what, "queued message tag %d", order[i]);
            memset(rbuf, GAP, (size_t)(s->extent * (NMAX + 3)));
            MPI_CHECK(MPI_Recv(rbuf, 5, s->type, peer, order[i], MPI_COMM_WORLD, &st));
            check_status(s, &st, 5 * s->size, peer, order[i], what);
            verify(s, 5, 5 * s->size, rbuf, order[i], what);
        }
    }
}

int main(int argc, char **argv)
{
    shape shapes[2];
    unsigned char *sbuf, *rbuf;
    int peer, i;
    mt_init(&argc, &argv);
    shapes[0] = make_vector();
    shapes[1] = make_struct();
    sbuf = malloc(64 * (NMAX + 3));
    rbuf = malloc(64 * (NMAX + 3));
    peer = mt_rank ^ 1;
    if (peer < mt_size)
        for (i = 0; i < 2; i++)
            pair(peer, &shapes[i], sbuf, rbuf);
    MPI_Barrier(MPI_COMM_WORLD);
    for (i = 0; i < 2; i++)
        MPI_Type_free(&shapes[i].type);
    free(sbuf);
    free(rbuf);
    return mt_finalize();
}
