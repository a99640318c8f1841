/* oxmpi-test: np=1,2,3,4,8 */
/* MPI_Comm_split: ordering by key then old rank, MPI_UNDEFINED, nested splits, traffic on
 * the new communicators kept apart from the parent's, many splits freed and made again. */
#include "comm_mtest.h"

int main(int argc, char **argv)
{
    cm_init(&argc, &argv);
    int rank, size, r, n, res;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    /* two colors, key reverses the order */
    MPI_Comm half;
    CM_OK(MPI_Comm_split(MPI_COMM_WORLD, rank % 2, -rank, &half));
    MPI_Comm_size(half, &n);
    MPI_Comm_rank(half, &r);
    int same = rank % 2 == 0 ? (size + 1) / 2 : size / 2;
    CM_CHECK(n == same, "half size %d, expected %d", n, same);
    CM_CHECK(r == same - 1 - rank / 2, "half rank %d, expected %d", r, same - 1 - rank / 2);
    cm_check_ring(half, 5);

    /* messages on the parent and on the child with the same tag do not mix: send on both,
     * receive in the opposite order */
    if (size > 1) {
        int peer = rank ^ 1;
        if (peer < size) {
            MPI_Comm pair;
            MPI_Comm_split(MPI_COMM_WORLD, rank / 2, rank, &pair);
            int a = 100 + rank, b = 200 + rank, ga = -1, gb = -1;
            MPI_Request rq[2];
            MPI_Isend(&a, 1, MPI_INT, peer, 7, MPI_COMM_WORLD, &rq[0]);
            MPI_Isend(&b, 1, MPI_INT, 1 - (rank % 2), 7, pair, &rq[1]);
            MPI_Recv(&gb, 1, MPI_INT, 1 - (rank % 2), 7, pair, MPI_STATUS_IGNORE);
            MPI_Recv(&ga, 1, MPI_INT, peer, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Wait(&rq[0], MPI_STATUS_IGNORE);
            MPI_Wait(&rq[1], MPI_STATUS_IGNORE);
            CM_CHECK(ga == 100 + peer && gb == 200 + peer, "parent/child mixed: %d %d", ga, gb);
            MPI_Comm_free(&pair);
        } else {
            MPI_Comm pair;
            MPI_Comm_split(MPI_COMM_WORLD, rank / 2, rank, &pair);
            MPI_Comm_size(pair, &n);
            CM_CHECK(n == 1, "odd one out pair size %d", n);
            MPI_Comm_free(&pair);
        }
    }

    /* same color everywhere, key = rank: congruent with the world */
    MPI_Comm all;
    MPI_Comm_split(MPI_COMM_WORLD, 0, rank, &all);
    MPI_Comm_compare(all, MPI_COMM_WORLD, &res);
    CM_CHECK(res == MPI_CONGRUENT, "split(0, rank) vs world: %d", res);
    /* equal keys: the old rank decides */
    MPI_Comm eq;
    MPI_Comm_split(MPI_COMM_WORLD, 3, 0, &eq);
    MPI_Comm_rank(eq, &r);
    CM_CHECK(r == rank, "equal keys: rank %d", r);
    MPI_Comm_free(&eq);

    /* MPI_UNDEFINED gives MPI_COMM_NULL; the others still get their communicator */
    MPI_Comm some;
    CM_OK(MPI_Comm_split(MPI_COMM_WORLD, rank == 0 ? MPI_UNDEFINED : 1, 0, &some));
    if (rank == 0) {
        CM_CHECK(some == MPI_COMM_NULL, "MPI_UNDEFINED did not give MPI_COMM_NULL");
    } else {
        MPI_Comm_size(some, &n);
        CM_CHECK(n == size - 1, "split without rank 0: size %d", n);
        cm_check_ring(some, 1);
        MPI_Comm_free(&some);
    }

    /* nested: split the halves again into singletons */
    MPI_Comm single;
    MPI_Comm_split(half, r, 0, &single);
    MPI_Comm_size(single, &n);
    CM_CHECK(n == 1, "singleton size %d", n);
    cm_check_ring(single, 2);
    MPI_Comm_free(&single);

    /* many communicators made and freed: context ids are reused, never exhausted */
    for (int i = 0; i < 300; i++) {
        MPI_Comm c;
        MPI_Comm_split(MPI_COMM_WORLD, (rank + i) % 3, rank, &c);
        if (i % 50 == 0)
            cm_check_ring(c, i);
        MPI_Comm_free(&c);
    }

    /* a split of a dup, with the dup freed before the child is used */
    MPI_Comm dup, child;
    MPI_Comm_dup(all, &dup);
    MPI_Comm_split(dup, 0, size - rank, &child);
    MPI_Comm_free(&dup);
    MPI_Comm_rank(child, &r);
    CM_CHECK(r == size - 1 - rank, "child of a freed dup: rank %d", r);
    cm_check_ring(child, 3);
    MPI_Comm_free(&child);

    /* bad input */
    MPI_Comm bad;
    CM_EXPECT_ERR(MPI_Comm_split(MPI_COMM_NULL, 0, 0, &bad), MPI_ERR_COMM);

    MPI_Comm_free(&half);
    MPI_Comm_free(&all);
    return cm_finalize();
}
