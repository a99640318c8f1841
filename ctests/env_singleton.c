/* oxmpi-test: singleton np=1 */
/* Run directly, without a launcher (singleton init): size 1, rank 0, and
 * messages to self work. Also run with np=1 under the launcher. */
#include "mtest.h"

int main(int argc, char **argv)
{
    int rank = -1, size = -1, n = 4096, i, count = -1;
    int *a, *b;
    MPI_Request req;
    MPI_Status st;

    mt_init(&argc, &argv);
    MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &size));
    CHECK(rank == 0 && size == 1, "rank %d size %d, want 0 of 1", rank, size);

    a = mt_malloc(n * sizeof(int));
    b = mt_malloc(n * sizeof(int));
    for (i = 0; i < n; i++) {
        a[i] = i * 3 + 1;
        b[i] = -1;
    }
    MPI_CHECK(MPI_Irecv(b, n, MPI_INT, 0, 11, MPI_COMM_WORLD, &req));
    MPI_CHECK(MPI_Send(a, n, MPI_INT, 0, 11, MPI_COMM_WORLD));
    MPI_CHECK(MPI_Wait(&req, &st));
    MPI_CHECK(MPI_Get_count(&st, MPI_INT, &count));
    CHECK(count == n && st.MPI_SOURCE == 0 && st.MPI_TAG == 11, "status count %d source %d tag %d", count,
          st.MPI_SOURCE, st.MPI_TAG);
    for (i = 0; i < n; i++)
        if (b[i] != a[i]) {
            CHECK(b[i] == a[i], "element %d: %d != %d", i, b[i], a[i]);
            break;
        }
    free(a);
    free(b);
    return mt_finalize();
}
