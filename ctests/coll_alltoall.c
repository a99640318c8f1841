/* oxmpi-test: np=1,2,3,4,8 */
/* Alltoall, Alltoallv, Alltoallw: plain and in place; v/w with varying counts, gaps and
   mixed datatypes. */
#include "coll_mtest.h"

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const int cs[] = {0, 1, 4, 20000};
    for (int c = 0; c < 4; c++) {
        int n = cs[c];
        int *s = malloc((size * n + 1) * sizeof(int)), *r = malloc((size * n + 1) * sizeof(int));
        for (int i = 0; i < size * n; i++)
            s[i] = rank * 100000 + i; /* block i / n goes to rank i / n */
        MPI_Alltoall(s, n, MPI_INT, r, n, MPI_INT, MPI_COMM_WORLD);
        int bad = 0;
        for (int i = 0; i < size * n; i++)
            bad += r[i] != (i / n) * 100000 + rank * n + i % n;
        CHECK(bad == 0, "Alltoall count %d: %d wrong", n, bad);
        memcpy(r, s, size * n * sizeof(int));
        MPI_Alltoall(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, r, n, MPI_INT, MPI_COMM_WORLD);
        bad = 0;
        for (int i = 0; i < size * n; i++)
            bad += r[i] != (i / n) * 100000 + rank * n + i % n;
        CHECK(bad == 0, "Alltoall in place count %d: %d wrong", n, bad);
        free(s);
        free(r);
    }
    /* Alltoallv: rank r sends (r + j) % 3 ints to rank j, at gap-separated places. */
    int *sc = malloc(size * sizeof(int)), *sd = malloc(size * sizeof(int));
    int *rc = malloc(size * sizeof(int)), *rd = malloc(size * sizeof(int));
    int st = 0, rt = 0;
    for (int j = 0; j < size; j++) {
        sc[j] = (rank + j) % 3;
        sd[j] = st;
        st += sc[j] + 1;
        rc[j] = (j + rank) % 3;
        rd[j] = rt;
        rt += rc[j] + 2;
    }
    int *sb = malloc((st + 1) * sizeof(int)), *rb = malloc((rt + 1) * sizeof(int));
    for (int j = 0; j < size; j++)
        for (int k = 0; k < sc[j]; k++)
            sb[sd[j] + k] = rank * 1000 + j * 10 + k;
    for (int i = 0; i < rt; i++)
        rb[i] = -9;
    MPI_Alltoallv(sb, sc, sd, MPI_INT, rb, rc, rd, MPI_INT, MPI_COMM_WORLD);
    for (int j = 0; j < size; j++) {
        for (int k = 0; k < rc[j]; k++)
            CHECK(rb[rd[j] + k] == j * 1000 + rank * 10 + k, "Alltoallv from %d [%d] = %d", j, k, rb[rd[j] + k]);
        CHECK(rb[rd[j] + rc[j]] == -9, "Alltoallv wrote into a gap");
    }
    /* Alltoallv in place: needs matching send/recv layouts, so symmetric counts. */
    for (int j = 0; j < size; j++) {
        rc[j] = 2;
        rd[j] = 3 * j;
    }
    int *ip = malloc(3 * size * sizeof(int));
    for (int j = 0; j < size; j++) {
        ip[3 * j] = rank * 100 + j;
        ip[3 * j + 1] = -rank * 100 - j;
        ip[3 * j + 2] = 77;
    }
    MPI_Alltoallv(MPI_IN_PLACE, NULL, NULL, MPI_DATATYPE_NULL, ip, rc, rd, MPI_INT, MPI_COMM_WORLD);
    for (int j = 0; j < size; j++)
        CHECK(ip[3 * j] == j * 100 + rank && ip[3 * j + 1] == -j * 100 - rank && ip[3 * j + 2] == 77, "Alltoallv in place from %d", j);
    /* Alltoallw: to rank j send one double when j is even, two ints when odd; byte
       displacements. */
    int *wsc = malloc(size * sizeof(int)), *wsd = malloc(size * sizeof(int));
    int *wrc = malloc(size * sizeof(int)), *wrd = malloc(size * sizeof(int));
    MPI_Datatype *wst = malloc(size * sizeof(MPI_Datatype)), *wrt = malloc(size * sizeof(MPI_Datatype));
    char *wsb = malloc(16 * (size_t)size), *wrb = malloc(16 * (size_t)size);
    for (int j = 0; j < size; j++) {
        wsd[j] = wrd[j] = 16 * j;
        if (j % 2 == 0) {
            wsc[j] = 1; wst[j] = MPI_DOUBLE;
            *(double *)(wsb + 16 * j) = rank + j * 0.25;
        } else {
            wsc[j] = 2; wst[j] = MPI_INT;
            ((int *)(wsb + 16 * j))[0] = rank;
            ((int *)(wsb + 16 * j))[1] = j;
        }
        /* What rank j sends me depends on my parity. */
        if (rank % 2 == 0) {
            wrc[j] = 1; wrt[j] = MPI_DOUBLE;
        } else {
            wrc[j] = 2; wrt[j] = MPI_INT;
        }
    }
    MPI_Alltoallw(wsb, wsc, wsd, wst, wrb, wrc, wrd, wrt, MPI_COMM_WORLD);
    for (int j = 0; j < size; j++) {
        if (rank % 2 == 0)
            CHECK(*(double *)(wrb + 16 * j) == j + rank * 0.25, "Alltoallw double from %d", j);
        else
            CHECK(((int *)(wrb + 16 * j))[0] == j && ((int *)(wrb + 16 * j))[1] == rank, "Alltoallw ints from %d", j);
    }
    /* Alltoallw in place, one int per peer. */
    int *wip = malloc(size * sizeof(int));
    for (int j = 0; j < size; j++) {
        wip[j] = rank * 10 + j;
        wrc[j] = 1;
        wrd[j] = j * sizeof(int);
        wrt[j] = MPI_INT;
    }
    MPI_Alltoallw(MPI_IN_PLACE, NULL, NULL, NULL, wip, wrc, wrd, wrt, MPI_COMM_WORLD);
    for (int j = 0; j < size; j++)
        CHECK(wip[j] == j * 10 + rank, "Alltoallw in place from %d: %d", j, wip[j]);
    return coll_finish();
}
