/* Instructions per blocking collective call (scripts/collcost.sh runs it under callgrind):
 *   collcost OP BYTES ITERS
 * runs ITERS calls of OP on MPI_COMM_WORLD (root 0; reductions: BYTES / 8 doubles, MPI_SUM),
 * once unmeasured, then once with callgrind collecting. OP: bcast reduce allreduce gather scatter
 * allgather alltoall barrier reduce_scatter_block scan. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <valgrind/callgrind.h>

int main(int argc, char **argv)
{
    int rank, np, i;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    const char *op = argc > 1 ? argv[1] : "allreduce";
    int bytes = argc > 2 ? atoi(argv[2]) : 8;
    int iters = argc > 3 ? atoi(argv[3]) : 1000;
    int n = bytes, c = bytes / 8;
    char *s = calloc((size_t)np * (bytes + 8), 1), *r = calloc((size_t)np * (bytes + 8), 1);
    for (int w = 0; w < 2; w++) {
        MPI_Barrier(MPI_COMM_WORLD);
        if (w)
            CALLGRIND_TOGGLE_COLLECT;
        for (i = 0; i < iters; i++) {
            if (!strcmp(op, "bcast"))
                MPI_Bcast(s, n, MPI_BYTE, 0, MPI_COMM_WORLD);
            else if (!strcmp(op, "reduce"))
                MPI_Reduce(s, r, c, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
            else if (!strcmp(op, "allreduce"))
                MPI_Allreduce(s, r, c, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
            else if (!strcmp(op, "gather"))
                MPI_Gather(s, n, MPI_BYTE, r, n, MPI_BYTE, 0, MPI_COMM_WORLD);
            else if (!strcmp(op, "scatter"))
                MPI_Scatter(s, n, MPI_BYTE, r, n, MPI_BYTE, 0, MPI_COMM_WORLD);
            else if (!strcmp(op, "allgather"))
                MPI_Allgather(s, n, MPI_BYTE, r, n, MPI_BYTE, MPI_COMM_WORLD);
            else if (!strcmp(op, "alltoall"))
                MPI_Alltoall(s, n, MPI_BYTE, r, n, MPI_BYTE, MPI_COMM_WORLD);
            else if (!strcmp(op, "barrier"))
                MPI_Barrier(MPI_COMM_WORLD);
            else if (!strcmp(op, "reduce_scatter_block"))
                MPI_Reduce_scatter_block(s, r, c, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
            else if (!strcmp(op, "scan"))
                MPI_Scan(s, r, c, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
            else {
                fprintf(stderr, "unknown op %s\n", op);
                MPI_Abort(MPI_COMM_WORLD, 2);
            }
        }
        if (w)
            CALLGRIND_TOGGLE_COLLECT;
    }
    MPI_Finalize();
    return 0;
}
