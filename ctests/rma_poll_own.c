/* oxmpi-test: np=2,3,4,8 timeout=120 env=OXMPI_CMA=0 */
/* A target that polls its own window while others write to it by messages (single copy off,
 * or ranks on other hosts): rank 0 waits, under MPI_Win_lock_all, for a counter in its own
 * window with Fetch_and_op(MPI_NO_OP) and MPI_Win_flush on itself only, while every other
 * rank adds to it with Accumulate. Operations on its own memory never need a message, so
 * nothing else of rank 0's makes progress: this hung in MPICH's
 * rma/linked_list_bench_lock_all until every one-sided call of a member serving others
 * drove progress too. Then the roles turn: each rank polls its own counter until its left
 * neighbour's Compare_and_swap sets it. */
#include "mtest.h"

int main(int argc, char **argv)
{
    mt_init(&argc, &argv);
    int rank = mt_rank, size = mt_size;
    int *mem = calloc(2, sizeof(int));
    MPI_Win win;
    MPI_Win_create(mem, 2 * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    MPI_Barrier(MPI_COMM_WORLD);

    MPI_Win_lock_all(0, win);
    const int K = 50;
    if (rank == 0) {
        int seen = -1, zero = 0;
        long polls = 0;
        while (seen != K * (size - 1)) {
            MPI_Fetch_and_op(&zero, &seen, MPI_INT, 0, 0, MPI_NO_OP, win);
            MPI_Win_flush(0, win);
            polls++;
        }
        CHECK(polls > 0, "never polled");
    } else {
        for (int k = 0; k < K; k++) {
            int one = 1;
            MPI_Accumulate(&one, 1, MPI_INT, 0, 0, 1, MPI_INT, MPI_SUM, win);
            MPI_Win_flush(0, win);
        }
    }
    MPI_Win_unlock_all(win);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0)
        CHECK(mem[0] == K * (size - 1), "counter %d, expected %d", mem[0], K * (size - 1));

    /* A token around the ring: rank r waits on its own slot 1, then swaps its right
     * neighbour's from 0 to r + 1. */
    MPI_Win_lock_all(0, win);
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    if (rank != 0) {
        int seen = 0, zero = 0;
        while (seen == 0) {
            MPI_Fetch_and_op(&zero, &seen, MPI_INT, rank, 1, MPI_NO_OP, win);
            MPI_Win_flush(rank, win);
        }
        CHECK(seen == left + 1, "rank %d got token %d, expected %d", rank, seen, left + 1);
    }
    int token = rank + 1, expect = 0, old = -1;
    MPI_Compare_and_swap(&token, &expect, &old, MPI_INT, right, 1, win);
    MPI_Win_flush(right, win);
    CHECK(old == 0, "swap at rank %d found %d", right, old);
    MPI_Win_unlock_all(win);
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK(mem[1] == left + 1, "slot 1 holds %d, expected %d", mem[1], left + 1);

    MPI_Win_free(&win);
    free(mem);
    return mt_finalize();
}
