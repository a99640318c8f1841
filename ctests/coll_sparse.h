/* Allreduce and Reduce of vectors whose elements are mostly the operation's neutral element
 * (sparse-aware reductions), at densities 0, 1, 50 and 100 percent and a mixed case (rank 0
 * dense, the others 1 %), with SUM, MAX, PROD, BOR, LOR and LAND on double, int and long,
 * in place or not; every result element is compared exactly with a locally computed one
 * (small integers, so no floating-point rounding). Included by coll_sparse*.c, which force
 * allreduce algorithms through OXMPI_* variables (a reference MPI ignores them). */
#include "coll_mtest.h"
#include <float.h>
#include <limits.h>
#include <stdint.h>

static int rank, size;

static unsigned hash(unsigned r, unsigned i)
{
    unsigned h = r * 2654435761u ^ (i * 40503u + 0x9e3779b9u);
    h ^= h >> 13;
    h *= 0x5bd1e995u;
    h ^= h >> 15;
    return h;
}

enum { T_INT, T_LONG, T_DOUBLE };
static const MPI_Datatype types[] = {MPI_INT, MPI_LONG, MPI_DOUBLE};
static const char *tnames[] = {"int", "long", "double"};
static const size_t tsize[] = {sizeof(int), sizeof(long), sizeof(double)};

/* The density (percent) of rank r's non-neutral elements; -1: rank 0 100 %, others 1 %. */
static int density_of(int density, int r)
{
    return density >= 0 ? density : (r == 0 ? 100 : 1);
}

/* Rank r's element i for `op` (as a long; doubles hold the same small integers). The
 * neutral element is returned as `*neutral = 1`. */
static long elem(MPI_Op op, int t, int density, int r, long i, int *neutral)
{
    unsigned h = hash((unsigned)r, (unsigned)i);
    *neutral = (int)(h % 100) >= density_of(density, r);
    if (op == MPI_SUM)
        return *neutral ? 0 : (long)(h >> 8) % 9 - 4 + ((h >> 8) % 9 == 4); /* never 0 */
    if (op == MPI_PROD)
        return *neutral ? 1 : ((h >> 8) % 2 ? 2 : -1);
    if (op == MPI_MAX) {
        if (*neutral)
            return t == T_INT ? INT_MIN : LONG_MIN; /* doubles: -inf, see put() */
        return (long)((h >> 8) % 200) - 100;
    }
    if (op == MPI_BOR)
        return *neutral ? 0 : 1L << ((h >> 8) % 30);
    if (op == MPI_LOR)
        return *neutral ? 0 : ((h >> 8) % 2 ? 5 : 0); /* 0 is neutral anyway */
    /* LAND: neutral is 1; otherwise 0 (false) or 7 (true, not normalised) */
    return *neutral ? 1 : ((h >> 8) % 2 ? 7 : 0);
}

static void put(void *buf, int t, long i, long v, int neutral, MPI_Op op)
{
    if (t == T_INT)
        ((int *)buf)[i] = (int)v;
    else if (t == T_LONG)
        ((long *)buf)[i] = v;
    else
        ((double *)buf)[i] = (op == MPI_MAX && neutral) ? -1.0 / 0.0 : (double)v;
}

static long get(const void *buf, int t, long i)
{
    if (t == T_INT)
        return ((const int *)buf)[i];
    if (t == T_LONG)
        return ((const long *)buf)[i];
    double d = ((const double *)buf)[i];
    return d == -1.0 / 0.0 ? LONG_MIN : (long)d;
}

static long expect(MPI_Op op, int t, int density, long i)
{
    int neutral;
    long acc = elem(op, t, density, 0, i, &neutral);
    if (t == T_DOUBLE && op == MPI_MAX && neutral)
        acc = LONG_MIN;
    if (op == MPI_LOR || op == MPI_LAND)
        acc = acc != 0;
    for (int r = 1; r < size; r++) {
        long v = elem(op, t, density, r, i, &neutral);
        if (t == T_DOUBLE && op == MPI_MAX && neutral)
            v = LONG_MIN;
        if (op == MPI_SUM)
            acc += v;
        else if (op == MPI_PROD)
            acc *= v;
        else if (op == MPI_MAX)
            acc = v > acc ? v : acc;
        else if (op == MPI_BOR)
            acc |= v;
        else if (op == MPI_LOR)
            acc = acc || v;
        else
            acc = acc && v;
    }
    /* A single rank keeps its own values (no operation is applied). */
    if (size == 1 && (op == MPI_LOR || op == MPI_LAND))
        acc = elem(op, t, density, 0, i, &neutral);
    return acc;
}

static const char *opname(MPI_Op op)
{
    return op == MPI_SUM    ? "SUM"
           : op == MPI_PROD ? "PROD"
           : op == MPI_MAX  ? "MAX"
           : op == MPI_BOR  ? "BOR"
           : op == MPI_LOR  ? "LOR"
                            : "LAND";
}

static void check(long count, int t, MPI_Op op, int density, int in_place, int root)
{
    size_t bytes = (size_t)(count ? count : 1) * tsize[t];
    void *in = calloc(1, bytes), *out = calloc(1, bytes);
    long *want = malloc((count ? count : 1) * sizeof(long));
    for (long i = 0; i < count; i++) {
        int neutral;
        long v = elem(op, t, density, rank, i, &neutral);
        put(in, t, i, v, neutral, op);
        put(out, t, i, -99, 0, op);
        want[i] = expect(op, t, density, i);
    }
    if (in_place)
        memcpy(out, in, bytes);
    MPI_Allreduce(in_place ? MPI_IN_PLACE : in, out, (int)count, types[t], op, MPI_COMM_WORLD);
    int bad = 0;
    for (long i = 0; i < count && bad < 3; i++)
        if (get(out, t, i) != want[i]) {
            bad++;
            CHECK(0, "Allreduce %s %s count %ld density %d%s: [%ld] = %ld, expected %ld", opname(op), tnames[t], count,
                  density, in_place ? " in place" : "", i, get(out, t, i), want[i]);
        }
    for (long i = 0; i < count; i++)
        put(out, t, i, -99, 0, op);
    /* In place at root 0 only: MPICH 4.0 (Debian) crashes in an in-place Reduce of a few
     * thousand elements at another root. */
    int ip = in_place && rank == root && root == 0;
    if (ip)
        memcpy(out, in, bytes);
    MPI_Reduce(ip ? MPI_IN_PLACE : in, out, (int)count, types[t], op, root, MPI_COMM_WORLD);
    bad = 0;
    for (long i = 0; rank == root && i < count && bad < 3; i++)
        if (get(out, t, i) != want[i]) {
            bad++;
            CHECK(0, "Reduce %s %s count %ld density %d root %d%s: [%ld] = %ld, expected %ld", opname(op), tnames[t],
                  count, density, root, ip ? " in place" : "", i, get(out, t, i), want[i]);
        }
    free(in);
    free(out);
    free(want);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    static const int densities[] = {0, 1, 50, 100, -1};
    static const MPI_Op ops[] = {MPI_SUM, MPI_MAX, MPI_PROD, MPI_BOR, MPI_LOR, MPI_LAND};
    static const long counts[] = {3000, 100003};
    int k = 0;
    for (int c = 0; c < 2; c++)
        for (int d = 0; d < 5; d++)
            for (int o = 0; o < 6; o++)
                for (int t = 0; t < 3; t++) {
                    if (t == T_DOUBLE && (ops[o] == MPI_BOR || ops[o] == MPI_LOR || ops[o] == MPI_LAND))
                        continue;
                    check(counts[c], t, ops[o], densities[d], k % 2, k % size);
                    k++;
                }
    /* A long vector at 1 % (the benchmark's case) and one just below the sparse minimum. */
    check(1000003, T_DOUBLE, MPI_SUM, 1, 0, 0);
    check(1000003, T_DOUBLE, MPI_SUM, 1, 1, size - 1);
    check(100, T_DOUBLE, MPI_SUM, 1, 0, 0);
    return coll_finish();
}
