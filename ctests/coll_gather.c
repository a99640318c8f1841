/* oxmpi-test: np=1,2,3,4,8 */
/* Gather, Gatherv, Scatter, Scatterv from every root, with MPI_IN_PLACE at the root and a
   padded pair type. */
#include "coll_mtest.h"

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    enum { C = 3 };
    int *all = malloc(size * C * sizeof(int)), mine[C];
    int *counts = malloc(size * sizeof(int)), *displs = malloc(size * sizeof(int));
    int total = 0;
    for (int i = 0; i < size; i++) {
        counts[i] = i % 3 + 1; /* 1..3 ints from rank i, stored backwards with gaps */
        total += counts[i] + 1;
    }
    for (int i = 0, off = total; i < size; i++) {
        off -= counts[i] + 1;
        displs[i] = off;
    }
    int *vbuf = malloc(total * sizeof(int));

    for (int root = 0; root < size; root++) {
        for (int k = 0; k < C; k++)
            mine[k] = rank * 100 + k;
        /* Gather */
        for (int i = 0; i < size * C; i++)
            all[i] = -1;
        MPI_Gather(mine, C, MPI_INT, all, C, MPI_INT, root, MPI_COMM_WORLD);
        if (rank == root)
            for (int i = 0; i < size * C; i++)
                CHECK(all[i] == (i / C) * 100 + i % C, "Gather root %d: [%d] = %d", root, i, all[i]);
        /* Gather in place */
        for (int i = 0; i < size * C; i++)
            all[i] = i / C == rank ? rank * 100 + i % C : -1;
        if (rank == root)
            MPI_Gather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, all, C, MPI_INT, root, MPI_COMM_WORLD);
        else
            MPI_Gather(mine, C, MPI_INT, NULL, 0, MPI_DATATYPE_NULL, root, MPI_COMM_WORLD);
        if (rank == root)
            for (int i = 0; i < size * C; i++)
                CHECK(all[i] == (i / C) * 100 + i % C, "Gather in place root %d: [%d] = %d", root, i, all[i]);
        /* Gatherv */
        for (int i = 0; i < total; i++)
            vbuf[i] = -7;
        MPI_Gatherv(mine, counts[rank], MPI_INT, vbuf, counts, displs, MPI_INT, root, MPI_COMM_WORLD);
        if (rank == root) {
            for (int i = 0; i < size; i++) {
                for (int k = 0; k < counts[i]; k++)
                    CHECK(vbuf[displs[i] + k] == i * 100 + k, "Gatherv root %d from %d", root, i);
                CHECK(vbuf[displs[i] + counts[i]] == -7, "Gatherv wrote into a gap");
            }
        }
        /* Scatter */
        for (int i = 0; i < size * C; i++)
            all[i] = rank == root ? i * 2 + root : -1;
        int got[C] = {-1, -1, -1};
        MPI_Scatter(all, C, MPI_INT, got, C, MPI_INT, root, MPI_COMM_WORLD);
        for (int k = 0; k < C; k++)
            CHECK(got[k] == (rank * C + k) * 2 + root, "Scatter root %d: got[%d] = %d", root, k, got[k]);
        /* Scatter in place */
        if (rank == root) {
            MPI_Scatter(all, C, MPI_INT, MPI_IN_PLACE, C, MPI_INT, root, MPI_COMM_WORLD);
            for (int i = 0; i < size * C; i++)
                CHECK(all[i] == i * 2 + root, "Scatter in place changed the root's buffer");
        } else {
            for (int k = 0; k < C; k++)
                got[k] = -1;
            MPI_Scatter(NULL, 0, MPI_DATATYPE_NULL, got, C, MPI_INT, root, MPI_COMM_WORLD);
            for (int k = 0; k < C; k++)
                CHECK(got[k] == (rank * C + k) * 2 + root, "Scatter in place root %d", root);
        }
        /* Scatterv */
        for (int i = 0; i < total; i++)
            vbuf[i] = rank == root ? i * 3 : -1;
        for (int k = 0; k < C; k++)
            got[k] = -5;
        MPI_Scatterv(vbuf, counts, displs, MPI_INT, got, counts[rank], MPI_INT, root, MPI_COMM_WORLD);
        for (int k = 0; k < C; k++)
            CHECK(got[k] == (k < counts[rank] ? (displs[rank] + k) * 3 : -5), "Scatterv root %d: got[%d] = %d", root, k, got[k]);
        /* Padded pair type */
        struct { double d; int i; } p = {rank + 0.5, rank}, *ps = malloc(size * sizeof p);
        MPI_Gather(&p, 1, MPI_DOUBLE_INT, ps, 1, MPI_DOUBLE_INT, root, MPI_COMM_WORLD);
        if (rank == root)
            for (int i = 0; i < size; i++)
                CHECK(ps[i].d == i + 0.5 && ps[i].i == i, "Gather DOUBLE_INT [%d]", i);
        free(ps);
    }
    free(all);
    free(counts);
    free(displs);
    free(vbuf);
    return coll_finish();
}
