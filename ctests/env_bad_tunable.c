/* oxmpi-test: singleton np=1 env=OXMPI_SPIN_US=-5 expect-exit=nonzero oxmpi-strict=exit,output expect-stderr="OXMPI_SPIN_US=-5 is not valid" expect-stderr="a whole number, 0 or more" expect-stderr-once="rank 0: MPI_Init" max-wall=10 */
/* A tunable set to a value out of its range is an error in MPI_Init naming the
 * variable, its value and the allowed range, printed once per rank and labelled
 * with the rank the launcher gave (rank 0 once, not "rank ?" and not twice).
 * Another MPI ignores OXMPI_* variables: there every rank just exits 1. */
#include "mtest.h"

int main(int argc, char **argv)
{
    if (!MT_OXMPI)
        return 1; /* another MPI ignores OXMPI_* variables: nothing to test */
    mt_init(&argc, &argv);
    return mt_finalize();
}
