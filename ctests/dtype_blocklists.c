/* oxmpi-test: np=2,4 */
/* Large non-contiguous messages between every pair of layouts: contiguous, vectors with small
 * (8 B), medium (512 B) and large (4 KiB) blocks, and an indexed type with unequal blocks, at
 * 64 KiB and 1 MiB of payload. Large dense layouts move as block lists in one single-copy
 * transfer, small blocks through packing; a receiver with another layout must see the same
 * bytes in its own layout, with untouched gaps. Ranks pair up (0-1, 2-3). */
#include "mtest.h"
#include <stdlib.h>

#define NLAYOUTS 5

/* Builds layout `which` holding `n` doubles; returns the type and the span in doubles. */
static MPI_Datatype make_layout(int which, int n, int *span)
{
    MPI_Datatype t;
    int bl, i;
    switch (which) {
    case 0:
        MPI_Type_contiguous(n, MPI_DOUBLE, &t);
        *span = n;
        break;
    case 1: /* 8-byte blocks, stride 2 */
        MPI_Type_vector(n, 1, 2, MPI_DOUBLE, &t);
        *span = 2 * n;
        break;
    case 2: /* 512-byte blocks, stride 96 doubles */
        bl = 64;
        MPI_Type_vector(n / bl, bl, bl + 32, MPI_DOUBLE, &t);
        *span = (n / bl) * (bl + 32);
        break;
    case 3: /* 4 KiB blocks, stride 1.5x */
        bl = 512;
        MPI_Type_vector(n / bl, bl, bl + bl / 2, MPI_DOUBLE, &t);
        *span = (n / bl) * (bl + bl / 2);
        break;
    default: { /* indexed: blocks of 100 and 28 doubles, gaps of 7 */
        int nb = n / 128, *lens = malloc(2 * nb * sizeof(int)), *disp = malloc(2 * nb * sizeof(int)), at = 0;
        for (i = 0; i < 2 * nb; i++) {
            lens[i] = (i % 2) ? 28 : 100;
            disp[i] = at;
            at += lens[i] + 7;
        }
        MPI_Type_indexed(2 * nb, lens, disp, MPI_DOUBLE, &t);
        *span = at;
        free(lens);
        free(disp);
    }
    }
    MPI_Type_commit(&t);
    return t;
}

/* Value of the k-th double of the message. */
static double value(int k, int salt)
{
    return k * 0.5 + salt;
}

int main(int argc, char **argv)
{
    int sizes[2] = {8192, 131072}; /* doubles: 64 KiB and 1 MiB */
    int s, a, b, peer;

    mt_init(&argc, &argv);
    peer = mt_rank ^ 1;
    if (peer >= mt_size)
        peer = MPI_PROC_NULL;
    for (s = 0; s < 2; s++) {
        int n = sizes[s];
        for (a = 0; a < NLAYOUTS; a++) {
            for (b = 0; b < NLAYOUTS; b++) {
                int sspan, rspan, k, i, salt = s * 100 + a * 10 + b;
                MPI_Datatype st = make_layout(a, n, &sspan), rt = make_layout(b, n, &rspan);
                double *sbuf = calloc(sspan, sizeof(double)), *rbuf = malloc(rspan * sizeof(double));
                double *pos = malloc(n * sizeof(double));
                MPI_Aint lb, ext;
                /* Fill the send layout: pack positions by walking a contiguous copy. */
                for (k = 0; k < n; k++)
                    pos[k] = value(k, salt);
                {
                    int psize, at = 0;
                    char *packed;
                    MPI_Pack_size(1, st, MPI_COMM_SELF, &psize);
                    packed = malloc(psize);
                    MPI_Pack(pos, n, MPI_DOUBLE, packed, psize, &at, MPI_COMM_SELF);
                    at = 0;
                    MPI_Unpack(packed, psize, &at, sbuf, 1, st, MPI_COMM_SELF);
                    free(packed);
                }
                for (i = 0; i < rspan; i++)
                    rbuf[i] = -1.0;
                if (peer != MPI_PROC_NULL) {
                    if (mt_rank < peer) {
                        MPI_CHECK(MPI_Send(sbuf, 1, st, peer, salt, MPI_COMM_WORLD));
                    } else {
                        MPI_Status status;
                        int count;
                        MPI_CHECK(MPI_Recv(rbuf, 1, rt, peer, salt, MPI_COMM_WORLD, &status));
                        MPI_CHECK(MPI_Get_count(&status, rt, &count));
                        CHECK(count == 1, "layouts %d->%d n=%d: count %d", a, b, n, count);
                        {
                            /* Unpack what arrived into a contiguous array and compare. */
                            int psize, at = 0, errs = 0;
                            char *packed;
                            double *got = malloc(n * sizeof(double));
                            MPI_Pack_size(1, rt, MPI_COMM_SELF, &psize);
                            packed = malloc(psize);
                            MPI_Pack(rbuf, 1, rt, packed, psize, &at, MPI_COMM_SELF);
                            at = 0;
                            MPI_Unpack(packed, psize, &at, got, n, MPI_DOUBLE, MPI_COMM_SELF);
                            for (k = 0; k < n && errs < 3; k++)
                                if (got[k] != value(k, salt)) {
                                    CHECK(0, "layouts %d->%d n=%d: element %d = %g, want %g", a, b, n, k, got[k],
                                          value(k, salt));
                                    errs++;
                                }
                            free(packed);
                            free(got);
                        }
                        /* Gaps of the receive layout stay untouched: count the -1 entries. */
                        {
                            int untouched = 0;
                            for (i = 0; i < rspan; i++)
                                untouched += rbuf[i] == -1.0;
                            CHECK(untouched == rspan - n, "layouts %d->%d n=%d: %d gap entries, want %d", a, b, n,
                                  untouched, rspan - n);
                        }
                    }
                }
                MPI_Type_get_extent(rt, &lb, &ext);
                free(sbuf);
                free(rbuf);
                free(pos);
                MPI_Type_free(&st);
                MPI_Type_free(&rt);
            }
        }
    }
    return mt_finalize();
}
