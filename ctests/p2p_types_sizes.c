/* oxmpi-test: np=1,2,4,8 */
/* MPI_Send/MPI_Recv with CHAR, INT, DOUBLE, LONG_DOUBLE, DOUBLE_INT, 2INT and
 * BYTE at sizes from 0 to 4 MiB (crossing any eager/rendezvous threshold),
 * verifying data, status fields and that nothing is written past the count.
 * Ranks work in pairs (0-1, 2-3, ...); an odd rank out talks to itself with
 * MPI_Irecv + MPI_Send. */
#include "mtest.h"

typedef struct { double d; int i; } double_int;
typedef struct { int a; int b; } two_int;

enum { T_CHAR, T_INT, T_DOUBLE, T_LDOUBLE, T_DOUBLE_INT, T_2INT, T_BYTE, NTYPES };
static const char *tname[NTYPES] = {"MPI_CHAR", "MPI_INT", "MPI_DOUBLE", "MPI_LONG_DOUBLE",
                                    "MPI_DOUBLE_INT", "MPI_2INT", "MPI_BYTE"};
static size_t tsize[NTYPES] = {sizeof(char), sizeof(int), sizeof(double), sizeof(long double),
                               sizeof(double_int), sizeof(two_int), 1};

static MPI_Datatype mpitype(int t)
{
    switch (t) {
    case T_CHAR: return MPI_CHAR;
    case T_INT: return MPI_INT;
    case T_DOUBLE: return MPI_DOUBLE;
    case T_LDOUBLE: return MPI_LONG_DOUBLE;
    case T_DOUBLE_INT: return MPI_DOUBLE_INT;
    case T_2INT: return MPI_2INT;
    default: return MPI_BYTE;
    }
}

/* Value of element i for a given seed, set/compared per type. */
static void fill(int t, void *buf, size_t n, int seed)
{
    size_t i;
    for (i = 0; i < n; i++) {
        long v = (long)(i * 7 + (size_t)seed * 13 + 1);
        switch (t) {
        case T_CHAR: ((char *)buf)[i] = (char)(v % 127); break;
        case T_INT: ((int *)buf)[i] = (int)v * (i % 2 ? -1 : 1); break;
        case T_DOUBLE: ((double *)buf)[i] = (double)v + 0.25; break;
        case T_LDOUBLE: ((long double *)buf)[i] = (long double)v + 0.125L; break;
        case T_DOUBLE_INT:
            ((double_int *)buf)[i].d = (double)v * 0.5;
            ((double_int *)buf)[i].i = (int)v + 3;
            break;
        case T_2INT:
            ((two_int *)buf)[i].a = (int)v;
            ((two_int *)buf)[i].b = -(int)v;
            break;
        default: ((unsigned char *)buf)[i] = (unsigned char)(v & 0xff); break;
        }
    }
}

/* Index of first bad element or -1. */
static long verify(int t, const void *buf, size_t n, int seed)
{
    size_t i;
    for (i = 0; i < n; i++) {
        long v = (long)(i * 7 + (size_t)seed * 13 + 1);
        int ok;
        switch (t) {
        case T_CHAR: ok = ((const char *)buf)[i] == (char)(v % 127); break;
        case T_INT: ok = ((const int *)buf)[i] == (int)v * (i % 2 ? -1 : 1); break;
        case T_DOUBLE: ok = ((const double *)buf)[i] == (double)v + 0.25; break;
        case T_LDOUBLE: ok = ((const long double *)buf)[i] == (long double)v + 0.125L; break;
        case T_DOUBLE_INT:
            ok = ((const double_int *)buf)[i].d == (double)v * 0.5 && ((const double_int *)buf)[i].i == (int)v + 3;
            break;
        case T_2INT: ok = ((const two_int *)buf)[i].a == (int)v && ((const two_int *)buf)[i].b == -(int)v; break;
        default: ok = ((const unsigned char *)buf)[i] == (unsigned char)(v & 0xff); break;
        }
        if (!ok)
            return (long)i;
    }
    return -1;
}

#define GUARD 64 /* bytes after the receive count that must stay untouched */

int main(int argc, char **argv)
{
    static const size_t bytes[] = {1024,  8192,   12287,   12288,  12289,  16383, 16384,
                                   16385, 65535, 65536, 65537, 262144, 1048576, 4194304};
    enum { NBYTES = sizeof bytes / sizeof bytes[0] };
    static const size_t small[] = {0, 1, 63, 64};
    const size_t maxbytes = 4194304 + 2 * sizeof(long double) * 2;
    char *sbuf, *rbuf;
    int partner, t, k, seed = 0;

    mt_init(&argc, &argv);
    partner = mt_rank ^ 1;
    if (partner >= mt_size)
        partner = mt_rank;
    sbuf = mt_malloc(maxbytes + GUARD);
    rbuf = mt_malloc(maxbytes + GUARD);

    for (t = 0; t < NTYPES; t++) {
        size_t counts[4 + NBYTES + 4];
        int nc = 0, c;
        for (k = 0; k < 4; k++)
            counts[nc++] = small[k];
        for (k = 0; k < NBYTES; k++) {
            size_t n = bytes[k] / tsize[t];
            if (n == 0)
                n = 1;
            counts[nc++] = n;
        }
        /* one element around the eager limit (12 KiB), 16 KiB and the shared-copy threshold
         * (64 KiB) for every type */
        counts[nc++] = 12288 / tsize[t] - 1;
        counts[nc++] = 12288 / tsize[t] + 1;
        counts[nc++] = 16384 / tsize[t] - 1;
        counts[nc++] = 65536 / tsize[t] + 1;

        for (c = 0; c < nc; c++) {
            size_t n = counts[c], nb = n * tsize[t];
            MPI_Status st;
            int count = -1, tag = 100 + c;
            long bad;
            seed++;
            if (nb > maxbytes)
                continue;
            fill(t, sbuf, n, seed + mt_rank * 1000);
            memset(rbuf, 0x5a, nb + GUARD);
            if (partner == mt_rank) {
                MPI_Request rq;
                MPI_CHECK(MPI_Irecv(rbuf, (int)n, mpitype(t), mt_rank, tag, MPI_COMM_WORLD, &rq));
                MPI_CHECK(MPI_Send(sbuf, (int)n, mpitype(t), mt_rank, tag, MPI_COMM_WORLD));
                MPI_CHECK(MPI_Wait(&rq, &st));
            } else if (mt_rank < partner) {
                MPI_CHECK(MPI_Send(sbuf, (int)n, mpitype(t), partner, tag, MPI_COMM_WORLD));
                MPI_CHECK(MPI_Recv(rbuf, (int)n, mpitype(t), partner, tag, MPI_COMM_WORLD, &st));
            } else {
                MPI_CHECK(MPI_Recv(rbuf, (int)n, mpitype(t), partner, tag, MPI_COMM_WORLD, &st));
                MPI_CHECK(MPI_Send(sbuf, (int)n, mpitype(t), partner, tag, MPI_COMM_WORLD));
            }
            MPI_CHECK(MPI_Get_count(&st, mpitype(t), &count));
            CHECK(count == (int)n, "%s n=%zu: MPI_Get_count %d", tname[t], n, count);
            CHECK(st.MPI_SOURCE == partner && st.MPI_TAG == tag, "%s n=%zu: status source %d tag %d", tname[t], n,
                  st.MPI_SOURCE, st.MPI_TAG);
            bad = verify(t, rbuf, n, seed + partner * 1000);
            CHECK(bad < 0, "%s n=%zu: element %ld differs", tname[t], n, bad);
            for (k = 0; k < GUARD; k++)
                if ((unsigned char)rbuf[nb + k] != 0x5a) {
                    CHECK(0, "%s n=%zu: byte %d past the receive count was written", tname[t], n, k);
                    break;
                }
        }
    }
    free(sbuf);
    free(rbuf);
    return mt_finalize();
}
