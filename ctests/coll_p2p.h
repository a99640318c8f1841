/* Point-to-point collectives at sizes around the selection thresholds of src/coll/tune.rs,
 * read from the same OXMPI_* variables as the library (defaults otherwise): the direct
 * allgather and reduce-scatter (OXMPI_ALLGATHER_DIRECT, OXMPI_REDUCE_SCATTER_DIRECT, up to
 * OXMPI_COLL_DIRECT_PROCS ranks) and detached sends (OXMPI_COLL_DETACH_MAX), with contiguous
 * and strided (non-contiguous) blocks, roots other than 0, MPI_IN_PLACE, non-commutative
 * operations, and many back-to-back calls (members run ahead of their receivers). */
#include "coll_mtest.h"

static int rank, size;

static long env_or(const char *name, long dflt)
{
    const char *v = getenv(name);
    return v && *v ? atol(v) : dflt;
}

static unsigned char bval(int from, int to, long i, int salt)
{
    return (unsigned char)(from * 31 + to * 17 + i * 7 + salt);
}

/* Allgather and Allgatherv of `b` bytes per rank (Allgatherv: rank r gives (r % 3) * b). */
static void check_allgather(long b, int in_place, int salt)
{
    unsigned char *out = malloc(size * b + 1), *in = malloc(2 * b + 1);
    for (long i = 0; i < 2 * b; i++)
        in[i] = bval(rank, 0, i, salt);
    for (long i = 0; i < size * b; i++)
        out[i] = in_place && i / b == rank ? in[i % b] : 0xee;
    MPI_Allgather(in_place ? MPI_IN_PLACE : in, (int)b, MPI_BYTE, out, (int)b, MPI_BYTE, MPI_COMM_WORLD);
    int bad = 0;
    for (long i = 0; i < size * b && bad < 3; i++)
        if (out[i] != bval((int)(i / b), 0, i % b, salt)) {
            bad++;
            CHECK(0, "Allgather %ld B%s: [%ld] = %d", b, in_place ? " in place" : "", i, out[i]);
        }
    int *counts = malloc(size * sizeof(int)), *displs = malloc(size * sizeof(int)), total = 0;
    for (int r = 0; r < size; r++) {
        counts[r] = (int)((r % 3) * b);
        displs[r] = total + 3; /* gaps between the blocks */
        total += counts[r] + 3;
    }
    free(out);
    out = malloc(total + 1);
    memset(out, 0xee, total + 1);
    if (in_place)
        memcpy(out + displs[rank], in, counts[rank]);
    MPI_Allgatherv(in_place ? MPI_IN_PLACE : in, counts[rank], MPI_BYTE, out, counts, displs, MPI_BYTE,
                   MPI_COMM_WORLD);
    bad = 0;
    for (int r = 0; r < size; r++) {
        for (long i = 0; i < counts[r] && bad < 3; i++)
            if (out[displs[r] + i] != bval(r, 0, i, salt)) {
                bad++;
                CHECK(0, "Allgatherv %ld B%s: rank %d [%ld] = %d", b, in_place ? " in place" : "", r, i,
                      out[displs[r] + i]);
            }
        CHECK(out[displs[r] - 1] == 0xee, "Allgatherv %ld B wrote into the gap before rank %d's block", b, r);
    }
    free(out);
    free(in);
    free(counts);
    free(displs);
}

/* Allgather of `c` ints per rank with a strided type on both sides. */
static void check_allgather_strided(int c)
{
    MPI_Datatype vec;
    MPI_Type_vector(c > 0 ? c : 1, 1, 2, MPI_INT, &vec);
    MPI_Type_commit(&vec);
    int *in = malloc((2 * c + 1) * sizeof(int)), *out = malloc(((size_t)size * 2 * c + 1) * sizeof(int));
    for (int i = 0; i < 2 * c; i++)
        in[i] = i % 2 ? -1 : rank * 1000 + i / 2;
    for (int i = 0; i < size * 2 * c; i++)
        out[i] = -7;
    MPI_Allgather(in, c > 0, vec, out, c > 0, vec, MPI_COMM_WORLD);
    int bad = 0, ext = 2 * c - 1; /* the vector's extent, in ints */
    for (int r = 0; r < size && c > 0; r++)
        for (int i = 0; i < ext && bad < 3; i++) {
            int want = i % 2 ? -7 : r * 1000 + i / 2;
            if (out[r * ext + i] != want) {
                bad++;
                CHECK(0, "Allgather of %d strided ints: rank %d [%d] = %d, expected %d", c, r, i, out[r * ext + i],
                      want);
            }
        }
    MPI_Type_free(&vec);
    free(in);
    free(out);
}

/* Non-commutative op on (first, last, ok) int triples: a correct rank-order reduction gives
 * (0, size - 1, 1). */
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

/* Reduce_scatter_block and Reduce_scatter (counts (r % 3) * c) of ints: SUM, and the
 * non-commutative op on triples (c rounded up to a multiple of 3). */
static void check_reduce_scatter(int c, int in_place, MPI_Op seq)
{
    int *counts = malloc(size * sizeof(int));
    for (int pass = 0; pass < 4; pass++) {
        int noncomm = pass >= 2, cc = noncomm ? (c + 2) / 3 * 3 : c;
        long total = 0, start = 0;
        for (int r = 0; r < size; r++) {
            counts[r] = pass % 2 == 0 ? cc : (noncomm ? (r % 3) * cc : (r % 3) * c);
            if (r < rank)
                start += counts[r];
            total += counts[r];
        }
        int *in = malloc((total + 1) * sizeof(int)), *out = malloc((total + 1) * sizeof(int));
        for (long i = 0; i < total; i++) {
            in[i] = noncomm ? (i % 3 == 2 ? 1 : rank) : (int)((rank * 7 + i * 3) % 11);
            out[i] = -99;
        }
        int *res = in_place ? in : out;
        MPI_Op op = noncomm ? seq : MPI_SUM;
        if (pass % 2 == 0)
            MPI_Reduce_scatter_block(in_place ? MPI_IN_PLACE : in, res, cc, MPI_INT, op, MPI_COMM_WORLD);
        else
            MPI_Reduce_scatter(in_place ? MPI_IN_PLACE : in, res, counts, MPI_INT, op, MPI_COMM_WORLD);
        int bad = 0;
        for (long k = 0; k < counts[rank] && bad < 3; k++) {
            long want = 0, g = start + k;
            if (noncomm)
                want = g % 3 == 0 ? 0 : g % 3 == 1 ? size - 1 : 1;
            else
                for (int r = 0; r < size; r++)
                    want += (r * 7 + g * 3) % 11;
            if (res[k] != want) {
                bad++;
                CHECK(0, "Reduce_scatter%s %s %d ints%s: [%ld] = %d, expected %ld", pass % 2 == 0 ? "_block" : "",
                      noncomm ? "non-commutative" : "SUM", cc, in_place ? " in place" : "", k, res[k], want);
            }
        }
        free(in);
        free(out);
    }
    free(counts);
}

/* Gather, Scatter and Alltoall of `b` bytes per block, `reps` times back to back with new
 * data each time (members run ahead of their receivers). */
static void check_rooted(long b, int root, int in_place, int reps)
{
    unsigned char *all = malloc(size * b + 1), *mine = malloc(b + 1), *got = malloc(size * b + 1);
    for (int rep = 0; rep < reps; rep++) {
        int ip = in_place && rank == root;
        for (long i = 0; i < b; i++)
            mine[i] = bval(rank, root, i, rep);
        memset(all, 0xee, size * b + 1);
        if (ip)
            memcpy(all + root * b, mine, b);
        MPI_Gather(ip ? MPI_IN_PLACE : mine, (int)b, MPI_BYTE, all, (int)b, MPI_BYTE, root, MPI_COMM_WORLD);
        int bad = 0;
        for (long i = 0; rank == root && i < size * b && bad < 3; i++)
            if (all[i] != bval((int)(i / b), root, i % b, rep)) {
                bad++;
                CHECK(0, "Gather %ld B root %d%s rep %d: [%ld] = %d", b, root, ip ? " in place" : "", rep, i, all[i]);
            }
        for (long i = 0; i < size * b; i++)
            all[i] = bval(root, (int)(i / b), i % b, rep + 1);
        memset(mine, 0xee, b + 1);
        MPI_Scatter(all, (int)b, MPI_BYTE, ip ? MPI_IN_PLACE : mine, (int)b, MPI_BYTE, root, MPI_COMM_WORLD);
        const unsigned char *s = ip ? all + root * b : mine;
        bad = 0;
        for (long i = 0; i < b && bad < 3; i++)
            if (s[i] != bval(root, rank, i, rep + 1)) {
                bad++;
                CHECK(0, "Scatter %ld B root %d%s rep %d: [%ld] = %d", b, root, ip ? " in place" : "", rep, i, s[i]);
            }
        for (long i = 0; i < size * b; i++)
            all[i] = bval(rank, (int)(i / b), i % b, rep + 2);
        memset(got, 0xee, size * b + 1);
        MPI_Alltoall(all, (int)b, MPI_BYTE, got, (int)b, MPI_BYTE, MPI_COMM_WORLD);
        bad = 0;
        for (long i = 0; i < size * b && bad < 3; i++)
            if (got[i] != bval((int)(i / b), rank, i % b, rep + 2)) {
                bad++;
                CHECK(0, "Alltoall %ld B rep %d: [%ld] = %d", b, rep, i, got[i]);
            }
    }
    free(all);
    free(mine);
    free(got);
}

/* Gather and Scatter of `c` ints per rank, strided on the non-root side (detached sends pack). */
static void check_rooted_strided(int c, int root)
{
    MPI_Datatype vec;
    MPI_Type_vector(c, 1, 2, MPI_INT, &vec);
    MPI_Type_commit(&vec);
    int *mine = malloc((2 * c + 1) * sizeof(int)), *all = malloc(((size_t)size * c + 1) * sizeof(int));
    for (int i = 0; i < 2 * c; i++)
        mine[i] = i % 2 ? -1 : rank * 10000 + i / 2;
    for (int i = 0; i < size * c; i++)
        all[i] = -7;
    MPI_Gather(mine, 1, vec, all, c, MPI_INT, root, MPI_COMM_WORLD);
    int bad = 0;
    for (int i = 0; rank == root && i < size * c && bad < 3; i++)
        if (all[i] != (i / c) * 10000 + i % c) {
            bad++;
            CHECK(0, "Gather of %d strided ints root %d: [%d] = %d", c, root, i, all[i]);
        }
    for (int i = 0; i < size * c; i++)
        all[i] = (i / c) * 10000 + i % c + 5;
    for (int i = 0; i < 2 * c; i++)
        mine[i] = -7;
    MPI_Scatter(all, c, MPI_INT, mine, 1, vec, root, MPI_COMM_WORLD);
    bad = 0;
    for (int i = 0; i < 2 * c && bad < 3; i++) {
        int want = i % 2 ? -7 : rank * 10000 + i / 2 + 5;
        if (mine[i] != want) {
            bad++;
            CHECK(0, "Scatter of %d strided ints root %d: [%d] = %d, expected %d", c, root, i, mine[i], want);
        }
    }
    MPI_Type_free(&vec);
    free(mine);
    free(all);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    long ag = env_or("OXMPI_ALLGATHER_DIRECT", 16384), rs = env_or("OXMPI_REDUCE_SCATTER_DIRECT", 16384);
    long detach = env_or("OXMPI_COLL_DETACH_MAX", 4096);
    MPI_Op seq;
    MPI_Op_create(seq_op, 0, &seq);
    /* Allgather: total bytes size * b around the direct threshold. */
    for (long d = -1; d <= 1; d++) {
        long b = ag / size + d;
        if (b >= 0) {
            check_allgather(b, 0, (int)d + 1);
            check_allgather(b, 1, (int)d + 2);
        }
    }
    check_allgather(1, 0, 9);
    check_allgather_strided(3);
    check_allgather_strided((int)(ag / size / 4) + 1);
    /* Reduce-scatter: input bytes 4 * size * c around the direct threshold. */
    for (long d = -1; d <= 1; d++) {
        long c = rs / (4 * size) + d;
        if (c >= 0) {
            check_reduce_scatter((int)c, 0, seq);
            check_reduce_scatter((int)c, 1, seq);
        }
    }
    check_reduce_scatter(1, 0, seq);
    /* Gather/scatter/alltoall blocks around the detach limit, roots 0, last and middle. */
    for (long d = -1; d <= 1; d++)
        for (int k = 0; k < 3; k++)
            check_rooted(detach + d, k == 0 ? 0 : k == 1 ? size - 1 : size / 2, (int)(d + k) % 2, 3);
    check_rooted(1, size - 1, 0, 200);
    check_rooted(100, size / 2, 1, 50);
    check_rooted_strided(5, size - 1);
    check_rooted_strided((int)(detach / 4) + 1, size / 2);
    MPI_Op_free(&seq);
    return coll_finish();
}
