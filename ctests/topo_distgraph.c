/* oxmpi-test: np=1,2,3,4,8 */
/* Distributed graphs: create_adjacent (weighted and MPI_UNWEIGHTED), create (edges named by
 * any process, routed to both ends), Dist_graph_neighbors(_count), Topo_test, traffic to
 * the neighbours, the topology kept by MPI_Comm_dup, and errors for bad arguments. */
#include "comm_mtest.h"

/* Sorts (rank, weight) pairs so neighbour lists compare as multisets. */
static void sort_pairs(int n, int *ranks, int *weights)
{
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0; j--) {
            int a = ranks[j - 1] * 100000 + (weights ? weights[j - 1] : 0);
            int b = ranks[j] * 100000 + (weights ? weights[j] : 0);
            if (a <= b)
                break;
            int t = ranks[j];
            ranks[j] = ranks[j - 1];
            ranks[j - 1] = t;
            if (weights) {
                t = weights[j];
                weights[j] = weights[j - 1];
                weights[j - 1] = t;
            }
        }
}

/* Checks the neighbours of `comm` against the expected (sorted) lists. */
static void check_neighbors(MPI_Comm comm, int nin, int *in, int *inw, int nout, int *out, int *outw, int weighted,
                            const char *what)
{
    int ci, co, w, src[16], sw[16], dst[16], dw[16];
    CM_OK(MPI_Dist_graph_neighbors_count(comm, &ci, &co, &w));
    CM_CHECK(ci == nin && co == nout && !!w == weighted, "%s: counts %d %d %d, expected %d %d %d", what, ci, co, w,
             nin, nout, weighted);
    if (ci != nin || co != nout)
        return;
    if (weighted)
        CM_OK(MPI_Dist_graph_neighbors(comm, ci, src, sw, co, dst, dw));
    else
        CM_OK(MPI_Dist_graph_neighbors(comm, ci, src, MPI_UNWEIGHTED, co, dst, MPI_UNWEIGHTED));
    sort_pairs(ci, src, weighted ? sw : NULL);
    sort_pairs(co, dst, weighted ? dw : NULL);
    for (int i = 0; i < ci; i++)
        CM_CHECK(src[i] == in[i] && (!weighted || sw[i] == inw[i]), "%s: source %d = %d (w %d), expected %d (w %d)",
                 what, i, src[i], sw[i], in[i], inw[i]);
    for (int i = 0; i < co; i++)
        CM_CHECK(dst[i] == out[i] && (!weighted || dw[i] == outw[i]),
                 "%s: destination %d = %d (w %d), expected %d (w %d)", what, i, dst[i], dw[i], out[i], outw[i]);
}

int main(int argc, char **argv)
{
    cm_init(&argc, &argv);
    int rank, size, status;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int prev = (rank + size - 1) % size, next = (rank + 1) % size;

    /* adjacent, weighted ring */
    {
        int src[1] = {prev}, sw[1] = {prev * 10 + 1}, dst[1] = {next}, dw[1] = {rank * 10 + 1};
        MPI_Comm g;
        CM_OK(MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 1, src, sw, 1, dst, dw, MPI_INFO_NULL, 0, &g));
        CM_OK(MPI_Topo_test(g, &status));
        CM_CHECK(status == MPI_DIST_GRAPH, "Topo_test = %d", status);
        check_neighbors(g, 1, src, sw, 1, dst, dw, 1, "adjacent ring");
        int got = -1;
        CM_OK(MPI_Sendrecv(&rank, 1, MPI_INT, next, 4, &got, 1, MPI_INT, prev, 4, g, MPI_STATUS_IGNORE));
        CM_CHECK(got == prev, "ring received %d", got);
        MPI_Comm dup;
        CM_OK(MPI_Comm_dup(g, &dup));
        CM_OK(MPI_Topo_test(dup, &status));
        CM_CHECK(status == MPI_DIST_GRAPH, "Topo_test(dup) = %d", status);
        check_neighbors(dup, 1, src, sw, 1, dst, dw, 1, "dup of adjacent ring");
        MPI_Comm_free(&dup);
        MPI_Comm_free(&g);
    }

    /* adjacent, unweighted, no in-edges */
    {
        int dst[1] = {next};
        MPI_Comm g;
        CM_OK(MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 0, NULL, MPI_UNWEIGHTED, 1, dst, MPI_UNWEIGHTED,
                                             MPI_INFO_NULL, 0, &g));
        check_neighbors(g, 0, NULL, NULL, 1, dst, NULL, 0, "adjacent unweighted");
        MPI_Comm_free(&g);
    }

    /* general: each rank names its edges to rank+1 and rank+2 */
    {
        int src[1] = {rank}, deg[1] = {2}, dst[2] = {next, (rank + 2) % size};
        int w[2] = {100 * rank + dst[0], 100 * rank + dst[1]};
        MPI_Comm g;
        CM_OK(MPI_Dist_graph_create(MPI_COMM_WORLD, 1, src, deg, dst, w, MPI_INFO_NULL, 0, &g));
        int in[2] = {prev, (rank + 2 * size - 2) % size}, inw[2] = {100 * in[0] + rank, 100 * in[1] + rank};
        int out[2] = {dst[0], dst[1]}, outw[2] = {w[0], w[1]};
        sort_pairs(2, in, inw);
        sort_pairs(2, out, outw);
        check_neighbors(g, 2, in, inw, 2, out, outw, 1, "general");
        MPI_Comm_free(&g);
    }

    /* general, unweighted: rank 0 names every edge s -> s+1 */
    {
        int *src = malloc(sizeof(int) * size), *deg = malloc(sizeof(int) * size), *dst = malloc(sizeof(int) * size);
        for (int s = 0; s < size; s++) {
            src[s] = s;
            deg[s] = 1;
            dst[s] = (s + 1) % size;
        }
        MPI_Comm g;
        CM_OK(MPI_Dist_graph_create(MPI_COMM_WORLD, rank == 0 ? size : 0, src, deg, dst, MPI_UNWEIGHTED,
                                    MPI_INFO_NULL, 0, &g));
        int in[1] = {prev}, out[1] = {next};
        check_neighbors(g, 1, in, NULL, 1, out, NULL, 0, "general from rank 0");
        int got = -1;
        CM_OK(MPI_Sendrecv(&rank, 1, MPI_INT, next, 4, &got, 1, MPI_INT, prev, 4, g, MPI_STATUS_IGNORE));
        CM_CHECK(got == prev, "general ring received %d", got);
        MPI_Comm_free(&g);
        free(src);
        free(deg);
        free(dst);
    }

    /* errors */
    {
        int a, b, c;
        CM_EXPECT_ERR(MPI_Dist_graph_neighbors_count(MPI_COMM_WORLD, &a, &b, &c), MPI_ERR_TOPOLOGY);
        int bad[1] = {size};
        MPI_Comm g;
#if MT_OXMPI
        /* MPICH 4.0 accepts a neighbour outside the communicator; the standard does not. */
        CM_EXPECT_ERR(MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 1, bad, MPI_UNWEIGHTED, 0, NULL, MPI_UNWEIGHTED,
                                                     MPI_INFO_NULL, 0, &g),
                      MPI_ERR_ARG);
#endif
        CM_EXPECT_ERR(MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, -1, bad, MPI_UNWEIGHTED, 0, NULL, MPI_UNWEIGHTED,
                                                     MPI_INFO_NULL, 0, &g),
                      MPI_ERR_ARG);
    }
    return cm_finalize();
}
