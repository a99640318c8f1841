/* oxmpi-test: np=2 timeout=120 env=OXMPI_LOG=debug one-node="the start-up decisions of ranks sharing one node" */
/* Each rank bound to a CPU of its own before MPI_Init, as Hydra's -bind-to core or srun
 * --cpu-bind=cores do: every rank then sees one CPU, yet no two ranks share one, so the
 * node is not oversubscribed: ranks must spin while they wait, share large copies, and
 * notify without a fence where membarrier(2) allows. Before, each rank compared the ranks
 * with its own CPUs, decided it was oversubscribed, and yielded on every idle poll
 * (ping-pong 0.31 instead of 0.24 µs, 2 MiB 280 instead of 140 µs) and kept the sender-side
 * fence. The decisions are checked in the debug log line of MPI_Init, which the test
 * captures from its own stderr (and then passes on); messages of every protocol are checked
 * too. Needs two CPUs (the CI machine has two). */
#define _GNU_SOURCE
#include <linux/membarrier.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "mtest.h"

/* The n-th CPU (n from 0) of this process's affinity mask, or -1. */
static int nth_cpu(int n)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) != 0)
        return -1;
    for (int c = 0; c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, &set) && n-- == 0)
            return c;
    return -1;
}

/* Whether this machine offers the membarrier the library's light fences need. */
static int membarrier_available(void)
{
    long cmds = syscall(SYS_membarrier, MEMBARRIER_CMD_QUERY, 0);
    return cmds >= 0 && (cmds & MEMBARRIER_CMD_GLOBAL_EXPEDITED) && getenv("OXMPI_MEMBARRIER") == NULL;
}

int main(int argc, char **argv)
{
    const char *r = getenv("PMI_RANK");
    int cpu = nth_cpu(r ? atoi(r) : 0);
    if (cpu >= 0) {
        cpu_set_t one;
        CPU_ZERO(&one);
        CPU_SET(cpu, &one);
        sched_setaffinity(0, sizeof one, &one);
    }
    /* MPI_Init's log goes to a file, read back below. */
    fflush(stderr);
    FILE *log = tmpfile();
    int saved = dup(2);
    if (log == NULL || saved < 0 || dup2(fileno(log), 2) < 0) {
        perror("capturing stderr");
        return 1;
    }
    mt_init(&argc, &argv);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    int rank = mt_rank;
    CHECK(cpu >= 0, "rank %d: no CPU %d in the affinity mask (the test needs two CPUs)", rank, rank);
    char line[1024], expected[256];
    int found = 0;
    snprintf(expected, sizeof expected,
             "initialized: 2 ranks on 2 CPUs, waits as oversubscribed: false, shares copies with 1 peers, "
             "light fences: %s",
             membarrier_available() ? "true" : "false");
    rewind(log);
    while (fgets(line, sizeof line, log)) {
        fputs(line, stderr);
        if (strstr(line, "initialized: 2 ranks on")) {
            found = 1;
            CHECK(strstr(line, expected) != NULL, "start-up decisions: %s expected: %s", line, expected);
        }
    }
    fclose(log);
    CHECK(found, "no start-up line in the debug log (OXMPI_LOG=debug)");
    int peer = 1 - rank;
    const int sizes[] = {0, 8, 4096, 65536, 1 << 21};
    for (int i = 0; i < (int)(sizeof sizes / sizeof sizes[0]); i++) {
        int n = sizes[i];
        unsigned char *buf = malloc(n + 1);
        for (int round = 0; round < 20; round++) {
            if (rank == 0) {
                for (int k = 0; k < n; k++)
                    buf[k] = (unsigned char)(k * 7 + round + i);
                MPI_Send(buf, n, MPI_BYTE, peer, i, MPI_COMM_WORLD);
                MPI_Recv(buf, n, MPI_BYTE, peer, i, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                int bad = 0;
                for (int k = 0; k < n; k++)
                    bad += buf[k] != (unsigned char)(k * 7 + round + i + 1);
                CHECK(bad == 0, "size %d round %d: %d wrong bytes back", n, round, bad);
            } else {
                MPI_Recv(buf, n, MPI_BYTE, peer, i, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                for (int k = 0; k < n; k++)
                    buf[k]++;
                MPI_Send(buf, n, MPI_BYTE, peer, i, MPI_COMM_WORLD);
            }
        }
        free(buf);
    }
    return mt_finalize();
}
