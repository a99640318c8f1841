/* oxmpi-test: np=1,2,3,4,8 */
/* MPI_Comm_create (collective over the parent, disjoint groups), MPI_Comm_create_group
 * (only the group calls it), MPI_Comm_split_type, MPI_Comm_test_inter, hints, bad input. */
#include "comm_mtest.h"
#include "same_host.h"
#include <string.h>

int main(int argc, char **argv)
{
    cm_init(&argc, &argv);
    int rank, size, r, n, flag;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Group world, evens, odds;
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    int range[1][3] = {{0, size - 1, 2}};
    MPI_Group_range_incl(world, 1, range, &evens);
    MPI_Group_range_excl(world, 1, range, &odds);

    /* everybody calls; only the evens are members */
    MPI_Comm c;
    CM_OK(MPI_Comm_create(MPI_COMM_WORLD, evens, &c));
    if (rank % 2 == 0) {
        MPI_Comm_rank(c, &r);
        MPI_Comm_size(c, &n);
        CM_CHECK(r == rank / 2 && n == (size + 1) / 2, "create(evens): rank %d size %d", r, n);
        cm_check_ring(c, 1);
        MPI_Comm_free(&c);
    } else {
        CM_CHECK(c == MPI_COMM_NULL, "non-member of create(evens) got a communicator");
    }

    /* disjoint groups in one call (MPI-2.2): evens get theirs, odds theirs */
    CM_OK(MPI_Comm_create(MPI_COMM_WORLD, rank % 2 == 0 ? evens : odds, &c));
    CM_CHECK(c != MPI_COMM_NULL, "create with disjoint groups gave MPI_COMM_NULL");
    if (c != MPI_COMM_NULL) {
        MPI_Comm_size(c, &n);
        CM_CHECK(n == (rank % 2 == 0 ? (size + 1) / 2 : size / 2), "disjoint create size %d", n);
        cm_check_ring(c, 2);
        MPI_Comm_free(&c);
    }

    /* the empty group: MPI_COMM_NULL everywhere */
    CM_OK(MPI_Comm_create(MPI_COMM_WORLD, MPI_GROUP_EMPTY, &c));
    CM_CHECK(c == MPI_COMM_NULL, "create(MPI_GROUP_EMPTY) gave a communicator");

    /* create_group: only the odds call, in reverse order of world rank */
    if (rank % 2 == 1) {
        int no;
        MPI_Group_size(odds, &no);
        int *ranks = malloc(sizeof(int) * no);
        for (int i = 0; i < no; i++)
            ranks[i] = no - 1 - i;
        MPI_Group rodds;
        MPI_Group_incl(odds, no, ranks, &rodds);
        CM_OK(MPI_Comm_create_group(MPI_COMM_WORLD, rodds, 42, &c));
        MPI_Comm_rank(c, &r);
        CM_CHECK(r == no - 1 - rank / 2, "create_group(odds reversed): rank %d", r);
        cm_check_ring(c, 3);
        /* and a second level from the new communicator, by its first member alone */
        MPI_Group cg, first;
        MPI_Comm_group(c, &cg);
        int zero = 0;
        MPI_Group_incl(cg, 1, &zero, &first);
        if (r == 0) {
            MPI_Comm solo;
            CM_OK(MPI_Comm_create_group(c, first, 0, &solo));
            MPI_Comm_size(solo, &n);
            CM_CHECK(n == 1, "solo size %d", n);
            MPI_Comm_free(&solo);
        }
        MPI_Group_free(&first);
        MPI_Group_free(&cg);
        MPI_Comm_free(&c);
        MPI_Group_free(&rodds);
        free(ranks);
    }
    /* meanwhile the evens make their own, with another tag */
    if (rank % 2 == 0) {
        CM_OK(MPI_Comm_create_group(MPI_COMM_WORLD, evens, 7, &c));
        cm_check_ring(c, 4);
        MPI_Comm_free(&c);
    }

    /* split_type SHARED: the ranks of this host, ordered by key (descending world rank) */
    int *same = malloc(size * sizeof *same), on_host = same_host_ranks(same), above = 0;
    for (int w = rank + 1; w < size; w++)
        above += same[w];
    free(same);
    CM_OK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, size - rank, MPI_INFO_NULL, &c));
    MPI_Comm_size(c, &n);
    MPI_Comm_rank(c, &r);
    CM_CHECK(n == on_host && r == above, "split_type shared: size %d rank %d, want %d and %d", n, r, on_host, above);
    cm_check_ring(c, 5);
    MPI_Comm_free(&c);
    CM_OK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_UNDEFINED, 0, MPI_INFO_NULL, &c));
    CM_CHECK(c == MPI_COMM_NULL, "split_type MPI_UNDEFINED gave a communicator");
    /* HW_GUIDED on shared memory is the node */
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "mpi_hw_resource_type", "mpi_shared_memory");
    CM_OK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_HW_GUIDED, rank, info, &c));
    CM_CHECK(c != MPI_COMM_NULL, "HW_GUIDED mpi_shared_memory gave MPI_COMM_NULL");
    if (c != MPI_COMM_NULL) {
        MPI_Comm_size(c, &n);
        CM_CHECK(n == on_host, "HW_GUIDED mpi_shared_memory: size %d, want %d", n, on_host);
        MPI_Comm_free(&c);
    }
    MPI_Info_free(&info);

    /* intracommunicators only */
    MPI_Comm_test_inter(MPI_COMM_WORLD, &flag);
    CM_CHECK(!flag, "MPI_COMM_WORLD is an intercommunicator?");

    /* dup_with_info and the hints */
    MPI_Info_create(&info);
    MPI_Info_set(info, "mpi_assert_no_any_tag", "false");
    CM_OK(MPI_Comm_dup_with_info(MPI_COMM_WORLD, info, &c));
    MPI_Info_free(&info);
    cm_check_ring(c, 6);
    MPI_Info used;
    CM_OK(MPI_Comm_get_info(c, &used));
    CM_CHECK(used != MPI_INFO_NULL, "get_info gave MPI_INFO_NULL");
    MPI_Info_free(&used);
    CM_OK(MPI_Comm_set_info(c, MPI_INFO_ENV));
    MPI_Comm_free(&c);

    /* Assertions given to split_type belong to the new communicator; a plain dup of it does
       not carry them (MPI-4: hints that assert are not propagated by MPI_Comm_dup). */
    {
        char val[MPI_MAX_INFO_VAL];
        int found = 0;
        MPI_Comm node, copy;
        MPI_Info_create(&info);
        MPI_Info_set(info, "mpi_assert_no_any_tag", "true");
        CM_OK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, info, &node));
        MPI_Info_free(&info);
        CM_OK(MPI_Comm_get_info(node, &used));
        MPI_Info_get(used, "mpi_assert_no_any_tag", MPI_MAX_INFO_VAL - 1, val, &found);
        CM_CHECK(found && strcmp(val, "true") == 0, "split_type lost its hint (found %d)", found);
        MPI_Info_free(&used);
        CM_OK(MPI_Comm_dup(node, &copy));
        CM_OK(MPI_Comm_get_info(copy, &used));
        MPI_Info_get(used, "mpi_assert_no_any_tag", MPI_MAX_INFO_VAL - 1, val, &found);
        CM_CHECK(!found || strcmp(val, "true") != 0, "MPI_Comm_dup carried mpi_assert_no_any_tag over");
        MPI_Info_free(&used);
        MPI_Comm_free(&copy);
        MPI_Comm_free(&node);
    }

    /* bad input */
    MPI_Group self;
    MPI_Comm_group(MPI_COMM_SELF, &self);
    CM_EXPECT_ERR(MPI_Comm_create_group(MPI_COMM_WORLD, self, -1, &c), MPI_ERR_TAG);
    CM_EXPECT_ERR(MPI_Comm_create_group(MPI_COMM_WORLD, MPI_GROUP_NULL, 0, &c), MPI_ERR_GROUP);
    CM_EXPECT_ERR(MPI_Comm_create(MPI_COMM_NULL, world, &c), MPI_ERR_COMM);
    if (size > 1)
        CM_EXPECT_ERR(MPI_Comm_create(MPI_COMM_SELF, world, &c), MPI_ERR_GROUP);
    CM_EXPECT_ERR(MPI_Comm_split_type(MPI_COMM_WORLD, 12345, 0, MPI_INFO_NULL, &c), MPI_ERR_ARG);
    CM_EXPECT_ERR(MPI_Comm_test_inter(MPI_COMM_NULL, &flag), MPI_ERR_COMM);
    CM_EXPECT_ERR(MPI_Comm_dup(MPI_COMM_NULL, &c), MPI_ERR_COMM);
    MPI_Comm w = MPI_COMM_WORLD;
    CM_EXPECT_ERR(MPI_Comm_free(&w), MPI_ERR_COMM);

    MPI_Group_free(&self);
    MPI_Group_free(&evens);
    MPI_Group_free(&odds);
    MPI_Group_free(&world);
    return cm_finalize();
}
