/* oxmpi-test: np=1,2,3,4,8 */
/* MPI_Comm_idup and MPI_Comm_idup_with_info: the new communicator is usable once the request
 * completes; several idups in flight (with other nonblocking collectives, on overlapping communicators issued in different orders on different ranks);
 * idup of an intercommunicator; hints; errors for bad arguments. */
#include "comm_mtest.h"

/* Messages with one tag on `a` and `b` stay apart: rank 0 sends on b then on a, the last rank
 * receives on a then on b. */
static void check_isolated(MPI_Comm a, MPI_Comm b, const char *what)
{
    int rank, size, va = -1, vb = -1;
    MPI_Comm_rank(a, &rank);
    MPI_Comm_size(a, &size);
    if (size < 2)
        return;
    if (rank == 0) {
        int x = 111, y = 222;
        MPI_Request r[2];
        CM_OK(MPI_Isend(&y, 1, MPI_INT, size - 1, 5, b, &r[0]));
        CM_OK(MPI_Isend(&x, 1, MPI_INT, size - 1, 5, a, &r[1]));
        CM_OK(MPI_Waitall(2, r, MPI_STATUSES_IGNORE));
    } else if (rank == size - 1) {
        CM_OK(MPI_Recv(&va, 1, MPI_INT, 0, 5, a, MPI_STATUS_IGNORE));
        CM_OK(MPI_Recv(&vb, 1, MPI_INT, 0, 5, b, MPI_STATUS_IGNORE));
        CM_CHECK(va == 111 && vb == 222, "%s: got %d on a, %d on b", what, va, vb);
    }
}

/* The communicator has the ranks and size of `like`. */
static void check_like(MPI_Comm c, MPI_Comm like, const char *what)
{
    int result = -1;
    CM_OK(MPI_Comm_compare(c, like, &result));
    CM_CHECK(result == MPI_CONGRUENT, "%s: compare gave %d", what, result);
}

int main(int argc, char **argv)
{
    int rank, size, i, flag;
    MPI_Comm dups[10], c, d;
    MPI_Request reqs[20], r;
    cm_init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    /* one idup, completed with MPI_Test */
    CM_OK(MPI_Comm_idup(MPI_COMM_WORLD, &c, &r));
    CM_CHECK(c != MPI_COMM_NULL, "idup returned MPI_COMM_NULL");
    flag = 0;
    while (!flag)
        CM_OK(MPI_Test(&r, &flag, MPI_STATUS_IGNORE));
    CM_CHECK(r == MPI_REQUEST_NULL, "completed request not freed");
    check_like(c, MPI_COMM_WORLD, "idup");
    check_isolated(c, MPI_COMM_WORLD, "idup vs world");

    /* ten idups with barriers in between, then all waited for */
    for (i = 0; i < 10; i++) {
        CM_OK(MPI_Comm_idup(i % 2 ? c : MPI_COMM_WORLD, &dups[i], &reqs[2 * i]));
        CM_OK(MPI_Ibarrier(MPI_COMM_WORLD, &reqs[2 * i + 1]));
    }
    CM_OK(MPI_Waitall(20, reqs, MPI_STATUSES_IGNORE));
    for (i = 0; i < 10; i++) {
        check_like(dups[i], MPI_COMM_WORLD, "idup in a row");
        if (i > 0)
            check_isolated(dups[i], dups[i - 1], "idups in a row");
    }
    for (i = 0; i < 10; i++)
        CM_OK(MPI_Comm_free(&dups[i]));

    /* two communicators over ranks 0 and 1, duplicated in opposite orders on the two ranks:
     * blocking dups in this order would deadlock (MPICH hangs with a ring of 3 or more) */
    if (size >= 2) {
        MPI_Comm primary = MPI_COMM_NULL, secondary = MPI_COMM_NULL, nd[2];
        for (i = 0; i < 2; i++) {
            MPI_Comm *out = rank == i ? &primary : &secondary;
            CM_OK(MPI_Comm_split(MPI_COMM_WORLD, rank < 2 ? 0 : MPI_UNDEFINED, 0, out));
        }
        if (rank < 2) {
            CM_OK(MPI_Comm_idup(primary, &nd[0], &reqs[0]));
            CM_OK(MPI_Comm_idup(secondary, &nd[1], &reqs[1]));
            CM_OK(MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE));
            /* nd[k] is the dup of split k on rank 0, of split 1 - k on rank 1 */
            MPI_Comm of_split[2] = {nd[rank], nd[1 - rank]};
            for (i = 0; i < 2; i++) {
                int n = 0, v = -1;
                CM_OK(MPI_Comm_size(of_split[i], &n));
                CM_CHECK(n == 2, "overlap: size %d", n);
                CM_OK(MPI_Sendrecv(&rank, 1, MPI_INT, 1 - rank, 9, &v, 1, MPI_INT, 1 - rank, 9, of_split[i],
                                   MPI_STATUS_IGNORE));
                CM_CHECK(v == 1 - rank, "overlap %d: got %d", i, v);
            }
            check_isolated(of_split[0], of_split[1], "overlap");
            for (i = 0; i < 2; i++)
                CM_OK(MPI_Comm_free(&nd[i]));
            CM_OK(MPI_Comm_free(&primary));
            CM_OK(MPI_Comm_free(&secondary));
        }
    }

    /* idup of an intercommunicator between the even and the odd ranks */
    if (size >= 2) {
        MPI_Comm half, inter, copy;
        int lsize, rsize, is_inter = 0, result = -1;
        CM_OK(MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half));
        CM_OK(MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, rank % 2 ? 0 : 1, 7, &inter));
        CM_OK(MPI_Comm_idup(inter, &copy, &r));
        CM_OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
        CM_OK(MPI_Comm_test_inter(copy, &is_inter));
        CM_CHECK(is_inter, "idup of an intercommunicator is not one");
        CM_OK(MPI_Comm_size(copy, &lsize));
        CM_OK(MPI_Comm_remote_size(copy, &rsize));
        CM_CHECK(lsize == (size + 1 - rank % 2) / 2 && rsize == size - lsize, "inter idup sizes %d %d", lsize,
                 rsize);
        CM_OK(MPI_Comm_compare(copy, inter, &result));
        CM_CHECK(result == MPI_CONGRUENT, "inter idup compare %d", result);
        {
            int v = -1, lr;
            MPI_Comm_rank(copy, &lr);
            if (lr == 0) {
                CM_OK(MPI_Sendrecv(&rank, 1, MPI_INT, 0, 3, &v, 1, MPI_INT, 0, 3, copy, MPI_STATUS_IGNORE));
                CM_CHECK(v == (rank % 2 ? 0 : 1), "inter idup: remote leader sent %d", v);
            }
        }
        CM_OK(MPI_Comm_free(&copy));
        CM_OK(MPI_Comm_free(&inter));
        CM_OK(MPI_Comm_free(&half));
    }

    /* idup_with_info: known hints kept, unknown keys dropped (as MPICH) */
    {
        MPI_Info info, used;
        char val[MPI_MAX_INFO_VAL];
        int found = 0;
        MPI_Info_create(&info);
        MPI_Info_set(info, "mpi_assert_no_any_tag", "true");
        MPI_Info_set(info, "oxmpi_unknown_key", "1");
        CM_OK(MPI_Comm_idup_with_info(MPI_COMM_WORLD, info, &d, &r));
        MPI_Info_free(&info);
        CM_OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
        CM_OK(MPI_Comm_get_info(d, &used));
        MPI_Info_get(used, "mpi_assert_no_any_tag", MPI_MAX_INFO_VAL - 1, val, &found);
        CM_CHECK(found, "hint mpi_assert_no_any_tag lost");
        MPI_Info_get(used, "oxmpi_unknown_key", MPI_MAX_INFO_VAL - 1, val, &found);
        CM_CHECK(!found, "unknown key kept");
        MPI_Info_free(&used);
        check_isolated(d, c, "idup_with_info");
        CM_OK(MPI_Comm_free(&d));
    }

    /* bad arguments */
    CM_EXPECT_ERR(MPI_Comm_idup(MPI_COMM_NULL, &d, &r), MPI_ERR_COMM);
    CM_EXPECT_ERR(MPI_Comm_idup(MPI_COMM_WORLD, NULL, &r), MPI_ERR_ARG);
    CM_EXPECT_ERR(MPI_Comm_idup(MPI_COMM_WORLD, &d, NULL), MPI_ERR_ARG);
    {
        MPI_Comm freed;
        CM_OK(MPI_Comm_dup(MPI_COMM_WORLD, &freed));
        MPI_Comm gone = freed;
        CM_OK(MPI_Comm_free(&freed));
        CM_EXPECT_ERR(MPI_Comm_idup(gone, &d, &r), MPI_ERR_COMM);
    }

    CM_OK(MPI_Comm_free(&c));
    return cm_finalize();
}
