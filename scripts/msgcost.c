/* Instructions per message, for callgrind (scripts/msgcost.sh). Ranks 0 and 1; every round
 * moves WINDOW messages of SIZE bytes from 0 to 1 after the receiver has slept long enough
 * for them to be in its ring, so the measured functions never spin and their instruction
 * counts are deterministic. callgrind collects only inside the measure_* functions
 * (--toggle-collect), so the counts are the library's per-message cost, both sides.
 *   blocking:  MPI_Send x WINDOW  /  MPI_Recv x WINDOW (messages already arrived)
 *   window:    MPI_Irecv x WINDOW before, then MPI_Isend x WINDOW + MPI_Waitall  /  MPI_Waitall */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define WINDOW 8

static char sbuf[WINDOW][1 << 14], rbuf[WINDOW][1 << 14];

__attribute__((noinline)) void measure_send(int size)
{
    for (int i = 0; i < WINDOW; i++)
        MPI_Send(sbuf[i], size, MPI_BYTE, 1, 1, MPI_COMM_WORLD);
}

__attribute__((noinline)) void measure_recv(int size)
{
    for (int i = 0; i < WINDOW; i++)
        MPI_Recv(rbuf[i], size, MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
}

__attribute__((noinline)) void measure_isend(int size)
{
    MPI_Request r[WINDOW];
    for (int i = 0; i < WINDOW; i++)
        MPI_Isend(sbuf[i], size, MPI_BYTE, 1, 2, MPI_COMM_WORLD, &r[i]);
    MPI_Waitall(WINDOW, r, MPI_STATUSES_IGNORE);
}

__attribute__((noinline)) void measure_irecv(int size, MPI_Request *r)
{
    for (int i = 0; i < WINDOW; i++)
        MPI_Irecv(rbuf[i], size, MPI_BYTE, 0, 2, MPI_COMM_WORLD, &r[i]);
}

__attribute__((noinline)) void measure_waitall(MPI_Request *r)
{
    MPI_Waitall(WINDOW, r, MPI_STATUSES_IGNORE);
}

int main(int argc, char **argv)
{
    int rank, size = argc > 1 ? atoi(argv[1]) : 8, rounds = argc > 2 ? atoi(argv[2]) : 20;
    MPI_Request r[WINDOW];
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    memset(sbuf, rank + 1, sizeof sbuf);
    for (int k = 0; k < rounds; k++) {
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == 0) {
            measure_send(size);
        } else if (rank == 1) {
            usleep(30000);
            measure_recv(size);
        }
        if (rank == 1)
            measure_irecv(size, r);
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == 0) {
            measure_isend(size);
        } else if (rank == 1) {
            usleep(30000);
            measure_waitall(r);
            if (rbuf[WINDOW - 1][size ? size - 1 : 0] != (size ? 1 : 0))
                fprintf(stderr, "msgcost: wrong data\n"), MPI_Abort(MPI_COMM_WORLD, 1);
        }
    }
    MPI_Finalize();
    return 0;
}
