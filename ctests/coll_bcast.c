/* oxmpi-test: np=1,2,3,4,8 */
/* Bcast from every root: empty, small, and large (rendezvous-sized) messages; contiguous
   types and a padded pair type; MPI_COMM_SELF. */
#include "coll_mtest.h"

struct di { double d; int i; };

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const int counts[] = {0, 1, 7, 1000, 200000};
    for (int root = 0; root < size; root++) {
        for (int c = 0; c < 5; c++) {
            int n = counts[c];
            int *a = malloc((n + 1) * sizeof(int));
            for (int i = 0; i < n; i++)
                a[i] = rank == root ? i * 3 + root : -1;
            MPI_Bcast(a, n, MPI_INT, root, MPI_COMM_WORLD);
            int bad = 0;
            for (int i = 0; i < n; i++)
                bad += a[i] != i * 3 + root;
            CHECK(bad == 0, "root %d count %d: %d wrong ints", root, n, bad);
            free(a);

            double *d = malloc((n + 1) * sizeof(double));
            for (int i = 0; i < n; i++)
                d[i] = rank == root ? i * 0.5 - root : 0;
            MPI_Bcast(d, n, MPI_DOUBLE, root, MPI_COMM_WORLD);
            bad = 0;
            for (int i = 0; i < n; i++)
                bad += d[i] != i * 0.5 - root;
            CHECK(bad == 0, "root %d count %d: %d wrong doubles", root, n, bad);
            free(d);
        }
        struct di p[5];
        for (int i = 0; i < 5; i++) {
            p[i].d = rank == root ? i + 0.25 : 0;
            p[i].i = rank == root ? -i : 99;
        }
        MPI_Bcast(p, 5, MPI_DOUBLE_INT, root, MPI_COMM_WORLD);
        for (int i = 0; i < 5; i++)
            CHECK(p[i].d == i + 0.25 && p[i].i == -i, "root %d: pair %d = (%g, %d)", root, i, p[i].d, p[i].i);
        char s[16];
        strcpy(s, rank == root ? "hello, world" : "xxxxxxxxxxxxx");
        MPI_Bcast(s, 13, MPI_CHAR, root, MPI_COMM_WORLD);
        CHECK(strcmp(s, "hello, world") == 0, "root %d: string '%s'", root, s);
    }
    int v = rank;
    MPI_Bcast(&v, 1, MPI_INT, 0, MPI_COMM_SELF);
    CHECK(v == rank, "self bcast changed the value");
    return coll_finish();
}
