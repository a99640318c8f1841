/* oxmpi-test: np=1,2,4,8 */
/* Ready mode: the receiver posts its receives, then signals the sender, which
 * uses MPI_Rsend / MPI_Irsend (small and large messages). Ranks in pairs;
 * a lone rank uses itself. */
#include "mtest.h"

int main(int argc, char **argv)
{
    static const int sizes[] = {0, 1, 100, 5000, 70000, 600000};
    const int ns = sizeof sizes / sizeof sizes[0];
    int partner, i, k, x = 0;
    int *sb, *rb;
    MPI_Request rq[2];
    MPI_Status st;

    mt_init(&argc, &argv);
    partner = mt_rank ^ 1;
    if (partner >= mt_size)
        partner = mt_rank;
    sb = mt_malloc(sizeof(int) * 600000);
    rb = mt_malloc(sizeof(int) * 600000);
    for (i = 0; i < 600000; i++)
        sb[i] = i * 3 + mt_rank;

    for (k = 0; k < ns; k++) {
        int n = sizes[k], count = -1, use_irsend = k % 2;
        for (i = 0; i < n; i++)
            rb[i] = -1;
        if (partner == mt_rank) {
            MPI_CHECK(MPI_Irecv(rb, n, MPI_INT, mt_rank, k, MPI_COMM_WORLD, &rq[0]));
            if (use_irsend) {
                MPI_CHECK(MPI_Irsend(sb, n, MPI_INT, mt_rank, k, MPI_COMM_WORLD, &rq[1]));
                MPI_CHECK(MPI_Wait(&rq[1], MPI_STATUS_IGNORE));
            } else {
                MPI_CHECK(MPI_Rsend(sb, n, MPI_INT, mt_rank, k, MPI_COMM_WORLD));
            }
            MPI_CHECK(MPI_Wait(&rq[0], &st));
        } else if (mt_rank < partner) {
            /* receiver first: post, signal, wait */
            MPI_CHECK(MPI_Irecv(rb, n, MPI_INT, partner, k, MPI_COMM_WORLD, &rq[0]));
            MPI_CHECK(MPI_Send(&x, 0, MPI_INT, partner, 1000 + k, MPI_COMM_WORLD));
            MPI_CHECK(MPI_Wait(&rq[0], &st));
            /* then roles swap */
            MPI_CHECK(MPI_Recv(&x, 0, MPI_INT, partner, 2000 + k, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            if (use_irsend) {
                MPI_CHECK(MPI_Irsend(sb, n, MPI_INT, partner, k, MPI_COMM_WORLD, &rq[1]));
                MPI_CHECK(MPI_Wait(&rq[1], MPI_STATUS_IGNORE));
            } else {
                MPI_CHECK(MPI_Rsend(sb, n, MPI_INT, partner, k, MPI_COMM_WORLD));
            }
        } else {
            MPI_CHECK(MPI_Recv(&x, 0, MPI_INT, partner, 1000 + k, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            if (use_irsend) {
                MPI_CHECK(MPI_Irsend(sb, n, MPI_INT, partner, k, MPI_COMM_WORLD, &rq[1]));
                MPI_CHECK(MPI_Wait(&rq[1], MPI_STATUS_IGNORE));
            } else {
                MPI_CHECK(MPI_Rsend(sb, n, MPI_INT, partner, k, MPI_COMM_WORLD));
            }
            MPI_CHECK(MPI_Irecv(rb, n, MPI_INT, partner, k, MPI_COMM_WORLD, &rq[0]));
            MPI_CHECK(MPI_Send(&x, 0, MPI_INT, partner, 2000 + k, MPI_COMM_WORLD));
            MPI_CHECK(MPI_Wait(&rq[0], &st));
        }
        MPI_CHECK(MPI_Get_count(&st, MPI_INT, &count));
        CHECK(count == n && st.MPI_SOURCE == partner && st.MPI_TAG == k, "n=%d: count %d source %d tag %d", n,
              count, st.MPI_SOURCE, st.MPI_TAG);
        for (i = 0; i < n; i++)
            if (rb[i] != i * 3 + partner) {
                CHECK(0, "n=%d: element %d is %d", n, i, rb[i]);
                break;
            }
    }
    free(sb);
    free(rb);
    return mt_finalize();
}
