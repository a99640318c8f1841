/* oxmpi-test: np=1,2,3,4,8 */
/* Reduce_scatter and Reduce_scatter_block: built-in and non-commutative user ops, in place. */
#include "coll_mtest.h"

/* Non-commutative op on (first, last, ok) int triples; see coll_reduce.c. */
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
    /* Block: each rank gets C ints; element i of the vector is sum over ranks of (r + i). */
    enum { C = 3 };
    int *in = malloc(size * C * sizeof(int)), out[C];
    for (int i = 0; i < size * C; i++)
        in[i] = rank + i;
    MPI_Reduce_scatter_block(in, out, C, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    for (int k = 0; k < C; k++)
        CHECK(out[k] == size * (rank * C + k) + size * (size - 1) / 2, "Reduce_scatter_block [%d] = %d", k, out[k]);
    MPI_Reduce_scatter_block(MPI_IN_PLACE, in, C, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    for (int k = 0; k < C; k++)
        CHECK(in[k] == size * (rank * C + k) + size * (size - 1) / 2, "Reduce_scatter_block in place [%d] = %d", k, in[k]);
    free(in);

    /* Varying counts: rank i gets i % 3 + 1 doubles. */
    int *counts = malloc(size * sizeof(int)), total = 0, start = 0;
    for (int i = 0; i < size; i++) {
        counts[i] = i % 3 + 1;
        if (i < rank)
            start += counts[i];
        total += counts[i];
    }
    double *d = malloc(total * sizeof(double)), dout[3];
    for (int i = 0; i < total; i++)
        d[i] = i * (rank + 1);
    MPI_Reduce_scatter(d, dout, counts, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    for (int k = 0; k < counts[rank]; k++)
        CHECK(dout[k] == (start + k) * (double)size, "Reduce_scatter [%d] = %g", k, dout[k]);
    MPI_Reduce_scatter(MPI_IN_PLACE, d, counts, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    for (int k = 0; k < counts[rank]; k++)
        CHECK(d[k] == (start + k) * (double)size, "Reduce_scatter in place [%d] = %g", k, d[k]);
    free(d);

    /* Non-commutative: every triple must come out as (0, size - 1, 1). */
    MPI_Op seq;
    MPI_Op_create(seq_op, 0, &seq);
    int *t = malloc(size * 6 * sizeof(int)), tout[6];
    for (int i = 0; i < size * 6; i += 3) {
        t[i] = t[i + 1] = rank;
        t[i + 2] = 1;
    }
    MPI_Reduce_scatter_block(t, tout, 6, MPI_INT, seq, MPI_COMM_WORLD);
    for (int k = 0; k < 6; k += 3)
        CHECK(tout[k] == 0 && tout[k + 1] == size - 1 && tout[k + 2] == 1, "non-commutative Reduce_scatter_block");
    MPI_Op_free(&seq);
    free(t);
    free(counts);
    return coll_finish();
}
