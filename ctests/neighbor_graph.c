/* oxmpi-test: np=1,2,3,4,8 */
/* Neighbourhood collectives on graph and distributed-graph communicators: MPI_Graph_create
 * with self-loops and repeated edges; MPI_Dist_graph_create_adjacent weighted and
 * MPI_UNWEIGHTED, with repeated edges and ranks without in- or out-neighbours; and
 * MPI_Dist_graph_create, where each edge is named by a third rank and the neighbour order is
 * the library's. Each of the five collectives blocking, nonblocking and persistent, int and
 * large-count forms, with exact data checks (repeated edges pair in order). */
#include "neighbor_mtest.h"

static int mod(int a, int n)
{
    return ((a % n) + n) % n;
}

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Comm c;
    cm_init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    /* Graph: node i lists i+1, i-1, i, i+1, i-1 (a self-loop and every ring edge twice; on
     * one or two ranks the ring edges coincide). */
    {
        int *index = malloc(size * sizeof(int)), *edges = malloc(5 * size * sizeof(int));
        for (int i = 0; i < size; i++) {
            index[i] = 5 * (i + 1);
            int *e = &edges[5 * i];
            e[0] = mod(i + 1, size), e[1] = mod(i - 1, size), e[2] = i, e[3] = mod(i + 1, size),
            e[4] = mod(i - 1, size);
        }
        CM_OK(MPI_Graph_create(MPI_COMM_WORLD, size, index, edges, 0, &c));
        nb_run_all(c, "graph ring with self-loops and double edges");
        MPI_Comm_free(&c);
        free(index);
        free(edges);
    }

    /* Graph on part of the ranks, one node without neighbours. */
    if (size >= 3) {
        int index[3] = {1, 2, 2}, edges[2] = {1, 0};
        CM_OK(MPI_Graph_create(MPI_COMM_WORLD, 3, index, edges, 0, &c));
        nb_run_all(c, "graph of 3 nodes, one isolated");
        if (c != MPI_COMM_NULL)
            MPI_Comm_free(&c);
    }

    /* Adjacent, weighted: in from r-1 (twice), r-2, r; out to r+1 (twice), r+2, r. */
    {
        int src[4] = {mod(rank - 1, size), mod(rank - 2, size), mod(rank - 1, size), rank};
        int dst[4] = {mod(rank + 2, size), mod(rank + 1, size), rank, mod(rank + 1, size)};
        int sw[4] = {1, 2, 3, 4}, dw[4] = {5, 6, 7, 8};
        CM_OK(MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 4, src, sw, 4, dst, dw, MPI_INFO_NULL, 0, &c));
        nb_run_all(c, "adjacent weighted with repeated edges");
        MPI_Comm_free(&c);
        CM_OK(MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 4, src, MPI_UNWEIGHTED, 4, dst, MPI_UNWEIGHTED,
                                             MPI_INFO_NULL, 0, &c));
        nb_run_all(c, "adjacent unweighted with repeated edges");
        MPI_Comm_free(&c);
    }

    /* Adjacent, a chain: rank 0 has no sources, the last rank no destinations. */
    {
        int src[1] = {rank - 1}, dst[1] = {rank + 1};
        int nin = rank > 0, nout = rank < size - 1;
        CM_OK(MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, nin, src, MPI_UNWEIGHTED, nout, dst, MPI_UNWEIGHTED,
                                             MPI_INFO_NULL, 0, &c));
        nb_run_all(c, "adjacent chain");
        MPI_Comm_free(&c);
    }

    /* Adjacent, no edges at all. */
    {
        CM_OK(MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 0, NULL, MPI_UNWEIGHTED, 0, NULL, MPI_UNWEIGHTED,
                                             MPI_INFO_NULL, 0, &c));
        nb_run_all(c, "adjacent empty");
        MPI_Comm_free(&c);
    }

    /* General: rank r names the edges (r+1) -> (r+3), r -> r, and (r+2) -> (r+1) twice, with
     * weights; so the ends of most edges learn of them from another rank. */
    {
        int sources[3] = {mod(rank + 1, size), rank, mod(rank + 2, size)};
        int degrees[3] = {1, 1, 2};
        int dests[4] = {mod(rank + 3, size), rank, mod(rank + 1, size), mod(rank + 1, size)};
        int weights[4] = {1, 2, 3, 4};
        CM_OK(MPI_Dist_graph_create(MPI_COMM_WORLD, 3, sources, degrees, dests, weights, MPI_INFO_NULL, 0, &c));
        nb_run_all(c, "general weighted");
        MPI_Comm_free(&c);
        CM_OK(MPI_Dist_graph_create(MPI_COMM_WORLD, 3, sources, degrees, dests, MPI_UNWEIGHTED, MPI_INFO_NULL, 0,
                                    &c));
        nb_run_all(c, "general unweighted");
        MPI_Comm_free(&c);
    }
    return cm_finalize();
}
