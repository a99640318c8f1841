/* oxmpi-test: np=1,2,4,8 */
/* Persistent requests: MPI_Send_init, Recv_init, Ssend_init, Bsend_init,
 * Rsend_init with MPI_Start and MPI_Startall, each reused many times with
 * new data; MPI_Request_free of inactive and of active (started, and plain
 * non-blocking) requests. Partners exchange symmetrically; a lone rank is its
 * own partner. Receives are always started before a zero-byte handshake, so
 * ready-mode sends are legal. */
#include "mtest.h"

#define ITERS 30
#define N 3000 /* ints: above typical eager limits for some modes below */

static int partner;

static void handshake(int tag)
{
    int x = 0, y = 0;
    MPI_CHECK(MPI_Sendrecv(&x, 0, MPI_INT, partner, tag, &y, 0, MPI_INT, partner, tag, MPI_COMM_WORLD,
                           MPI_STATUS_IGNORE));
}

static void fill(int *b, int n, int it, int who)
{
    int i;
    for (i = 0; i < n; i++)
        b[i] = who * 1000000 + it * 1000 + i;
}

static int bad_at(const int *b, int n, int it, int who)
{
    int i;
    for (i = 0; i < n; i++)
        if (b[i] != who * 1000000 + it * 1000 + i)
            return i;
    return -1;
}

int main(int argc, char **argv)
{
    static int sb[N], rb[N];
    const char *mode[5] = {"Send_init", "Ssend_init", "Bsend_init", "Rsend_init", "Startall"};
    int m, it, count, bad;
    MPI_Request req[2];
    MPI_Status sts[2];
    char *abuf;
    int asize = 4 * (N * (int)sizeof(int) + MPI_BSEND_OVERHEAD);

    mt_init(&argc, &argv);
    partner = mt_rank ^ 1;
    if (partner >= mt_size)
        partner = mt_rank;
    abuf = mt_malloc((size_t)asize);
    MPI_CHECK(MPI_Buffer_attach(abuf, asize));

    for (m = 0; m < 5; m++) {
        int n = (m % 2) ? N : 17 + m; /* alternate small and large */
        int tag = 50 + m;
        MPI_CHECK(MPI_Recv_init(rb, n, MPI_INT, partner, tag, MPI_COMM_WORLD, &req[0]));
        switch (m) {
        case 0: MPI_CHECK(MPI_Send_init(sb, n, MPI_INT, partner, tag, MPI_COMM_WORLD, &req[1])); break;
        case 1: MPI_CHECK(MPI_Ssend_init(sb, n, MPI_INT, partner, tag, MPI_COMM_WORLD, &req[1])); break;
        case 2: MPI_CHECK(MPI_Bsend_init(sb, n, MPI_INT, partner, tag, MPI_COMM_WORLD, &req[1])); break;
        case 3: MPI_CHECK(MPI_Rsend_init(sb, n, MPI_INT, partner, tag, MPI_COMM_WORLD, &req[1])); break;
        default: MPI_CHECK(MPI_Send_init(sb, n, MPI_INT, partner, tag, MPI_COMM_WORLD, &req[1])); break;
        }
        CHECK(req[0] != MPI_REQUEST_NULL && req[1] != MPI_REQUEST_NULL, "%s: null persistent request", mode[m]);
        for (it = 0; it < ITERS; it++) {
            fill(sb, n, it, mt_rank);
            memset(rb, 0, sizeof(int) * n);
            if (m == 4) {
                MPI_CHECK(MPI_Startall(2, req));
            } else {
                MPI_CHECK(MPI_Start(&req[0]));
                handshake(tag + 100); /* the partner's receive is now posted */
                MPI_CHECK(MPI_Start(&req[1]));
            }
            MPI_CHECK(MPI_Waitall(2, req, sts));
            CHECK(req[0] != MPI_REQUEST_NULL && req[1] != MPI_REQUEST_NULL,
                  "%s: completion freed a persistent request", mode[m]);
            count = -1;
            MPI_CHECK(MPI_Get_count(&sts[0], MPI_INT, &count));
            CHECK(count == n && sts[0].MPI_SOURCE == partner && sts[0].MPI_TAG == tag,
                  "%s iteration %d: count %d source %d tag %d", mode[m], it, count, sts[0].MPI_SOURCE,
                  sts[0].MPI_TAG);
            bad = bad_at(rb, n, it, partner);
            CHECK(bad < 0, "%s iteration %d: element %d is %d", mode[m], it, bad, bad >= 0 ? rb[bad] : 0);
            if (m == 4)
                handshake(tag + 200); /* Startall has no handshake: keep iterations apart */
        }
        MPI_CHECK(MPI_Request_free(&req[0]));
        MPI_CHECK(MPI_Request_free(&req[1]));
        CHECK(req[0] == MPI_REQUEST_NULL && req[1] == MPI_REQUEST_NULL, "%s: Request_free did not null", mode[m]);
    }

    /* Request_free of an active persistent send and of an active Isend: the
     * messages are still delivered. */
    {
        int a[4] = {1, 2, 3, mt_rank}, b[5] = {5, 6, 7, 8, mt_rank}, ra[4], rbb[5];
        MPI_Request ps, is, r2[2];
        MPI_CHECK(MPI_Irecv(ra, 4, MPI_INT, partner, 70, MPI_COMM_WORLD, &r2[0]));
        MPI_CHECK(MPI_Irecv(rbb, 5, MPI_INT, partner, 71, MPI_COMM_WORLD, &r2[1]));
        MPI_CHECK(MPI_Send_init(a, 4, MPI_INT, partner, 70, MPI_COMM_WORLD, &ps));
        MPI_CHECK(MPI_Start(&ps));
        MPI_CHECK(MPI_Request_free(&ps));
        CHECK(ps == MPI_REQUEST_NULL, "Request_free(active persistent) left %d", (int)ps);
        MPI_CHECK(MPI_Isend(b, 5, MPI_INT, partner, 71, MPI_COMM_WORLD, &is));
        MPI_CHECK(MPI_Request_free(&is));
        CHECK(is == MPI_REQUEST_NULL, "Request_free(active Isend) left %d", (int)is);
        MPI_CHECK(MPI_Waitall(2, r2, sts));
        CHECK(ra[0] == 1 && ra[3] == partner, "freed persistent send: got %d..%d", ra[0], ra[3]);
        CHECK(rbb[0] == 5 && rbb[4] == partner, "freed Isend: got %d..%d", rbb[0], rbb[4]);
        /* the buffers may be reused only once we know the partner received */
        handshake(72);
    }
    {
        void *d;
        int ds;
        MPI_CHECK(MPI_Buffer_detach(&d, &ds));
    }
    free(abuf);
    return mt_finalize();
}
