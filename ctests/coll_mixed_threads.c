/* oxmpi-test: np=2,3,4,8 timeout=240 */
/* Odd ranks start at MPI_THREAD_MULTIPLE, even ones at MPI_THREAD_SINGLE (MPI allows the
 * levels to differ): blocking collectives must send the same messages on every rank (before,
 * the MULTIPLE ranks ran them as their nonblocking schedules and the others did not, and every
 * collective hung). See coll_mixed.h. */
#include "coll_mixed.h"

int main(int argc, char **argv)
{
    int want = launcher_rank() % 2 ? MPI_THREAD_MULTIPLE : MPI_THREAD_SINGLE, got = -1;
    MPI_Init_thread(&argc, &argv, want, &got);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(got >= want, "asked for thread level %d, got %d", want, got);
    run_pieces();
    run_small(3);
    return coll_finish();
}
