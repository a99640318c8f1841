/* oxmpi-test: np=2,3 */
/* Bad input to the partitioned functions, with MPI_ERRORS_RETURN: each returns its error
 * class and leaves the requests usable (a correct cycle follows). Ranks 0 and 1 pair up;
 * others only check the local argument errors.
 *   - MPI_Psend_init / MPI_Precv_init: partitions < 1 (MPI_ERR_ARG), count < 0
 *     (MPI_ERR_COUNT), a bad rank (MPI_ERR_RANK), a bad tag (MPI_ERR_TAG), wildcards on the
 *     receive (MPI_ERR_RANK, MPI_ERR_TAG), a bad datatype, a NULL request pointer;
 *   - MPI_Pready*: an inactive request and a partition marked ready twice in one cycle
 *     (MPI_ERR_OTHER), partitions out of range and an inverted range (MPI_ERR_ARG); a call
 *     with a bad entry marks none of its partitions ready;
 *     a receive or non-partitioned request (MPI_ERR_REQUEST);
 *   - MPI_Parrived: out of range (MPI_ERR_ARG), on a send (MPI_ERR_REQUEST);
 *   - MPI_Cancel of an active partitioned receive is accepted and has no effect. */
#include "mtest.h"

static void expect(int rc, int cls, const char *what)
{
    int got = -1;
    if (rc != MPI_SUCCESS)
        MPI_Error_class(rc, &got);
    CHECK(rc != MPI_SUCCESS && got == cls, "%s: returned %d (class %d), expected class %d", what, rc, got, cls);
}

int main(int argc, char **argv)
{
    int buf[8] = {0}, list[2] = {1, 8}, flag = 0, i;
    MPI_Request s = MPI_REQUEST_NULL, r = MPI_REQUEST_NULL, plain;
    mt_init(&argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int peer = mt_rank == 0 ? 1 : 0;
    MPI_Comm c = MPI_COMM_WORLD;
    MPI_Info n = MPI_INFO_NULL;

    expect(MPI_Psend_init(buf, 0, 1, MPI_INT, peer, 0, c, n, &s), MPI_ERR_ARG, "0 partitions");
    expect(MPI_Psend_init(buf, -3, 1, MPI_INT, peer, 0, c, n, &s), MPI_ERR_ARG, "negative partitions");
    expect(MPI_Precv_init(buf, 0, 1, MPI_INT, peer, 0, c, n, &r), MPI_ERR_ARG, "0 partitions (recv)");
    expect(MPI_Psend_init(buf, 2, -1, MPI_INT, peer, 0, c, n, &s), MPI_ERR_COUNT, "count < 0");
    expect(MPI_Precv_init(buf, 2, -1, MPI_INT, peer, 0, c, n, &r), MPI_ERR_COUNT, "count < 0 (recv)");
    expect(MPI_Psend_init(buf, 2, 1, MPI_INT, mt_size, 0, c, n, &s), MPI_ERR_RANK, "rank too large");
    expect(MPI_Psend_init(buf, 2, 1, MPI_INT, -5, 0, c, n, &s), MPI_ERR_RANK, "negative rank");
    expect(MPI_Psend_init(buf, 2, 1, MPI_INT, peer, -4, c, n, &s), MPI_ERR_TAG, "negative tag");
    expect(MPI_Precv_init(buf, 2, 1, MPI_INT, MPI_ANY_SOURCE, 0, c, n, &r), MPI_ERR_RANK, "MPI_ANY_SOURCE");
    expect(MPI_Precv_init(buf, 2, 1, MPI_INT, peer, MPI_ANY_TAG, c, n, &r), MPI_ERR_TAG, "MPI_ANY_TAG");
    expect(MPI_Psend_init(buf, 2, 1, MPI_DATATYPE_NULL, peer, 0, c, n, &s), MPI_ERR_TYPE, "MPI_DATATYPE_NULL");
    expect(MPI_Psend_init(buf, 2, 1, MPI_INT, peer, 0, c, n, NULL), MPI_ERR_ARG, "NULL request pointer");
    expect(MPI_Psend_init(buf, 2, 1, MPI_INT, peer, 0, MPI_COMM_NULL, n, &s), MPI_ERR_COMM, "MPI_COMM_NULL");
    CHECK(s == MPI_REQUEST_NULL && r == MPI_REQUEST_NULL, "failed calls return no request");

    /* A non-partitioned request. */
    MPI_CHECK(MPI_Send_init(buf, 1, MPI_INT, mt_rank, 0, c, &plain));
    expect(MPI_Pready(0, plain), MPI_ERR_REQUEST, "MPI_Pready on a persistent send");
    expect(MPI_Parrived(plain, 0, &flag), MPI_ERR_REQUEST, "MPI_Parrived on a persistent send");
    MPI_Request_free(&plain);

    if (mt_rank < 2) {
        int sender = mt_rank == 0;
        if (sender)
            MPI_CHECK(MPI_Psend_init(buf, 4, 2, MPI_INT, peer, 5, c, n, &s));
        else
            MPI_CHECK(MPI_Precv_init(buf, 2, 4, MPI_INT, peer, 5, c, n, &r));
        if (sender) {
            expect(MPI_Pready(0, s), MPI_ERR_OTHER, "MPI_Pready before MPI_Start");
            expect(MPI_Parrived(s, 0, &flag), MPI_ERR_REQUEST, "MPI_Parrived on a send");
        } else {
            expect(MPI_Pready(0, r), MPI_ERR_REQUEST, "MPI_Pready on a receive");
            expect(MPI_Parrived(r, 2, &flag), MPI_ERR_ARG, "MPI_Parrived past the last partition");
            expect(MPI_Parrived(r, -1, &flag), MPI_ERR_ARG, "MPI_Parrived of a negative partition");
        }
        for (i = 0; i < 2; i++) {
            if (sender) {
                int k;
                for (k = 0; k < 8; k++)
                    buf[k] = 10 * i + k;
                MPI_CHECK(MPI_Start(&s));
                expect(MPI_Pready(4, s), MPI_ERR_ARG, "MPI_Pready past the last partition");
                expect(MPI_Pready(-1, s), MPI_ERR_ARG, "MPI_Pready of a negative partition");
                expect(MPI_Pready_range(2, 1, s), MPI_ERR_ARG, "inverted MPI_Pready_range");
                expect(MPI_Pready_range(2, 4, s), MPI_ERR_ARG, "MPI_Pready_range past the end");
                expect(MPI_Pready_list(2, list, s), MPI_ERR_ARG, "MPI_Pready_list with partition 8");
                /* A call with a bad entry marks none of its partitions ready. */
                MPI_CHECK(MPI_Pready(0, s));
                expect(MPI_Pready(0, s), MPI_ERR_OTHER, "MPI_Pready twice in a cycle");
                expect(MPI_Pready_range(0, 1, s), MPI_ERR_OTHER, "MPI_Pready_range over a ready partition");
                list[1] = 1;
                expect(MPI_Pready_list(2, list, s), MPI_ERR_OTHER, "MPI_Pready_list naming a partition twice");
                list[1] = 8;
                MPI_CHECK(MPI_Pready_range(1, 3, s));
                MPI_CHECK(MPI_Wait(&s, MPI_STATUS_IGNORE));
                expect(MPI_Pready(0, s), MPI_ERR_OTHER, "MPI_Pready after MPI_Wait");
            } else {
                int k, cancelled = 1;
                MPI_Status st;
                MPI_CHECK(MPI_Start(&r));
                /* MPI_Cancel does not cancel a partitioned operation: it completes normally. */
                MPI_CHECK(MPI_Cancel(&r));
                MPI_CHECK(MPI_Wait(&r, &st));
                MPI_CHECK(MPI_Test_cancelled(&st, &cancelled));
                CHECK(!cancelled, "a partitioned receive reports itself cancelled");
                for (k = 0; k < 8; k++)
                    CHECK(buf[k] == 10 * i + k, "cycle %d: buf[%d] = %d", i, k, buf[k]);
            }
        }
        if (sender)
            MPI_CHECK(MPI_Request_free(&s));
        else
            MPI_CHECK(MPI_Request_free(&r));
    }
    return mt_finalize();
}
