/* oxmpi-test: np=1,2,4,8 */
/*
 * Sessions beside the world model: a session opened before MPI_Init and one after it,
 * MPI_Initialized/MPI_Finalized describing the world model only, a communicator from the
 * mpi://WORLD group congruent with MPI_COMM_WORLD, bad input (unknown process set, null
 * session, a session used after MPI_Session_finalize, null group or tag), session error
 * handlers, and a session that outlives MPI_Finalize.
 */
#include "mtest.h"

static int handler_calls = 0, handler_code = 0;
static void session_handler(MPI_Session *s, int *code, ...)
{
    (void)s;
    handler_calls++;
    handler_code = *code;
}

static int error_class(int rc)
{
    int cls = rc;
    if (rc != MPI_SUCCESS)
        MPI_Error_class(rc, &cls);
    return cls;
}

int main(int argc, char **argv)
{
    MPI_Session before, after, stale;
    MPI_Group g, g2;
    MPI_Comm comm, late;
    MPI_Errhandler eh, got;
    MPI_Info info;
    int flag = -1, rc, result, n, sum = 0, total = 0;

    MPI_CHECK(MPI_Session_init(MPI_INFO_NULL, MPI_ERRORS_RETURN, &before));
    MPI_Initialized(&flag);
    CHECK(flag == 0, "MPI_Initialized %d with a session only", flag);
    mt_init(&argc, &argv);
    MPI_Initialized(&flag);
    CHECK(flag == 1, "MPI_Initialized %d after MPI_Init", flag);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_CHECK(MPI_Session_init(MPI_INFO_NULL, MPI_ERRORS_RETURN, &after));

    /* mpi://WORLD from either session gives MPI_COMM_WORLD's group. */
    MPI_CHECK(MPI_Group_from_session_pset(before, "mpi://WORLD", &g));
    MPI_CHECK(MPI_Comm_group(MPI_COMM_WORLD, &g2));
    MPI_CHECK(MPI_Group_compare(g, g2, &result));
    CHECK(result == MPI_IDENT, "mpi://WORLD group compares %d to the world group", result);
    MPI_CHECK(MPI_Group_free(&g2));
    MPI_CHECK(MPI_Comm_create_from_group(g, "org.oxmpi.session_world", MPI_INFO_NULL, MPI_ERRORS_RETURN, &comm));
    MPI_CHECK(MPI_Comm_compare(comm, MPI_COMM_WORLD, &result));
    CHECK(result == MPI_CONGRUENT, "new communicator compares %d to MPI_COMM_WORLD", result);
    MPI_CHECK(MPI_Allreduce(&mt_rank, &sum, 1, MPI_INT, MPI_SUM, comm));
    CHECK(sum == mt_size * (mt_size - 1) / 2, "allreduce gave %d", sum);
    /* The communicator's error handler is the one given at creation. */
    MPI_CHECK(MPI_Comm_get_errhandler(comm, &got));
    CHECK(got == MPI_ERRORS_RETURN, "communicator handler 0x%x", got);
    MPI_Errhandler_free(&got);

    /* Bad input (MPI_COMM_WORLD and the sessions return errors). */
    rc = MPI_Group_from_session_pset(after, "mpi://nowhere", &g2);
    CHECK(error_class(rc) == MPI_ERR_ARG, "unknown process set: class %d", error_class(rc));
    rc = MPI_Session_get_num_psets(MPI_SESSION_NULL, MPI_INFO_NULL, &n);
    CHECK(rc != MPI_SUCCESS, "MPI_SESSION_NULL accepted");
    CHECK_STRICT(error_class(rc) == MPI_ERR_SESSION, "MPI_SESSION_NULL: class %d", error_class(rc));
    rc = MPI_Comm_create_from_group(MPI_GROUP_NULL, "x", MPI_INFO_NULL, MPI_ERRORS_RETURN, &late);
    CHECK(rc != MPI_SUCCESS, "MPI_GROUP_NULL accepted");
    CHECK_STRICT(error_class(rc) == MPI_ERR_GROUP, "MPI_GROUP_NULL: class %d", error_class(rc));

    /* Session error handlers: MPICH 4.0.2 ignores them (it reports MPI_ERRORS_ARE_FATAL and
     * uses MPI_COMM_WORLD's), so the calls they catch run on oxmpi only. */
    MPI_CHECK(MPI_Session_create_errhandler(session_handler, &eh));
    MPI_CHECK(MPI_Session_set_errhandler(after, eh));
    MPI_CHECK(MPI_Session_get_errhandler(after, &got));
    CHECK_STRICT(got == eh, "session handler 0x%x, set 0x%x", got, eh);
    MPI_Errhandler_free(&got);
    MPI_CHECK(MPI_Errhandler_free(&eh));
    if (MT_OXMPI) {
        rc = MPI_Session_call_errhandler(after, MPI_ERR_OTHER);
        CHECK(handler_calls == 1 && handler_code == MPI_ERR_OTHER, "handler calls %d, code %d", handler_calls,
              handler_code);
        rc = MPI_Session_get_pset_info(after, "mpi://nowhere", &info);
        CHECK(handler_calls == 2 && error_class(handler_code) == MPI_ERR_ARG, "handler calls %d, code %d",
              handler_calls, handler_code);
    }

    /* A finalized session is no longer usable. */
    stale = after;
    MPI_CHECK(MPI_Session_finalize(&after));
    CHECK(after == MPI_SESSION_NULL, "MPI_Session_finalize left 0x%x", after);
    rc = MPI_Session_get_num_psets(stale, MPI_INFO_NULL, &n);
    /* MPICH 4.0.2 does not notice the stale handle. */
    CHECK_STRICT(error_class(rc) == MPI_ERR_SESSION, "finalized session: class %d", error_class(rc));

    MPI_CHECK(MPI_Comm_free(&comm));
    MPI_CHECK(MPI_Allreduce(&mt_errs, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    mt_errs = total;
    MPI_Finalize();

    /* The world model is over; the first session still works. */
    MPI_Finalized(&flag);
    CHECK(flag == 1, "MPI_Finalized %d after MPI_Finalize", flag);
    MPI_CHECK(MPI_Comm_create_from_group(g, "org.oxmpi.session_world.late", MPI_INFO_NULL, MPI_ERRORS_RETURN,
                                         &late));
    sum = 0;
    MPI_CHECK(MPI_Allreduce(&mt_rank, &sum, 1, MPI_INT, MPI_SUM, late));
    CHECK(sum == mt_size * (mt_size - 1) / 2, "allreduce after MPI_Finalize gave %d", sum);
    MPI_CHECK(MPI_Allreduce(&mt_errs, &total, 1, MPI_INT, MPI_MAX, late));
    MPI_CHECK(MPI_Comm_free(&late));
    MPI_CHECK(MPI_Group_free(&g));
    MPI_CHECK(MPI_Session_finalize(&before));
    if (mt_rank == 0) {
        if (total == 0 && mt_errs == 0)
            printf("No Errors\n");
        else
            printf(" Found %d errors\n", total > mt_errs ? total : mt_errs);
    }
    return total || mt_errs;
}
