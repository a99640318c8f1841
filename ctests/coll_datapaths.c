/* oxmpi-test: np=1,2,3,4,5,8 timeout=240 */
/* Blocking gather(v), scatter(v), allgather(v), alltoall(v), reduce_scatter(_block) and bcast
 * moving data straight between user buffers: contiguous and non-contiguous datatypes on
 * either side (ints 2 apart; runs of 64 ints 65 apart), sizes around the eager limit (16 KiB)
 * and the binomial / recursive-doubling thresholds, MPI_IN_PLACE, v-variants with zero counts
 * on some ranks and blocks out of rank order. Holes between a type's data must stay as they
 * were. coll_datapaths_alt.c runs the same with the other algorithms forced. */
#include "coll_mtest.h"

static int rank, size;

/* A way to lay out ints: elements of `ipe` ints, `ext` ints apart. */
typedef struct {
    MPI_Datatype t;
    int ipe, ext;
    const char *name;
} kind_t;

enum { K_CONT, K_STRIDE, K_CHUNK, NKINDS };
static kind_t kinds[NKINDS];

static void make_kinds(void)
{
    MPI_Datatype t, c;
    kinds[K_CONT] = (kind_t){MPI_INT, 1, 1, "int"};
    MPI_Type_create_resized(MPI_INT, 0, 2 * sizeof(int), &t);
    MPI_Type_commit(&t);
    kinds[K_STRIDE] = (kind_t){t, 1, 2, "stride2"};
    MPI_Type_contiguous(64, MPI_INT, &c);
    MPI_Type_create_resized(c, 0, 65 * sizeof(int), &t);
    MPI_Type_free(&c);
    MPI_Type_commit(&t);
    kinds[K_CHUNK] = (kind_t){t, 64, 65, "chunk64"};
}

static void free_kinds(void)
{
    MPI_Type_free(&kinds[K_STRIDE].t);
    MPI_Type_free(&kinds[K_CHUNK].t);
}

/* Index in memory of packed int j (j counts across consecutive elements). */
static long pos(const kind_t *k, long j)
{
    return (j / k->ipe) * k->ext + j % k->ipe;
}

/* Ints of memory for `n` packed ints (n a multiple of ipe), at least 1. */
static long span(const kind_t *k, long n)
{
    return n == 0 ? 1 : pos(k, n - 1) + 1;
}

static int val(int src, int dst, long j)
{
    return (int)((src * 1000003L + dst * 7919L + j * 13L) % 2000000011L);
}

#define HOLE (-7)

static int *alloc_ints(long n)
{
    int *p = malloc((size_t)(n > 0 ? n : 1) * sizeof(int));
    for (long i = 0; i < n; i++)
        p[i] = HOLE;
    return p;
}

/* Marks every int of `buf` (of `n` ints) that holds data of `nelem` elements of `k` placed
 * at element offset `first`: mask[i] = 1. */
static void mark(char *mask, const kind_t *k, long first, long nints)
{
    for (long j = 0; j < nints; j++)
        mask[first / k->ipe * k->ext + pos(k, j)] = 1;
}

/* Checks that ints outside `mask` still hold HOLE. */
static void check_holes(const int *buf, const char *mask, long n, const char *what)
{
    for (long i = 0; i < n; i++)
        if (!mask[i] && buf[i] != HOLE) {
            CHECK(0, "%s: hole at int %ld overwritten (%d)", what, i, buf[i]);
            return;
        }
}

/* Sizes in ints (multiples of 64 for the chunk kind; the others take any). */
static const long sizes[] = {0, 1, 64, 4095, 4096, 4097, 4160, 16384};
#define NSIZES (int)(sizeof(sizes) / sizeof(sizes[0]))

static int fits(const kind_t *k, long n)
{
    return n % k->ipe == 0;
}

/* (send kind, receive kind) pairs tried. */
static const int pairs[][2] = {{K_CONT, K_CONT}, {K_CONT, K_STRIDE}, {K_CHUNK, K_CONT}, {K_STRIDE, K_CHUNK}};
#define NPAIRS (int)(sizeof(pairs) / sizeof(pairs[0]))

/* Block b of a buffer of blocks of n ints of kind k starts at element b * n / ipe. */
static void test_gather_scatter(long n, const kind_t *ks, const kind_t *kr, int root, int inplace)
{
    char what[160];
    long rs = span(kr, n * size), ss = span(ks, n * size);
    /* gather: rank r sends val(r, root, j) with ks; the root receives with kr. */
    int *sbuf = alloc_ints(span(ks, n)), *rbuf = alloc_ints(rank == root ? rs : 1);
    for (long j = 0; j < n; j++)
        sbuf[pos(ks, j)] = val(rank, root, j);
    if (inplace && rank == root)
        for (long j = 0; j < n; j++)
            rbuf[pos(kr, rank * n + j)] = val(rank, root, j);
    snprintf(what, sizeof what, "gather n=%ld %s->%s root=%d%s", n, ks->name, kr->name, root, inplace ? " in place" : "");
    MPI_Gather(inplace && rank == root ? MPI_IN_PLACE : sbuf, (int)(n / ks->ipe), ks->t, rbuf, (int)(n / kr->ipe), kr->t,
               root, MPI_COMM_WORLD);
    if (rank == root) {
        char *mask = calloc((size_t)rs, 1);
        mark(mask, kr, 0, n * size);
        for (int b = 0; b < size; b++)
            for (long j = 0; j < n; j++)
                if (rbuf[pos(kr, b * n + j)] != val(b, root, j)) {
                    CHECK(0, "%s: block %d int %ld is %d", what, b, j, rbuf[pos(kr, b * n + j)]);
                    b = size;
                    break;
                }
        check_holes(rbuf, mask, rs, what);
        free(mask);
    }
    free(sbuf);
    free(rbuf);
    /* scatter: the root sends block b = val(root, b, j) with ks; rank r receives with kr. */
    sbuf = alloc_ints(rank == root ? ss : 1);
    rbuf = alloc_ints(span(kr, n));
    if (rank == root)
        for (int b = 0; b < size; b++)
            for (long j = 0; j < n; j++)
                sbuf[pos(ks, b * n + j)] = val(root, b, j);
    snprintf(what, sizeof what, "scatter n=%ld %s->%s root=%d%s", n, ks->name, kr->name, root, inplace ? " in place" : "");
    MPI_Scatter(sbuf, (int)(n / ks->ipe), ks->t, inplace && rank == root ? MPI_IN_PLACE : rbuf, (int)(n / kr->ipe), kr->t,
                root, MPI_COMM_WORLD);
    if (!(inplace && rank == root)) {
        char *mask = calloc((size_t)span(kr, n), 1);
        mark(mask, kr, 0, n);
        for (long j = 0; j < n; j++)
            if (rbuf[pos(kr, j)] != val(root, rank, j)) {
                CHECK(0, "%s: int %ld is %d", what, j, rbuf[pos(kr, j)]);
                break;
            }
        check_holes(rbuf, mask, span(kr, n), what);
        free(mask);
    }
    free(sbuf);
    free(rbuf);
}

/* Gatherv / scatterv: rank b's block has n ints unless b % 3 == 1 (none), and lies at block
 * place size - 1 - b (reverse order). */
static void test_gatherv_scatterv(long n, const kind_t *ks, const kind_t *kr, int root)
{
    char what[160];
    int *counts = malloc(size * sizeof(int)), *displs = malloc(size * sizeof(int));
    for (int b = 0; b < size; b++) {
        counts[b] = b % 3 == 1 ? 0 : (int)(n / kr->ipe);
        displs[b] = (int)((size - 1 - b) * (n / kr->ipe));
    }
    long mine = rank % 3 == 1 ? 0 : n;
    long rs = span(kr, n * size);
    int *sbuf = alloc_ints(span(ks, n)), *rbuf = alloc_ints(rank == root ? rs : 1);
    for (long j = 0; j < mine; j++)
        sbuf[pos(ks, j)] = val(rank, root, j);
    snprintf(what, sizeof what, "gatherv n=%ld %s->%s root=%d", n, ks->name, kr->name, root);
    MPI_Gatherv(sbuf, (int)(mine / ks->ipe), ks->t, rbuf, counts, displs, kr->t, root, MPI_COMM_WORLD);
    if (rank == root) {
        char *mask = calloc((size_t)rs, 1);
        for (int b = 0; b < size; b++) {
            long at = (long)(size - 1 - b) * n;
            if (counts[b] == 0)
                continue;
            mark(mask, kr, at, n);
            for (long j = 0; j < n; j++)
                if (rbuf[pos(kr, at + j)] != val(b, root, j)) {
                    CHECK(0, "%s: block %d int %ld is %d", what, b, j, rbuf[pos(kr, at + j)]);
                    break;
                }
        }
        check_holes(rbuf, mask, rs, what);
        free(mask);
    }
    free(sbuf);
    free(rbuf);
    /* scatterv with the roles of the kinds swapped back: root sends with kr's layout. */
    sbuf = alloc_ints(rank == root ? rs : 1);
    rbuf = alloc_ints(span(ks, n));
    if (rank == root)
        for (int b = 0; b < size; b++)
            for (long j = 0; j < n; j++)
                sbuf[pos(kr, (long)(size - 1 - b) * n + j)] = val(root, b, j);
    snprintf(what, sizeof what, "scatterv n=%ld %s->%s root=%d", n, kr->name, ks->name, root);
    MPI_Scatterv(sbuf, counts, displs, kr->t, rbuf, (int)(mine / ks->ipe), ks->t, root, MPI_COMM_WORLD);
    {
        char *mask = calloc((size_t)span(ks, n), 1);
        mark(mask, ks, 0, mine);
        for (long j = 0; j < mine; j++)
            if (rbuf[pos(ks, j)] != val(root, rank, j)) {
                CHECK(0, "%s: int %ld is %d", what, j, rbuf[pos(ks, j)]);
                break;
            }
        check_holes(rbuf, mask, span(ks, n), what);
        free(mask);
    }
    free(sbuf);
    free(rbuf);
    free(counts);
    free(displs);
}

static void test_allgather(long n, const kind_t *ks, const kind_t *kr, int inplace)
{
    char what[160];
    long rs = span(kr, n * size);
    int *sbuf = alloc_ints(span(ks, n)), *rbuf = alloc_ints(rs);
    for (long j = 0; j < n; j++) {
        sbuf[pos(ks, j)] = val(rank, 0, j);
        if (inplace)
            rbuf[pos(kr, rank * n + j)] = val(rank, 0, j);
    }
    snprintf(what, sizeof what, "allgather n=%ld %s->%s%s", n, ks->name, kr->name, inplace ? " in place" : "");
    MPI_Allgather(inplace ? MPI_IN_PLACE : sbuf, (int)(n / ks->ipe), ks->t, rbuf, (int)(n / kr->ipe), kr->t,
                  MPI_COMM_WORLD);
    char *mask = calloc((size_t)rs, 1);
    mark(mask, kr, 0, n * size);
    for (int b = 0; b < size; b++)
        for (long j = 0; j < n; j++)
            if (rbuf[pos(kr, b * n + j)] != val(b, 0, j)) {
                CHECK(0, "%s: block %d int %ld is %d", what, b, j, rbuf[pos(kr, b * n + j)]);
                b = size;
                break;
            }
    check_holes(rbuf, mask, rs, what);
    free(mask);
    free(sbuf);
    free(rbuf);
}

/* Allgatherv: blocks of n ints except ranks b % 3 == 1 (none), in reverse order. */
static void test_allgatherv(long n, const kind_t *ks, const kind_t *kr, int inplace)
{
    char what[160];
    int *counts = malloc(size * sizeof(int)), *displs = malloc(size * sizeof(int));
    for (int b = 0; b < size; b++) {
        counts[b] = b % 3 == 1 ? 0 : (int)(n / kr->ipe);
        displs[b] = (int)((size - 1 - b) * (n / kr->ipe));
    }
    long mine = rank % 3 == 1 ? 0 : n;
    long rs = span(kr, n * size);
    int *sbuf = alloc_ints(span(ks, n)), *rbuf = alloc_ints(rs);
    for (long j = 0; j < mine; j++) {
        sbuf[pos(ks, j)] = val(rank, 0, j);
        if (inplace)
            rbuf[pos(kr, (long)(size - 1 - rank) * n + j)] = val(rank, 0, j);
    }
    snprintf(what, sizeof what, "allgatherv n=%ld %s->%s%s", n, ks->name, kr->name, inplace ? " in place" : "");
    MPI_Allgatherv(inplace ? MPI_IN_PLACE : sbuf, (int)(mine / ks->ipe), ks->t, rbuf, counts, displs, kr->t,
                   MPI_COMM_WORLD);
    char *mask = calloc((size_t)rs, 1);
    for (int b = 0; b < size; b++) {
        long at = (long)(size - 1 - b) * n;
        if (counts[b] == 0)
            continue;
        mark(mask, kr, at, n);
        for (long j = 0; j < n; j++)
            if (rbuf[pos(kr, at + j)] != val(b, 0, j)) {
                CHECK(0, "%s: block %d int %ld is %d", what, b, j, rbuf[pos(kr, at + j)]);
                break;
            }
    }
    check_holes(rbuf, mask, rs, what);
    free(mask);
    free(sbuf);
    free(rbuf);
    free(counts);
    free(displs);
}

static void test_alltoall(long n, const kind_t *ks, const kind_t *kr, int inplace)
{
    char what[160];
    long rs = span(kr, n * size);
    int *sbuf = alloc_ints(span(ks, n * size)), *rbuf = alloc_ints(rs);
    for (int b = 0; b < size; b++)
        for (long j = 0; j < n; j++) {
            sbuf[pos(ks, b * n + j)] = val(rank, b, j);
            if (inplace)
                rbuf[pos(kr, b * n + j)] = val(rank, b, j);
        }
    snprintf(what, sizeof what, "alltoall n=%ld %s->%s%s", n, ks->name, kr->name, inplace ? " in place" : "");
    MPI_Alltoall(inplace ? MPI_IN_PLACE : sbuf, (int)(n / ks->ipe), ks->t, rbuf, (int)(n / kr->ipe), kr->t,
                 MPI_COMM_WORLD);
    char *mask = calloc((size_t)rs, 1);
    mark(mask, kr, 0, n * size);
    for (int b = 0; b < size; b++)
        for (long j = 0; j < n; j++)
            if (rbuf[pos(kr, b * n + j)] != val(b, rank, j)) {
                CHECK(0, "%s: block %d int %ld is %d", what, b, j, rbuf[pos(kr, b * n + j)]);
                b = size;
                break;
            }
    check_holes(rbuf, mask, rs, what);
    free(mask);
    free(sbuf);
    free(rbuf);
}

/* Alltoallv: rank i sends rank j n ints unless (i + j) % 3 == 0 (none); blocks in reverse
 * order on both sides. */
static void test_alltoallv(long n, const kind_t *ks, const kind_t *kr)
{
    char what[160];
    int *sc = malloc(size * sizeof(int)), *sd = malloc(size * sizeof(int));
    int *rc = malloc(size * sizeof(int)), *rd = malloc(size * sizeof(int));
    for (int b = 0; b < size; b++) {
        sc[b] = (rank + b) % 3 == 0 ? 0 : (int)(n / ks->ipe);
        sd[b] = (int)((size - 1 - b) * (n / ks->ipe));
        rc[b] = (rank + b) % 3 == 0 ? 0 : (int)(n / kr->ipe);
        rd[b] = (int)((size - 1 - b) * (n / kr->ipe));
    }
    long rs = span(kr, n * size);
    int *sbuf = alloc_ints(span(ks, n * size)), *rbuf = alloc_ints(rs);
    for (int b = 0; b < size; b++)
        for (long j = 0; j < n; j++)
            sbuf[pos(ks, (long)(size - 1 - b) * n + j)] = val(rank, b, j);
    snprintf(what, sizeof what, "alltoallv n=%ld %s->%s", n, ks->name, kr->name);
    MPI_Alltoallv(sbuf, sc, sd, ks->t, rbuf, rc, rd, kr->t, MPI_COMM_WORLD);
    char *mask = calloc((size_t)rs, 1);
    for (int b = 0; b < size; b++) {
        long at = (long)(size - 1 - b) * n;
        if (rc[b] == 0)
            continue;
        mark(mask, kr, at, n);
        for (long j = 0; j < n; j++)
            if (rbuf[pos(kr, at + j)] != val(b, rank, j)) {
                CHECK(0, "%s: block %d int %ld is %d", what, b, j, rbuf[pos(kr, at + j)]);
                break;
            }
    }
    check_holes(rbuf, mask, rs, what);
    free(mask);
    free(sbuf);
    free(rbuf);
    free(sc);
    free(sd);
    free(rc);
    free(rd);
}

/* Reduce_scatter_block and reduce_scatter (ranks b % 3 == 1 get nothing) with MPI_SUM on
 * ints, in place or not. */
static void test_reduce_scatter(long n, int inplace)
{
    char what[160];
    int *counts = malloc(size * sizeof(int));
    long total = 0;
    for (int v = 0; v < 2; v++) {
        total = 0;
        for (int b = 0; b < size; b++) {
            counts[b] = v == 1 && b % 3 == 1 ? 0 : (int)n;
            total += counts[b];
        }
        int *sbuf = alloc_ints(total), *rbuf = alloc_ints(inplace ? total : n + 1);
        for (long j = 0; j < total; j++)
            (inplace ? rbuf : sbuf)[j] = val(rank, 0, j) % 1000;
        long first = 0;
        for (int b = 0; b < rank; b++)
            first += counts[b];
        snprintf(what, sizeof what, "reduce_scatter%s n=%ld%s", v ? "" : "_block", n, inplace ? " in place" : "");
        if (v == 0)
            MPI_Reduce_scatter_block(inplace ? MPI_IN_PLACE : sbuf, rbuf, (int)n, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        else
            MPI_Reduce_scatter(inplace ? MPI_IN_PLACE : sbuf, rbuf, counts, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        for (long j = 0; j < counts[rank]; j++) {
            long want = 0;
            for (int s = 0; s < size; s++)
                want += val(s, 0, first + j) % 1000;
            if (rbuf[j] != want) {
                CHECK(0, "%s: int %ld is %d, want %ld", what, j, rbuf[j], want);
                break;
            }
        }
        if (!inplace)
            CHECK(rbuf[counts[rank]] == HOLE, "%s: int past the block overwritten", what);
        free(sbuf);
        free(rbuf);
    }
    free(counts);
}

static void test_bcast(long n, const kind_t *k, int root)
{
    char what[160];
    long s = span(k, n);
    int *buf = alloc_ints(s);
    if (rank == root)
        for (long j = 0; j < n; j++)
            buf[pos(k, j)] = val(root, 0, j);
    snprintf(what, sizeof what, "bcast n=%ld %s root=%d", n, k->name, root);
    MPI_Bcast(buf, (int)(n / k->ipe), k->t, root, MPI_COMM_WORLD);
    char *mask = calloc((size_t)s, 1);
    mark(mask, k, 0, n);
    for (long j = 0; j < n; j++)
        if (buf[pos(k, j)] != val(root, 0, j)) {
            CHECK(0, "%s: int %ld is %d", what, j, buf[pos(k, j)]);
            break;
        }
    check_holes(buf, mask, s, what);
    free(mask);
    free(buf);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    make_kinds();
    for (int si = 0; si < NSIZES; si++) {
        long n = sizes[si];
        for (int p = 0; p < NPAIRS; p++) {
            const kind_t *ks = &kinds[pairs[p][0]], *kr = &kinds[pairs[p][1]];
            if (!fits(ks, n) || !fits(kr, n))
                continue;
            int inplace = p == 1;
            test_gather_scatter(n, ks, kr, 0, 0);
            test_gather_scatter(n, ks, kr, size - 1, inplace);
            test_gatherv_scatterv(n, ks, kr, size / 2);
            test_allgather(n, ks, kr, 0);
            test_allgather(n, ks, kr, inplace);
            test_allgatherv(n, ks, kr, inplace);
            test_alltoall(n, ks, kr, 0);
            test_alltoall(n, ks, kr, inplace);
            test_alltoallv(n, ks, kr);
            test_bcast(n, kr, size - 1);
        }
        test_reduce_scatter(n, 0);
        test_reduce_scatter(n, 1);
    }
    free_kinds();
    return coll_finish();
}
