/* oxmpi-test: np=1,2,3,4,5,8 timeout=120 one-node="the rank-order grouping of reductions is promised on one node only (across nodes reductions group as their algorithms go)" */
/* On one node, Allreduce and Reduce with predefined operations combine the ranks' values in
 * rank order, ((a0 + a1) + a2) + ..., the grouping of a serial loop, whatever the path a size
 * takes (lanes, slots, single copy, sparse entries) and whichever ranks hold zeros. Rounded sums
 * depend on the grouping: ScaLAPACK's eigensolver test (xdsep, 3-rank grids) failed its
 * residual check when the shared-memory path grouped right to left, a0 + (a1 + (a2 + ...)).
 * Every rank must also get the same bits. The grouping is oxmpi's promise, not the
 * standard's: checked with CHECK_STRICT. Blocking forms only (nonblocking schedules may group
 * otherwise; reduce-scatter falls back to point-to-point halving for some sizes). */
#include "mtest.h"
#include <math.h>
#include <stdint.h>

/* Deterministic values of varied magnitude and sign; zero at `zero_pct` percent of the
 * positions (different ones on each rank), so that sparse inputs take the sparse path. */
static double value(int rank, long i, int zero_pct)
{
    uint64_t x = (uint64_t)(rank + 1) * 0x9E3779B97F4A7C15ull ^ (uint64_t)i * 0xBF58476D1CE4E5B9ull;
    x ^= x >> 31;
    x *= 0x94D049BB133111EBull;
    x ^= x >> 29;
    if ((int)(x % 100) < zero_pct)
        return 0.0;
    double mant = (double)(x >> 11) / 9007199254740992.0 + 0.5;
    int exp = (int)((x >> 3) % 61) - 30;
    return ((x & 1) ? -1.0 : 1.0) * ldexp(mant, exp);
}

/* ((a0 + a1) + a2) + ... over ranks 0..size-1 at position i. */
static double left_sum(int size, long i, int zero_pct)
{
    double acc = value(0, i, zero_pct);
    for (int r = 1; r < size; r++)
        acc = acc + value(r, i, zero_pct);
    return acc;
}

static int same_bits(double a, double b) { return memcmp(&a, &b, sizeof a) == 0; }

static void check_vec(const double *got, long first, long n, int size, int zero_pct, const char *what)
{
    int bad = 0;
    for (long i = 0; i < n && bad < 3; i++) {
        double want = left_sum(size, first + i, zero_pct);
        if (!same_bits(got[i], want)) {
            bad++;
            CHECK_STRICT(0, "%s: element %ld is %.17g, rank-order sum %.17g", what, first + i, got[i], want);
        }
    }
}

/* Rank 0's result bits must equal every rank's. */
static void check_agreement(const double *got, long n, const char *what)
{
    double *ref = malloc((size_t)(n > 0 ? n : 1) * sizeof(double));
    memcpy(ref, got, (size_t)n * sizeof(double));
    MPI_Bcast(ref, (int)n, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    CHECK(memcmp(ref, got, (size_t)n * sizeof(double)) == 0, "%s: ranks got different bits", what);
    free(ref);
}

int main(int argc, char **argv)
{
    mt_init(&argc, &argv);
    int rank = mt_rank, size = mt_size;
    /* lanes, slot pieces, single copy; dense, 95 % zeros (sparse), 100 % zeros on some ranks */
    const long counts[] = {1, 7, 100, 3000, 40000, 300000};
    const int zero_pcts[] = {0, 95};
    char what[128];
    for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++)
        for (size_t z = 0; z < sizeof zero_pcts / sizeof zero_pcts[0]; z++) {
            long n = counts[c];
            int zp = zero_pcts[z];
            double *in = malloc((size_t)n * sizeof(double));
            double *out = malloc((size_t)n * sizeof(double));
            for (long i = 0; i < n; i++)
                in[i] = value(rank, i, zp);

            MPI_Allreduce(in, out, (int)n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
            snprintf(what, sizeof what, "Allreduce of %ld doubles, %d%% zeros", n, zp);
            check_vec(out, 0, n, size, zp, what);
            check_agreement(out, n, what);

            memcpy(out, in, (size_t)n * sizeof(double));
            MPI_Allreduce(MPI_IN_PLACE, out, (int)n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
            snprintf(what, sizeof what, "in-place Allreduce of %ld doubles, %d%% zeros", n, zp);
            check_vec(out, 0, n, size, zp, what);

            for (int root = 0; root < size; root += (size > 3 ? size - 1 : 1)) {
                MPI_Reduce(in, rank == root ? out : NULL, (int)n, MPI_DOUBLE, MPI_SUM, root, MPI_COMM_WORLD);
                snprintf(what, sizeof what, "Reduce of %ld doubles to %d, %d%% zeros", n, root, zp);
                if (rank == root)
                    check_vec(out, 0, n, size, zp, what);
            }

            free(in);
            free(out);
        }
    return mt_finalize();
}
