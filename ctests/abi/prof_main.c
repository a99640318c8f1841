/* Program for the PMPI profiling test: rank r calls MPI_Send exactly r+1
 * times, and checks through the profiling library (found with dlsym) that
 * each call went through it. Results are gathered without MPI_Send. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    int rank, size, right, left, i, errs = 0, total, v = 0, in[64];
    int (*count_fn)(void);
    MPI_Request rq[64];

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    right = (rank + 1) % size;
    left = (rank + size - 1) % size;
    *(void **)(&count_fn) = dlsym(RTLD_DEFAULT, "prof_send_count");
    if (!count_fn) {
        fprintf(stderr, "[rank %d] profiling library not loaded (no prof_send_count)\n", rank);
        errs++;
    }
    /* receive left+1 messages from the left, send rank+1 to the right */
    for (i = 0; i < left + 1 && i < 64; i++)
        MPI_Irecv(&in[i], 1, MPI_INT, left, 1, MPI_COMM_WORLD, &rq[i]);
    for (i = 0; i < rank + 1; i++)
        MPI_Send(&v, 1, MPI_INT, right, 1, MPI_COMM_WORLD);
    MPI_Waitall(left + 1, rq, MPI_STATUSES_IGNORE);
    if (count_fn && count_fn() != rank + 1) {
        fprintf(stderr, "[rank %d] profiling library counted %d MPI_Send calls, want %d\n", rank, count_fn(),
                rank + 1);
        errs++;
    }
    /* gather the error counts on rank 0 with Isend (not profiled) */
    total = errs;
    if (rank == 0) {
        for (i = 1; i < size; i++) {
            int e = 0;
            MPI_Recv(&e, 1, MPI_INT, i, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            total += e;
        }
        if (total == 0)
            printf("No Errors\n");
        else
            printf(" Found %d errors\n", total);
        fflush(stdout);
    } else {
        MPI_Request r;
        MPI_Isend(&errs, 1, MPI_INT, 0, 2, MPI_COMM_WORLD, &r);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
    }
    MPI_Finalize();
    return total ? 1 : 0;
}
