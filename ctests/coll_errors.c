/* oxmpi-test: np=1,2,3,4,8 */
/* Error classes of bad collective arguments, with MPI_ERRORS_RETURN. Every rank makes the
   same bad call, so no rank is left waiting in a collective. */
#include "coll_mtest.h"

static void expect(int rc, int cls, const char *what)
{
    int got = -1;
    if (rc != MPI_SUCCESS)
        MPI_Error_class(rc, &got);
    CHECK(rc != MPI_SUCCESS && got == cls, "%s: rc %d class %d, want class %d", what, rc, got, cls);
}

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    int a[8] = {0}, b[8 * 64] = {0};

    expect(MPI_Bcast(a, 1, MPI_INT, size, MPI_COMM_WORLD), MPI_ERR_ROOT, "Bcast root=size");
    expect(MPI_Bcast(a, 1, MPI_INT, -1, MPI_COMM_WORLD), MPI_ERR_ROOT, "Bcast root=-1");
    expect(MPI_Bcast(a, -1, MPI_INT, 0, MPI_COMM_WORLD), MPI_ERR_COUNT, "Bcast count=-1");
    expect(MPI_Bcast(a, 1, MPI_DATATYPE_NULL, 0, MPI_COMM_WORLD), MPI_ERR_TYPE, "Bcast DATATYPE_NULL");
    expect(MPI_Bcast(NULL, 1, MPI_INT, 0, MPI_COMM_WORLD), MPI_ERR_BUFFER, "Bcast NULL buffer");
    expect(MPI_Barrier(MPI_COMM_NULL), MPI_ERR_COMM, "Barrier COMM_NULL");
    expect(MPI_Allreduce(a, b, 1, MPI_INT, MPI_SUM, MPI_COMM_NULL), MPI_ERR_COMM, "Allreduce COMM_NULL");
    expect(MPI_Allreduce(a, b, 1, MPI_INT, MPI_OP_NULL, MPI_COMM_WORLD), MPI_ERR_OP, "Allreduce OP_NULL");
    expect(MPI_Allreduce(a, b, 1, MPI_INT, MPI_MINLOC, MPI_COMM_WORLD), MPI_ERR_OP, "Allreduce MINLOC on INT");
    expect(MPI_Allreduce(a, b, 1, MPI_DOUBLE, MPI_BAND, MPI_COMM_WORLD), MPI_ERR_OP, "Allreduce BAND on DOUBLE");
    expect(MPI_Allreduce(a, b, 1, MPI_BYTE, MPI_SUM, MPI_COMM_WORLD), MPI_ERR_OP, "Allreduce SUM on BYTE");
    expect(MPI_Allreduce(a, a, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD), MPI_ERR_BUFFER, "Allreduce aliased buffers");
    expect(MPI_Allreduce(a, NULL, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD), MPI_ERR_BUFFER, "Allreduce NULL recvbuf");
    expect(MPI_Reduce(a, b, 1, MPI_INT, MPI_SUM, size + 3, MPI_COMM_WORLD), MPI_ERR_ROOT, "Reduce bad root");
    expect(MPI_Reduce(a, b, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_NULL), MPI_ERR_COMM, "Reduce COMM_NULL");
    expect(MPI_Gather(a, 1, MPI_INT, b, 1, MPI_INT, size, MPI_COMM_WORLD), MPI_ERR_ROOT, "Gather bad root");
    expect(MPI_Gather(a, -1, MPI_INT, b, 1, MPI_INT, 0, MPI_COMM_WORLD), MPI_ERR_COUNT, "Gather sendcount=-1");
    expect(MPI_Scatter(a, 1, MPI_INT, b, 1, MPI_INT, -5, MPI_COMM_WORLD), MPI_ERR_ROOT, "Scatter bad root");
    expect(MPI_Allgather(a, 1, MPI_DATATYPE_NULL, b, 1, MPI_INT, MPI_COMM_WORLD), MPI_ERR_TYPE, "Allgather DATATYPE_NULL");
    expect(MPI_Alltoall(a, -1, MPI_INT, b, 1, MPI_INT, MPI_COMM_WORLD), MPI_ERR_COUNT, "Alltoall sendcount=-1");
    expect(MPI_Scan(a, b, 1, MPI_INT, MPI_OP_NULL, MPI_COMM_WORLD), MPI_ERR_OP, "Scan OP_NULL");
    expect(MPI_Exscan(a, b, 1, MPI_INT, MPI_SUM, MPI_COMM_NULL), MPI_ERR_COMM, "Exscan COMM_NULL");
    expect(MPI_Reduce_scatter_block(a, b, 1, MPI_INT, MPI_OP_NULL, MPI_COMM_WORLD), MPI_ERR_OP, "Reduce_scatter_block OP_NULL");
    expect(MPI_Reduce_local(a, b, 1, MPI_INT, MPI_OP_NULL), MPI_ERR_OP, "Reduce_local OP_NULL");
    expect(MPI_Reduce_local(a, b, 1, MPI_C_BOOL, MPI_SUM), MPI_ERR_OP, "Reduce_local SUM on C_BOOL");
    expect(MPI_Reduce_local(a, a, 1, MPI_INT, MPI_SUM), MPI_ERR_BUFFER, "Reduce_local aliased");
    /* A send buffer that is this member's own block of the receive buffer is aliased (as
       MPICH checks), on every member of an allgather, not just where the pointers are equal. */
    {
        int counts[64], displs[64];
        for (int i = 0; i < size && i < 64; i++) {
            counts[i] = 2;
            displs[i] = 2 * i + 2; /* no block at the pointer itself */
        }
        expect(MPI_Allgather(&b[2 * rank], 2, MPI_INT, b, 2, MPI_INT, MPI_COMM_WORLD), MPI_ERR_BUFFER,
               "Allgather sendbuf at its own block");
        expect(MPI_Allgatherv(&b[displs[rank]], 2, MPI_INT, b, counts, displs, MPI_INT, MPI_COMM_WORLD),
               MPI_ERR_BUFFER, "Allgatherv sendbuf at its own block");
        /* Rooted: only the root's buffers meet, and it fails before communicating, so it
           alone makes these calls. */
        int root = size - 1;
        if (rank == root) {
            expect(MPI_Gather(&b[2 * root], 2, MPI_INT, b, 2, MPI_INT, root, MPI_COMM_WORLD), MPI_ERR_BUFFER,
                   "Gather root's sendbuf at its own block");
            expect(MPI_Gatherv(&b[displs[root]], 2, MPI_INT, b, counts, displs, MPI_INT, root, MPI_COMM_WORLD),
                   MPI_ERR_BUFFER, "Gatherv root's sendbuf at its own block");
            expect(MPI_Scatter(b, 2, MPI_INT, &b[2 * root], 2, MPI_INT, root, MPI_COMM_WORLD), MPI_ERR_BUFFER,
                   "Scatter root's recvbuf at its own block");
        }
        /* A plain allgather still works. */
        int src[2] = {rank, -rank}, *got = calloc(2 * size, sizeof(int));
        CHECK(MPI_Allgather(src, 2, MPI_INT, got, 2, MPI_INT, MPI_COMM_WORLD) == MPI_SUCCESS, "plain Allgather");
        for (int i = 0; i < size; i++)
            CHECK(got[2 * i] == i && got[2 * i + 1] == -i, "Allgather block %d = %d,%d", i, got[2 * i], got[2 * i + 1]);
        free(got);
    }
    MPI_Op op = MPI_SUM;
    expect(MPI_Op_free(&op), MPI_ERR_OP, "Op_free of MPI_SUM");

    /* Everything still works after the errors. */
    int one = 1, n = 0;
    MPI_Allreduce(&one, &n, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    CHECK(n == size, "Allreduce after errors = %d", n);
    return coll_finish();
}
