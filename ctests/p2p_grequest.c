/* oxmpi-test: np=1,2,4 */
/* Generalized requests: MPI_Grequest_start/complete with Test before and after completion,
 * the status query_fn reports (source, tag, count, cancelled), free_fn once per request,
 * MPI_Request_free before completion (free_fn runs at MPI_Grequest_complete), cancel_fn
 * with the completion flag, Waitall mixing a generalized request and a receive, query_fn's
 * error code returned by Wait and MPI_ERR_IN_STATUS from Waitall, and bad input. */
#include "mtest.h"

struct state {
    int queries, frees, cancels, last_cancel_complete;
    int query_error; /* what query_fn returns */
    int count;       /* bytes query_fn reports */
};

static int query_fn(void *extra, MPI_Status *status)
{
    struct state *s = extra;
    s->queries++;
    status->MPI_SOURCE = 7;
    status->MPI_TAG = 42;
    MPI_Status_set_cancelled(status, 0);
    MPI_Status_set_elements(status, MPI_BYTE, s->count);
    return s->query_error;
}

static int free_fn(void *extra)
{
    ((struct state *)extra)->frees++;
    return MPI_SUCCESS;
}

static int cancel_fn(void *extra, int complete)
{
    struct state *s = extra;
    s->cancels++;
    s->last_cancel_complete = complete;
    return MPI_SUCCESS;
}

int main(int argc, char **argv)
{
    struct state s = {0};
    MPI_Request rq;
    MPI_Status st;
    int flag, count, eclass;

    mt_init(&argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);

    /* Test before and after completion; Wait reports query_fn's status. */
    s.count = 24;
    MPI_CHECK(MPI_Grequest_start(query_fn, free_fn, cancel_fn, &s, &rq));
    MPI_CHECK(MPI_Test(&rq, &flag, &st));
    CHECK(!flag && rq != MPI_REQUEST_NULL, "Test of a running generalized request gave flag %d", flag);
    CHECK(s.queries == 0 && s.frees == 0, "callbacks ran early: %d queries %d frees", s.queries, s.frees);
    MPI_CHECK(MPI_Grequest_complete(rq));
    MPI_CHECK(MPI_Request_get_status(rq, &flag, &st));
    CHECK(flag && st.MPI_TAG == 42, "Request_get_status: flag %d tag %d", flag, st.MPI_TAG);
    CHECK(rq != MPI_REQUEST_NULL && s.frees == 0, "Request_get_status freed the request");
    MPI_CHECK(MPI_Wait(&rq, &st));
    MPI_Get_count(&st, MPI_BYTE, &count);
    CHECK(rq == MPI_REQUEST_NULL, "Wait left the handle set");
    CHECK(st.MPI_SOURCE == 7 && st.MPI_TAG == 42 && count == 24, "status source %d tag %d count %d",
          st.MPI_SOURCE, st.MPI_TAG, count);
    CHECK(s.queries == 2 && s.frees == 1, "%d queries %d frees after Wait (want 2, 1)", s.queries, s.frees);

    /* Test completes it too. */
    s = (struct state){0};
    MPI_CHECK(MPI_Grequest_start(query_fn, free_fn, cancel_fn, &s, &rq));
    MPI_CHECK(MPI_Grequest_complete(rq));
    MPI_CHECK(MPI_Test(&rq, &flag, MPI_STATUS_IGNORE));
    CHECK(flag && rq == MPI_REQUEST_NULL && s.queries == 1 && s.frees == 1, "Test: flag %d %d queries %d frees",
          flag, s.queries, s.frees);

    /* Request_free while running: free_fn runs at once (as MPICH), without a query; the
       program still completes the request. */
    s = (struct state){0};
    MPI_CHECK(MPI_Grequest_start(query_fn, free_fn, cancel_fn, &s, &rq));
    MPI_Request keep = rq;
    MPI_CHECK(MPI_Request_free(&rq));
    CHECK(rq == MPI_REQUEST_NULL && s.frees == 1, "Request_free of a running request: %d frees", s.frees);
    MPI_CHECK(MPI_Grequest_complete(keep));
    CHECK(s.frees == 1 && s.queries == 0, "after complete: %d frees %d queries", s.frees, s.queries);

    /* Request_free after completion: free_fn at once. */
    s = (struct state){0};
    MPI_CHECK(MPI_Grequest_start(query_fn, free_fn, cancel_fn, &s, &rq));
    MPI_CHECK(MPI_Grequest_complete(rq));
    MPI_CHECK(MPI_Request_free(&rq));
    CHECK(s.frees == 1 && s.queries == 0, "Request_free of a completed request: %d frees", s.frees);

    /* Cancel: cancel_fn learns whether the request is complete. */
    s = (struct state){0};
    MPI_CHECK(MPI_Grequest_start(query_fn, free_fn, cancel_fn, &s, &rq));
    MPI_CHECK(MPI_Cancel(&rq));
    CHECK(s.cancels == 1 && s.last_cancel_complete == 0, "cancel_fn: %d calls, complete %d", s.cancels,
          s.last_cancel_complete);
    MPI_CHECK(MPI_Grequest_complete(rq));
    MPI_CHECK(MPI_Cancel(&rq));
    CHECK(s.cancels == 2 && s.last_cancel_complete == 1, "cancel_fn after completion: complete %d",
          s.last_cancel_complete);
    MPI_CHECK(MPI_Wait(&rq, MPI_STATUS_IGNORE));

    /* Waitall: a generalized request next to a self-receive. */
    s = (struct state){0};
    s.count = 3;
    int x = 5, y = 0;
    MPI_Request two[2];
    MPI_Status sts[2];
    MPI_CHECK(MPI_Grequest_start(query_fn, free_fn, cancel_fn, &s, &two[0]));
    MPI_CHECK(MPI_Irecv(&y, 1, MPI_INT, mt_rank, 1, MPI_COMM_WORLD, &two[1]));
    MPI_CHECK(MPI_Send(&x, 1, MPI_INT, mt_rank, 1, MPI_COMM_WORLD));
    MPI_CHECK(MPI_Grequest_complete(two[0]));
    MPI_CHECK(MPI_Waitall(2, two, sts));
    MPI_Get_count(&sts[0], MPI_BYTE, &count);
    CHECK(y == 5 && count == 3 && sts[0].MPI_TAG == 42 && sts[1].MPI_SOURCE == mt_rank, "Waitall statuses");
    CHECK(s.frees == 1, "Waitall: %d frees", s.frees);

    /* query_fn's error code is Wait's result, and MPI_ERR_IN_STATUS in Waitall. */
    s = (struct state){0};
    s.query_error = MPI_ERR_OTHER;
    MPI_CHECK(MPI_Grequest_start(query_fn, free_fn, cancel_fn, &s, &rq));
    MPI_CHECK(MPI_Grequest_complete(rq));
    int rc = MPI_Wait(&rq, MPI_STATUS_IGNORE);
    CHECK(rc == MPI_ERR_OTHER, "Wait returned %d, want query_fn's MPI_ERR_OTHER", rc);
    CHECK(s.frees == 1, "free_fn ran %d times after a failed query", s.frees);
    MPI_CHECK(MPI_Grequest_start(query_fn, free_fn, cancel_fn, &s, &two[0]));
    MPI_CHECK(MPI_Grequest_complete(two[0]));
    two[1] = MPI_REQUEST_NULL;
    rc = MPI_Waitall(2, two, sts);
    MPI_Error_class(sts[0].MPI_ERROR, &eclass);
    CHECK(rc == MPI_ERR_IN_STATUS && eclass == MPI_ERR_OTHER, "Waitall returned %d, status error class %d", rc,
          eclass);

    /* Bad input. */
    rc = MPI_Grequest_start(NULL, free_fn, cancel_fn, &s, &rq);
    CHECK(rc != MPI_SUCCESS, "Grequest_start with a NULL query_fn succeeded");
    MPI_CHECK(MPI_Irecv(&y, 1, MPI_INT, mt_rank, 2, MPI_COMM_WORLD, &rq));
    rc = MPI_Grequest_complete(rq);
    MPI_Error_class(rc, &eclass);
    CHECK(eclass == MPI_ERR_REQUEST, "Grequest_complete of a receive: class %d", eclass);
    MPI_CHECK(MPI_Send(&x, 1, MPI_INT, mt_rank, 2, MPI_COMM_WORLD));
    MPI_CHECK(MPI_Wait(&rq, MPI_STATUS_IGNORE));

    return mt_finalize();
}
