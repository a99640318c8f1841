/* oxmpi-test: np=1,2,4 */
/* Neighbourhood collectives with bad arguments, errors returned (MPI_ERRORS_RETURN): a
 * communicator without a topology (MPI_ERR_TOPOLOGY) for every collective and mode, negative
 * counts (MPI_ERR_COUNT), MPI_DATATYPE_NULL (MPI_ERR_TYPE), an invalid communicator
 * (MPI_ERR_COMM); and the communicator still works afterwards. */
#include "neighbor_mtest.h"

#define EXPECT_TOPO_V(call)                                                                                            \
    do {                                                                                                               \
        if (MT_OXMPI)                                                                                                  \
            CM_EXPECT_ERR(call, MPI_ERR_TOPOLOGY);                                                                     \
        else                                                                                                           \
            (void)(call);                                                                                              \
    } while (0)

int main(int argc, char **argv)
{
    int rank, size;
    cm_init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int sbuf[8] = {0}, rbuf[8] = {0}, cnt[2] = {1, 1}, dsp[2] = {0, 1}, neg[2] = {1, -1};
    MPI_Aint bdsp[2] = {0, sizeof(int)};
    MPI_Count cnt_c[2] = {1, 1};
    MPI_Aint dsp_c[2] = {0, 1};
    MPI_Datatype types[2] = {MPI_INT, MPI_INT}, nulltypes[2] = {MPI_INT, MPI_DATATYPE_NULL};
    MPI_Request req;
    MPI_Info info = MPI_INFO_NULL;

    /* No topology. MPICH 4.0.2 reads the count arrays of the v and w forms for a garbage
     * number of neighbours there (failing with another class, or not at all); those are
     * checked on oxmpi only. */
    MPI_Comm w = MPI_COMM_WORLD;
    CM_EXPECT_ERR(MPI_Neighbor_allgather(sbuf, 1, MPI_INT, rbuf, 1, MPI_INT, w), MPI_ERR_TOPOLOGY);
    EXPECT_TOPO_V(MPI_Neighbor_allgatherv(sbuf, 1, MPI_INT, rbuf, cnt, dsp, MPI_INT, w));
    CM_EXPECT_ERR(MPI_Neighbor_alltoall(sbuf, 1, MPI_INT, rbuf, 1, MPI_INT, w), MPI_ERR_TOPOLOGY);
    EXPECT_TOPO_V(MPI_Neighbor_alltoallv(sbuf, cnt, dsp, MPI_INT, rbuf, cnt, dsp, MPI_INT, w));
    EXPECT_TOPO_V(MPI_Neighbor_alltoallw(sbuf, cnt, bdsp, types, rbuf, cnt, bdsp, types, w));
    EXPECT_TOPO_V(MPI_Neighbor_alltoallv_c(sbuf, cnt_c, dsp_c, MPI_INT, rbuf, cnt_c, dsp_c, MPI_INT, w));
    CM_EXPECT_ERR(MPI_Ineighbor_allgather(sbuf, 1, MPI_INT, rbuf, 1, MPI_INT, w, &req), MPI_ERR_TOPOLOGY);
    EXPECT_TOPO_V(MPI_Ineighbor_alltoallw(sbuf, cnt, bdsp, types, rbuf, cnt, bdsp, types, w, &req));
    CM_EXPECT_ERR(MPI_Neighbor_alltoall_init(sbuf, 1, MPI_INT, rbuf, 1, MPI_INT, w, info, &req), MPI_ERR_TOPOLOGY);
    EXPECT_TOPO_V(MPI_Neighbor_allgatherv_init(sbuf, 1, MPI_INT, rbuf, cnt, dsp, MPI_INT, w, info, &req));
    CM_EXPECT_ERR(MPI_Neighbor_allgather(sbuf, 1, MPI_INT, rbuf, 1, MPI_INT, MPI_COMM_NULL), MPI_ERR_COMM);

    /* A periodic ring: two neighbours on every rank. */
    MPI_Comm ring;
    int dims[1] = {size}, periods[1] = {1};
    CM_OK(MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, 0, &ring));
    CM_EXPECT_ERR(MPI_Neighbor_allgather(sbuf, -1, MPI_INT, rbuf, 1, MPI_INT, ring), MPI_ERR_COUNT);
    CM_EXPECT_ERR(MPI_Neighbor_allgather(sbuf, 1, MPI_INT, rbuf, -1, MPI_INT, ring), MPI_ERR_COUNT);
    CM_EXPECT_ERR(MPI_Neighbor_alltoall(sbuf, -2, MPI_INT, rbuf, 1, MPI_INT, ring), MPI_ERR_COUNT);
    CM_EXPECT_ERR(MPI_Ineighbor_alltoall(sbuf, 1, MPI_INT, rbuf, -2, MPI_INT, ring, &req), MPI_ERR_COUNT);
    CM_EXPECT_ERR(MPI_Neighbor_alltoallv(sbuf, neg, dsp, MPI_INT, rbuf, cnt, dsp, MPI_INT, ring), MPI_ERR_COUNT);
    CM_EXPECT_ERR(MPI_Neighbor_allgatherv(sbuf, 1, MPI_INT, rbuf, neg, dsp, MPI_INT, ring), MPI_ERR_COUNT);
    CM_EXPECT_ERR(MPI_Neighbor_alltoallw_init(sbuf, cnt, bdsp, types, rbuf, neg, bdsp, types, ring, info, &req),
                  MPI_ERR_COUNT);
    CM_EXPECT_ERR(MPI_Neighbor_allgather(sbuf, 1, MPI_DATATYPE_NULL, rbuf, 1, MPI_INT, ring), MPI_ERR_TYPE);
    CM_EXPECT_ERR(MPI_Neighbor_alltoall(sbuf, 1, MPI_INT, rbuf, 1, MPI_DATATYPE_NULL, ring), MPI_ERR_TYPE);
    CM_EXPECT_ERR(MPI_Ineighbor_alltoallv(sbuf, cnt, dsp, MPI_DATATYPE_NULL, rbuf, cnt, dsp, MPI_INT, ring, &req),
                  MPI_ERR_TYPE);
    CM_EXPECT_ERR(MPI_Neighbor_alltoallw(sbuf, cnt, bdsp, nulltypes, rbuf, cnt, bdsp, types, ring), MPI_ERR_TYPE);
    CM_EXPECT_ERR(MPI_Neighbor_alltoallw(sbuf, cnt, bdsp, types, rbuf, cnt, bdsp, nulltypes, ring), MPI_ERR_TYPE);

    /* The ring still works: each rank gets its left and right neighbours' ranks. */
    CM_OK(MPI_Neighbor_allgather(&rank, 1, MPI_INT, rbuf, 1, MPI_INT, ring));
    CM_CHECK(rbuf[0] == (rank + size - 1) % size && rbuf[1] == (rank + 1) % size,
             "ring allgather after errors: got %d %d", rbuf[0], rbuf[1]);
    MPI_Comm_free(&ring);
    return cm_finalize();
}
