/* Gather(v) and Scatter(v) blocks around the eager limit and the piece limits of
 * src/coll/tune.rs (blocks above the eager limit travel as eager pieces when ranks outnumber
 * cores or OXMPI_COLL_PIECES=1, while block bytes * ranks <= OXMPI_COLL_PIECE_MAX), read from
 * the same OXMPI_* variables as the library: contiguous blocks, strided blocks on either side
 * (pieces staged and unpacked), roots other than 0, MPI_IN_PLACE, the v forms with different
 * sizes per rank (some above, some below the limits, some empty), and many calls back to
 * back (members run ahead of the root, or the root of its members). */
#include "coll_mtest.h"

static int rank, size;

static long env_or(const char *name, long dflt)
{
    const char *v = getenv(name);
    return v && *v ? atol(v) : dflt;
}

static unsigned char pval(int from, int to, long i, int salt)
{
    return (unsigned char)(from * 29 + to * 13 + i * 5 + (i >> 8) + salt);
}

/* Gather and Scatter of `b` bytes per rank, `reps` times with new data each time. */
static void check_uniform(long b, int root, int in_place, int reps)
{
    unsigned char *all = malloc(size * b + 1), *mine = malloc(b + 1);
    for (int rep = 0; rep < reps; rep++) {
        int ip = in_place && rank == root;
        for (long i = 0; i < b; i++)
            mine[i] = pval(rank, root, i, rep);
        memset(all, 0xee, size * b + 1);
        if (ip)
            memcpy(all + root * b, mine, b);
        MPI_Gather(ip ? MPI_IN_PLACE : mine, (int)b, MPI_BYTE, all, (int)b, MPI_BYTE, root, MPI_COMM_WORLD);
        int bad = 0;
        for (long i = 0; rank == root && i < size * b && bad < 3; i++)
            if (all[i] != pval((int)(i / b), root, i % b, rep)) {
                bad++;
                CHECK(0, "Gather %ld B root %d%s rep %d: [%ld] = %d", b, root, ip ? " in place" : "", rep, i, all[i]);
            }
        CHECK(rank != root || all[size * b] == 0xee, "Gather %ld B wrote past the buffer", b);
        for (long i = 0; i < size * b; i++)
            all[i] = pval(root, (int)(i / b), i % b, rep + 1);
        memset(mine, 0xee, b + 1);
        MPI_Scatter(all, (int)b, MPI_BYTE, ip ? MPI_IN_PLACE : mine, (int)b, MPI_BYTE, root, MPI_COMM_WORLD);
        const unsigned char *s = ip ? all + root * b : mine;
        bad = 0;
        for (long i = 0; i < b && bad < 3; i++)
            if (s[i] != pval(root, rank, i, rep + 1)) {
                bad++;
                CHECK(0, "Scatter %ld B root %d%s rep %d: [%ld] = %d", b, root, ip ? " in place" : "", rep, i, s[i]);
            }
        CHECK(ip || mine[b] == 0xee, "Scatter %ld B wrote past the buffer", b);
    }
    free(all);
    free(mine);
}

/* Gather and Scatter of `c` ints per rank: strided (every other int) on the members' side
 * and, with `strided_root`, on the root's side too. */
static void check_strided(int c, int root, int strided_root)
{
    MPI_Datatype vec, rvec;
    MPI_Type_vector(c, 1, 2, MPI_INT, &vec);
    MPI_Type_commit(&vec);
    /* The root's blocks: c ints every other int, consecutive blocks 2c ints apart. */
    MPI_Type_create_resized(vec, 0, (MPI_Aint)(2 * c * sizeof(int)), &rvec);
    MPI_Type_commit(&rvec);
    long span = strided_root ? 2L * c : c;
    int *mine = malloc((2 * c + 1) * sizeof(int)), *all = malloc(((size_t)size * span + 1) * sizeof(int));
    for (int i = 0; i < 2 * c; i++)
        mine[i] = i % 2 ? -1 : rank * 100000 + i / 2;
    for (long i = 0; i < size * span; i++)
        all[i] = -7;
    if (strided_root)
        MPI_Gather(mine, 1, vec, all, 1, rvec, root, MPI_COMM_WORLD);
    else
        MPI_Gather(mine, 1, vec, all, c, MPI_INT, root, MPI_COMM_WORLD);
    int bad = 0;
    for (long i = 0; rank == root && i < size * span && bad < 3; i++) {
        long blk = i / span, k = i % span;
        int want = strided_root ? (k % 2 ? -7 : (int)(blk * 100000 + k / 2)) : (int)(blk * 100000 + k);
        if (all[i] != want) {
            bad++;
            CHECK(0, "Gather of %d strided ints root %d (strided root %d): [%ld] = %d, expected %d", c, root,
                  strided_root, i, all[i], want);
        }
    }
    for (long i = 0; i < size * span; i++) {
        long blk = i / span, k = i % span;
        all[i] = strided_root ? (k % 2 ? -3 : (int)(blk * 100000 + k / 2 + 5)) : (int)(blk * 100000 + k + 5);
    }
    for (int i = 0; i < 2 * c; i++)
        mine[i] = -7;
    if (strided_root)
        MPI_Scatter(all, 1, rvec, mine, 1, vec, root, MPI_COMM_WORLD);
    else
        MPI_Scatter(all, c, MPI_INT, mine, 1, vec, root, MPI_COMM_WORLD);
    bad = 0;
    for (int i = 0; i < 2 * c && bad < 3; i++) {
        int want = i % 2 ? -7 : rank * 100000 + i / 2 + 5;
        if (mine[i] != want) {
            bad++;
            CHECK(0, "Scatter of %d strided ints root %d (strided root %d): [%d] = %d, expected %d", c, root,
                  strided_root, i, mine[i], want);
        }
    }
    MPI_Type_free(&rvec);
    MPI_Type_free(&vec);
    free(mine);
    free(all);
}

/* Gatherv and Scatterv: rank r gives (r % 4) * b / 2 bytes (some empty, some above the eager
 * limit, some below), placed in reverse rank order at the root. */
static void check_v(long b, int root, int reps)
{
    int *counts = malloc(size * sizeof(int)), *displs = malloc(size * sizeof(int));
    long total = 0;
    for (int r = 0; r < size; r++)
        total += counts[r] = (int)((r % 4) * b / 2);
    for (int r = size - 1, at = 0; r >= 0; at += counts[r], r--)
        displs[r] = at;
    long mine_n = counts[rank];
    unsigned char *all = malloc(total + 1), *mine = malloc(mine_n + 1);
    for (int rep = 0; rep < reps; rep++) {
        for (long i = 0; i < mine_n; i++)
            mine[i] = pval(rank, root, i, rep + 3);
        memset(all, 0xee, total + 1);
        MPI_Gatherv(mine, (int)mine_n, MPI_BYTE, all, counts, displs, MPI_BYTE, root, MPI_COMM_WORLD);
        int bad = 0;
        for (int r = 0; rank == root && r < size; r++)
            for (long i = 0; i < counts[r] && bad < 3; i++)
                if (all[displs[r] + i] != pval(r, root, i, rep + 3)) {
                    bad++;
                    CHECK(0, "Gatherv %ld B root %d rep %d: rank %d [%ld] = %d", b, root, rep, r, i, all[displs[r] + i]);
                }
        CHECK(rank != root || all[total] == 0xee, "Gatherv %ld B wrote past the buffer", b);
        for (int r = 0; r < size; r++)
            for (long i = 0; i < counts[r]; i++)
                all[displs[r] + i] = pval(root, r, i, rep + 4);
        memset(mine, 0xee, mine_n + 1);
        MPI_Scatterv(all, counts, displs, MPI_BYTE, mine, (int)mine_n, MPI_BYTE, root, MPI_COMM_WORLD);
        bad = 0;
        for (long i = 0; i < mine_n && bad < 3; i++)
            if (mine[i] != pval(root, rank, i, rep + 4)) {
                bad++;
                CHECK(0, "Scatterv %ld B root %d rep %d: [%ld] = %d", b, root, rep, i, mine[i]);
            }
        CHECK(mine[mine_n] == 0xee, "Scatterv %ld B wrote past the buffer", b);
    }
    free(all);
    free(mine);
    free(counts);
    free(displs);
}

static void run_pieces(void)
{
    long eager = env_or("OXMPI_EAGER_LIMIT", 12288), max = env_or("OXMPI_COLL_PIECE_MAX", 524288);
    int roots[3] = {0, size - 1, size / 2};
    /* Around the eager limit, a few pieces with a short last one, and around the limit on
     * block * ranks (pieces below it, one message above). */
    long sizes[] = {eager - 1, eager, eager + 1, 2 * eager, 3 * eager + 17, max / size, max / size + 1, 1};
    for (unsigned k = 0; k < sizeof sizes / sizeof sizes[0]; k++)
        if (sizes[k] > 0)
            check_uniform(sizes[k], roots[k % 3], (int)(k % 2), 3);
    check_uniform(2 * eager + 5, size - 1, 0, 40);
    check_uniform(3 * eager, size / 2, 1, 40);
    for (int k = 0; k < 3; k++) {
        check_strided((int)(eager / 4) + 3, roots[k], k != 1);
        check_strided((int)(3 * eager / 4) + 1, roots[(k + 1) % 3], k == 1);
        check_v(eager + 300, roots[k], 2);
        check_v(3 * eager, roots[(k + 2) % 3], 2);
    }
    check_v(5 * eager, size - 1, 20);
    check_strided(3, size - 1, 1);
}

/* The program of the coll_pieces*.c tests, which differ only in their settings (their
 * oxmpi-test lines); coll_mixed.h has its own. */
#ifndef COLL_PIECES_OWN_MAIN
int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    run_pieces();
    return coll_finish();
}
#endif
