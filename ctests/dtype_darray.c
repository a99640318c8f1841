/* oxmpi-test: np=1,4 */
/* MPI_Type_create_darray and subarray typemaps: pack an array holding each element's global
 * index and compare with the indices computed from the distribution. */
#include "mtest.h"

/* Elements of dimension `dim` (global size g) owned by process coordinate c of p. */
static int owned(int g, int distrib, int darg, int p, int c, int *idx)
{
    int n = 0, i, blk;
    if (distrib == MPI_DISTRIBUTE_NONE) {
        for (i = 0; i < g; i++)
            idx[n++] = i;
    } else if (distrib == MPI_DISTRIBUTE_BLOCK) {
        blk = darg == MPI_DISTRIBUTE_DFLT_DARG ? (g + p - 1) / p : darg;
        for (i = c * blk; i < g && i < (c + 1) * blk; i++)
            idx[n++] = i;
    } else {
        blk = darg == MPI_DISTRIBUTE_DFLT_DARG ? 1 : darg;
        for (i = 0; i < g; i++)
            if ((i / blk) % p == c)
                idx[n++] = i;
    }
    return n;
}

static void check_darray(int size, int rank, int g0, int g1, int d0, int d1, int a0, int a1, int p0, int p1,
                         int order)
{
    int gs[2] = {g0, g1}, ds[2] = {d0, d1}, as[2] = {a0, a1}, ps[2] = {p0, p1};
    int *glob = malloc(sizeof(int) * g0 * g1), *packed = malloc(sizeof(int) * g0 * g1);
    int i0[64], i1[64], n0, n1, i, j, k, pos = 0, tsize;
    MPI_Datatype t;
    MPI_Aint lb, ext;
    for (i = 0; i < g0 * g1; i++)
        glob[i] = i;
    MPI_CHECK(MPI_Type_create_darray(size, rank, 2, gs, ds, as, ps, order, MPI_INT, &t));
    MPI_CHECK(MPI_Type_commit(&t));
    MPI_CHECK(MPI_Type_get_extent(t, &lb, &ext));
    CHECK(lb == 0 && ext == (MPI_Aint)sizeof(int) * g0 * g1, "darray extent %ld", (long)ext);
    MPI_CHECK(MPI_Type_size(t, &tsize));
    MPI_CHECK(MPI_Pack(glob, 1, t, packed, sizeof(int) * g0 * g1, &pos, MPI_COMM_SELF));
    n0 = owned(g0, d0, a0, p0, rank / p1, i0);
    n1 = owned(g1, d1, a1, p1, rank % p1, i1);
    CHECK(tsize == (int)sizeof(int) * n0 * n1, "darray size %d want %d", tsize, (int)sizeof(int) * n0 * n1);
    k = 0;
    if (order == MPI_ORDER_C) {
        for (i = 0; i < n0; i++)
            for (j = 0; j < n1; j++, k++)
                CHECK(k * 4 < pos && packed[k] == i0[i] * g1 + i1[j], "darray C rank %d elem %d = %d", rank, k,
                      packed[k]);
    } else {
        for (j = 0; j < n1; j++)
            for (i = 0; i < n0; i++, k++)
                CHECK(k * 4 < pos && packed[k] == i1[j] * g0 + i0[i], "darray F rank %d elem %d = %d", rank, k,
                      packed[k]);
    }
    MPI_CHECK(MPI_Type_free(&t));
    free(glob);
    free(packed);
}

int main(int argc, char **argv)
{
    int r;
    mt_init(&argc, &argv);
    /* Every rank checks every process's piece of a 2x2 process grid. */
    for (r = 0; r < 4; r++) {
        check_darray(4, r, 7, 10, MPI_DISTRIBUTE_BLOCK, MPI_DISTRIBUTE_BLOCK, MPI_DISTRIBUTE_DFLT_DARG,
                     MPI_DISTRIBUTE_DFLT_DARG, 2, 2, MPI_ORDER_C);
        check_darray(4, r, 7, 10, MPI_DISTRIBUTE_CYCLIC, MPI_DISTRIBUTE_CYCLIC, 2, MPI_DISTRIBUTE_DFLT_DARG, 2, 2,
                     MPI_ORDER_C);
        check_darray(4, r, 9, 5, MPI_DISTRIBUTE_BLOCK, MPI_DISTRIBUTE_CYCLIC, 5, 3, 2, 2, MPI_ORDER_FORTRAN);
    }
    for (r = 0; r < 2; r++)
        check_darray(2, r, 6, 4, MPI_DISTRIBUTE_NONE, MPI_DISTRIBUTE_BLOCK, MPI_DISTRIBUTE_DFLT_DARG,
                     MPI_DISTRIBUTE_DFLT_DARG, 1, 2, MPI_ORDER_FORTRAN);
    return mt_finalize();
}
