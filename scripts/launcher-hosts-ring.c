/* A ring over all ranks, for scripts/launcher-hosts-tests.sh: each rank passes a token to
 * the next and prints one line with its rank, size, host, MPI_APPNUM and the token it got.
 *   ring           the ring, then MPI_Finalize
 *   ring sleep     the ring, then "READY <rank> <host> <pid>" and sleep until killed
 *   ring stdin     the ring, then every rank reads its stdin to the end and prints
 *                  "STDIN <rank> bytes=<n> fnv=<32-bit FNV-1a of the bytes>"
 */
#include <mpi.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size, flag, *appnum = NULL;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_APPNUM, &appnum, &flag);
    char host[256];
    gethostname(host, sizeof host);
    /* A message of 1 MiB besides the token, so the network path carries real data. */
    static char big[1 << 20];
    int token = 0;
    int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    if (rank == 0) {
        token = 1;
        memset(big, 7, sizeof big);
        MPI_Send(&token, 1, MPI_INT, next, 0, MPI_COMM_WORLD);
        MPI_Send(big, sizeof big, MPI_CHAR, next, 1, MPI_COMM_WORLD);
        MPI_Recv(&token, 1, MPI_INT, prev, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Recv(big, sizeof big, MPI_CHAR, prev, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else {
        MPI_Recv(&token, 1, MPI_INT, prev, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Recv(big, sizeof big, MPI_CHAR, prev, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        token++;
        MPI_Send(&token, 1, MPI_INT, next, 0, MPI_COMM_WORLD);
        MPI_Send(big, sizeof big, MPI_CHAR, next, 1, MPI_COMM_WORLD);
    }
    int intact = big[0] == 7 && big[sizeof big - 1] == 7;
    printf("RING rank=%d size=%d host=%s appnum=%d token=%d data=%s\n", rank, size, host, flag ? *appnum : -1,
           token, intact ? "ok" : "BAD");
    fflush(stdout);
    if (argc > 1 && strcmp(argv[1], "stdin") == 0) {
        unsigned long long bytes = 0;
        unsigned int fnv = 2166136261u;
        static unsigned char buf[1 << 16];
        size_t n;
        while ((n = fread(buf, 1, sizeof buf, stdin)) > 0) {
            for (size_t i = 0; i < n; i++)
                fnv = (fnv ^ buf[i]) * 16777619u;
            bytes += n;
        }
        printf("STDIN %d bytes=%llu fnv=%u\n", rank, bytes, fnv);
        fflush(stdout);
    }
    if (argc > 1 && strcmp(argv[1], "sleep") == 0) {
        MPI_Barrier(MPI_COMM_WORLD);
        printf("READY %d %s %d\n", rank, host, (int)getpid());
        fflush(stdout);
        for (;;) sleep(1);
    }
    MPI_Finalize();
    return 0;
}
