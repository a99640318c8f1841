/* oxmpi-test: np=1,2,3,4,8 */
/* Group algebra on the world group: size/rank, incl/excl, ranges, set operations, compare,
 * translate_ranks, MPI_GROUP_EMPTY, groups outliving their communicator, and bad input. */
#include "comm_mtest.h"

int main(int argc, char **argv)
{
    cm_init(&argc, &argv);
    int rank, size, n, r;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    MPI_Group world, rev, evens, odds, g;
    CM_OK(MPI_Comm_group(MPI_COMM_WORLD, &world));
    MPI_Group_size(world, &n);
    MPI_Group_rank(world, &r);
    CM_CHECK(n == size && r == rank, "world group size %d rank %d", n, r);

    /* incl in reverse order */
    int *ranks = malloc(sizeof(int) * size), *out = malloc(sizeof(int) * size);
    for (int i = 0; i < size; i++)
        ranks[i] = size - 1 - i;
    CM_OK(MPI_Group_incl(world, size, ranks, &rev));
    MPI_Group_rank(rev, &r);
    CM_CHECK(r == size - 1 - rank, "reversed group rank %d", r);
    int res;
    MPI_Group_compare(world, rev, &res);
    CM_CHECK(res == (size == 1 ? MPI_IDENT : MPI_SIMILAR), "compare world/reversed %d", res);
    MPI_Group_compare(world, world, &res);
    CM_CHECK(res == MPI_IDENT, "compare world/world %d", res);
    MPI_Group_translate_ranks(world, size, ranks, rev, out);
    for (int i = 0; i < size; i++)
        CM_CHECK(out[i] == i, "translate reversed: %d -> %d", ranks[i], out[i]);

    /* ranges: evens = 0..size-1 step 2, odds = the rest */
    int range[1][3] = {{0, size - 1, 2}};
    CM_OK(MPI_Group_range_incl(world, 1, range, &evens));
    CM_OK(MPI_Group_range_excl(world, 1, range, &odds));
    int ne, no;
    MPI_Group_size(evens, &ne);
    MPI_Group_size(odds, &no);
    CM_CHECK(ne == (size + 1) / 2 && no == size / 2, "evens %d odds %d", ne, no);
    MPI_Group_rank(evens, &r);
    CM_CHECK(r == (rank % 2 == 0 ? rank / 2 : MPI_UNDEFINED), "rank in evens %d", r);
    MPI_Group_rank(odds, &r);
    CM_CHECK(r == (rank % 2 == 1 ? rank / 2 : MPI_UNDEFINED), "rank in odds %d", r);
    /* a descending range */
    int down[1][3] = {{size - 1, 0, -1}};
    CM_OK(MPI_Group_range_incl(world, 1, down, &g));
    MPI_Group_compare(g, rev, &res);
    CM_CHECK(res == MPI_IDENT, "descending range vs reversed incl: %d", res);
    MPI_Group_free(&g);
    CM_CHECK(g == MPI_GROUP_NULL, "freed group handle is not MPI_GROUP_NULL");

    /* set operations */
    MPI_Group u, i2, d;
    MPI_Group_union(evens, odds, &u);
    MPI_Group_size(u, &n);
    CM_CHECK(n == size, "union size %d", n);
    MPI_Group_compare(u, world, &res);
    CM_CHECK(res == (size <= 2 ? MPI_IDENT : MPI_SIMILAR), "union compare %d", res);
    /* union keeps the first group's order: evens first */
    int zero = 0, pos;
    if (size > 1) {
        int one = 1;
        MPI_Group_translate_ranks(world, 1, &one, u, &pos);
        CM_CHECK(pos == (size + 1) / 2, "rank 1 in union at %d", pos);
    }
    MPI_Group_intersection(evens, odds, &i2);
    CM_CHECK(i2 == MPI_GROUP_EMPTY, "empty intersection is not MPI_GROUP_EMPTY");
    MPI_Group_size(i2, &n);
    CM_CHECK(n == 0, "empty intersection size %d", n);
    MPI_Group_rank(i2, &r);
    CM_CHECK(r == MPI_UNDEFINED, "rank in empty group %d", r);
    MPI_Group_difference(world, odds, &d);
    MPI_Group_compare(d, evens, &res);
    CM_CHECK(res == MPI_IDENT, "world - odds vs evens: %d", res);
    MPI_Group_translate_ranks(world, 1, &zero, odds, &pos);
    CM_CHECK(pos == MPI_UNDEFINED, "rank 0 in odds: %d", pos);
    int pn = MPI_PROC_NULL;
    MPI_Group_translate_ranks(world, 1, &pn, evens, &pos);
    CM_CHECK(pos == MPI_PROC_NULL, "PROC_NULL translated to %d", pos);
    MPI_Group_free(&u);
    MPI_Group_free(&i2);
    MPI_Group_free(&d);

    /* excl of everybody gives the empty group; incl of nobody too */
    for (int i = 0; i < size; i++)
        ranks[i] = i;
    MPI_Group_excl(world, size, ranks, &g);
    CM_CHECK(g == MPI_GROUP_EMPTY, "excl of all is not MPI_GROUP_EMPTY");
    MPI_Group_incl(world, 0, ranks, &g);
    CM_CHECK(g == MPI_GROUP_EMPTY, "incl of none is not MPI_GROUP_EMPTY");
    MPI_Group_size(MPI_GROUP_EMPTY, &n);
    CM_CHECK(n == 0, "MPI_GROUP_EMPTY size %d", n);

    /* a group stays valid after its communicator is freed */
    MPI_Comm dup;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    MPI_Comm_group(dup, &g);
    MPI_Comm_free(&dup);
    MPI_Group_size(g, &n);
    MPI_Group_compare(g, world, &res);
    CM_CHECK(n == size && res == MPI_IDENT, "group of a freed communicator: size %d compare %d", n, res);
    MPI_Group_free(&g);

    /* bad input */
    int bad = size;
    CM_EXPECT_ERR(MPI_Group_incl(world, 1, &bad, &g), MPI_ERR_RANK);
    bad = -1;
    CM_EXPECT_ERR(MPI_Group_excl(world, 1, &bad, &g), MPI_ERR_RANK);
    CM_EXPECT_ERR(MPI_Group_incl(world, -1, ranks, &g), MPI_ERR_ARG);
    int zstride[1][3] = {{0, 0, 0}};
    CM_EXPECT_ERR(MPI_Group_range_incl(world, 1, zstride, &g), MPI_ERR_ARG);
    int oor[1][3] = {{0, size, 1}};
    CM_EXPECT_ERR(MPI_Group_range_incl(world, 1, oor, &g), MPI_ERR_ARG);
    CM_EXPECT_ERR(MPI_Group_range_excl(world, 1, oor, &g), MPI_ERR_ARG);
    bad = size;
    CM_EXPECT_ERR(MPI_Group_translate_ranks(world, 1, &bad, evens, &pos), MPI_ERR_RANK);
    CM_EXPECT_ERR(MPI_Group_size(MPI_GROUP_NULL, &n), MPI_ERR_GROUP);
    CM_EXPECT_ERR(MPI_Group_union(world, MPI_GROUP_NULL, &g), MPI_ERR_GROUP);
#ifdef OXMPI
    /* MPICH does not detect a freed group handle; using one is erroneous, oxmpi reports it */
    MPI_Group freed;
    MPI_Group_incl(world, 1, &zero, &freed);
    g = freed;
    MPI_Group_free(&g);
    CM_EXPECT_ERR(MPI_Group_size(freed, &n), MPI_ERR_GROUP);
#endif
    CM_EXPECT_ERR(MPI_Comm_group(MPI_COMM_NULL, &g), MPI_ERR_COMM);

    MPI_Group_free(&rev);
    MPI_Group_free(&evens);
    MPI_Group_free(&odds);
    MPI_Group_free(&world);
    free(ranks);
    free(out);
    return cm_finalize();
}
