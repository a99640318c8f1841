/* oxmpi-test: np=2,3,4 */
/* An error found when a completion call collects a request goes to the handler of the
 * request's communicator (MPI-4.1 section 9.3), not to MPI_COMM_WORLD's: with
 * MPI_ERRORS_ARE_FATAL on MPI_COMM_WORLD and MPI_ERRORS_RETURN (then a handler of the
 * program's) on a duplicate, truncated receives on the duplicate completed by MPI_Wait,
 * MPI_Test, MPI_Waitall, MPI_Testall, MPI_Waitany and MPI_Waitsome return their error (or
 * call that handler with the duplicate) instead of ending the job. Ranks pair up; an odd
 * last rank only takes part in the duplicate's creation and freeing. */
#include "mtest.h"

static int partner, handler_calls;
static MPI_Comm dup_comm;

static int err_class(int rc)
{
    int cls = -1;
    MPI_Error_class(rc, &cls);
    return cls;
}

static void on_dup(MPI_Comm *comm, int *code, ...)
{
    int same;
    MPI_Comm_compare(*comm, dup_comm, &same);
    CHECK(same == MPI_IDENT, "the handler got another communicator than the request's");
    CHECK(err_class(*code) == MPI_ERR_TRUNCATE || err_class(*code) == MPI_ERR_IN_STATUS,
          "the handler got class %d", err_class(*code));
    handler_calls++;
}

/* Posts a receive of 4 ints that the partner's 8 overflow, and the send of our 8. */
static void truncated_pair(int *small, const int *big, int tag, MPI_Request *recv, MPI_Request *send)
{
    MPI_CHECK(MPI_Irecv(small, 4, MPI_INT, partner, tag, dup_comm, recv));
    MPI_CHECK(MPI_Isend(big, 8, MPI_INT, partner, tag, dup_comm, send));
}

int main(int argc, char **argv)
{
    int big[8], small[8], rc, flag, index, outcount, indices[2];
    MPI_Request rq[2], sq;
    MPI_Status st, sts[2];
    MPI_Errhandler user;

    mt_init(&argc, &argv);
    partner = mt_rank ^ 1;
    for (int i = 0; i < 8; i++)
        big[i] = i;
    /* MPI_COMM_WORLD keeps MPI_ERRORS_ARE_FATAL: an error raised there ends the test. */
    MPI_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &dup_comm));
    MPI_CHECK(MPI_Comm_set_errhandler(dup_comm, MPI_ERRORS_RETURN));
    if (partner >= mt_size) {
        MPI_CHECK(MPI_Comm_free(&dup_comm));
        return mt_finalize();
    }

    truncated_pair(small, big, 1, &rq[0], &sq);
    rc = MPI_Wait(&rq[0], &st);
    CHECK(err_class(rc) == MPI_ERR_TRUNCATE, "Wait: class %d", err_class(rc));
    MPI_CHECK(MPI_Wait(&sq, MPI_STATUS_IGNORE));

    truncated_pair(small, big, 2, &rq[0], &sq);
    do
        rc = MPI_Test(&rq[0], &flag, &st);
    while (rc == MPI_SUCCESS && !flag);
    CHECK(err_class(rc) == MPI_ERR_TRUNCATE, "Test: class %d", err_class(rc));
    MPI_CHECK(MPI_Wait(&sq, MPI_STATUS_IGNORE));

    truncated_pair(small, big, 3, &rq[0], &rq[1]);
    rc = MPI_Waitall(2, rq, sts);
    CHECK(err_class(rc) == MPI_ERR_IN_STATUS, "Waitall: class %d", err_class(rc));
    CHECK(err_class(sts[0].MPI_ERROR) == MPI_ERR_TRUNCATE, "Waitall: the receive's status has class %d",
          err_class(sts[0].MPI_ERROR));

    truncated_pair(small, big, 4, &rq[0], &rq[1]);
    do
        rc = MPI_Testall(2, rq, &flag, sts);
    while (rc == MPI_SUCCESS && !flag);
    CHECK(err_class(rc) == MPI_ERR_IN_STATUS, "Testall: class %d", err_class(rc));

    /* The send completes first or the receive does: wait for the receive by Waitany. */
    truncated_pair(small, big, 5, &rq[0], &rq[1]);
    MPI_CHECK(MPI_Wait(&rq[1], MPI_STATUS_IGNORE));
    rc = MPI_Waitany(2, rq, &index, &st);
    CHECK(err_class(rc) == MPI_ERR_TRUNCATE && index == 0, "Waitany: class %d, index %d", err_class(rc), index);

    truncated_pair(small, big, 6, &rq[0], &rq[1]);
    MPI_CHECK(MPI_Wait(&rq[1], MPI_STATUS_IGNORE));
    rc = MPI_Waitsome(2, rq, &outcount, indices, sts);
    CHECK(err_class(rc) == MPI_ERR_IN_STATUS && outcount == 1, "Waitsome: class %d, %d done", err_class(rc),
          outcount);

    /* A handler of the program's on the duplicate is called with it. */
    MPI_CHECK(MPI_Comm_create_errhandler(on_dup, &user));
    MPI_CHECK(MPI_Comm_set_errhandler(dup_comm, user));
    truncated_pair(small, big, 7, &rq[0], &sq);
    MPI_Wait(&rq[0], &st);
    MPI_CHECK(MPI_Wait(&sq, MPI_STATUS_IGNORE));
    truncated_pair(small, big, 8, &rq[0], &rq[1]);
    MPI_Waitall(2, rq, sts);
    CHECK(handler_calls == 2, "the program's handler on the duplicate ran %d times, expected 2", handler_calls);
    MPI_CHECK(MPI_Errhandler_free(&user));

    /* Still working: a good exchange on the duplicate. */
    MPI_CHECK(MPI_Sendrecv(big, 4, MPI_INT, partner, 9, small, 4, MPI_INT, partner, 9, dup_comm, &st));
    CHECK(small[3] == 3, "after the errors, a good exchange gave %d", small[3]);
    MPI_CHECK(MPI_Comm_free(&dup_comm));
    return mt_finalize();
}
