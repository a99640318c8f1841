/* oxmpi-test: np=2,3,4,8 timeout=240 */
/* Rank 0 runs on one CPU, the others on all of theirs (set before MPI_Init): the ranks must
 * still agree on whether the node's ranks outnumber its cores, which decides whether
 * gather/scatter blocks above the eager limit travel in pieces (before, each rank counted its
 * own CPUs: at np 2 on 2 cores rank 0 cut blocks into pieces and rank 1 did not, and the
 * receiver reported MPI_ERR_TRUNCATE). See coll_mixed.h. */
#include "coll_mixed.h"

int main(int argc, char **argv)
{
    if (launcher_rank() == 0)
        pin_to_one_cpu();
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    run_pieces();
    run_small(3);
    return coll_finish();
}
