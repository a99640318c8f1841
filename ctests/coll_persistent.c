/* oxmpi-test: np=1,2,3,4,8 */
/* Persistent collectives (MPI-4 *_init): each request started several times with changing
   data, alone and several at once with MPI_Startall, completed by Wait/Waitall/Test. */
#include "coll_mtest.h"

#define N 4

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int root = size - 1;
    /* MPICH 4.0.2 copies a rank's own block of gather/allgather/scatter when the request is
       initialised, not at each start; own blocks are checked on other libraries only. */
    char ver[MPI_MAX_LIBRARY_VERSION_STRING];
    int vlen;
    MPI_Get_library_version(ver, &vlen);
    int own_ok = strstr(ver, "MPICH Version") == NULL;
    int bc[N], ar_in[N], ar_out[N], rd_out[N], sc_in, sc_out, ex_out;
    int *g_out = malloc(size * N * sizeof(int)), *ag = malloc(size * N * sizeof(int));
    int *a2a_in = malloc(size * sizeof(int)), *a2a_out = malloc(size * sizeof(int));
    int s_out[N], rsb_in[256], rsb_out;
    MPI_Request r[12];
    MPI_Info info = MPI_INFO_NULL;
    MPI_Barrier_init(MPI_COMM_WORLD, info, &r[0]);
    MPI_Bcast_init(bc, N, MPI_INT, root, MPI_COMM_WORLD, info, &r[1]);
    MPI_Allreduce_init(ar_in, ar_out, N, MPI_INT, MPI_SUM, MPI_COMM_WORLD, info, &r[2]);
    MPI_Reduce_init(ar_in, rd_out, N, MPI_INT, MPI_MAX, 0, MPI_COMM_WORLD, info, &r[3]);
    MPI_Gather_init(ar_in, N, MPI_INT, g_out, N, MPI_INT, root, MPI_COMM_WORLD, info, &r[4]);
    MPI_Allgather_init(ar_in, N, MPI_INT, ag, N, MPI_INT, MPI_COMM_WORLD, info, &r[5]);
    MPI_Alltoall_init(a2a_in, 1, MPI_INT, a2a_out, 1, MPI_INT, MPI_COMM_WORLD, info, &r[6]);
    MPI_Scan_init(&sc_in, &sc_out, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, info, &r[7]);
    MPI_Exscan_init(&sc_in, &ex_out, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, info, &r[8]);
    MPI_Reduce_scatter_block_init(rsb_in, &rsb_out, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, info, &r[9]);
    MPI_Scatter_init(g_out, N, MPI_INT, s_out, N, MPI_INT, root, MPI_COMM_WORLD, info, &r[10]);

    for (int iter = 0; iter < 5; iter++) {
        for (int i = 0; i < N; i++) {
            bc[i] = rank == root ? iter * 10 + i : -1;
            ar_in[i] = rank + i * iter;
        }
        for (int p = 0; p < size; p++)
            a2a_in[p] = rank * 100 + p + iter;
        for (int p = 0; p < size; p++)
            rsb_in[p] = p + rank + iter;
        sc_in = rank + iter;
        if (iter % 2 == 0) {
            MPI_Startall(10, r);
            MPI_Waitall(10, r, MPI_STATUSES_IGNORE);
        } else {
            for (int k = 0; k < 10; k++) {
                MPI_Start(&r[k]);
                if (k % 2) {
                    MPI_Wait(&r[k], MPI_STATUS_IGNORE);
                } else {
                    int flag = 0;
                    while (!flag)
                        MPI_Test(&r[k], &flag, MPI_STATUS_IGNORE);
                }
            }
        }
        for (int i = 0; i < N; i++) {
            CHECK(bc[i] == iter * 10 + i, "bcast_init iter %d [%d]=%d", iter, i, bc[i]);
            int want = size * (size - 1) / 2 + size * i * iter;
            CHECK(ar_out[i] == want, "allreduce_init iter %d [%d]=%d want %d", iter, i, ar_out[i], want);
            if (rank == 0)
                CHECK(rd_out[i] == size - 1 + i * iter, "reduce_init iter %d", iter);
        }
        for (int p = 0; p < size; p++) {
            for (int i = 0; i < N; i++) {
                if (p == rank && !own_ok)
                    continue;
                if (rank == root)
                    CHECK(g_out[p * N + i] == p + i * iter, "gather_init iter %d [%d][%d]=%d", iter, p, i, g_out[p * N + i]);
                CHECK(ag[p * N + i] == p + i * iter, "allgather_init iter %d", iter);
            }
            CHECK(a2a_out[p] == p * 100 + rank + iter, "alltoall_init iter %d", iter);
        }
        int want_scan = rank * (rank + 1) / 2 + (rank + 1) * iter;
        CHECK(sc_out == want_scan, "scan_init iter %d: %d want %d", iter, sc_out, want_scan);
        if (rank > 0)
            CHECK(ex_out == want_scan - rank - iter, "exscan_init iter %d", iter);
        CHECK(rsb_out == size * (rank + iter) + size * (size - 1) / 2, "reduce_scatter_block_init iter %d", iter);
        /* scatter what the gather collected */
        MPI_Start(&r[10]);
        MPI_Wait(&r[10], MPI_STATUS_IGNORE);
        for (int i = 0; i < N && (own_ok || rank != root); i++)
            CHECK(s_out[i] == rank + i * iter, "scatter_init iter %d [%d]=%d", iter, i, s_out[i]);
    }
    for (int k = 0; k < 11; k++)
        MPI_Request_free(&r[k]);
    free(g_out); free(ag); free(a2a_in); free(a2a_out);
    return coll_finish();
}
