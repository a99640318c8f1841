/* oxmpi-test: np=1,2,3,4,8 */
/* Allgather and Allgatherv, plain and in place, small and large blocks. */
#include "coll_mtest.h"

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const int cs[] = {0, 1, 5, 30000};
    for (int c = 0; c < 4; c++) {
        int n = cs[c];
        double *mine = malloc((n + 1) * sizeof(double)), *all = malloc((size * n + 1) * sizeof(double));
        for (int k = 0; k < n; k++)
            mine[k] = rank * 1e6 + k;
        MPI_Allgather(mine, n, MPI_DOUBLE, all, n, MPI_DOUBLE, MPI_COMM_WORLD);
        int bad = 0;
        for (int i = 0; i < size * n; i++)
            bad += all[i] != (i / n) * 1e6 + i % n;
        CHECK(bad == 0, "Allgather count %d: %d wrong", n, bad);
        for (int i = 0; i < size * n; i++)
            all[i] = i / n == rank ? rank * 1e6 + i % n : -1;
        MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, all, n, MPI_DOUBLE, MPI_COMM_WORLD);
        bad = 0;
        for (int i = 0; i < size * n; i++)
            bad += all[i] != (i / n) * 1e6 + i % n;
        CHECK(bad == 0, "Allgather in place count %d: %d wrong", n, bad);
        free(mine);
        free(all);
    }
    /* Allgatherv: rank i contributes i + 1 ints at a gap-separated place, in reverse order. */
    int *counts = malloc(size * sizeof(int)), *displs = malloc(size * sizeof(int)), total = 0;
    for (int i = 0; i < size; i++)
        total += (counts[i] = i + 1) + 2;
    for (int i = 0, off = total; i < size; i++)
        displs[i] = (off -= counts[i] + 2);
    int *v = malloc(total * sizeof(int)), mine[16];
    for (int k = 0; k <= rank; k++)
        mine[k] = rank * 10 + k;
    for (int pass = 0; pass < 2; pass++) {
        for (int i = 0; i < total; i++)
            v[i] = -3;
        if (pass == 0) {
            MPI_Allgatherv(mine, counts[rank], MPI_INT, v, counts, displs, MPI_INT, MPI_COMM_WORLD);
        } else {
            memcpy(v + displs[rank], mine, counts[rank] * sizeof(int));
            MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, v, counts, displs, MPI_INT, MPI_COMM_WORLD);
        }
        for (int i = 0; i < size; i++) {
            for (int k = 0; k < counts[i]; k++)
                CHECK(v[displs[i] + k] == i * 10 + k, "Allgatherv pass %d from %d [%d] = %d", pass, i, k, v[displs[i] + k]);
            CHECK(v[displs[i] + counts[i]] == -3, "Allgatherv wrote into a gap");
        }
    }
    free(v);
    free(counts);
    free(displs);
    return coll_finish();
}
