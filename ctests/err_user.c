/* oxmpi-test: np=1,2 */
/* User-defined error classes, codes and strings (MPI_Add_error_class/code/
 * string), and user error handlers: MPI_Comm_create_errhandler,
 * MPI_Comm_set_errhandler, MPI_Comm_call_errhandler and a real error on a
 * communicator with the handler attached. */
#include "mtest.h"

static int calls = 0, last_code = 0;
static MPI_Comm last_comm = MPI_COMM_NULL;

static void handler(MPI_Comm *comm, int *code, ...)
{
    calls++;
    last_code = *code;
    last_comm = *comm;
}

int main(int argc, char **argv)
{
    int cls1 = -1, cls2 = -1, code1 = -1, code2 = -1, c = -1, len = -1, rc, buf = 0;
    char msg[MPI_MAX_ERROR_STRING];
    MPI_Errhandler eh, got;
    MPI_Comm dup;

    mt_init(&argc, &argv);

    MPI_CHECK(MPI_Add_error_class(&cls1));
    MPI_CHECK(MPI_Add_error_class(&cls2));
    CHECK(cls1 != cls2, "two new classes are equal (%d)", cls1);
    CHECK(cls1 != MPI_SUCCESS && cls1 != MPI_ERR_OTHER && cls1 != MPI_ERR_UNKNOWN, "new class %d", cls1);
    MPI_CHECK(MPI_Add_error_code(cls1, &code1));
    MPI_CHECK(MPI_Add_error_code(cls1, &code2));
    CHECK(code1 != code2 && code1 != cls1 && code2 != cls2, "codes %d %d classes %d %d", code1, code2, cls1, cls2);
    MPI_CHECK(MPI_Error_class(code1, &c));
    CHECK(c == cls1, "Error_class(code1) %d, want %d", c, cls1);
    MPI_CHECK(MPI_Error_class(code2, &c));
    CHECK(c == cls1, "Error_class(code2) %d, want %d", c, cls1);
    MPI_CHECK(MPI_Error_class(cls2, &c));
    CHECK(c == cls2, "Error_class(cls2) %d, want %d", c, cls2);
    MPI_CHECK(MPI_Add_error_string(cls1, "oxmpi test class one"));
    MPI_CHECK(MPI_Add_error_string(code1, "oxmpi test code one"));
    MPI_CHECK(MPI_Error_string(code1, msg, &len));
    CHECK(strcmp(msg, "oxmpi test code one") == 0 && len == (int)strlen(msg), "string of code1: \"%s\" (%d)", msg,
          len);
    MPI_CHECK(MPI_Error_string(cls1, msg, &len));
    CHECK(strcmp(msg, "oxmpi test class one") == 0, "string of cls1: \"%s\"", msg);
    /* Replacing a string. */
    MPI_CHECK(MPI_Add_error_string(code1, "replaced"));
    MPI_CHECK(MPI_Error_string(code1, msg, &len));
    CHECK(strcmp(msg, "replaced") == 0 && len == 8, "replaced string of code1: \"%s\"", msg);
    /* User handler on a dup of WORLD. */
    MPI_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
    MPI_CHECK(MPI_Comm_create_errhandler(handler, &eh));
    MPI_CHECK(MPI_Comm_set_errhandler(dup, eh));
    MPI_CHECK(MPI_Comm_get_errhandler(dup, &got));
    CHECK(got == eh, "Comm_get_errhandler returned another handler");
    MPI_CHECK(MPI_Errhandler_free(&got));

    rc = MPI_Comm_call_errhandler(dup, code1);
    CHECK(rc == MPI_SUCCESS, "Comm_call_errhandler returned %d", rc);
    CHECK(calls == 1 && last_code == code1, "handler calls %d code %d, want 1 and %d", calls, last_code, code1);
    {
        int res = -1;
        MPI_Comm_compare(last_comm, dup, &res);
        CHECK(res == MPI_IDENT, "handler got another communicator");
    }

    /* A real error on dup goes to the handler, and the call returns the code. */
    rc = MPI_Send(&buf, -1, MPI_INT, 0, 0, dup);
    CHECK(calls == 2, "handler calls after a bad MPI_Send: %d", calls);
    CHECK(rc != MPI_SUCCESS && rc == last_code, "bad MPI_Send returned %d, handler saw %d", rc, last_code);
    MPI_CHECK(MPI_Error_class(last_code, &c));
    CHECK(c == MPI_ERR_COUNT, "handler code class %d, want MPI_ERR_COUNT", c);
    /* WORLD is not affected: still the default handler (a good call works). */
    MPI_CHECK(MPI_Send(&buf, 1, MPI_INT, MPI_PROC_NULL, 0, MPI_COMM_WORLD));
    CHECK(calls == 2, "handler called for WORLD traffic");

    MPI_CHECK(MPI_Errhandler_free(&eh));
    CHECK(eh == MPI_ERRHANDLER_NULL, "Errhandler_free left %d", (int)eh);
    /* The handler stays attached to dup after the free. */
    rc = MPI_Send(&buf, 1, MPI_INT, 0, -5, dup);
    CHECK(calls == 3, "handler not called after Errhandler_free: %d", calls);
    MPI_CHECK(MPI_Error_class(rc, &c));
    CHECK(c == MPI_ERR_TAG, "bad tag class %d", c);
    MPI_CHECK(MPI_Comm_free(&dup));
    return mt_finalize();
}
