/* oxmpi-test: np=2,4 */
/* Point-to-point with derived datatypes: the sender's and receiver's layouts differ but the
 * type signatures match (vector sent, contiguous received, and the reverse; structs with
 * padding; negative strides; MPI_BOTTOM with absolute addresses), at sizes around the
 * eager/rendezvous threshold and at 1 MiB; types freed while a transfer is pending;
 * MPI_Get_elements on partial receives. Ranks pair up: 0-1, 2-3. */
#include "mtest.h"
#include <stddef.h>

struct rec {
    int i;
    double d;
};

static void run_size(int peer, int sender, int n)
{
    double *a = malloc(sizeof(double) * 3 * (size_t)n + 64);
    double *b = malloc(sizeof(double) * 3 * (size_t)n + 64);
    MPI_Datatype v2, v3, vneg;
    MPI_Status st;
    int i, cnt;

    MPI_CHECK(MPI_Type_vector(n, 1, 2, MPI_DOUBLE, &v2));
    MPI_CHECK(MPI_Type_vector(n, 1, 3, MPI_DOUBLE, &v3));
    MPI_CHECK(MPI_Type_vector(n, 1, -2, MPI_DOUBLE, &vneg));
    MPI_CHECK(MPI_Type_commit(&v2));
    MPI_CHECK(MPI_Type_commit(&v3));
    MPI_CHECK(MPI_Type_commit(&vneg));

    /* vector -> contiguous */
    if (sender) {
        for (i = 0; i < 2 * n; i++)
            a[i] = i;
        MPI_CHECK(MPI_Send(a, 1, v2, peer, 1, MPI_COMM_WORLD));
    } else {
        MPI_CHECK(MPI_Recv(b, n, MPI_DOUBLE, peer, 1, MPI_COMM_WORLD, &st));
        MPI_Get_count(&st, MPI_DOUBLE, &cnt);
        CHECK(cnt == n, "n=%d vector->contiguous count %d", n, cnt);
        for (i = 0; i < n; i++)
            if (b[i] != 2.0 * i) {
                CHECK(0, "n=%d vector->contiguous b[%d]=%g", n, i, b[i]);
                break;
            }
    }

    /* contiguous -> vector (holes untouched) */
    if (sender) {
        for (i = 0; i < n; i++)
            a[i] = -i;
        MPI_CHECK(MPI_Send(a, n, MPI_DOUBLE, peer, 2, MPI_COMM_WORLD));
    } else {
        for (i = 0; i < 3 * n; i++)
            b[i] = 0.5;
        MPI_CHECK(MPI_Recv(b, 1, v3, peer, 2, MPI_COMM_WORLD, &st));
        MPI_Get_count(&st, v3, &cnt);
        CHECK(cnt == 1, "n=%d contiguous->vector count %d", n, cnt);
        for (i = 0; i < 3 * n - 2; i++) {
            double want = i % 3 == 0 ? -(i / 3) : 0.5;
            if (b[i] != want) {
                CHECK(0, "n=%d contiguous->vector b[%d]=%g want %g", n, i, b[i], want);
                break;
            }
        }
    }

    /* negative stride send (origin at the last element), vector receive */
    if (sender) {
        for (i = 0; i < 2 * n; i++)
            a[i] = 1000 + i;
        MPI_CHECK(MPI_Send(&a[2 * (n - 1)], 1, vneg, peer, 3, MPI_COMM_WORLD));
    } else {
        MPI_Request rq;
        MPI_Datatype v3copy;
        MPI_CHECK(MPI_Type_dup(v3, &v3copy));
        MPI_CHECK(MPI_Irecv(b, 1, v3copy, peer, 3, MPI_COMM_WORLD, &rq));
        /* The pending receive keeps the type alive. */
        MPI_CHECK(MPI_Type_free(&v3copy));
        MPI_CHECK(MPI_Wait(&rq, &st));
        for (i = 0; i < n; i++)
            if (b[3 * i] != 1000 + 2 * (n - 1 - i)) {
                CHECK(0, "n=%d negative stride b[%d]=%g", n, 3 * i, b[3 * i]);
                break;
            }
    }

    MPI_CHECK(MPI_Type_free(&v2));
    MPI_CHECK(MPI_Type_free(&v3));
    MPI_CHECK(MPI_Type_free(&vneg));
    free(a);
    free(b);
}

static void run_struct(int peer, int sender, int n)
{
    struct rec *r = malloc(sizeof(struct rec) * (size_t)n);
    int bl[] = {1, 1}, i;
    MPI_Aint dp[] = {offsetof(struct rec, i), offsetof(struct rec, d)};
    MPI_Datatype ts[] = {MPI_INT, MPI_DOUBLE}, st;
    MPI_CHECK(MPI_Type_create_struct(2, bl, dp, ts, &st));
    MPI_CHECK(MPI_Type_commit(&st));
    if (sender) {
        MPI_Request rq;
        for (i = 0; i < n; i++) {
            r[i].i = i;
            r[i].d = i * 0.25;
        }
        MPI_CHECK(MPI_Isend(r, n, st, peer, 4, MPI_COMM_WORLD, &rq));
        MPI_CHECK(MPI_Type_free(&st));
        MPI_CHECK(MPI_Wait(&rq, MPI_STATUS_IGNORE));
    } else {
        MPI_Status s;
        int cnt;
        memset(r, 0, sizeof(struct rec) * (size_t)n);
        MPI_CHECK(MPI_Recv(r, n, st, peer, 4, MPI_COMM_WORLD, &s));
        MPI_Get_elements(&s, st, &cnt);
        CHECK(cnt == 2 * n, "struct elements %d want %d", cnt, 2 * n);
        for (i = 0; i < n; i++)
            if (r[i].i != i || r[i].d != i * 0.25) {
                CHECK(0, "n=%d struct r[%d] = {%d, %g}", n, i, r[i].i, r[i].d);
                break;
            }
        MPI_CHECK(MPI_Type_free(&st));
    }
    free(r);
}

int main(int argc, char **argv)
{
    int sizes[] = {1, 128, 2047, 2049, 131072}; /* doubles: 8 B .. 1 MiB */
    int k, peer, sender;
    mt_init(&argc, &argv);
    if (mt_size % 2 == 1 && mt_rank == mt_size - 1) {
        return mt_finalize();
    }
    peer = mt_rank ^ 1;
    sender = mt_rank % 2 == 0;
    for (k = 0; k < 5; k++) {
        run_size(peer, sender, sizes[k]);
        run_struct(peer, sender, sizes[k] / 2 + 1);
    }

    /* MPI_BOTTOM: two separate arrays described by absolute addresses. */
    {
        int x[3] = {1, 2, 3}, y[2] = {4, 5}, got[5] = {0}, bl[] = {3, 2}, i;
        MPI_Aint dp[2];
        MPI_Datatype ts[] = {MPI_INT, MPI_INT}, abs_t;
        MPI_Get_address(x, &dp[0]);
        MPI_Get_address(y, &dp[1]);
        MPI_CHECK(MPI_Type_create_struct(2, bl, dp, ts, &abs_t));
        MPI_CHECK(MPI_Type_commit(&abs_t));
        if (sender) {
            MPI_CHECK(MPI_Send(MPI_BOTTOM, 1, abs_t, peer, 5, MPI_COMM_WORLD));
            MPI_CHECK(MPI_Recv(got, 5, MPI_INT, peer, 6, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            for (i = 0; i < 5; i++)
                CHECK(got[i] == 10 * (i + 1), "MPI_BOTTOM reply %d = %d", i, got[i]);
        } else {
            int reply[5] = {10, 20, 30, 40, 50};
            MPI_CHECK(MPI_Recv(got, 5, MPI_INT, peer, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            for (i = 0; i < 5; i++)
                CHECK(got[i] == i + 1, "MPI_BOTTOM send %d = %d", i, got[i]);
            x[0] = x[1] = x[2] = y[0] = y[1] = 0;
            MPI_CHECK(MPI_Send(reply, 5, MPI_INT, peer, 6, MPI_COMM_WORLD));
        }
        MPI_CHECK(MPI_Type_free(&abs_t));
    }

    /* Get_elements on a partial receive of a derived type: 16 bytes into struct {int, double}
     * (12 bytes each): one whole element (2 basic) and one int. */
    {
        int bl[] = {1, 1}, cnt = 0, vals[4] = {1, 2, 3, 4};
        MPI_Aint dp[] = {0, 8};
        MPI_Datatype ts[] = {MPI_INT, MPI_DOUBLE}, st;
        MPI_Count cx = 0;
        MPI_Status s;
        struct rec r[2];
        MPI_CHECK(MPI_Type_create_struct(2, bl, dp, ts, &st));
        MPI_CHECK(MPI_Type_commit(&st));
        if (sender) {
            MPI_CHECK(MPI_Send(vals, 4, MPI_INT, peer, 7, MPI_COMM_WORLD));
        } else {
            MPI_CHECK(MPI_Recv(r, 2, st, peer, 7, MPI_COMM_WORLD, &s));
            MPI_CHECK(MPI_Get_elements(&s, st, &cnt));
            MPI_CHECK(MPI_Get_elements_x(&s, st, &cx));
            CHECK(cnt == 3 && cx == 3, "partial Get_elements %d / %lld, want 3", cnt, (long long)cx);
            MPI_CHECK(MPI_Get_count(&s, st, &cnt));
            CHECK(cnt == MPI_UNDEFINED, "partial Get_count %d, want MPI_UNDEFINED", cnt);
            CHECK(r[0].i == 1 && r[1].i == 4, "partial struct receive %d %d", r[0].i, r[1].i);
        }
        MPI_CHECK(MPI_Type_free(&st));
    }
    return mt_finalize();
}
