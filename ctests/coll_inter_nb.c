/* oxmpi-test: np=2,3,4,8 */
/* Nonblocking (MPI_I...) and persistent (MPI_..._init, each started twice) collectives over an
 * intercommunicator (see coll_inter.h), then several nonblocking ones in flight at once,
 * completed in reverse order of their start. */
#include "coll_inter.h"

static void t_overlap(const ictx *c)
{
    enum { N = 3 };
    int og = 1 - c->color;
    int bc[N], ar_s[N], ar_r[N], g_s = val(9, c->color, c->lrank, 0);
    int *a2a_s = malloc(c->rsize * sizeof(int)), *a2a_r = malloc(c->rsize * sizeof(int));
    int *g_r = malloc(c->rsize * sizeof(int));
    MPI_Request req[5];
    /* bcast from rank 0 of group 0; gather to the last rank of group 1 */
    int bc_root = c->color == 0 ? (c->lrank == 0 ? MPI_ROOT : MPI_PROC_NULL) : 0;
    int g_last = group_size(c, 1) - 1;
    int g_root = c->color == 1 ? (c->lrank == g_last ? MPI_ROOT : MPI_PROC_NULL) : g_last;
    for (int i = 0; i < N; i++) {
        bc[i] = c->color == 0 && c->lrank == 0 ? val(7, 0, 0, i) : -7;
        ar_s[i] = val(8, c->color, c->lrank, i);
        ar_r[i] = -7;
    }
    for (int j = 0; j < c->rsize; j++) {
        a2a_s[j] = val(6, c->color, c->lrank, j);
        a2a_r[j] = g_r[j] = -7;
    }
    MPI_Ibcast(bc, N, MPI_INT, bc_root, c->comm, &req[0]);
    MPI_Iallreduce(ar_s, ar_r, N, MPI_INT, MPI_SUM, c->comm, &req[1]);
    MPI_Ialltoall(a2a_s, 1, MPI_INT, a2a_r, 1, MPI_INT, c->comm, &req[2]);
    MPI_Igather(&g_s, 1, MPI_INT, g_r, 1, MPI_INT, g_root, c->comm, &req[3]);
    MPI_Ibarrier(c->comm, &req[4]);
    for (int k = 4; k >= 0; k--)
        MPI_Wait(&req[k], MPI_STATUS_IGNORE);
    for (int i = 0; i < N; i++) {
        int want = c->color == 1 || c->lrank == 0 ? val(7, 0, 0, i) : -7;
        CHECK(bc[i] == want, "overlap bcast: bc[%d] = %d, want %d", i, bc[i], want);
        want = 0;
        for (int q = 0; q < c->rsize; q++)
            want += val(8, og, q, i);
        CHECK(ar_r[i] == want, "overlap allreduce: [%d] = %d, want %d", i, ar_r[i], want);
    }
    for (int j = 0; j < c->rsize; j++) {
        CHECK(a2a_r[j] == val(6, og, j, c->lrank), "overlap alltoall: [%d] = %d", j, a2a_r[j]);
        int want = g_root == MPI_ROOT ? val(9, og, j, 0) : -7;
        CHECK(g_r[j] == want, "overlap gather: [%d] = %d, want %d", j, g_r[j], want);
    }
    free(a2a_s);
    free(a2a_r);
    free(g_r);
}

int main(int argc, char **argv)
{
    ictx c;
    MPI_Init(&argc, &argv);
    make_inter(&c);
    for (c.mode = 1; c.mode <= 2; c.mode++)
        run_all(&c);
    t_overlap(&c);
    free_inter(&c);
    return coll_finish();
}
