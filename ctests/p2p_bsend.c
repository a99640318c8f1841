/* oxmpi-test: np=1,2,4,8 */
/* Buffered mode: MPI_Buffer_attach, MPI_Bsend and MPI_Ibsend of small and
 * large messages that are received only after the sends returned, then
 * MPI_Buffer_detach returns the same pointer and size; the buffer can be
 * attached again. Ranks in pairs; a lone rank uses itself. */
#include "mtest.h"

#define NMSG 8
#define BIG 100000 /* ints */

int main(int argc, char **argv)
{
    int partner, i, k, size, dsize = -1, x = 0;
    char *abuf;
    void *dbuf = NULL;
    int *sb, *rb;
    MPI_Request rq;
    MPI_Status st;

    mt_init(&argc, &argv);
    partner = mt_rank ^ 1;
    if (partner >= mt_size)
        partner = mt_rank;
    CHECK(MPI_BSEND_OVERHEAD > 0, "MPI_BSEND_OVERHEAD is %d", (int)MPI_BSEND_OVERHEAD);
    size = NMSG * (MPI_BSEND_OVERHEAD + (int)sizeof(int) * 64) + 2 * (MPI_BSEND_OVERHEAD + (int)sizeof(int) * BIG);
    abuf = mt_malloc((size_t)size);
    sb = mt_malloc(sizeof(int) * BIG);
    rb = mt_malloc(sizeof(int) * BIG);

    for (int round = 0; round < 2; round++) {
        MPI_CHECK(MPI_Buffer_attach(abuf, size));
        /* NMSG small Bsends, one large Bsend, one large Ibsend, all before any receive. */
        for (k = 0; k < NMSG; k++) {
            int m[64];
            for (i = 0; i < 64; i++)
                m[i] = mt_rank * 10000 + round * 1000 + k * 64 + i;
            MPI_CHECK(MPI_Bsend(m, 64, MPI_INT, partner, k, MPI_COMM_WORLD));
            /* reusing the user buffer right away must not change what is sent */
            memset(m, 0xff, sizeof m);
        }
        for (i = 0; i < BIG; i++)
            sb[i] = i + mt_rank + round;
        MPI_CHECK(MPI_Bsend(sb, BIG, MPI_INT, partner, 100, MPI_COMM_WORLD));
        MPI_CHECK(MPI_Ibsend(sb, BIG, MPI_INT, partner, 101, MPI_COMM_WORLD, &rq));
        MPI_CHECK(MPI_Wait(&rq, MPI_STATUS_IGNORE));
        for (i = 0; i < BIG; i++)
            sb[i] = -7;

        /* Make sure the partner has returned from all its sends before receiving. */
        if (partner != mt_rank)
            MPI_CHECK(MPI_Sendrecv(&x, 0, MPI_INT, partner, 200, &x, 0, MPI_INT, partner, 200, MPI_COMM_WORLD,
                                   MPI_STATUS_IGNORE));
        for (k = NMSG - 1; k >= 0; k--) {
            int m[64], count = -1;
            MPI_CHECK(MPI_Recv(m, 64, MPI_INT, partner, k, MPI_COMM_WORLD, &st));
            MPI_CHECK(MPI_Get_count(&st, MPI_INT, &count));
            CHECK(count == 64, "small Bsend %d: count %d", k, count);
            for (i = 0; i < 64; i++)
                if (m[i] != partner * 10000 + round * 1000 + k * 64 + i) {
                    CHECK(0, "small Bsend %d: element %d is %d", k, i, m[i]);
                    break;
                }
        }
        for (k = 100; k <= 101; k++) {
            memset(rb, 0, sizeof(int) * BIG);
            MPI_CHECK(MPI_Recv(rb, BIG, MPI_INT, partner, k, MPI_COMM_WORLD, &st));
            for (i = 0; i < BIG; i++)
                if (rb[i] != i + partner + round) {
                    CHECK(0, "large Bsend tag %d: element %d is %d", k, i, rb[i]);
                    break;
                }
        }
        dbuf = NULL;
        dsize = -1;
        MPI_CHECK(MPI_Buffer_detach(&dbuf, &dsize));
        CHECK(dbuf == (void *)abuf, "detach returned %p, attached %p", dbuf, (void *)abuf);
        CHECK(dsize == size, "detach returned size %d, attached %d", dsize, size);
    }

    /* Detach waits for buffered messages to be delivered: a Bsend whose
     * receive is posted only after the sender detached. */
    if (partner != mt_rank) {
        MPI_CHECK(MPI_Buffer_attach(abuf, size));
        if (mt_rank < partner) {
            for (i = 0; i < BIG; i++)
                sb[i] = 5 * i;
            MPI_CHECK(MPI_Bsend(sb, BIG, MPI_INT, partner, 300, MPI_COMM_WORLD));
            memset(sb, 0, sizeof(int) * BIG);
            MPI_CHECK(MPI_Buffer_detach(&dbuf, &dsize));
        } else {
            MPI_CHECK(MPI_Recv(rb, BIG, MPI_INT, partner, 300, MPI_COMM_WORLD, &st));
            for (i = 0; i < BIG; i++)
                if (rb[i] != 5 * i) {
                    CHECK(0, "Bsend before detach: element %d is %d", i, rb[i]);
                    break;
                }
            MPI_CHECK(MPI_Buffer_detach(&dbuf, &dsize));
        }
        CHECK(dbuf == (void *)abuf && dsize == size, "second detach: %p/%d", dbuf, dsize);
    }
    free(abuf);
    free(sb);
    free(rb);
    return mt_finalize();
}
