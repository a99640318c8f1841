/* oxmpi-test: np=2,3,4,8 timeout=180 */
/* Every rank issues a fixed number of random Accumulate, Fetch_and_op and Compare_and_swap
 * increments on counters spread over all ranks' windows, under lock_all, on a window of
 * MPI_Win_allocate and one over malloc'ed memory. Accumulates are atomic per element, so
 * each counter ends at exactly the sum of what every rank added to it (the ranks tally
 * their increments and compare after MPI_Win_unlock_all). As the default accumulate_ops hint
 * (same_op_no_op) requires, a counter takes either MPI_SUM accumulates or compare-and-swaps,
 * never both (MPICH 4.0.2 loses updates on windows over malloc'ed memory when they mix). */
#include "mtest.h"
#include <stdint.h>

#define SLOTS 8
#define OPS 600

static uint32_t next(uint32_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 17;
    *s ^= *s << 5;
    return *s;
}

static void run(int create)
{
    int rank = mt_rank, size = mt_size;
    long *mem;
    MPI_Win win;
    if (create) {
        mem = calloc(SLOTS, sizeof(long));
        MPI_Win_create(mem, SLOTS * sizeof(long), sizeof(long), MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    } else {
        MPI_Win_allocate(SLOTS * sizeof(long), sizeof(long), MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &win);
        MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, win);
        for (int i = 0; i < SLOTS; i++)
            mem[i] = 0;
        MPI_Win_unlock(rank, win);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    long *added = calloc((size_t)(size * SLOTS), sizeof(long));
    uint32_t seed = 2463534242u + 7919u * (uint32_t)rank;
    MPI_Win_lock_all(0, win);
    for (int k = 0; k < OPS; k++) {
        int t = (int)(next(&seed) % (uint32_t)size), slot = (int)(next(&seed) % SLOTS);
        long v = (long)(next(&seed) % 1000) + 1, old;
        /* slots below SLOTS / 2: sums; the others: compare-and-swap */
        int kind = slot >= SLOTS / 2 ? 2 : (int)(next(&seed) % 2);
        switch (kind) {
        case 0:
            MPI_Accumulate(&v, 1, MPI_LONG, t, slot, 1, MPI_LONG, MPI_SUM, win);
            break;
        case 1:
            MPI_Fetch_and_op(&v, &old, MPI_LONG, t, slot, MPI_SUM, win);
            break;
        default: {
            /* a compare-and-swap loop: swap in seen + v until the guess was the value */
            long seen = 0, want, got;
            for (;;) {
                want = seen + v;
                MPI_Compare_and_swap(&want, &seen, &got, MPI_LONG, t, slot, win);
                MPI_Win_flush(t, win); /* the result is there, the origin reusable */
                if (got == seen)
                    break;
                seen = got;
            }
        }
        }
        /* `v` is reused next time: the operation must be complete at the origin */
        if (k % 2)
            MPI_Win_flush_local(t, win);
        else
            MPI_Win_flush(t, win);
        added[t * SLOTS + slot] += v;
    }
    MPI_Win_unlock_all(win);
    long *total = calloc((size_t)(size * SLOTS), sizeof(long));
    MPI_Allreduce(added, total, size * SLOTS, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, win);
    for (int i = 0; i < SLOTS; i++)
        CHECK(mem[i] == total[rank * SLOTS + i], "%s: counter %d is %ld, the ranks added %ld",
              create ? "Win_create" : "Win_allocate", i, mem[i], total[rank * SLOTS + i]);
    MPI_Win_unlock(rank, win);
    MPI_Win_free(&win);
    if (create)
        free(mem);
    free(added);
    free(total);
}

int main(int argc, char **argv)
{
    mt_init(&argc, &argv);
    run(0);
    run(1);
    return mt_finalize();
}
