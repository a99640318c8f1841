/* oxmpi-test: np=1,2,4 */
/* Large-count (_c) variants with MPI_Count arguments: MPI_Send_c, MPI_Recv_c,
 * MPI_Isend_c, MPI_Irecv_c, MPI_Ssend_c, MPI_Sendrecv_c, MPI_Get_count_c,
 * MPI_Get_elements_c, MPI_Type_size_c, MPI_Type_get_extent_c. */
#include "mtest.h"

int main(int argc, char **argv)
{
    const MPI_Count n = 100000;
    double *sb, *rb;
    MPI_Count i, cnt, sz, lb, ext;
    MPI_Status st;
    MPI_Request rq[2];
    int partner;

    mt_init(&argc, &argv);
    partner = mt_rank ^ 1;
    if (partner >= mt_size)
        partner = mt_rank;
    sb = mt_malloc(sizeof(double) * (size_t)n);
    rb = mt_malloc(sizeof(double) * (size_t)n);
    for (i = 0; i < n; i++)
        sb[i] = (double)(i + mt_rank);

    MPI_CHECK(MPI_Type_size_c(MPI_DOUBLE, &sz));
    CHECK(sz == 8, "Type_size_c(DOUBLE) %lld", (long long)sz);
    MPI_CHECK(MPI_Type_get_extent_c(MPI_DOUBLE_INT, &lb, &ext));
    CHECK(lb == 0 && ext == 16, "Type_get_extent_c(DOUBLE_INT) lb %lld extent %lld", (long long)lb,
          (long long)ext);

    /* blocking, pairs (self uses the non-blocking form below) */
    if (partner != mt_rank) {
        if (mt_rank < partner) {
            MPI_CHECK(MPI_Send_c(sb, n, MPI_DOUBLE, partner, 1, MPI_COMM_WORLD));
            MPI_CHECK(MPI_Recv_c(rb, n, MPI_DOUBLE, partner, 1, MPI_COMM_WORLD, &st));
        } else {
            MPI_CHECK(MPI_Recv_c(rb, n, MPI_DOUBLE, partner, 1, MPI_COMM_WORLD, &st));
            MPI_CHECK(MPI_Ssend_c(sb, n, MPI_DOUBLE, partner, 1, MPI_COMM_WORLD));
        }
        cnt = -1;
        MPI_CHECK(MPI_Get_count_c(&st, MPI_DOUBLE, &cnt));
        CHECK(cnt == n, "Recv_c: Get_count_c %lld", (long long)cnt);
        cnt = -1;
        MPI_CHECK(MPI_Get_elements_c(&st, MPI_DOUBLE, &cnt));
        CHECK(cnt == n, "Recv_c: Get_elements_c %lld", (long long)cnt);
        for (i = 0; i < n; i++)
            if (rb[i] != (double)(i + partner)) {
                CHECK(0, "Recv_c: element %lld is %g", (long long)i, rb[i]);
                break;
            }
    }

    memset(rb, 0, sizeof(double) * (size_t)n);
    MPI_CHECK(MPI_Irecv_c(rb, n, MPI_DOUBLE, partner, 2, MPI_COMM_WORLD, &rq[0]));
    MPI_CHECK(MPI_Isend_c(sb, n - 1, MPI_DOUBLE, partner, 2, MPI_COMM_WORLD, &rq[1]));
    MPI_CHECK(MPI_Waitall(2, rq, MPI_STATUSES_IGNORE));
    MPI_CHECK(MPI_Sendrecv_c(sb, 5, MPI_DOUBLE, partner, 3, rb, n, MPI_DOUBLE, partner, 3, MPI_COMM_WORLD, &st));
    MPI_CHECK(MPI_Get_count_c(&st, MPI_DOUBLE, &cnt));
    CHECK(cnt == 5, "Sendrecv_c: Get_count_c %lld", (long long)cnt);
    MPI_CHECK(MPI_Get_count_c(&st, MPI_INT, &cnt));
    CHECK(cnt == 10, "Sendrecv_c: Get_count_c(INT) %lld", (long long)cnt);
    MPI_CHECK(MPI_Get_count_c(&st, MPI_DOUBLE_INT, &cnt));
    CHECK(cnt == MPI_UNDEFINED, "Get_count_c(DOUBLE_INT) of 40 bytes: %lld", (long long)cnt);
    CHECK(rb[4] == (double)(4 + partner), "Sendrecv_c data %g", rb[4]);
    free(sb);
    free(rb);
    return mt_finalize();
}
