/* Multi-host smoke test for scripts/hosts.sh: each rank prints its rank and host, then
 * ping-pongs with a partner, passes a message around a ring and checks an allreduce.
 *   mpicc.mpich -o /tmp/hosts-mpitest scripts/hosts-mpitest.c
 * Arguments: ping-pong message size in bytes (default 1 MiB), round trips (default 20; a
 * large count makes a long-running job for failure-injection tests). Exit status 0 on success. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    int rank, size, len, bad = 0;
    char host[MPI_MAX_PROCESSOR_NAME];
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Get_processor_name(host, &len);
    printf("rank %d of %d on %s\n", rank, size, host);
    fflush(stdout);

    /* Ping-pong in pairs (2k, 2k+1): on other hosts with Hydra's default round-robin
     * placement (-hosts a,b). */
    long n = argc > 1 ? atol(argv[1]) : 1 << 20;
    int iters = argc > 2 ? atoi(argv[2]) : 20;
    unsigned char *buf = malloc(n ? n : 1), *rbuf = malloc(n ? n : 1);
    char peerhost[MPI_MAX_PROCESSOR_NAME];
    int peer = rank ^ 1;
    if (peer < size) {
        MPI_Sendrecv(host, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, peer, 1, peerhost,
                     MPI_MAX_PROCESSOR_NAME, MPI_CHAR, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        double t0 = MPI_Wtime();
        for (int i = 0; i < iters; i++) {
            if (rank % 2 == 0) {
                memset(buf, (unsigned char)(i + rank), n);
                MPI_Send(buf, n, MPI_BYTE, peer, 0, MPI_COMM_WORLD);
                MPI_Recv(buf, n, MPI_BYTE, peer, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                for (long k = 0; k < n; k++)
                    if (buf[k] != (unsigned char)(i + rank + 1)) { bad = 1; break; }
            } else {
                MPI_Recv(buf, n, MPI_BYTE, peer, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                for (long k = 0; k < n; k++) buf[k]++;
                MPI_Send(buf, n, MPI_BYTE, peer, 0, MPI_COMM_WORLD);
            }
        }
        double dt = MPI_Wtime() - t0;
        if (rank % 2 == 0)
            printf("pingpong %d(%s)<->%d(%s): %ld bytes x %d, %.1f us per round trip, %.1f MB/s%s\n",
                   rank, host, peer, peerhost, n, iters, dt / iters * 1e6,
                   2.0 * n * iters / dt / 1e6, bad ? " CORRUPT" : "");
    }

    /* Ring: every rank sends to rank+1, so some messages cross hosts for any placement. */
    int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    memset(buf, (unsigned char)rank, n);
    MPI_Sendrecv(buf, n, MPI_BYTE, next, 2, rbuf, n, MPI_BYTE, prev, 2, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
    for (long k = 0; k < n; k++)
        if (rbuf[k] != (unsigned char)prev) { bad = 1; printf("ring: rank %d got bad data\n", rank); break; }
    free(rbuf);
    free(buf);

    int sum = 0, want = size * (size - 1) / 2;
    MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (sum != want) bad = 1;
    int anybad = 0;
    MPI_Allreduce(&bad, &anybad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (rank == 0)
        printf("allreduce sum %d (want %d): %s\n", sum, want, anybad ? "FAIL" : "ok");
    MPI_Finalize();
    return anybad;
}
