/* oxmpi-test: np=1,2,3,4,5,6,7,8 timeout=120 */
/* Nonblocking collectives on derived datatypes, at sizes on both sides of the algorithm
 * thresholds (oxmpi's schedules choose recursive doubling / Rabenseifner / ring allreduce,
 * recursive doubling / Bruck / ring allgather, Bruck / all-at-once / pairwise alltoall,
 * binomial / scatter + allgather bcast, recursive halving / pairwise / reduce-then-scatter
 * reduce-scatter by the blocking collectives' table): Iallreduce of 2x2 matrices (a
 * contiguous type) with a commutative and a non-commutative (matrix product: rank order)
 * user operation, in place and not; Iallgather, Ialltoall and Ibcast into a strided type (an
 * int every 8 bytes; the gaps must stay untouched); Ireduce_scatter_block of triples. */
#include "mtest.h"

#define MOD 1009

static int rank, size;

/* Rank r's matrix number i (entries mod MOD, never all diagonal: products do not commute). */
static void mat(int r, int i, int *m)
{
    m[0] = (r + 2 * i + 1) % MOD;
    m[1] = (3 * r + i + 2) % MOD;
    m[2] = (r * i + 1) % MOD;
    m[3] = (5 * r + 7 * i + 3) % MOD;
}

/* c = a * b (mod MOD). */
static void mul(const int *a, const int *b, int *c)
{
    int t[4];
    t[0] = (a[0] * b[0] + a[1] * b[2]) % MOD;
    t[1] = (a[0] * b[1] + a[1] * b[3]) % MOD;
    t[2] = (a[2] * b[0] + a[3] * b[2]) % MOD;
    t[3] = (a[2] * b[1] + a[3] * b[3]) % MOD;
    memcpy(c, t, sizeof t);
}

/* inout = in * inout: `in` comes from the lower ranks. */
static void matmul_op(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    for (int i = 0; i < *len; i++)
        mul((int *)in + 4 * i, (int *)inout + 4 * i, (int *)inout + 4 * i);
}

static void matsum_op(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    for (int i = 0; i < 4 * *len; i++)
        ((int *)inout)[i] = (((int *)in)[i] + ((int *)inout)[i]) % MOD;
}

static void check_allreduce(MPI_Datatype mat_t, MPI_Op op, int product, int count, int in_place)
{
    int *in = mt_malloc(4 * count * sizeof(int)), *out = mt_malloc(4 * count * sizeof(int));
    for (int i = 0; i < count; i++)
        mat(rank, i, (in_place ? out : in) + 4 * i);
    MPI_Request r;
    MPI_CHECK(MPI_Iallreduce(in_place ? MPI_IN_PLACE : in, out, count, mat_t, op, MPI_COMM_WORLD, &r));
    MPI_CHECK(MPI_Wait(&r, MPI_STATUS_IGNORE));
    int bad = 0;
    for (int i = 0; i < count && bad < 3; i++) {
        int want[4], m[4];
        mat(0, i, want);
        for (int p = 1; p < size; p++) {
            mat(p, i, m);
            if (product)
                mul(want, m, want);
            else
                for (int k = 0; k < 4; k++)
                    want[k] = (want[k] + m[k]) % MOD;
        }
        for (int k = 0; k < 4; k++)
            if (out[4 * i + k] != want[k]) {
                bad++;
                CHECK(0, "allreduce %s count %d%s: [%d][%d] = %d, expected %d", product ? "product" : "sum", count,
                      in_place ? " in place" : "", i, k, out[4 * i + k], want[k]);
                break;
            }
    }
    free(in);
    free(out);
}

/* Value of rank r's element i. */
static int v(int r, int i)
{
    return r * 100000 + i;
}

/* Allgather and alltoall of k ints per rank into a strided type; bcast of k * size. */
static void check_strided(MPI_Datatype sint, int k)
{
    int n = size * k;
    int *in = mt_malloc((n + 1) * sizeof(int)), *out = mt_malloc((2 * n + 1) * sizeof(int));
    MPI_Request r;

    for (int i = 0; i < 2 * n; i++)
        out[i] = -7;
    for (int i = 0; i < k; i++)
        in[i] = v(rank, i);
    MPI_CHECK(MPI_Iallgather(in, k, MPI_INT, out, k, sint, MPI_COMM_WORLD, &r));
    MPI_CHECK(MPI_Wait(&r, MPI_STATUS_IGNORE));
    for (int i = 0, bad = 0; i < 2 * n && bad < 3; i++) {
        int want = i % 2 ? -7 : v(i / 2 / k, i / 2 % k);
        if (out[i] != want) {
            bad++;
            CHECK(0, "allgather k %d: [%d] = %d, expected %d", k, i, out[i], want);
        }
    }

    for (int i = 0; i < 2 * n; i++)
        out[i] = -7;
    for (int i = 0; i < n; i++)
        in[i] = v(rank, i);
    MPI_CHECK(MPI_Ialltoall(in, k, MPI_INT, out, k, sint, MPI_COMM_WORLD, &r));
    MPI_CHECK(MPI_Wait(&r, MPI_STATUS_IGNORE));
    for (int i = 0, bad = 0; i < 2 * n && bad < 3; i++) {
        /* Block p of the output: elements rank * k .. of rank p's input. */
        int p = i / 2 / k, j = i / 2 % k;
        int want = i % 2 ? -7 : v(p, rank * k + j);
        if (out[i] != want) {
            bad++;
            CHECK(0, "alltoall k %d: [%d] = %d, expected %d", k, i, out[i], want);
        }
    }

    int root = k % size;
    for (int i = 0; i < 2 * n; i++)
        out[i] = rank == root ? (i % 2 ? -7 : v(root, i)) : -7;
    MPI_CHECK(MPI_Ibcast(out, n, sint, root, MPI_COMM_WORLD, &r));
    MPI_CHECK(MPI_Wait(&r, MPI_STATUS_IGNORE));
    for (int i = 0, bad = 0; i < 2 * n && bad < 3; i++) {
        int want = i % 2 ? -7 : v(root, i);
        if (out[i] != want) {
            bad++;
            CHECK(0, "bcast of %d from %d: [%d] = %d, expected %d", n, root, i, out[i], want);
        }
    }
    free(in);
    free(out);
}

/* Reduce_scatter_block of `k` triples per member with a user sum on the triple type. */
static void check_reduce_scatter(MPI_Datatype tri, MPI_Op op, int k, int in_place)
{
    int n = 3 * k * size;
    int *buf = mt_malloc((n + 1) * sizeof(int)), *out = mt_malloc((3 * k + 1) * sizeof(int));
    for (int i = 0; i < n; i++)
        buf[i] = (rank + 3 * i) % MOD;
    MPI_Request r;
    MPI_CHECK(MPI_Ireduce_scatter_block(in_place ? MPI_IN_PLACE : buf, in_place ? buf : out, k, tri, op,
                                        MPI_COMM_WORLD, &r));
    MPI_CHECK(MPI_Wait(&r, MPI_STATUS_IGNORE));
    int *res = in_place ? buf : out;
    for (int i = 0, bad = 0; i < 3 * k && bad < 3; i++) {
        int want = 0, at = rank * 3 * k + i;
        for (int p = 0; p < size; p++)
            want = (want + (p + 3 * at) % MOD) % MOD;
        if (res[i] != want) {
            bad++;
            CHECK(0, "reduce_scatter_block k %d%s: [%d] = %d, expected %d", k, in_place ? " in place" : "", i,
                  res[i], want);
        }
    }
    free(buf);
    free(out);
}

/* Triples summed mod MOD (a user operation on a contiguous type, commutative). */
static void trisum_op(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    for (int i = 0; i < 3 * *len; i++)
        ((int *)inout)[i] = (((int *)in)[i] + ((int *)inout)[i]) % MOD;
}

int main(int argc, char **argv)
{
    mt_init(&argc, &argv);
    rank = mt_rank;
    size = mt_size;
    MPI_Datatype mat_t, tri, sint;
    MPI_Type_contiguous(4, MPI_INT, &mat_t);
    MPI_Type_commit(&mat_t);
    MPI_Type_contiguous(3, MPI_INT, &tri);
    MPI_Type_commit(&tri);
    MPI_Type_create_resized(MPI_INT, 0, 2 * sizeof(int), &sint);
    MPI_Type_commit(&sint);
    MPI_Op product, sum, trisum;
    MPI_Op_create(matmul_op, 0, &product);
    MPI_Op_create(matsum_op, 1, &sum);
    MPI_Op_create(trisum_op, 1, &trisum);

    /* 16-byte elements: 128 of them are the 2048-byte small-vector limit; 5000 (80 KB) are
     * above the non-commutative reduce + bcast limit (64 KB). */
    static const int counts[] = {1, 3, 7, 127, 128, 129, 1000, 5000};
    for (unsigned c = 0; c < sizeof counts / sizeof counts[0]; c++) {
        check_allreduce(mat_t, sum, 0, counts[c], c % 2);
        check_allreduce(mat_t, product, 1, counts[c], (c + 1) % 2);
    }
    /* Allgather totals around 81920 and 524288 bytes; alltoall blocks around 256 and 32768
     * bytes; bcasts around 12288 bytes. */
    static const int ks[] = {1, 3, 64, 65, 700, 3000, 8192, 9000, 20000};
    for (unsigned c = 0; c < sizeof ks / sizeof ks[0]; c++)
        check_strided(sint, ks[c]);
    static const int rks[] = {1, 5, 100, 6000};
    for (unsigned c = 0; c < sizeof rks / sizeof rks[0]; c++) {
        check_reduce_scatter(tri, trisum, rks[c], 0);
        check_reduce_scatter(tri, trisum, rks[c], 1);
    }

    MPI_Op_free(&product);
    MPI_Op_free(&sum);
    MPI_Op_free(&trisum);
    MPI_Type_free(&mat_t);
    MPI_Type_free(&tri);
    MPI_Type_free(&sint);
    return mt_finalize();
}
