/* Body of the coll_mixed_*.c tests: ranks that start differently (CPU affinity, thread level;
 * set by the including file before MPI_Init) must still make the same choices wherever both
 * ends of a message depend on them: gather/scatter blocks in eager pieces or whole
 * (coll_pieces.h, around the eager and piece limits), blocking collectives as schedules or
 * not, the shared-memory paths of small exchanges. Each rank learns its number before
 * MPI_Init from the launcher's environment (PMI_RANK; Open MPI's OMPI_COMM_WORLD_RANK). */
#define _GNU_SOURCE
#include <sched.h>
#define COLL_PIECES_OWN_MAIN
#include "coll_pieces.h"

static int launcher_rank(void)
{
    const char *r = getenv("PMI_RANK");
    if (!r)
        r = getenv("OMPI_COMM_WORLD_RANK");
    return r ? atoi(r) : 0;
}

/* Keeps this process on the first CPU of its affinity mask only. */
static inline void pin_to_one_cpu(void)
{
    cpu_set_t set, one;
    if (sched_getaffinity(0, sizeof set, &set) != 0)
        return;
    CPU_ZERO(&one);
    for (int c = 0; c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, &set)) {
            CPU_SET(c, &one);
            break;
        }
    sched_setaffinity(0, sizeof one, &one);
}

/* Small blocking collectives with results checked, `reps` times each. */
static void run_small(int reps)
{
    int n = size, *a = malloc(sizeof(int) * 64 * n), *b = malloc(sizeof(int) * 64 * n), *c = malloc(sizeof(int) * n);
    for (int rep = 0; rep < reps; rep++) {
        for (int count = 1; count <= 64; count *= 4) {
            int root = (rep + count) % n, v = rep * 1000 + count;
            MPI_Barrier(MPI_COMM_WORLD);
            for (int i = 0; i < count; i++)
                a[i] = rank == root ? v + i : -1;
            MPI_Bcast(a, count, MPI_INT, root, MPI_COMM_WORLD);
            for (int i = 0; i < count; i++)
                CHECK(a[i] == v + i, "bcast %d root %d [%d] = %d", count, root, i, a[i]);
            for (int i = 0; i < count; i++)
                a[i] = rank + i + rep;
            MPI_Allreduce(a, b, count, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
            for (int i = 0; i < count; i++)
                CHECK(b[i] == n * (n - 1) / 2 + n * (i + rep), "allreduce %d [%d] = %d", count, i, b[i]);
            MPI_Reduce(a, b, count, MPI_INT, MPI_MAX, root, MPI_COMM_WORLD);
            for (int i = 0; rank == root && i < count; i++)
                CHECK(b[i] == n - 1 + i + rep, "reduce %d root %d [%d] = %d", count, root, i, b[i]);
            for (int i = 0; i < count; i++)
                a[i] = rank * 100 + i + rep;
            MPI_Allgather(a, count, MPI_INT, b, count, MPI_INT, MPI_COMM_WORLD);
            for (int i = 0; i < count * n; i++)
                CHECK(b[i] == (i / count) * 100 + i % count + rep, "allgather %d [%d] = %d", count, i, b[i]);
            for (int i = 0; i < count * n; i++)
                a[i] = rank * 10000 + i + rep;
            MPI_Alltoall(a, count, MPI_INT, b, count, MPI_INT, MPI_COMM_WORLD);
            for (int j = 0; j < n; j++)
                for (int i = 0; i < count; i++)
                    CHECK(b[j * count + i] == j * 10000 + rank * count + i + rep, "alltoall %d block %d [%d] = %d", count,
                          j, i, b[j * count + i]);
            MPI_Reduce_scatter_block(a, b, count, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
            for (int i = 0; i < count; i++)
                CHECK(b[i] == 10000 * n * (n - 1) / 2 + n * (rank * count + i + rep), "reduce_scatter %d [%d] = %d", count,
                      i, b[i]);
            for (int i = 0; i < count; i++)
                a[i] = rank * 7 + i;
            MPI_Gather(a, count, MPI_INT, b, count, MPI_INT, root, MPI_COMM_WORLD);
            for (int i = 0; rank == root && i < count * n; i++)
                CHECK(b[i] == (i / count) * 7 + i % count, "gather %d root %d [%d] = %d", count, root, i, b[i]);
            for (int i = 0; i < count * n; i++)
                a[i] = i * 3 + rep;
            MPI_Scatter(a, count, MPI_INT, b, count, MPI_INT, root, MPI_COMM_WORLD);
            for (int i = 0; i < count; i++)
                CHECK(b[i] == (rank * count + i) * 3 + rep, "scatter %d root %d [%d] = %d", count, root, i, b[i]);
            MPI_Scan(&rank, c, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
            CHECK(c[0] == rank * (rank + 1) / 2, "scan = %d", c[0]);
        }
    }
    free(a);
    free(b);
    free(c);
}
