/* oxmpi-test: np=2,3,4,8 timeout=120 */
/* Exclusive locks under contention, on a window over malloc'ed memory (single copy): every
 * rank increments a counter in rank 0's window, then one in each rank's (itself included),
 * many times with Get, flush, Put inside MPI_Win_lock(MPI_LOCK_EXCLUSIVE), so only mutual
 * exclusion keeps increments from being lost; shared locks read it meanwhile. A lock taken
 * on the wait's last check before sleeping was once taken again by the same process, which
 * then waited for itself forever (this test hung 6 runs in 8 at 4 and 8 ranks, MPICH's
 * rma/contention_putget 3 in 8). */
#include "mtest.h"

#define ROUNDS 2000

int main(int argc, char **argv)
{
    mt_init(&argc, &argv);
    int rank = mt_rank, size = mt_size;
    long *mem = malloc(2 * sizeof(long));
    MPI_Win win;
    MPI_Win_create(mem, 2 * sizeof(long), sizeof(long), MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, win);
    mem[0] = mem[1] = 0;
    MPI_Win_unlock(rank, win);
    MPI_Barrier(MPI_COMM_WORLD);
    for (int k = 0; k < ROUNDS; k++) {
        int target = k < ROUNDS / 2 ? 0 : (k * size / ROUNDS) % size;
        int slot = target == 0 ? 0 : 1;
        long v;
        MPI_Win_lock(MPI_LOCK_EXCLUSIVE, target, 0, win);
        MPI_Get(&v, 1, MPI_LONG, target, slot, 1, MPI_LONG, win);
        MPI_Win_flush(target, win);
        v += 1;
        MPI_Put(&v, 1, MPI_LONG, target, slot, 1, MPI_LONG, win);
        MPI_Win_unlock(target, win);
        if (k % 10 == 0) {
            long seen;
            MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win);
            MPI_Get(&seen, 1, MPI_LONG, 0, 0, 1, MPI_LONG, win);
            MPI_Win_unlock(0, win);
            CHECK(seen >= 0 && seen <= (long)size * ROUNDS, "counter read %ld", seen);
        }
    }
    /* how many increments each (target, slot) got from this rank */
    long *mine = calloc((size_t)size * 2, sizeof(long)), *all = calloc((size_t)size * 2, sizeof(long));
    for (int k = 0; k < ROUNDS; k++) {
        int target = k < ROUNDS / 2 ? 0 : (k * size / ROUNDS) % size;
        mine[target * 2 + (target == 0 ? 0 : 1)]++;
    }
    MPI_Allreduce(mine, all, size * 2, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, win);
    CHECK(mem[0] == all[rank * 2] && mem[1] == all[rank * 2 + 1], "counters %ld %ld, expected %ld %ld", mem[0],
          mem[1], all[rank * 2], all[rank * 2 + 1]);
    MPI_Win_unlock(rank, win);
    free(mine);
    free(all);
    MPI_Win_free(&win);
    free(mem);
    return mt_finalize();
}
