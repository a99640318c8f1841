/* oxmpi-test: np=2,3,4,5,8 */
/* Communicators from intercommunicators: MPI_Comm_split and MPI_Comm_create over an
 * intercommunicator (MPI-2.2: an intercommunicator of the two sub-groups, or MPI_COMM_NULL
 * when one side is empty), MPI_Comm_dup of one, MPI_Intercomm_create_from_groups, groups and
 * compare, and errors for bad arguments. */
#include "comm_mtest.h"

/* Remote leader exchange: local rank 0 of `inter` sends `mine` and returns what the remote
 * rank 0 sent; other ranks return -1. */
static int leader_swap(MPI_Comm inter, int mine)
{
    int lr, v = -1;
    MPI_Comm_rank(inter, &lr);
    if (lr == 0)
        CM_OK(MPI_Sendrecv(&mine, 1, MPI_INT, 0, 4, &v, 1, MPI_INT, 0, 4, inter, MPI_STATUS_IGNORE));
    return v;
}

int main(int argc, char **argv)
{
    int rank, size, color, lrank, lsize, rsize, is_inter, result;
    MPI_Comm half, inter, sub, copy;
    MPI_Group g, lg, rg, wg;
    cm_init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    color = rank % 2; /* evens and odds */
    CM_OK(MPI_Comm_split(MPI_COMM_WORLD, color, rank, &half));
    CM_OK(MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, 1 - color, 11, &inter));
    MPI_Comm_set_errhandler(inter, MPI_ERRORS_RETURN);
    MPI_Comm_rank(inter, &lrank);
    MPI_Comm_size(inter, &lsize);
    MPI_Comm_remote_size(inter, &rsize);

    /* split by local rank < 2: sub-intercommunicators of the first two of each side, and of
     * the rest (MPI_COMM_NULL where a side has none); key reverses the order */
    int sc = lrank < 2 ? 0 : 1;
    CM_OK(MPI_Comm_split(inter, sc, -lrank, &sub));
    {
        int want_l = sc == 0 ? (lsize < 2 ? lsize : 2) : lsize - 2;
        int want_r = sc == 0 ? (rsize < 2 ? rsize : 2) : rsize - 2;
        if (want_l > 0 && want_r > 0) {
            int n, rn, r;
            CM_CHECK(sub != MPI_COMM_NULL, "split: MPI_COMM_NULL with %d local and %d remote", want_l, want_r);
            if (sub != MPI_COMM_NULL) {
                CM_OK(MPI_Comm_test_inter(sub, &is_inter));
                CM_CHECK(is_inter, "split of an intercommunicator is not one");
                MPI_Comm_size(sub, &n);
                MPI_Comm_remote_size(sub, &rn);
                MPI_Comm_rank(sub, &r);
                CM_CHECK(n == want_l && rn == want_r, "split sizes %d %d want %d %d", n, rn, want_l, want_r);
                int first = sc == 0 ? 0 : 2;
                CM_CHECK(r == want_l - 1 - (lrank - first), "split rank %d (local rank %d)", r, lrank);
                /* the remote leader is the remote member with the highest local rank */
                int v = leader_swap(sub, rank);
                if (r == 0) {
                    int rl = first + want_r - 1; /* remote local rank */
                    CM_CHECK(v == 2 * rl + 1 - color, "split: remote leader is world %d", v);
                }
                CM_OK(MPI_Comm_free(&sub));
            }
        } else {
            CM_CHECK(sub == MPI_COMM_NULL, "split: a communicator with an empty side");
        }
    }
    CM_OK(MPI_Comm_split(inter, MPI_UNDEFINED, 0, &sub));
    CM_CHECK(sub == MPI_COMM_NULL, "split with MPI_UNDEFINED gave a communicator");

    /* create: the evens keep their local rank 0 only, the odds everyone */
    MPI_Comm_group(inter, &lg);
    if (color == 0) {
        int zero = 0;
        MPI_Group_incl(lg, 1, &zero, &g);
    } else {
        MPI_Comm_group(inter, &g);
    }
    CM_OK(MPI_Comm_create(inter, g, &sub));
    if (color == 0 && lrank > 0) {
        CM_CHECK(sub == MPI_COMM_NULL, "create: got a communicator outside the group");
    } else {
        CM_CHECK(sub != MPI_COMM_NULL, "create: MPI_COMM_NULL inside the group");
        if (sub != MPI_COMM_NULL) {
            MPI_Comm_size(sub, &lsize);
            MPI_Comm_remote_size(sub, &rsize);
            CM_CHECK(lsize == (color == 0 ? 1 : size / 2), "create: local size %d", lsize);
            CM_CHECK(rsize == (color == 0 ? size / 2 : 1), "create: remote size %d", rsize);
            CM_OK(MPI_Comm_free(&sub));
        }
    }
    MPI_Group_free(&g);

    /* groups and compare of a dup */
    CM_OK(MPI_Comm_remote_group(inter, &rg));
    CM_OK(MPI_Comm_dup(inter, &copy));
    CM_OK(MPI_Comm_compare(copy, inter, &result));
    CM_CHECK(result == MPI_CONGRUENT, "compare of a dup: %d", result);
    CM_OK(MPI_Comm_compare(inter, MPI_COMM_WORLD, &result));
    CM_CHECK(result == MPI_UNEQUAL, "compare inter/intra: %d", result);
    {
        int v = leader_swap(copy, rank);
        if (lrank == 0)
            CM_CHECK(v == 1 - color, "dup: remote leader is world %d", v);
    }
    CM_OK(MPI_Comm_free(&copy));

    /* MPI_Intercomm_create_from_groups from the two groups, with a string tag */
    {
        MPI_Comm fromg;
        CM_OK(MPI_Intercomm_create_from_groups(lg, 0, rg, 0, "oxmpi-test-tag", MPI_INFO_NULL, MPI_ERRORS_RETURN,
                                               &fromg));
        CM_OK(MPI_Comm_test_inter(fromg, &is_inter));
        CM_CHECK(is_inter, "from_groups: not an intercommunicator");
        CM_OK(MPI_Comm_compare(fromg, inter, &result));
        CM_CHECK(result == MPI_CONGRUENT, "from_groups compare: %d", result);
        int v = leader_swap(fromg, rank);
        if (lrank == 0)
            CM_CHECK(v == 1 - color, "from_groups: remote leader is world %d", v);
        CM_EXPECT_ERR(MPI_Intercomm_create_from_groups(MPI_GROUP_NULL, 0, rg, 0, "t", MPI_INFO_NULL,
                                                       MPI_ERRORS_RETURN, &sub),
                      MPI_ERR_GROUP);
        CM_OK(MPI_Comm_free(&fromg));
    }

    /* bad arguments: create_group needs an intracommunicator; a group not in the local group */
    MPI_Comm_group(MPI_COMM_WORLD, &wg);
    CM_EXPECT_ERR(MPI_Comm_create_group(inter, lg, 0, &sub), MPI_ERR_COMM);
    if (size > 1)
        CM_EXPECT_ERR(MPI_Comm_create(inter, wg, &sub), MPI_ERR_GROUP);
    CM_EXPECT_ERR(MPI_Comm_split(MPI_COMM_NULL, 0, 0, &sub), MPI_ERR_COMM);
    MPI_Group_free(&wg);
    MPI_Group_free(&lg);
    MPI_Group_free(&rg);
    CM_OK(MPI_Comm_free(&inter));
    CM_OK(MPI_Comm_free(&half));
    return cm_finalize();
}
