/* oxmpi-test: np=2,4 */
/* Repeated large non-contiguous transfers (single-copy block lists, whose plans oxmpi caches
 * per (layout, address, count, bytes)): every repetition must move the current data, and any
 * change of layout, count, address or message length must be honoured: the same buffer sent
 * again after its type was freed and replaced, a resized type, other counts, other offsets,
 * shorter messages into the same receive layout, and more buffers in rotation than a cache
 * would hold. Ranks pair up (0-1, 2-3). */
#include "mtest.h"

#define NB 128          /* blocks of the vectors */
#define BL 64           /* doubles per block (512 B) */
#define STRIDE 96       /* doubles between block starts */
#define SPAN (NB * STRIDE + 4 * STRIDE)
#define NBUF 20         /* buffers in rotation (more than a plan cache holds) */
#define GAP -1.0

static double *sbuf, *rbuf;

static double value(int k, int salt)
{
    return k * 0.25 + salt * 1000.0;
}

/* Fills the `n` elements of `t` at `base` (element data in order) with value(k, salt) and
 * everything else in [base, base + span) with GAP; `pos` gets the data positions. */
static void layout_positions(MPI_Datatype t, int n, int *pos, int *npos)
{
    /* The data positions of t: pack indices 0.. into a double buffer and unpack. */
    int size, i, k = 0, p = 0;
    double *tmp, *packed;
    MPI_Type_size(t, &size);
    tmp = mt_malloc(sizeof(double) * SPAN * 3);
    packed = mt_malloc((size_t)size * n);
    for (i = 0; i < size / 8 * n; i++)
        packed[i] = i;
    for (i = 0; i < SPAN * 3; i++)
        tmp[i] = -1;
    MPI_Unpack(packed, size * n, &p, tmp, n, t, MPI_COMM_SELF);
    for (i = 0; i < SPAN * 3; i++)
        if (tmp[i] >= 0)
            pos[(int)tmp[i]] = i, k++;
    *npos = k;
    free(tmp);
    free(packed);
}

/* One transfer: the even rank sends `scount` of `st` at sbuf + soff, the odd one receives
 * `rcount` of `rt` at rbuf + roff and checks data and gaps. */
static void transfer(MPI_Datatype st, int scount, int soff, MPI_Datatype rt, int rcount, int roff, int salt,
                     const char *what)
{
    int partner = mt_rank ^ 1, i, n, *pos = mt_malloc(sizeof(int) * SPAN * 3), got = -1;
    MPI_Status status;
    if (partner >= mt_size) {
        free(pos);
        return;
    }
    if (mt_rank % 2 == 0) {
        layout_positions(st, scount, pos, &n);
        for (i = 0; i < SPAN * 3; i++)
            sbuf[i] = GAP;
        for (i = 0; i < n; i++)
            sbuf[soff + pos[i]] = value(i, salt);
        MPI_CHECK(MPI_Send(sbuf + soff, scount, st, partner, 1, MPI_COMM_WORLD));
    } else {
        int sent = 0, k;
        for (i = 0; i < SPAN * 3; i++)
            rbuf[i] = GAP;
        MPI_CHECK(MPI_Recv(rbuf + roff, rcount, rt, partner, 1, MPI_COMM_WORLD, &status));
        MPI_Get_count(&status, MPI_DOUBLE, &sent);
        layout_positions(rt, rcount, pos, &n);
        for (k = 0, i = 0; i < n && k < sent; i++, k++)
            if (rbuf[roff + pos[i]] != value(k, salt) && got < 0)
                got = i;
        CHECK(got < 0, "%s: element %d is %g, want %g", what, got, got < 0 ? 0 : rbuf[roff + pos[got]],
              value(got, salt));
        /* everything else untouched */
        for (i = 0; i < n && i < sent; i++)
            rbuf[roff + pos[i]] = GAP;
        for (i = 0, got = -1; i < SPAN * 3; i++)
            if (rbuf[i] != GAP && got < 0)
                got = i;
        CHECK(got < 0, "%s: byte outside the received elements changed at double %d", what, got);
    }
    free(pos);
}

int main(int argc, char **argv)
{
    MPI_Datatype vec, vec2, resized, other;
    int rep, b;
    char what[64];

    mt_init(&argc, &argv);
    sbuf = mt_malloc(sizeof(double) * SPAN * 3);
    rbuf = mt_malloc(sizeof(double) * SPAN * 3);
    MPI_Type_vector(NB, BL, STRIDE, MPI_DOUBLE, &vec);
    MPI_Type_commit(&vec);

    /* the same layout and place again and again, with new data each time */
    for (rep = 0; rep < 6; rep++) {
        snprintf(what, sizeof what, "repeat %d", rep);
        transfer(vec, 1, 0, vec, 1, 0, rep, what);
    }
    /* other counts and offsets of the same type */
    transfer(vec, 2, 0, vec, 2, 0, 10, "count 2");
    transfer(vec, 1, 3, vec, 1, 5, 11, "offsets 3 and 5");
    transfer(vec, 1, 0, vec, 1, 0, 12, "back at offset 0");
    /* a shorter message into the same receive layout (count 2: half of it) */
    transfer(vec, 1, 0, vec, 2, 0, 13, "shorter message");
    transfer(vec, 2, 0, vec, 2, 0, 14, "full again");
    /* a resized type: the second element starts elsewhere */
    MPI_Type_create_resized(vec, 0, (MPI_Aint)sizeof(double) * (NB * STRIDE + 2 * STRIDE), &resized);
    MPI_Type_commit(&resized);
    transfer(resized, 2, 0, resized, 2, 0, 15, "resized");
    transfer(vec, 2, 0, vec, 2, 0, 16, "not resized");
    /* the type freed and replaced by another layout, same buffers */
    MPI_Type_free(&vec);
    MPI_Type_vector(NB, BL, STRIDE + 8, MPI_DOUBLE, &vec2);
    MPI_Type_commit(&vec2);
    transfer(vec2, 1, 0, vec2, 1, 0, 17, "replaced type");
    MPI_Type_vector(NB, BL / 2, STRIDE / 2, MPI_DOUBLE, &other);
    MPI_Type_commit(&other);
    transfer(vec2, 1, 0, other, 2, 0, 18, "different receive layout");
    /* more places in rotation than a cache holds, twice */
    for (rep = 0; rep < 2; rep++)
        for (b = 0; b < NBUF; b++) {
            snprintf(what, sizeof what, "rotation %d offset %d", rep, b);
            transfer(other, 2, b * 3, vec2, 1, b * 5, 20 + b + rep, what);
        }
    MPI_Type_free(&vec2);
    MPI_Type_free(&resized);
    MPI_Type_free(&other);
    free(sbuf);
    free(rbuf);
    return mt_finalize();
}
