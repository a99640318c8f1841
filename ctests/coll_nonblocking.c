/* oxmpi-test: np=1,2,3,4,8 */
/* Every nonblocking collective with data checks; several in flight at once on the same
   communicator and on a duplicate; completion by MPI_Wait, MPI_Waitall and MPI_Test loops;
   MPI_IN_PLACE variants; zero counts; a large (rendezvous-sized) allreduce. */
#include "coll_mtest.h"

#define N 5

static void test_loop(MPI_Request *r)
{
    int flag = 0;
    while (!flag)
        MPI_Test(r, &flag, MPI_STATUS_IGNORE);
}

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm dup;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);

    for (int iter = 0; iter < 3; iter++) {
        MPI_Request reqs[32];
        int nr = 0;
        /* barrier + bcast + allreduce + reduce overlapping on WORLD, alltoall on dup */
        int bc[N], ar_in[N], ar_out[N], rd_in[N], rd_out[N];
        int root = (iter + 1) % size;
        for (int i = 0; i < N; i++) {
            bc[i] = rank == root ? 100 * iter + i : -1;
            ar_in[i] = rank + i + iter;
            rd_in[i] = rank * i;
            rd_out[i] = -1;
        }
        int *a2a_in = malloc(size * 2 * sizeof(int)), *a2a_out = malloc(size * 2 * sizeof(int));
        for (int i = 0; i < size * 2; i++) {
            a2a_in[i] = rank * 1000 + i + iter;
            a2a_out[i] = -1;
        }
        MPI_Ibarrier(MPI_COMM_WORLD, &reqs[nr++]);
        MPI_Ibcast(bc, N, MPI_INT, root, MPI_COMM_WORLD, &reqs[nr++]);
        MPI_Ialltoall(a2a_in, 2, MPI_INT, a2a_out, 2, MPI_INT, dup, &reqs[nr++]);
        MPI_Iallreduce(ar_in, ar_out, N, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &reqs[nr++]);
        MPI_Ireduce(rd_in, rd_out, N, MPI_INT, MPI_MAX, root, MPI_COMM_WORLD, &reqs[nr++]);
        /* a second bcast of the same kind in flight at once, on dup */
        int bc2[N];
        for (int i = 0; i < N; i++)
            bc2[i] = rank == 0 ? 7 * i + iter : -1;
        MPI_Ibcast(bc2, N, MPI_INT, 0, dup, &reqs[nr++]);
        int ar2 = rank, ar2_out = -1;
        MPI_Iallreduce(&ar2, &ar2_out, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD, &reqs[nr++]);
        MPI_Waitall(nr, reqs, MPI_STATUSES_IGNORE);
        for (int i = 0; i < N; i++) {
            CHECK(bc[i] == 100 * iter + i, "ibcast bc[%d]=%d", i, bc[i]);
            CHECK(bc2[i] == 7 * i + iter, "ibcast2 bc2[%d]=%d", i, bc2[i]);
            int want = size * (i + iter) + size * (size - 1) / 2;
            CHECK(ar_out[i] == want, "iallreduce [%d]=%d want %d", i, ar_out[i], want);
            if (rank == root)
                CHECK(rd_out[i] == (size - 1) * i, "ireduce [%d]=%d", i, rd_out[i]);
        }
        CHECK(ar2_out == size - 1, "iallreduce2 %d", ar2_out);
        for (int p = 0; p < size; p++)
            for (int k = 0; k < 2; k++)
                CHECK(a2a_out[p * 2 + k] == p * 1000 + rank * 2 + k + iter, "ialltoall from %d", p);

        /* gather/scatter/allgather(v) with Test loops */
        int g_in[2] = {rank, rank + iter}, *g_out = malloc(size * 2 * sizeof(int));
        MPI_Request r;
        MPI_Igather(g_in, 2, MPI_INT, g_out, 2, MPI_INT, root, MPI_COMM_WORLD, &r);
        test_loop(&r);
        if (rank == root)
            for (int p = 0; p < size; p++)
                CHECK(g_out[2 * p] == p && g_out[2 * p + 1] == p + iter, "igather from %d", p);
        int s_out[2] = {-1, -1};
        for (int p = 0; p < size * 2; p++)
            g_out[p] = p * 3 + iter;
        MPI_Iscatter(g_out, 2, MPI_INT, s_out, 2, MPI_INT, root, MPI_COMM_WORLD, &r);
        test_loop(&r);
        CHECK(s_out[0] == rank * 6 + iter && s_out[1] == rank * 6 + 3 + iter, "iscatter %d %d", s_out[0], s_out[1]);
        int *ag = malloc(size * 2 * sizeof(int));
        MPI_Iallgather(g_in, 2, MPI_INT, ag, 2, MPI_INT, MPI_COMM_WORLD, &r);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
        for (int p = 0; p < size; p++)
            CHECK(ag[2 * p] == p && ag[2 * p + 1] == p + iter, "iallgather from %d", p);
        /* in place */
        for (int p = 0; p < size * 2; p++)
            ag[p] = p / 2 == rank ? rank * 10 + p % 2 : -1;
        MPI_Iallgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, ag, 2, MPI_INT, MPI_COMM_WORLD, &r);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
        for (int p = 0; p < size; p++)
            CHECK(ag[2 * p] == p * 10 && ag[2 * p + 1] == p * 10 + 1, "iallgather in place from %d", p);

        /* v variants: rank p contributes p+1 ints */
        int *cnt = malloc(size * sizeof(int)), *dsp = malloc(size * sizeof(int)), tot = 0;
        for (int p = 0; p < size; p++) {
            cnt[p] = p + 1;
            dsp[p] = tot;
            tot += p + 1;
        }
        int *mine = malloc((rank + 1) * sizeof(int)), *all = malloc(tot * sizeof(int));
        for (int k = 0; k <= rank; k++)
            mine[k] = rank * 100 + k + iter;
        MPI_Request vr[3];
        MPI_Iallgatherv(mine, rank + 1, MPI_INT, all, cnt, dsp, MPI_INT, MPI_COMM_WORLD, &vr[0]);
        int *gv = malloc(tot * sizeof(int));
        MPI_Igatherv(mine, rank + 1, MPI_INT, gv, cnt, dsp, MPI_INT, root, dup, &vr[1]);
        int *sv = malloc((rank + 1) * sizeof(int)), *svsrc = malloc(tot * sizeof(int));
        for (int k = 0; k < tot; k++)
            svsrc[k] = k * 5 + iter;
        MPI_Iscatterv(svsrc, cnt, dsp, MPI_INT, sv, rank + 1, MPI_INT, root, MPI_COMM_WORLD, &vr[2]);
        MPI_Waitall(3, vr, MPI_STATUSES_IGNORE);
        for (int p = 0; p < size; p++)
            for (int k = 0; k <= p; k++) {
                CHECK(all[dsp[p] + k] == p * 100 + k + iter, "iallgatherv");
                if (rank == root)
                    CHECK(gv[dsp[p] + k] == p * 100 + k + iter, "igatherv");
            }
        for (int k = 0; k <= rank; k++)
            CHECK(sv[k] == (dsp[rank] + k) * 5 + iter, "iscatterv %d", sv[k]);

        /* alltoallv / alltoallw: rank r sends r+1 ints to everyone */
        int *sc = malloc(size * sizeof(int)), *sd = malloc(size * sizeof(int));
        int *rc = malloc(size * sizeof(int)), *rdp = malloc(size * sizeof(int));
        int *sbuf = malloc(size * (rank + 1) * sizeof(int)), *rbuf = malloc(tot * sizeof(int));
        for (int p = 0; p < size; p++) {
            sc[p] = rank + 1;
            sd[p] = p * (rank + 1);
            rc[p] = p + 1;
            rdp[p] = dsp[p];
            for (int k = 0; k <= rank; k++)
                sbuf[p * (rank + 1) + k] = rank * 1000 + p * 10 + k;
        }
        MPI_Ialltoallv(sbuf, sc, sd, MPI_INT, rbuf, rc, rdp, MPI_INT, MPI_COMM_WORLD, &r);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
        for (int p = 0; p < size; p++)
            for (int k = 0; k <= p; k++)
                CHECK(rbuf[dsp[p] + k] == p * 1000 + rank * 10 + k, "ialltoallv");
        MPI_Datatype *ty = malloc(size * sizeof(MPI_Datatype));
        for (int p = 0; p < size; p++) {
            ty[p] = MPI_INT;
            sd[p] *= sizeof(int);
            rdp[p] *= sizeof(int);
        }
        for (int k = 0; k < tot; k++)
            rbuf[k] = -1;
        MPI_Ialltoallw(sbuf, sc, sd, ty, rbuf, rc, rdp, ty, MPI_COMM_WORLD, &r);
        test_loop(&r);
        for (int p = 0; p < size; p++)
            for (int k = 0; k <= p; k++)
                CHECK(rbuf[dsp[p] + k] == p * 1000 + rank * 10 + k, "ialltoallw");

        /* reduce_scatter(_block), scan, exscan, in-place allreduce */
        int *rsin = malloc(tot * sizeof(int)), rsout[64];
        for (int k = 0; k < tot; k++)
            rsin[k] = k + rank;
        MPI_Request q[5];
        MPI_Ireduce_scatter(rsin, rsout, cnt, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &q[0]);
        int rsb_in[64], rsb_out[2];
        for (int k = 0; k < 2 * size; k++)
            rsb_in[k] = k * rank;
        MPI_Ireduce_scatter_block(rsb_in, rsb_out, 2, MPI_INT, MPI_SUM, dup, &q[1]);
        int sc_in = rank + 1, sc_out = -1, ex_out = -1;
        MPI_Iscan(&sc_in, &sc_out, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &q[2]);
        MPI_Iexscan(&sc_in, &ex_out, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &q[3]);
        int ip[3] = {rank, 1, iter};
        MPI_Iallreduce(MPI_IN_PLACE, ip, 3, MPI_INT, MPI_SUM, dup, &q[4]);
        MPI_Waitall(5, q, MPI_STATUSES_IGNORE);
        for (int k = 0; k <= rank; k++)
            CHECK(rsout[k] == size * (dsp[rank] + k) + size * (size - 1) / 2, "ireduce_scatter %d", rsout[k]);
        for (int k = 0; k < 2; k++)
            CHECK(rsb_out[k] == (2 * rank + k) * size * (size - 1) / 2, "ireduce_scatter_block %d", rsb_out[k]);
        CHECK(sc_out == (rank + 1) * (rank + 2) / 2, "iscan %d", sc_out);
        if (rank > 0)
            CHECK(ex_out == rank * (rank + 1) / 2, "iexscan %d", ex_out);
        CHECK(ip[0] == size * (size - 1) / 2 && ip[1] == size && ip[2] == size * iter, "iallreduce in place");

        /* zero counts and a large allreduce */
        MPI_Ibcast(NULL, 0, MPI_INT, 0, MPI_COMM_WORLD, &q[0]);
        MPI_Iallreduce(NULL, NULL, 0, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &q[1]);
        int big_n = 100000;
        double *big = malloc(big_n * sizeof(double)), *bigo = malloc(big_n * sizeof(double));
        for (int k = 0; k < big_n; k++)
            big[k] = k + rank;
        MPI_Iallreduce(big, bigo, big_n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &q[2]);
        MPI_Waitall(3, q, MPI_STATUSES_IGNORE);
        for (int k = 0; k < big_n; k += 997)
            CHECK(bigo[k] == (double)k * size + size * (size - 1) / 2, "large iallreduce [%d]=%g", k, bigo[k]);

        free(big); free(bigo); free(rsin); free(ty); free(sc); free(sd); free(rc); free(rdp);
        free(sbuf); free(rbuf); free(sv); free(svsrc); free(gv); free(mine); free(all);
        free(cnt); free(dsp); free(ag); free(g_out); free(a2a_in); free(a2a_out);
    }
    MPI_Comm_free(&dup);
    return coll_finish();
}
