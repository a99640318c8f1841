/* oxmpi-test: np=1,2,4 */
/* Truncation: a receive buffer smaller than the message gives MPI_ERR_TRUNCATE
 * (returned by MPI_Recv and MPI_Wait; MPI_ERR_IN_STATUS from MPI_Waitall with
 * MPI_ERR_TRUNCATE in that request's status.MPI_ERROR and MPI_SUCCESS or
 * MPI_ERR_PENDING in the others), with MPI_ERRORS_RETURN on the communicator.
 * The library keeps working after it. Partners exchange symmetrically. */
#include "mtest.h"

static int partner;

static int err_class(int rc)
{
    int cls = -1;
    MPI_Error_class(rc, &cls);
    return cls;
}

int main(int argc, char **argv)
{
    int big[10000], small[10000], rc, i;
    MPI_Request rq[3], sq;
    MPI_Status st, sts[3];

    mt_init(&argc, &argv);
    MPI_CHECK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    partner = mt_rank ^ 1;
    if (partner >= mt_size)
        partner = mt_rank;
    for (i = 0; i < 10000; i++)
        big[i] = i;

    /* MPI_Recv: small and large messages. */
    {
        int sizes[2] = {10, 10000}, k;
        for (k = 0; k < 2; k++) {
            MPI_CHECK(MPI_Isend(big, sizes[k], MPI_INT, partner, 1 + k, MPI_COMM_WORLD, &sq));
            rc = MPI_Recv(small, sizes[k] / 2, MPI_INT, partner, 1 + k, MPI_COMM_WORLD, &st);
            CHECK(err_class(rc) == MPI_ERR_TRUNCATE, "Recv of %d into %d: class %d (%s)", sizes[k], sizes[k] / 2,
                  err_class(rc), mt_errstr(rc));
            CHECK(st.MPI_SOURCE == partner && st.MPI_TAG == 1 + k, "truncated Recv: source %d tag %d",
                  st.MPI_SOURCE, st.MPI_TAG);
            MPI_CHECK(MPI_Wait(&sq, MPI_STATUS_IGNORE));
        }
    }

    /* MPI_Wait on a truncated Irecv. */
    MPI_CHECK(MPI_Irecv(small, 3, MPI_INT, partner, 4, MPI_COMM_WORLD, &rq[0]));
    MPI_CHECK(MPI_Isend(big, 4, MPI_INT, partner, 4, MPI_COMM_WORLD, &sq));
    rc = MPI_Wait(&rq[0], &st);
    CHECK(err_class(rc) == MPI_ERR_TRUNCATE, "Wait: class %d (%s)", err_class(rc), mt_errstr(rc));
    CHECK(rq[0] == MPI_REQUEST_NULL, "Wait with error did not free the request");
    MPI_CHECK(MPI_Wait(&sq, MPI_STATUS_IGNORE));

    /* MPI_Waitall: one truncated receive among good ones. */
    for (i = 0; i < 3; i++)
        sts[i].MPI_ERROR = -12345;
    MPI_CHECK(MPI_Irecv(small, 10, MPI_INT, partner, 5, MPI_COMM_WORLD, &rq[0]));
    MPI_CHECK(MPI_Irecv(small + 100, 2, MPI_INT, partner, 6, MPI_COMM_WORLD, &rq[1]));
    MPI_CHECK(MPI_Irecv(small + 200, 10, MPI_INT, partner, 7, MPI_COMM_WORLD, &rq[2]));
    {
        MPI_Request s3[3];
        MPI_CHECK(MPI_Isend(big, 10, MPI_INT, partner, 5, MPI_COMM_WORLD, &s3[0]));
        MPI_CHECK(MPI_Isend(big, 5, MPI_INT, partner, 6, MPI_COMM_WORLD, &s3[1]));
        MPI_CHECK(MPI_Isend(big, 10, MPI_INT, partner, 7, MPI_COMM_WORLD, &s3[2]));
        rc = MPI_Waitall(3, rq, sts);
        CHECK(rc == MPI_ERR_IN_STATUS || err_class(rc) == MPI_ERR_IN_STATUS, "Waitall returned %d (%s)", rc,
              mt_errstr(rc));
        CHECK(err_class(sts[1].MPI_ERROR) == MPI_ERR_TRUNCATE, "Waitall: truncated entry has MPI_ERROR %d (%s)",
              sts[1].MPI_ERROR, mt_errstr(sts[1].MPI_ERROR));
        for (i = 0; i < 3; i += 2)
            CHECK(sts[i].MPI_ERROR == MPI_SUCCESS || sts[i].MPI_ERROR == MPI_ERR_PENDING,
                  "Waitall: good entry %d has MPI_ERROR %d", i, sts[i].MPI_ERROR);
        /* finish anything still pending */
        for (i = 0; i < 3; i++)
            if (rq[i] != MPI_REQUEST_NULL)
                MPI_CHECK(MPI_Wait(&rq[i], MPI_STATUS_IGNORE));
        CHECK(small[9] == 9 && small[209] == 9, "Waitall: good receives' data %d %d", small[9], small[209]);
        MPI_CHECK(MPI_Waitall(3, s3, MPI_STATUSES_IGNORE));
    }

    /* Still working. */
    {
        int v = -1, w = mt_rank;
        MPI_CHECK(MPI_Sendrecv(&w, 1, MPI_INT, partner, 8, &v, 1, MPI_INT, partner, 8, MPI_COMM_WORLD, &st));
        CHECK(v == partner, "after truncation: %d", v);
    }
    return mt_finalize();
}
