/* oxmpi-test: np=1,2,3,4,8 */
/* Waiting ranks with a late one, in turn: at 8 ranks on 2 cores, waiters hand the CPU around
 * with sched_yield for a while and then sleep on their doorbells, so each round is run twice,
 * with the late rank a few microseconds late (waiters still yielding) and 3 ms late (waiters
 * asleep, woken by the late rank's flag stores and sends). Barrier, allreduce, bcast from the
 * late rank, a ring of sendrecv and a synchronous send to it must give the right values
 * (and finish: a missed wake-up leaves a sleeper to its 50 ms timeout, a lost one hangs). */
#include "mtest.h"
#include <time.h>
#include <unistd.h>

static void be_late(int late_us)
{
    if (late_us >= 1000) {
        usleep(late_us);
    } else {
        struct timespec a, b;
        clock_gettime(CLOCK_MONOTONIC, &a);
        do
            clock_gettime(CLOCK_MONOTONIC, &b);
        while ((b.tv_sec - a.tv_sec) * 1000000 + (b.tv_nsec - a.tv_nsec) / 1000 < late_us);
    }
}

int main(int argc, char **argv)
{
    int round, k, late_us;
    const int delays[2] = {5, 3000};
    mt_init(&argc, &argv);
    for (round = 0; round < 2 * mt_size && round < 16; round++) {
        int late = round % mt_size, next = (mt_rank + 1) % mt_size, prev = (mt_rank + mt_size - 1) % mt_size;
        late_us = delays[round % 2];
        for (k = 0; k < 3; k++) {
            long mine = 1000L * round + mt_rank + k, sum = -1, expect = 0, got = -1, from_prev = -1;
            int r, arrived = 0;
            for (r = 0; r < mt_size; r++)
                expect += 1000L * round + r + k;
            if (mt_rank == late)
                be_late(late_us);
            /* Everyone waits for the late rank's value here. */
            if (mt_rank == late)
                arrived = 1;
            MPI_CHECK(MPI_Bcast(&arrived, 1, MPI_INT, late, MPI_COMM_WORLD));
            CHECK(arrived == 1, "round %d: bcast from late rank %d gave %d", round, late, arrived);
            if (mt_rank == late)
                be_late(late_us);
            MPI_CHECK(MPI_Allreduce(&mine, &sum, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD));
            CHECK(sum == expect, "round %d: allreduce %ld, expected %ld", round, sum, expect);
            if (mt_rank == late)
                be_late(late_us);
            MPI_CHECK(MPI_Sendrecv(&mine, 1, MPI_LONG, next, 5, &from_prev, 1, MPI_LONG, prev, 5, MPI_COMM_WORLD,
                                   MPI_STATUS_IGNORE));
            CHECK(from_prev == 1000L * round + prev + k, "round %d: ring gave %ld from %d", round, from_prev, prev);
            /* A synchronous send to the late rank completes only once it receives. */
            if (mt_rank == late)
                be_late(late_us);
            if (mt_size > 1 && mt_rank == (late + 1) % mt_size) {
                MPI_CHECK(MPI_Ssend(&mine, 1, MPI_LONG, late, 6, MPI_COMM_WORLD));
            } else if (mt_size > 1 && mt_rank == late) {
                MPI_CHECK(MPI_Recv(&got, 1, MPI_LONG, (late + 1) % mt_size, 6, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
                CHECK(got == 1000L * round + (late + 1) % mt_size + k, "round %d: ssend gave %ld", round, got);
            }
            if (mt_rank == late)
                be_late(late_us);
            MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
        }
    }
    return mt_finalize();
}
