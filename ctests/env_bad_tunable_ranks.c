/* oxmpi-test: np=2,8 env=OXMPI_SPIN_US=-5 expect-exit=nonzero oxmpi-strict=exit,output expect-stderr="MPI_Init: OXMPI_SPIN_US=-5 is not valid" forbid-stderr="rank ?" max-wall=10 */
/* As env_bad_tunable, with several ranks: each rank's line names its rank from
 * the launcher (never "rank ?"). Which ranks print before the job is ended
 * varies, so the once-per-rank count is checked by env_bad_tunable at np=1.
 * Another MPI ignores OXMPI_* variables: there every rank just exits 1. */
#include "mtest.h"

int main(int argc, char **argv)
{
    if (!MT_OXMPI)
        return 1; /* another MPI ignores OXMPI_* variables: nothing to test */
    mt_init(&argc, &argv);
    return mt_finalize();
}
