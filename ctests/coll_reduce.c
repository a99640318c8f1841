/* oxmpi-test: np=1,2,3,4,8 */
/* Reduce and Allreduce: every predefined op on representative types, MINLOC/MAXLOC pairs
   with ties, user ops (commutative; non-commutative with a rank-order check), MPI_IN_PLACE,
   every root, and a large vector. */
#include "coll_mtest.h"
#include <complex.h>
#include <stdbool.h>
#include <stdint.h>

static int rank, size;

/* Runs `op` on `count` elements built by `fill`, with Reduce at every root and Allreduce
   (plain and in place); checks the result against `expect`. */
#define TEST_OP(T, DT, OP, FILL, EXPECT)                                                   \
    do {                                                                                   \
        enum { N = 5 };                                                                    \
        T in[N], out[N], want[N];                                                          \
        for (int i = 0; i < N; i++) {                                                      \
            int r = rank;                                                                  \
            (void)r;                                                                       \
            in[i] = (T)(FILL);                                                             \
        }                                                                                  \
        for (int i = 0; i < N; i++) {                                                      \
            T acc = 0;                                                                     \
            for (int r = 0; r < size; r++) {                                               \
                T v = (T)(FILL);                                                           \
                acc = r == 0 ? v : (T)(EXPECT);                                            \
            }                                                                              \
            want[i] = acc;                                                                 \
        }                                                                                  \
        for (int root = 0; root < size; root++) {                                          \
            memset(out, 0x55, sizeof out);                                                 \
            MPI_Reduce(in, out, N, DT, OP, root, MPI_COMM_WORLD);                          \
            if (rank == root)                                                              \
                CHECK(memcmp(out, want, sizeof out) == 0, "Reduce %s %s root %d", #OP, #DT, root); \
        }                                                                                  \
        memset(out, 0x55, sizeof out);                                                     \
        MPI_Allreduce(in, out, N, DT, OP, MPI_COMM_WORLD);                                 \
        CHECK(memcmp(out, want, sizeof out) == 0, "Allreduce %s %s", #OP, #DT);            \
        memcpy(out, in, sizeof out);                                                       \
        MPI_Allreduce(MPI_IN_PLACE, out, N, DT, OP, MPI_COMM_WORLD);                       \
        CHECK(memcmp(out, want, sizeof out) == 0, "Allreduce in place %s %s", #OP, #DT);   \
        memcpy(out, in, sizeof out);                                                       \
        MPI_Reduce(rank == 0 ? MPI_IN_PLACE : in, out, N, DT, OP, 0, MPI_COMM_WORLD);      \
        if (rank == 0)                                                                     \
            CHECK(memcmp(out, want, sizeof out) == 0, "Reduce in place %s %s", #OP, #DT);  \
    } while (0)

/* `acc` is the combination so far, `v` the next rank's value. */
#define ALL_INT_OPS(T, DT)                                                                 \
    do {                                                                                   \
        TEST_OP(T, DT, MPI_SUM, r + i, acc + v);                                           \
        TEST_OP(T, DT, MPI_PROD, (r % 3) + 1 + (i == 0), acc * v);                        \
        TEST_OP(T, DT, MPI_MAX, (r * 7 + i) % 5, acc > v ? acc : v);                      \
        TEST_OP(T, DT, MPI_MIN, (r * 7 + i) % 5 + 1, acc < v ? acc : v);                  \
        TEST_OP(T, DT, MPI_LAND, (r + i) % 4 != 0, acc && v);                             \
        TEST_OP(T, DT, MPI_LOR, (r + i) % 9 == 1, acc || v);                              \
        TEST_OP(T, DT, MPI_LXOR, (r + i) % 3 == 0, (!!acc) != (!!v));                     \
        TEST_OP(T, DT, MPI_BAND, ~(1 << (r % 6)) & 0x7f, acc & v);                        \
        TEST_OP(T, DT, MPI_BOR, (1 << ((r + i) % 6)), acc | v);                           \
        TEST_OP(T, DT, MPI_BXOR, (1 << ((r + i) % 6)) | 1, acc ^ v);                      \
    } while (0)

#define ALL_FLOAT_OPS(T, DT)                                                               \
    do {                                                                                   \
        TEST_OP(T, DT, MPI_SUM, r + i + 0.5, acc + v);                                     \
        TEST_OP(T, DT, MPI_PROD, (r % 3) * 0.5 + 1, acc * v);                             \
        TEST_OP(T, DT, MPI_MAX, (r * 7 + i) % 5 - 2.25, acc > v ? acc : v);               \
        TEST_OP(T, DT, MPI_MIN, (r * 7 + i) % 5 - 2.25, acc < v ? acc : v);               \
    } while (0)

struct di { double v; int i; };
struct ii { int v; int i; };
struct si { short v; int i; };
struct fi { float v; int i; };
struct li { long v; int i; };

static void test_loc(void)
{
    enum { N = 4 };
    /* value depends on rank with ties; the index is the rank. */
    struct di d[N], dout[N];
    struct ii x[N], xout[N];
    struct si s[N], sout[N];
    struct fi f[N], fout[N];
    struct li l[N], lout[N];
    for (int k = 0; k < N; k++) {
        int v = (k == 0) ? rank : (k == 1) ? -rank : (k == 2) ? 5 : rank % 2;
        d[k].v = v; d[k].i = rank;
        x[k].v = v; x[k].i = rank;
        s[k].v = v; s[k].i = rank;
        f[k].v = v; f[k].i = rank;
        l[k].v = v * 100000000000L; l[k].i = rank;
    }
    /* MINLOC: k0 -> (0, 0); k1 -> (-(n-1), n-1); k2 tie -> (5, 0); k3 -> (0, 0) */
    int minv[N] = {0, -(size - 1), 5, 0}, mini[N] = {0, size - 1, 0, 0};
    /* MAXLOC: k0 -> (n-1, n-1); k1 -> (0, 0); k2 tie -> (5, 0); k3 -> (1 if n>1, 1) */
    int maxv[N] = {size - 1, 0, 5, size > 1}, maxi[N] = {size - 1, 0, 0, size > 1};
    for (int root = 0; root < size; root++) {
        MPI_Reduce(d, dout, N, MPI_DOUBLE_INT, MPI_MINLOC, root, MPI_COMM_WORLD);
        if (rank == root)
            for (int k = 0; k < N; k++)
                CHECK(dout[k].v == minv[k] && dout[k].i == mini[k], "DOUBLE_INT MINLOC %d: (%g,%d)", k, dout[k].v, dout[k].i);
    }
    MPI_Allreduce(d, dout, N, MPI_DOUBLE_INT, MPI_MAXLOC, MPI_COMM_WORLD);
    for (int k = 0; k < N; k++)
        CHECK(dout[k].v == maxv[k] && dout[k].i == maxi[k], "DOUBLE_INT MAXLOC %d: (%g,%d)", k, dout[k].v, dout[k].i);
    MPI_Allreduce(x, xout, N, MPI_2INT, MPI_MINLOC, MPI_COMM_WORLD);
    for (int k = 0; k < N; k++)
        CHECK(xout[k].v == minv[k] && xout[k].i == mini[k], "2INT MINLOC %d", k);
    MPI_Allreduce(s, sout, N, MPI_SHORT_INT, MPI_MAXLOC, MPI_COMM_WORLD);
    for (int k = 0; k < N; k++)
        CHECK(sout[k].v == maxv[k] && sout[k].i == maxi[k], "SHORT_INT MAXLOC %d: (%d,%d)", k, sout[k].v, sout[k].i);
    MPI_Allreduce(f, fout, N, MPI_FLOAT_INT, MPI_MINLOC, MPI_COMM_WORLD);
    for (int k = 0; k < N; k++)
        CHECK(fout[k].v == minv[k] && fout[k].i == mini[k], "FLOAT_INT MINLOC %d", k);
    MPI_Allreduce(l, lout, N, MPI_LONG_INT, MPI_MAXLOC, MPI_COMM_WORLD);
    for (int k = 0; k < N; k++)
        CHECK(lout[k].v == maxv[k] * 100000000000L && lout[k].i == maxi[k], "LONG_INT MAXLOC %d", k);
    memcpy(xout, x, sizeof x);
    MPI_Allreduce(MPI_IN_PLACE, xout, N, MPI_2INT, MPI_MAXLOC, MPI_COMM_WORLD);
    for (int k = 0; k < N; k++)
        CHECK(xout[k].v == maxv[k] && xout[k].i == maxi[k], "2INT MAXLOC in place %d", k);
}

/* A non-commutative op on (first, last, ok) triples of ints: combining a then b is valid only
   when b starts right after a ends, so the result shows whether ranks were combined in order. */
static void seq_op(void *invec, void *inoutvec, int *len, MPI_Datatype *dt)
{
    int *a = invec, *b = inoutvec;
    (void)dt;
    for (int i = 0; i + 2 < *len; i += 3) {
        int ok = a[i + 2] && b[i + 2] && a[i + 1] + 1 == b[i];
        b[i] = a[i];
        b[i + 2] = ok;
    }
}

static void user_sum(void *invec, void *inoutvec, int *len, MPI_Datatype *dt)
{
    if (*dt == MPI_DOUBLE) {
        double *a = invec, *b = inoutvec;
        for (int i = 0; i < *len; i++)
            b[i] += a[i];
    }
}

static void test_user_ops(void)
{
    MPI_Op seq, sum;
    MPI_Op_create(seq_op, 0, &seq);
    MPI_Op_create(user_sum, 1, &sum);
    int in[6] = {rank, rank, 1, rank, rank, 1}, out[6];
    for (int root = 0; root < size; root++) {
        memset(out, 0, sizeof out);
        MPI_Reduce(in, out, 6, MPI_INT, seq, root, MPI_COMM_WORLD);
        if (rank == root)
            for (int k = 0; k < 6; k += 3)
                CHECK(out[k] == 0 && out[k + 1] == size - 1 && out[k + 2] == 1, "non-commutative Reduce root %d: (%d,%d,%d)", root, out[k], out[k + 1], out[k + 2]);
    }
    memset(out, 0, sizeof out);
    MPI_Allreduce(in, out, 6, MPI_INT, seq, MPI_COMM_WORLD);
    CHECK(out[0] == 0 && out[1] == size - 1 && out[2] == 1, "non-commutative Allreduce: (%d,%d,%d)", out[0], out[1], out[2]);
    memcpy(out, in, sizeof in);
    MPI_Allreduce(MPI_IN_PLACE, out, 6, MPI_INT, seq, MPI_COMM_WORLD);
    CHECK(out[3] == 0 && out[4] == size - 1 && out[5] == 1, "non-commutative Allreduce in place");

    /* Large non-commutative vector (takes the reduce + bcast path). */
    int n = 3 * 10000;
    int *big = malloc(n * sizeof(int)), *bigout = malloc(n * sizeof(int));
    for (int k = 0; k < n; k += 3) {
        big[k] = rank; big[k + 1] = rank; big[k + 2] = 1;
    }
    MPI_Allreduce(big, bigout, n, MPI_INT, seq, MPI_COMM_WORLD);
    int bad = 0;
    for (int k = 0; k < n; k += 3)
        bad += !(bigout[k] == 0 && bigout[k + 1] == size - 1 && bigout[k + 2] == 1);
    CHECK(bad == 0, "large non-commutative Allreduce: %d wrong", bad);
    /* Large non-commutative Reduce (point-to-point tree; the root's first child lands in
       its receive buffer), at the first and the last rank, also in place. */
    for (int which = 0; which < 3; which++) {
        int root = which == 0 ? 0 : size - 1, in_place = which == 2;
        for (int k = 0; k < n; k++)
            bigout[k] = in_place && rank == root ? big[k] : -1;
        MPI_Reduce(in_place && rank == root ? MPI_IN_PLACE : big, bigout, n, MPI_INT, seq, root, MPI_COMM_WORLD);
        if (rank == root) {
            bad = 0;
            for (int k = 0; k < n; k += 3)
                bad += !(bigout[k] == 0 && bigout[k + 1] == size - 1 && bigout[k + 2] == 1);
            CHECK(bad == 0, "large non-commutative Reduce at %d (in place %d): %d wrong", root, in_place, bad);
        }
    }
    /* Mid-size (recursive doubling in the receive buffer), also in place. */
    for (int in_place = 0; in_place < 2; in_place++) {
        int m = 3 * 300;
        for (int k = 0; k < m; k++)
            bigout[k] = in_place ? big[k] : -1;
        bigout[m] = -7;
        MPI_Allreduce(in_place ? MPI_IN_PLACE : big, bigout, m, MPI_INT, seq, MPI_COMM_WORLD);
        bad = 0;
        for (int k = 0; k < m; k += 3)
            bad += !(bigout[k] == 0 && bigout[k + 1] == size - 1 && bigout[k + 2] == 1);
        CHECK(bad == 0, "mid-size non-commutative Allreduce (in place %d): %d wrong", in_place, bad);
        CHECK(bigout[m] == -7, "mid-size non-commutative Allreduce wrote past its count");
    }
    free(big);
    free(bigout);

    double d[3] = {rank, 1, -rank}, dout[3];
    MPI_Allreduce(d, dout, 3, MPI_DOUBLE, sum, MPI_COMM_WORLD);
    CHECK(dout[0] == size * (size - 1) / 2.0 && dout[1] == size && dout[2] == -dout[0], "user sum");

    /* Large commutative user op (point-to-point tree, rendezvous messages), several calls in a
       row at every root with new data each time: buffers reused from call to call must carry
       nothing over. */
    int nd = 200000;
    double *v = malloc(nd * sizeof(double)), *vout = malloc(nd * sizeof(double));
    for (int root = 0; root < size; root++)
        for (int it = 0; it < 3; it++) {
            for (int k = 0; k < nd; k++)
                v[k] = rank + k % 1000 + 7 * it;
            for (int k = 0; k < nd; k++)
                vout[k] = -1;
            MPI_Reduce(v, vout, nd, MPI_DOUBLE, sum, root, MPI_COMM_WORLD);
            if (rank == root) {
                int wrong = 0;
                for (int k = 0; k < nd; k++)
                    wrong += vout[k] != size * (k % 1000 + 7.0 * it) + size * (size - 1) / 2.0;
                CHECK(wrong == 0, "large user-sum Reduce root %d call %d: %d wrong", root, it, wrong);
            }
        }
    /* The same as Allreduce (Rabenseifner, or the ring on 3 ranks), combined in the receive
       buffer: twice, then in place, then with a count that does not split evenly into pieces;
       the element after the count must stay untouched. */
    for (int it = 0; it < 4; it++) {
        int count = it == 3 ? nd - 3 : nd;
        for (int k = 0; k < nd; k++)
            v[k] = rank * (k % 7) + it;
        for (int k = 0; k < nd; k++)
            vout[k] = it == 2 ? v[k] : -1;
        MPI_Allreduce(it == 2 ? MPI_IN_PLACE : v, vout, count, MPI_DOUBLE, sum, MPI_COMM_WORLD);
        int wrong = 0;
        for (int k = 0; k < count; k++)
            wrong += vout[k] != (k % 7) * size * (size - 1) / 2.0 + (double)it * size;
        CHECK(wrong == 0, "large user-sum Allreduce call %d: %d wrong", it, wrong);
        if (count < nd)
            CHECK(vout[count] == -1, "large user-sum Allreduce wrote past its count: %g", vout[count]);
    }
    free(v);
    free(vout);
    MPI_Op_free(&seq);
    MPI_Op_free(&sum);
    CHECK(seq == MPI_OP_NULL, "MPI_Op_free did not reset the handle");
}

static void test_large(void)
{
    int n = 100000;
    double *a = malloc(n * sizeof(double)), *b = malloc(n * sizeof(double));
    for (int i = 0; i < n; i++)
        a[i] = rank + i;
    MPI_Allreduce(a, b, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    int bad = 0;
    for (int i = 0; i < n; i++)
        bad += b[i] != (double)size * i + size * (size - 1) / 2.0;
    CHECK(bad == 0, "large Allreduce: %d wrong", bad);
    MPI_Reduce(a, b, n, MPI_DOUBLE, MPI_MAX, size - 1, MPI_COMM_WORLD);
    if (rank == size - 1) {
        bad = 0;
        for (int i = 0; i < n; i++)
            bad += b[i] != size - 1 + i;
        CHECK(bad == 0, "large Reduce: %d wrong", bad);
    }
    free(a);
    free(b);
}

static void test_other_types(void)
{
    /* complex */
    float _Complex c[2] = {rank + 1.0f * I, 1.0f}, cout[2];
    MPI_Allreduce(c, cout, 2, MPI_C_FLOAT_COMPLEX, MPI_SUM, MPI_COMM_WORLD);
    CHECK(crealf(cout[0]) == size * (size - 1) / 2.0f && cimagf(cout[0]) == size, "complex sum");
    double _Complex z = (rank == 0) ? 1.0 * I : 1.0, zout;
    MPI_Allreduce(&z, &zout, 1, MPI_C_DOUBLE_COMPLEX, MPI_PROD, MPI_COMM_WORLD);
    CHECK(creal(zout) == 0 && cimag(zout) == 1, "complex prod (%g, %g)", creal(zout), cimag(zout));
    /* C bool */
    bool b[3] = {true, rank == 0, rank % 2}, bout[3];
    MPI_Allreduce(b, bout, 3, MPI_C_BOOL, MPI_LAND, MPI_COMM_WORLD);
    CHECK(bout[0] && bout[1] == (size == 1) && !bout[2], "C_BOOL LAND");
    MPI_Allreduce(b, bout, 3, MPI_C_BOOL, MPI_LOR, MPI_COMM_WORLD);
    CHECK(bout[0] && bout[1] && bout[2] == (size > 1), "C_BOOL LOR");
    MPI_Allreduce(b, bout, 3, MPI_C_BOOL, MPI_LXOR, MPI_COMM_WORLD);
    CHECK(bout[0] == size % 2 && bout[1] && bout[2] == (size / 2) % 2, "C_BOOL LXOR");
    /* byte */
    unsigned char y = 1u << (rank % 8), yout;
    MPI_Allreduce(&y, &yout, 1, MPI_BYTE, MPI_BOR, MPI_COMM_WORLD);
    CHECK(yout == (size >= 8 ? 0xff : (1u << size) - 1), "BYTE BOR %x", yout);
    /* long double MAX/MIN */
    long double ld = rank * 0.1L, ldout;
    MPI_Allreduce(&ld, &ldout, 1, MPI_LONG_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    CHECK(ldout == (size - 1) * 0.1L, "long double MAX");
    /* long double SUM/PROD keep the 64-bit significand: 2^-60 steps on 1 are lost in double */
    ld = 1.0L + rank * 0x1p-60L;
    MPI_Allreduce(&ld, &ldout, 1, MPI_LONG_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    CHECK(ldout == size + (size * (size - 1) / 2) * 0x1p-60L, "long double SUM off by %Lg",
          ldout - (size + (size * (size - 1) / 2) * 0x1p-60L));
    ld = rank % 2 ? 1.5L : 2.0L;
    MPI_Reduce(&ld, &ldout, 1, MPI_LONG_DOUBLE, MPI_PROD, 0, MPI_COMM_WORLD);
    long double want_prod = 1;
    for (int r = 0; r < size; r++)
        want_prod *= r % 2 ? 1.5L : 2.0L;
    CHECK(rank != 0 || ldout == want_prod, "long double PROD %Lg, want %Lg", ldout, want_prod);
    ld = rank == 0;
    MPI_Allreduce(&ld, &ldout, 1, MPI_LONG_DOUBLE, MPI_LXOR, MPI_COMM_WORLD);
    CHECK(ldout == 1.0L, "long double LXOR %Lg", ldout);
    long double _Complex lz = (rank == 0) ? 1.0L * I : 1.0L, lzout;
    MPI_Allreduce(&lz, &lzout, 1, MPI_C_LONG_DOUBLE_COMPLEX, MPI_PROD, MPI_COMM_WORLD);
    CHECK(creall(lzout) == 0 && cimagl(lzout) == 1, "long double complex prod (%Lg, %Lg)", creall(lzout),
          cimagl(lzout));
    lz = rank + 2.0L * I;
    MPI_Allreduce(&lz, &lzout, 1, MPI_C_LONG_DOUBLE_COMPLEX, MPI_SUM, MPI_COMM_WORLD);
    CHECK(creall(lzout) == size * (size - 1) / 2 && cimagl(lzout) == 2 * size, "long double complex sum");
    /* REPLACE/NO_OP are only for RMA accumulate in MPICH's reductions; count 0 works. */
    int zero;
    MPI_Allreduce(&rank, &zero, 0, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    /* MPI_COMM_SELF */
    int one = rank + 1, s;
    MPI_Allreduce(&one, &s, 1, MPI_INT, MPI_SUM, MPI_COMM_SELF);
    CHECK(s == rank + 1, "self allreduce");
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    ALL_INT_OPS(int, MPI_INT);
    ALL_INT_OPS(unsigned, MPI_UNSIGNED);
    ALL_INT_OPS(short, MPI_SHORT);
    ALL_INT_OPS(signed char, MPI_SIGNED_CHAR);
    ALL_INT_OPS(unsigned char, MPI_UNSIGNED_CHAR);
    ALL_INT_OPS(long, MPI_LONG);
    ALL_INT_OPS(long long, MPI_LONG_LONG);
    ALL_INT_OPS(unsigned long long, MPI_UNSIGNED_LONG_LONG);
    ALL_INT_OPS(int8_t, MPI_INT8_T);
    ALL_INT_OPS(uint16_t, MPI_UINT16_T);
    ALL_INT_OPS(int32_t, MPI_INT32_T);
    ALL_INT_OPS(uint64_t, MPI_UINT64_T);
    ALL_INT_OPS(int, MPI_INTEGER);
    ALL_FLOAT_OPS(float, MPI_FLOAT);
    ALL_FLOAT_OPS(double, MPI_DOUBLE);
    ALL_FLOAT_OPS(float, MPI_REAL);
    ALL_FLOAT_OPS(double, MPI_DOUBLE_PRECISION);
    TEST_OP(int, MPI_LOGICAL, MPI_LAND, (r + i) % 4 != 0, acc && v);
    TEST_OP(int, MPI_LOGICAL, MPI_LOR, (r + i) % 9 == 1, acc || v);
    TEST_OP(int, MPI_LOGICAL, MPI_LXOR, (r + i) % 3 == 0, (!!acc) != (!!v));
    test_loc();
    test_user_ops();
    test_large();
    test_other_types();
    return coll_finish();
}
