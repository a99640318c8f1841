/* The program of scripts/shm-tests.sh: one of its modes, on every rank.
 *   work     collectives on MPI_COMM_WORLD (an 8 MiB allreduce and broadcast) and a shared
 *            window of 1 MiB per rank, checked; prints "ok N" on rank 0
 *   linger   as work, then prints "ready" on every rank and sleeps 60 s (for kill tests)
 *   die-in-window  rank 1 kills itself with SIGKILL just before MPI_Win_allocate_shared,
 *            while the others are inside it (the node's first member has made the window's
 *            file and waits for the others to map it)
 *   die-in-init    rank 1 kills itself before MPI_Init, after the others started theirs */
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void work(int rank, int size)
{
    int n = 1 << 20, bad = 0;
    double *x = malloc(n * sizeof(double)), *y = malloc(n * sizeof(double));
    for (int i = 0; i < n; i++)
        x[i] = rank + i;
    MPI_Allreduce(x, y, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    for (int i = 0; i < n; i++)
        bad += y[i] != (double)size * (size - 1) / 2 + (double)size * i;
    MPI_Bcast(y, n, MPI_DOUBLE, size - 1, MPI_COMM_WORLD);
    double *base;
    MPI_Win win;
    MPI_Win_allocate_shared(1 << 20, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
    memset(base, rank + 1, 1 << 20);
    MPI_Win_fence(0, win);
    MPI_Aint len;
    int unit;
    unsigned char *peer;
    MPI_Win_shared_query(win, (rank + 1) % size, &len, &unit, &peer);
    bad += len != 1 << 20 || peer[len - 1] != (rank + 1) % size + 1;
    MPI_Win_fence(0, win);
    MPI_Win_free(&win);
    int total;
    MPI_Allreduce(&bad, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf(total ? "wrong %d\n" : "ok %d\n", total ? total : size);
    free(x);
    free(y);
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "work";
    if (!strcmp(mode, "die-in-init")) {
        const char *r = getenv("PMI_RANK");
        if (r && atoi(r) == 1) {
            usleep(200 * 1000);
            raise(SIGKILL);
        }
    }
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (!strcmp(mode, "die-in-window")) {
        double *base;
        MPI_Win win;
        if (rank == 1) {
            usleep(200 * 1000);
            raise(SIGKILL);
        }
        MPI_Win_allocate_shared(1 << 20, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
        MPI_Win_free(&win);
    } else {
        work(rank, size);
    }
    if (!strcmp(mode, "linger")) {
        printf("ready %d\n", rank);
        fflush(stdout);
        sleep(60);
    }
    MPI_Finalize();
    return 0;
}
