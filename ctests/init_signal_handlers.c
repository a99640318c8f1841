/* oxmpi-test: np=1,2,4 */
/* MPI_Init leaves the program's signal handlers alone: a handler the program installed stays,
 * and signals it left at their default stay there. In a job that spans nodes MPI_Init loads
 * libfabric, whose provider libraries install crash handlers of their own (libpsm2 writes
 * *.btr files into the working directory on SIGSEGV and SIGTERM); the library puts the
 * program's back. */
#include <signal.h>
#include <string.h>

#include "mtest.h"

static void program_handler(int sig)
{
    (void)sig;
}

int main(int argc, char **argv)
{
    const int mine[] = {SIGTERM, SIGINT, SIGUSR1};
    const int untouched[] = {SIGSEGV, SIGBUS, SIGILL, SIGABRT, SIGFPE, SIGHUP, SIGQUIT, SIGUSR2};
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = program_handler;
    for (unsigned i = 0; i < sizeof mine / sizeof mine[0]; i++)
        sigaction(mine[i], &sa, NULL);
    /* What the launcher left us (the default, or ignored). */
    struct sigaction before[sizeof untouched / sizeof untouched[0]];
    for (unsigned i = 0; i < sizeof untouched / sizeof untouched[0]; i++)
        sigaction(untouched[i], NULL, &before[i]);

    mt_init(&argc, &argv);
    for (unsigned i = 0; i < sizeof mine / sizeof mine[0]; i++) {
        struct sigaction now;
        sigaction(mine[i], NULL, &now);
        CHECK(now.sa_handler == program_handler, "the handler of signal %d was replaced", mine[i]);
    }
    for (unsigned i = 0; i < sizeof untouched / sizeof untouched[0]; i++) {
        struct sigaction now;
        sigaction(untouched[i], NULL, &now);
        CHECK(now.sa_handler == before[i].sa_handler, "signal %d got a handler", untouched[i]);
    }
    /* Traffic to every rank, so that a job across nodes uses the network. */
    int rank = mt_rank, sum = 0;
    MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    CHECK(sum == mt_size * (mt_size - 1) / 2, "allreduce gave %d", sum);
    return mt_finalize();
}
