/* oxmpi-test: np=1,2,4,8 */
/*
 * Window error handlers: the default (MPI_ERRORS_ARE_FATAL), MPI_Win_set_errhandler /
 * MPI_Win_get_errhandler / MPI_Win_call_errhandler with MPI_ERRORS_RETURN and with a user
 * handler (called with the window and the code), errors of window functions going to the
 * window's handler and not to the communicator's, one-sided communication reporting
 * its errors through it (oxmpi only), and bad input.
 */
#include "mtest.h"

static int calls = 0, last_code = MPI_SUCCESS;
static MPI_Win last_win = MPI_WIN_NULL;

static void win_handler(MPI_Win *win, int *code, ...)
{
    calls++;
    last_win = *win;
    last_code = *code;
}

static void comm_handler(MPI_Comm *comm, int *code, ...)
{
    (void)comm;
    (void)code;
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
    int buf[4], rc, cls;
    MPI_Win win;
    MPI_Errhandler eh, got, ceh;

    mt_init(&argc, &argv);
    MPI_CHECK(MPI_Win_create(buf, sizeof buf, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win));

    /* The default handler of a window. */
    MPI_CHECK(MPI_Win_get_errhandler(win, &got));
    CHECK(got == MPI_ERRORS_ARE_FATAL, "default window handler 0x%x", (unsigned)got);
    MPI_Errhandler_free(&got);

    /* MPI_ERRORS_RETURN: errors come back as codes; the communicator's handler (fatal) is
     * not involved. */
    MPI_CHECK(MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN));
    MPI_CHECK(MPI_Win_get_errhandler(win, &got));
    CHECK(got == MPI_ERRORS_RETURN, "handler 0x%x after setting MPI_ERRORS_RETURN", (unsigned)got);
    MPI_CHECK(MPI_Win_set_attr(win, MPI_WIN_SIZE, NULL) != MPI_SUCCESS ? MPI_SUCCESS : MPI_ERR_OTHER);
    rc = MPI_Win_set_name(win, NULL);
    CHECK(rc != MPI_SUCCESS, "MPI_Win_set_name(NULL) succeeded");
    rc = MPI_Win_call_errhandler(win, MPI_ERR_OTHER);
    CHECK(rc == MPI_SUCCESS, "MPI_Win_call_errhandler with MPI_ERRORS_RETURN returned %d", rc);
#if MT_OXMPI
    /* Errors of one-sided operations come back through the window's handler too. */
    rc = MPI_Put(buf, 1, MPI_INT, 0, 0, 1, MPI_INT, win);
    CHECK(error_class(rc) == MPI_ERR_RMA_SYNC, "MPI_Put outside an epoch: class %d", error_class(rc));
    rc = MPI_Win_unlock(0, win);
    CHECK(error_class(rc) == MPI_ERR_RMA_SYNC, "MPI_Win_unlock without a lock: class %d", error_class(rc));
#endif

    /* A user handler gets the window and the code. */
    MPI_CHECK(MPI_Win_create_errhandler(win_handler, &eh));
    MPI_CHECK(MPI_Win_set_errhandler(win, eh));
    MPI_CHECK(MPI_Errhandler_free(&eh)); /* the window keeps it alive */
    MPI_CHECK(MPI_Win_get_errhandler(win, &got));
    CHECK(got != MPI_ERRORS_RETURN && got != MPI_ERRORS_ARE_FATAL, "user handler not returned");
    MPI_CHECK(MPI_Win_call_errhandler(win, MPI_ERR_RMA_SYNC));
    CHECK(calls == 1 && last_win == win && last_code == MPI_ERR_RMA_SYNC, "call_errhandler: %d calls, code %d",
          calls, last_code);
    rc = MPI_Win_set_attr(win, MPI_KEYVAL_INVALID, NULL);
    CHECK(calls == 2 && last_win == win, "error of MPI_Win_set_attr: %d calls", calls);
    MPI_Error_class(last_code, &cls);
    CHECK(cls == MPI_ERR_KEYVAL && rc == last_code, "handler code %d class %d, returned %d", last_code, cls, rc);
    /* A communicator handler does not go on a window (the error goes to the window's
     * handler). */
    MPI_CHECK(MPI_Comm_create_errhandler(comm_handler, &ceh));
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    rc = MPI_Win_set_errhandler(win, ceh);
    CHECK(calls == 3 && last_code == rc, "error of MPI_Win_set_errhandler: %d calls", calls);
    MPI_CHECK(MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN));
    CHECK(error_class(rc) == MPI_ERR_ARG, "communicator handler on a window: class %d", error_class(rc));
    rc = MPI_Win_set_errhandler(win, MPI_ERRHANDLER_NULL);
    CHECK(rc != MPI_SUCCESS, "MPI_ERRHANDLER_NULL accepted");
    MPI_Errhandler_free(&ceh);
    rc = MPI_Win_create_errhandler(NULL, &eh);
    CHECK(rc != MPI_SUCCESS, "null handler function accepted");
    /* Errors on an invalid window go to MPI_COMM_WORLD's handler (MPI_ERRORS_RETURN now). */
    rc = MPI_Win_call_errhandler(MPI_WIN_NULL, MPI_ERR_OTHER);
    CHECK(error_class(rc) == MPI_ERR_WIN, "MPI_Win_call_errhandler(MPI_WIN_NULL): class %d", error_class(rc));
    rc = MPI_Win_get_errhandler(MPI_WIN_NULL, &got);
    CHECK(error_class(rc) == MPI_ERR_WIN, "MPI_Win_get_errhandler(MPI_WIN_NULL): class %d", error_class(rc));
    CHECK(calls == 3, "window handler called for errors of other objects (%d calls)", calls);

    MPI_Errhandler_free(&got);
    MPI_CHECK(MPI_Win_free(&win));
    return mt_finalize();
}
