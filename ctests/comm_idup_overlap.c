/* oxmpi-test: np=1,2,3,4,8 timeout=60 */
/* Overlapping MPI_Comm_idup requests on MPI_COMM_WORLD, then blocking constructors on
 * MPI_COMM_SELF (dup, split) while they are in flight: a constructor whose agreement is
 * alone must let the pending ones progress (it once retried forever without progress at
 * np >= 3). All the new communicators work afterwards. */
#include "mtest.h"

#define NDUP 4

int main(int argc, char **argv)
{
    MPI_Comm dups[NDUP], self_dup, self_split;
    MPI_Request reqs[NDUP];
    int i, sum, size;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &mt_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &mt_size);
    for (i = 0; i < NDUP; i++)
        MPI_CHECK(MPI_Comm_idup(MPI_COMM_WORLD, &dups[i], &reqs[i]));
    MPI_CHECK(MPI_Comm_dup(MPI_COMM_SELF, &self_dup));
    MPI_CHECK(MPI_Comm_split(MPI_COMM_SELF, 0, 0, &self_split));
    MPI_CHECK(MPI_Waitall(NDUP, reqs, MPI_STATUSES_IGNORE));
    for (i = 0; i < NDUP; i++) {
        MPI_CHECK(MPI_Allreduce(&mt_rank, &sum, 1, MPI_INT, MPI_SUM, dups[i]));
        CHECK(sum == mt_size * (mt_size - 1) / 2, "dup %d: sum %d", i, sum);
        MPI_Comm_free(&dups[i]);
    }
    MPI_Comm_size(self_dup, &size);
    CHECK(size == 1, "MPI_COMM_SELF duplicate of size %d", size);
    MPI_CHECK(MPI_Allreduce(&mt_rank, &sum, 1, MPI_INT, MPI_SUM, self_split));
    CHECK(sum == mt_rank, "self split allreduce %d", sum);
    MPI_Comm_free(&self_dup);
    MPI_Comm_free(&self_split);
    return mt_finalize();
}
