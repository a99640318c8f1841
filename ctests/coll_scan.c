/* oxmpi-test: np=1,2,3,4,8 */
/* Scan and Exscan: built-in ops, MPI_IN_PLACE, and a non-commutative user op. */
#include "coll_mtest.h"

static void seq_op(void *invec, void *inoutvec, int *len, MPI_Datatype *dt)
{
    int *a = invec, *b = inoutvec;
    (void)dt;
    for (int i = 0; i + 2 < *len; i += 3) {
        int ok = a[i + 2] && b[i + 2] && a[i + 1] + 1 == b[i];
        b[i] = a[i];
        b[i + 2] = ok;
    }
}

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int in[2] = {rank + 1, rank % 3}, out[2];
    MPI_Scan(in, out, 2, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    int s = 0, m = 0;
    for (int r = 0; r <= rank; r++) {
        s += r + 1;
        m = r % 3 > m ? r % 3 : m;
    }
    CHECK(out[0] == s, "Scan SUM = %d, want %d", out[0], s);
    out[0] = in[0];
    out[1] = in[1];
    MPI_Scan(MPI_IN_PLACE, out, 2, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    CHECK(out[0] == rank + 1 && out[1] == m, "Scan MAX in place");

    out[0] = out[1] = -99;
    MPI_Exscan(in, out, 2, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank > 0)
        CHECK(out[0] == s - (rank + 1), "Exscan SUM = %d, want %d", out[0], s - (rank + 1));
    out[0] = in[0];
    out[1] = in[1];
    MPI_Exscan(MPI_IN_PLACE, out, 2, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank > 0)
        CHECK(out[0] == s - (rank + 1), "Exscan SUM in place = %d", out[0]);

    MPI_Op seq;
    MPI_Op_create(seq_op, 0, &seq);
    int t[3] = {rank, rank, 1}, tout[3];
    MPI_Scan(t, tout, 3, MPI_INT, seq, MPI_COMM_WORLD);
    CHECK(tout[0] == 0 && tout[1] == rank && tout[2] == 1, "non-commutative Scan: (%d,%d,%d)", tout[0], tout[1], tout[2]);
    MPI_Exscan(t, tout, 3, MPI_INT, seq, MPI_COMM_WORLD);
    if (rank > 0)
        CHECK(tout[0] == 0 && tout[1] == rank - 1 && tout[2] == 1, "non-commutative Exscan: (%d,%d,%d)", tout[0], tout[1], tout[2]);
    MPI_Op_free(&seq);

    double big[2000], bigout[2000];
    for (int i = 0; i < 2000; i++)
        big[i] = i + rank;
    MPI_Scan(big, bigout, 2000, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    int bad = 0;
    for (int i = 0; i < 2000; i++)
        bad += bigout[i] != (double)(rank + 1) * i + rank * (rank + 1) / 2.0;
    CHECK(bad == 0, "Scan of 2000 doubles: %d wrong", bad);
    return coll_finish();
}
