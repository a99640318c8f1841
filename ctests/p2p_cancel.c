/* oxmpi-test: np=1,2,4,8 */
/* MPI_Cancel of a posted receive that cannot match (MPI_Test_cancelled true,
 * buffer untouched), cancel after completion (no effect), and
 * MPI_Request_get_status: reports completion without freeing the request.
 * Partners work symmetrically; a lone rank is its own partner. */
#include "mtest.h"

static int partner;

static void go_exchange(int tag)
{
    int x = 0, y = 0;
    MPI_CHECK(MPI_Sendrecv(&x, 0, MPI_INT, partner, tag, &y, 0, MPI_INT, partner, tag, MPI_COMM_WORLD,
                           MPI_STATUS_IGNORE));
}

int main(int argc, char **argv)
{
    int buf[8], flag, cancelled, count, i, v;
    MPI_Request rq, sq;
    MPI_Status st;

    mt_init(&argc, &argv);
    partner = mt_rank ^ 1;
    if (partner >= mt_size)
        partner = mt_rank;

    /* Cancel a receive nobody will match. */
    for (i = 0; i < 8; i++)
        buf[i] = 77;
    MPI_CHECK(MPI_Irecv(buf, 8, MPI_INT, MPI_ANY_SOURCE, 500, MPI_COMM_WORLD, &rq));
    MPI_CHECK(MPI_Cancel(&rq));
    CHECK(rq != MPI_REQUEST_NULL, "MPI_Cancel freed the request");
    MPI_CHECK(MPI_Wait(&rq, &st));
    CHECK(rq == MPI_REQUEST_NULL, "Wait after Cancel did not free the request");
    cancelled = -1;
    MPI_CHECK(MPI_Test_cancelled(&st, &cancelled));
    CHECK(cancelled == 1, "Test_cancelled of a cancelled receive: %d", cancelled);
    CHECK(buf[0] == 77 && buf[7] == 77, "cancelled receive wrote the buffer");

    /* Cancel + Test loop also works. */
    MPI_CHECK(MPI_Irecv(buf, 8, MPI_INT, partner, 501, MPI_COMM_WORLD, &rq));
    MPI_CHECK(MPI_Cancel(&rq));
    flag = 0;
    while (!flag)
        MPI_CHECK(MPI_Test(&rq, &flag, &st));
    MPI_CHECK(MPI_Test_cancelled(&st, &cancelled));
    CHECK(cancelled == 1, "Test_cancelled after Test: %d", cancelled);

    /* The cancelled receive did not consume anything: a message sent now with
     * tag 501 is received normally. (The handshake keeps the partner from
     * sending it before our receive above was cancelled.) */
    go_exchange(503);
    v = 1234 + mt_rank;
    MPI_CHECK(MPI_Isend(&v, 1, MPI_INT, partner, 501, MPI_COMM_WORLD, &sq));
    MPI_CHECK(MPI_Recv(buf, 8, MPI_INT, partner, 501, MPI_COMM_WORLD, &st));
    CHECK(buf[0] == 1234 + partner, "after cancel: got %d", buf[0]);
    MPI_CHECK(MPI_Wait(&sq, MPI_STATUS_IGNORE));

    /* Request_get_status: not complete before the partner sends. */
    buf[0] = -1;
    MPI_CHECK(MPI_Irecv(buf, 8, MPI_INT, partner, 600, MPI_COMM_WORLD, &rq));
    flag = -1;
    MPI_CHECK(MPI_Request_get_status(rq, &flag, &st));
    CHECK(flag == 0, "Request_get_status: complete before anything was sent");
    go_exchange(601);
    v = 600 + mt_rank;
    MPI_CHECK(MPI_Send(&v, 1, MPI_INT, partner, 600, MPI_COMM_WORLD));
    flag = 0;
    while (!flag)
        MPI_CHECK(MPI_Request_get_status(rq, &flag, &st));
    CHECK(rq != MPI_REQUEST_NULL, "Request_get_status freed the request");
    count = -1;
    MPI_CHECK(MPI_Get_count(&st, MPI_INT, &count));
    CHECK(count == 1 && st.MPI_SOURCE == partner && st.MPI_TAG == 600, "get_status: count %d source %d tag %d",
          count, st.MPI_SOURCE, st.MPI_TAG);
    flag = 0;
    MPI_CHECK(MPI_Request_get_status(rq, &flag, MPI_STATUS_IGNORE));
    CHECK(flag == 1, "second Request_get_status: flag %d", flag);

    /* Cancel after completion has no effect. */
    MPI_CHECK(MPI_Cancel(&rq));
    MPI_CHECK(MPI_Wait(&rq, &st));
    CHECK(rq == MPI_REQUEST_NULL, "Wait after get_status did not free");
    MPI_CHECK(MPI_Test_cancelled(&st, &cancelled));
    CHECK(cancelled == 0, "completed receive reported cancelled");
    CHECK(buf[0] == 600 + partner && st.MPI_SOURCE == partner && st.MPI_TAG == 600,
          "Wait after get_status: value %d source %d tag %d", buf[0], st.MPI_SOURCE, st.MPI_TAG);
    go_exchange(602);
    return mt_finalize();
}
