/* oxmpi-test: np=2,3,4,8 timeout=120 env=OXMPI_ASYNC_PROGRESS=1 env=OXMPI_CMA=0 */
/* Passive-target operations complete while the target computes outside MPI, with the
 * progress thread (OXMPI_ASYNC_PROGRESS=1). Single copy is off, so windows over the
 * program's memory reach other ranks by requests their progress engine applies (as across
 * nodes). Every wait below watches the rank's own window memory without calling MPI: without
 * a progress thread none of them ends.
 *
 * 1. A token goes around the ring: each rank, once its slot 0 holds the token, takes an
 *    exclusive lock on its right neighbour, puts the token plus one there and unlocks.
 * 2. Every rank adds 1 to every other rank's counter (slot 1) with Fetch_and_op under a
 *    shared lock, then watches its own counter reach size - 1. The values the origins
 *    fetched from one target are 0 .. size - 2, each once.
 * 3. Every rank gets its right neighbour's slot 2, set before a barrier, while that rank
 *    watches its slot 3 for the value its left neighbour puts there after its Get.
 * 4. Point-to-point too: in pairs (0,1), (2,3), ... the even rank starts a 1 MiB send
 *    (rendezvous, streamed through shared memory without single copy) and watches its slot
 *    4; the odd rank receives it, checks it and then puts 1 in that slot. */
#include "mtest.h"
#include <sched.h>

/* Waits, outside MPI, until another rank's operation sets `*slot` to `want`. */
static void watch(volatile int *slot, int want)
{
    while (*slot != want) {
        __sync_synchronize();
        sched_yield();
    }
}

int main(int argc, char **argv)
{
    mt_init(&argc, &argv);
    int rank = mt_rank, size = mt_size;
    int right = (rank + 1) % size;
    volatile int *mem = calloc(5, sizeof(int));
    MPI_Win win;
    MPI_CHECK(MPI_Win_create((void *)mem, 5 * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    MPI_Barrier(MPI_COMM_WORLD);

    /* 1. The ring. */
    const int ROUNDS = 3;
    for (int round = 0; round < ROUNDS; round++) {
        int want = round * size + rank;
        if (!(rank == 0 && round == 0))
            watch(&mem[0], want);
        int token = want + 1;
        MPI_CHECK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, right, 0, win));
        MPI_CHECK(MPI_Put(&token, 1, MPI_INT, right, 0, 1, MPI_INT, win));
        MPI_CHECK(MPI_Win_unlock(right, win));
    }
    if (rank == 0)
        watch(&mem[0], ROUNDS * size);
    CHECK(mem[0] == (rank == 0 ? ROUNDS * size : (ROUNDS - 1) * size + rank), "rank %d: slot 0 holds %d", rank,
          mem[0]);

    /* 2. Counters. */
    int *fetched = calloc(size, sizeof(int));
    for (int t = 0; t < size; t++) {
        if (t == rank)
            continue;
        int one = 1;
        MPI_CHECK(MPI_Win_lock(MPI_LOCK_SHARED, t, 0, win));
        MPI_CHECK(MPI_Fetch_and_op(&one, &fetched[t], MPI_INT, t, 1, MPI_SUM, win));
        MPI_CHECK(MPI_Win_unlock(t, win));
    }
    watch(&mem[1], size - 1);
    int *all = calloc((size_t)size * size, sizeof(int));
    MPI_Allgather(fetched, size, MPI_INT, all, size, MPI_INT, MPI_COMM_WORLD);
    for (int t = 0; t < size; t++) {
        int *seen = calloc(size, sizeof(int));
        for (int o = 0; o < size; o++) {
            if (o == t)
                continue;
            int v = all[o * size + t];
            if (v >= 0 && v < size - 1)
                seen[v]++;
            else
                CHECK(0, "rank %d fetched %d from rank %d", o, v, t);
        }
        for (int v = 0; v < size - 1; v++)
            CHECK(seen[v] == 1, "value %d fetched %d times from rank %d", v, seen[v], t);
        free(seen);
    }

    /* 3. A Get served while the target watches. */
    mem[2] = 1000 + rank;
    MPI_Barrier(MPI_COMM_WORLD);
    int got = -1, done = 1;
    MPI_CHECK(MPI_Win_lock(MPI_LOCK_SHARED, right, 0, win));
    MPI_CHECK(MPI_Get(&got, 1, MPI_INT, right, 2, 1, MPI_INT, win));
    MPI_CHECK(MPI_Win_unlock(right, win));
    CHECK(got == 1000 + right, "rank %d got %d from rank %d", rank, got, right);
    MPI_CHECK(MPI_Win_lock(MPI_LOCK_SHARED, right, 0, win));
    MPI_CHECK(MPI_Put(&done, 1, MPI_INT, right, 3, 1, MPI_INT, win));
    MPI_CHECK(MPI_Win_unlock(right, win));
    watch(&mem[3], 1);

    /* 4. A rendezvous send progressing while its sender watches. */
    const int N = 1 << 18;
    int *big = malloc(N * sizeof(int));
    if (rank % 2 == 0 && rank + 1 < size) {
        for (int i = 0; i < N; i++)
            big[i] = i ^ rank;
        MPI_Request req;
        MPI_CHECK(MPI_Isend(big, N, MPI_INT, rank + 1, 7, MPI_COMM_WORLD, &req));
        watch(&mem[4], 1);
        MPI_CHECK(MPI_Wait(&req, MPI_STATUS_IGNORE));
    } else if (rank % 2 == 1) {
        MPI_CHECK(MPI_Recv(big, N, MPI_INT, rank - 1, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        int bad = 0;
        for (int i = 0; i < N; i++)
            bad += big[i] != (i ^ (rank - 1));
        CHECK(bad == 0, "rank %d: %d of %d elements wrong", rank, bad, N);
        MPI_CHECK(MPI_Win_lock(MPI_LOCK_SHARED, rank - 1, 0, win));
        MPI_CHECK(MPI_Put(&done, 1, MPI_INT, rank - 1, 4, 1, MPI_INT, win));
        MPI_CHECK(MPI_Win_unlock(rank - 1, win));
    }
    free(big);

    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_free(&win);
    free(all);
    free(fetched);
    free((void *)mem);
    return mt_finalize();
}
