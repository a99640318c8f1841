/* oxmpi-test: np=1,2,3,4,8 */
/* Graph topologies: create (ranks beyond the graph get MPI_COMM_NULL), Graphdims_get,
 * Graph_get, Graph_neighbors(_count), Graph_map, Topo_test, traffic to the neighbours, the
 * topology kept by MPI_Comm_dup, and errors for bad arguments. */
#include "comm_mtest.h"

int main(int argc, char **argv)
{
    cm_init(&argc, &argv);
    int rank, size, status;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    /* a star: node 0 linked to every other node, both ways */
    int *index = malloc(sizeof(int) * size), *edges = malloc(sizeof(int) * 2 * size + 1);
    int ne = 0;
    for (int i = 1; i < size; i++)
        edges[ne++] = i;
    index[0] = ne;
    for (int i = 1; i < size; i++) {
        edges[ne++] = 0;
        index[i] = ne;
    }
    MPI_Comm graph;
    CM_OK(MPI_Graph_create(MPI_COMM_WORLD, size, index, edges, 0, &graph));
    CM_CHECK(graph != MPI_COMM_NULL, "no graph communicator");
    if (graph != MPI_COMM_NULL) {
        int nn, nedges, n, r;
        MPI_Comm_rank(graph, &r);
        MPI_Comm_size(graph, &n);
        CM_CHECK(r == rank && n == size, "graph rank %d size %d", r, n);
        CM_OK(MPI_Topo_test(graph, &status));
        CM_CHECK(status == MPI_GRAPH, "Topo_test = %d", status);
        CM_OK(MPI_Graphdims_get(graph, &nn, &nedges));
        CM_CHECK(nn == size && nedges == ne, "Graphdims_get %d %d", nn, nedges);
        int *gi = malloc(sizeof(int) * size), *ge = malloc(sizeof(int) * (ne + 1));
        CM_OK(MPI_Graph_get(graph, size, ne, gi, ge));
        for (int i = 0; i < size; i++)
            CM_CHECK(gi[i] == index[i], "index[%d] = %d", i, gi[i]);
        for (int i = 0; i < ne; i++)
            CM_CHECK(ge[i] == edges[i], "edges[%d] = %d", i, ge[i]);
        for (int q = 0; q < size; q++) {
            int cnt, nb[64];
            CM_OK(MPI_Graph_neighbors_count(graph, q, &cnt));
            CM_CHECK(cnt == (q == 0 ? size - 1 : 1), "neighbours of %d: %d", q, cnt);
            CM_OK(MPI_Graph_neighbors(graph, q, 64, nb));
            for (int i = 0; i < cnt && i < 64; i++)
                CM_CHECK(nb[i] == (q == 0 ? i + 1 : 0), "neighbour %d of %d: %d", i, q, nb[i]);
        }
        /* traffic: each node sends its rank to its neighbours */
        int cnt, nb[64], got[64];
        MPI_Graph_neighbors_count(graph, rank, &cnt);
        MPI_Graph_neighbors(graph, rank, 64, nb);
        MPI_Request req[128];
        for (int i = 0; i < cnt; i++) {
            MPI_Irecv(&got[i], 1, MPI_INT, nb[i], 3, graph, &req[i]);
            MPI_Isend(&rank, 1, MPI_INT, nb[i], 3, graph, &req[cnt + i]);
        }
        MPI_Waitall(2 * cnt, req, MPI_STATUSES_IGNORE);
        for (int i = 0; i < cnt; i++)
            CM_CHECK(got[i] == nb[i], "got %d from neighbour %d", got[i], nb[i]);

        MPI_Comm dup;
        CM_OK(MPI_Comm_dup(graph, &dup));
        CM_OK(MPI_Topo_test(dup, &status));
        CM_CHECK(status == MPI_GRAPH, "Topo_test(dup) = %d", status);
        CM_OK(MPI_Graphdims_get(dup, &nn, &nedges));
        CM_CHECK(nn == size && nedges == ne, "dup Graphdims_get %d %d", nn, nedges);
        MPI_Comm_free(&dup);

        /* errors */
        CM_EXPECT_ERR(MPI_Graph_neighbors_count(graph, size, &cnt), MPI_ERR_RANK);
        CM_EXPECT_ERR(MPI_Cartdim_get(graph, &nn), MPI_ERR_TOPOLOGY);
        free(gi);
        free(ge);
        MPI_Comm_free(&graph);
    }

    /* a graph of size-1 nodes, no edges: the last rank is left out */
    if (size > 1) {
        int newrank;
        MPI_Comm small;
        for (int i = 0; i < size - 1; i++)
            index[i] = 0;
        CM_OK(MPI_Graph_create(MPI_COMM_WORLD, size - 1, index, edges, 0, &small));
        CM_CHECK((rank == size - 1) == (small == MPI_COMM_NULL), "rank %d: comm %s", rank,
                 small == MPI_COMM_NULL ? "null" : "made");
        if (small != MPI_COMM_NULL) {
            int nn, nedges;
            CM_OK(MPI_Graphdims_get(small, &nn, &nedges));
            CM_CHECK(nn == size - 1 && nedges == 0, "small Graphdims_get %d %d", nn, nedges);
            MPI_Comm_free(&small);
        }
        CM_OK(MPI_Graph_map(MPI_COMM_WORLD, size - 1, index, edges, &newrank));
        CM_CHECK(newrank == (rank == size - 1 ? MPI_UNDEFINED : rank), "Graph_map = %d", newrank);
    }

    /* errors */
    int nn, nedges;
    CM_EXPECT_ERR(MPI_Graphdims_get(MPI_COMM_WORLD, &nn, &nedges), MPI_ERR_TOPOLOGY);
    {
        MPI_Comm bad;
        int be[1] = {1};
#if MT_OXMPI
        int bi[1] = {1};
        /* MPICH 4.0 accepts an edge to a node outside the graph; the standard does not. */
        CM_EXPECT_ERR(MPI_Graph_create(MPI_COMM_WORLD, 1, bi, be, 0, &bad), MPI_ERR_ARG);
#endif
        int *big = calloc(size + 1, sizeof(int));
        CM_EXPECT_ERR(MPI_Graph_create(MPI_COMM_WORLD, size + 1, big, be, 0, &bad), MPI_ERR_ARG);
        free(big);
    }
    free(index);
    free(edges);
    return cm_finalize();
}
