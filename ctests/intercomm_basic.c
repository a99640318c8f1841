/* oxmpi-test: np=2,3,4,5,8 */
/* Intercommunicators: MPI_Intercomm_create between the even and the odd ranks, test_inter,
 * remote size and group, point-to-point both ways (dest and source name remote ranks),
 * compare, dup, merge (both orders of the high flag), free, and errors for bad arguments. */
#include "comm_mtest.h"

/* World rank of rank `r` of the group of color `c` (evens 0, odds 1). */
static int world_of(int c, int r)
{
    return 2 * r + c;
}

static void check_p2p(MPI_Comm inter, int color, int tag)
{
    int lrank, lsize, rsize, v, i;
    MPI_Status st;
    MPI_Comm_rank(inter, &lrank);
    MPI_Comm_size(inter, &lsize);
    MPI_Comm_remote_size(inter, &rsize);
    int me = world_of(color, lrank);
    /* every process sends its world rank to remote rank 0 */
    MPI_Request req;
    CM_OK(MPI_Isend(&me, 1, MPI_INT, 0, tag, inter, &req));
    if (lrank == 0) {
        int *seen = calloc(rsize, sizeof(int));
        for (i = 0; i < rsize; i++) {
            CM_OK(MPI_Recv(&v, 1, MPI_INT, MPI_ANY_SOURCE, tag, inter, &st));
            CM_CHECK(st.MPI_SOURCE >= 0 && st.MPI_SOURCE < rsize, "source %d", st.MPI_SOURCE);
            if (st.MPI_SOURCE >= 0 && st.MPI_SOURCE < rsize) {
                seen[st.MPI_SOURCE]++;
                CM_CHECK(v == world_of(1 - color, st.MPI_SOURCE), "from remote %d got %d", st.MPI_SOURCE, v);
            }
        }
        for (i = 0; i < rsize; i++)
            CM_CHECK(seen[i] == 1, "remote rank %d seen %d times", i, seen[i]);
        free(seen);
        /* then remote rank 0 answers everyone, by remote rank */
        for (i = 0; i < rsize; i++)
            CM_OK(MPI_Send(&i, 1, MPI_INT, i, tag + 1, inter));
    }
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    CM_OK(MPI_Recv(&v, 1, MPI_INT, 0, tag + 1, inter, &st));
    CM_CHECK(v == lrank && st.MPI_SOURCE == 0 && st.MPI_TAG == tag + 1, "answer %d from %d tag %d", v, st.MPI_SOURCE,
             st.MPI_TAG);
    (void)lsize;
}

int main(int argc, char **argv)
{
    cm_init(&argc, &argv);
    int rank, size, flag, n, r, res;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int color = rank % 2;
    int nlocal = color == 0 ? (size + 1) / 2 : size / 2, nremote = size - nlocal;

    MPI_Comm local, inter;
    MPI_Comm_split(MPI_COMM_WORLD, color, rank, &local);
    CM_OK(MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, 1 - color, 7, &inter));

    CM_OK(MPI_Comm_test_inter(inter, &flag));
    CM_CHECK(flag, "test_inter(inter) = %d", flag);
    CM_OK(MPI_Comm_test_inter(MPI_COMM_WORLD, &flag));
    CM_CHECK(!flag, "test_inter(world) = %d", flag);
    MPI_Comm_size(inter, &n);
    MPI_Comm_rank(inter, &r);
    CM_CHECK(n == nlocal && r == rank / 2, "inter size %d rank %d", n, r);
    CM_OK(MPI_Comm_remote_size(inter, &n));
    CM_CHECK(n == nremote, "remote size %d, expected %d", n, nremote);

    MPI_Group rg, lg, wg;
    CM_OK(MPI_Comm_remote_group(inter, &rg));
    MPI_Comm_group(inter, &lg);
    MPI_Comm_group(MPI_COMM_WORLD, &wg);
    MPI_Group_size(rg, &n);
    CM_CHECK(n == nremote, "remote group size %d", n);
    for (int i = 0; i < nremote; i++) {
        int w;
        MPI_Group_translate_ranks(rg, 1, &i, wg, &w);
        CM_CHECK(w == world_of(1 - color, i), "remote rank %d is world %d", i, w);
    }
    for (int i = 0; i < nlocal; i++) {
        int w;
        MPI_Group_translate_ranks(lg, 1, &i, wg, &w);
        CM_CHECK(w == world_of(color, i), "local rank %d is world %d", i, w);
    }
    MPI_Group_free(&rg);
    MPI_Group_free(&lg);
    MPI_Group_free(&wg);

    check_p2p(inter, color, 20);

    CM_OK(MPI_Comm_compare(inter, inter, &res));
    CM_CHECK(res == MPI_IDENT, "compare(inter, inter) = %d", res);
    CM_OK(MPI_Comm_compare(inter, MPI_COMM_WORLD, &res));
    CM_CHECK(res == MPI_UNEQUAL, "compare(inter, world) = %d", res);

    MPI_Comm dup;
    CM_OK(MPI_Comm_dup(inter, &dup));
    CM_OK(MPI_Comm_compare(inter, dup, &res));
    CM_CHECK(res == MPI_CONGRUENT, "compare(inter, dup) = %d", res);
    CM_OK(MPI_Comm_test_inter(dup, &flag));
    CM_CHECK(flag, "test_inter(dup) = %d", flag);
    CM_OK(MPI_Comm_remote_size(dup, &n));
    CM_CHECK(n == nremote, "dup remote size %d", n);
    check_p2p(dup, color, 30);

    /* merge: the evens pass high=0 so they come first, then the other way round */
    for (int round = 0; round < 2; round++) {
        MPI_Comm merged;
        int high = round == 0 ? color : 1 - color;
        CM_OK(MPI_Intercomm_merge(round == 0 ? inter : dup, high, &merged));
        CM_OK(MPI_Comm_test_inter(merged, &flag));
        CM_CHECK(!flag, "test_inter(merged) = %d", flag);
        MPI_Comm_size(merged, &n);
        MPI_Comm_rank(merged, &r);
        int low_size = high ? nremote : nlocal;
        int want = high ? low_size + rank / 2 : rank / 2;
        CM_CHECK(n == size && r == want, "merge round %d: size %d rank %d, expected %d", round, n, r, want);
        cm_check_ring(merged, 40 + round);
        int sum = 0;
        CM_OK(MPI_Allreduce(&r, &sum, 1, MPI_INT, MPI_SUM, merged));
        CM_CHECK(sum == size * (size - 1) / 2, "allreduce on merged: %d", sum);
        MPI_Comm_free(&merged);
    }

    /* a second intercommunicator from the same groups, other leaders (the last of each) */
    {
        MPI_Comm inter2;
        int lead_local = nlocal - 1, lead_remote_world = world_of(1 - color, nremote - 1);
        CM_OK(MPI_Intercomm_create(local, lead_local, MPI_COMM_WORLD, lead_remote_world, 8, &inter2));
        check_p2p(inter2, color, 50);
        MPI_Comm_free(&inter2);
    }

    /* collectives over intercommunicators: see coll_inter*.c */
    CM_OK(MPI_Barrier(inter));

    /* errors */
    {
        MPI_Comm bad;
#if MT_OXMPI
        /* MPICH 4.0 answers the remote size of an intracommunicator and asserts in
         * MPI_Intercomm_merge of one; the standard makes both erroneous. */
        CM_EXPECT_ERR(MPI_Comm_remote_size(MPI_COMM_WORLD, &n), MPI_ERR_COMM);
        CM_EXPECT_ERR(MPI_Intercomm_merge(MPI_COMM_WORLD, 0, &bad), MPI_ERR_COMM);
#endif
        CM_EXPECT_ERR(MPI_Intercomm_create(local, nlocal, MPI_COMM_WORLD, 1 - color, 9, &bad), MPI_ERR_RANK);
    }

    CM_OK(MPI_Comm_free(&dup));
    CM_OK(MPI_Comm_free(&inter));
    CM_CHECK(inter == MPI_COMM_NULL, "freed handle not null");
    MPI_Comm_free(&local);
    return cm_finalize();
}
