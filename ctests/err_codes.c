/* oxmpi-test: np=1,2,8 */
/*
 * Every failure returns a code of its own: MPI_Error_class gives its class,
 * MPI_Error_string the message of that failure (not of a later one of the same
 * class), and MPI_Error_string of a class its generic text, however many
 * failures came before. Old codes keep their class once their message is gone.
 * Codes the program supplies (MPI_Comm_call_errhandler, user codes) reach the
 * handler unchanged. Bad input: values that are no code.
 */
#include "mtest.h"
#include <string.h>

static int handler_code = -1;

static void handler(MPI_Comm *comm, int *code, ...)
{
    (void)comm;
    handler_code = *code;
}

static int class_of(int code)
{
    int cls = -1;
    MPI_CHECK(MPI_Error_class(code, &cls));
    return cls;
}

static void string_of(int code, char *out)
{
    int len = -1;
    MPI_CHECK(MPI_Error_string(code, out, &len));
    CHECK(len == (int)strlen(out), "Error_string length %d for \"%s\"", len, out);
}

int main(int argc, char **argv)
{
    char generic[MPI_MAX_ERROR_STRING], s1[MPI_MAX_ERROR_STRING], s2[MPI_MAX_ERROR_STRING];
    char s[MPI_MAX_ERROR_STRING], want1[32], want2[32];
    int buf = 0, rc1, rc2, rc, i, cls, len, user_class, user_code;
    MPI_Errhandler eh;
    MPI_Comm dup;

    mt_init(&argc, &argv);
    MPI_CHECK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    string_of(MPI_ERR_RANK, generic);

    /* Two failures of one class, with different bad ranks. */
    rc1 = MPI_Send(&buf, 1, MPI_INT, mt_size + 1000, 0, MPI_COMM_WORLD);
    rc2 = MPI_Send(&buf, 1, MPI_INT, -77, 0, MPI_COMM_WORLD);
    CHECK(rc1 != MPI_SUCCESS && rc2 != MPI_SUCCESS, "bad ranks accepted: %d %d", rc1, rc2);
    CHECK(class_of(rc1) == MPI_ERR_RANK && class_of(rc2) == MPI_ERR_RANK, "classes %d %d", class_of(rc1),
          class_of(rc2));
    CHECK(rc1 != rc2, "two failures returned the same code %d", rc1);
    snprintf(want1, sizeof want1, "%d", mt_size + 1000);
    snprintf(want2, sizeof want2, "-77");
    string_of(rc1, s1);
    string_of(rc2, s2);
    CHECK(strstr(s1, want1) != NULL && strstr(s1, want2) == NULL, "string of the first code: \"%s\"", s1);
    CHECK(strstr(s2, want2) != NULL && strstr(s2, want1) == NULL, "string of the second code: \"%s\"", s2);
    string_of(MPI_ERR_RANK, s);
    CHECK(strcmp(s, generic) == 0, "string of MPI_ERR_RANK changed after failures: \"%s\" (was \"%s\")", s, generic);
    CHECK(strstr(s, want1) == NULL && strstr(s, want2) == NULL, "class text names a failure: \"%s\"", s);

    /* Many later failures: the first code keeps its class and never shows a later message. */
    for (i = 0; i < 1000; i++) {
        rc = MPI_Send(&buf, 1, MPI_INT, mt_size + 5000 + i, 0, MPI_COMM_WORLD);
        CHECK(class_of(rc) == MPI_ERR_RANK, "failure %d: class %d", i, class_of(rc));
    }
    CHECK(class_of(rc1) == MPI_ERR_RANK, "old code lost its class: %d", class_of(rc1));
    string_of(rc1, s);
    CHECK(strstr(s, "5999") == NULL && strstr(s, want2) == NULL, "old code shows a later message: \"%s\"", s);
    string_of(MPI_ERR_RANK, s);
    CHECK(strcmp(s, generic) == 0, "string of MPI_ERR_RANK after 1000 failures: \"%s\"", s);

    /* A code of another class. */
    rc = MPI_Send(&buf, -3, MPI_INT, 0, 0, MPI_COMM_WORLD);
    CHECK(class_of(rc) == MPI_ERR_COUNT, "negative count: class %d", class_of(rc));

    /* Supplied codes reach a user handler unchanged; real failures arrive as codes of their class. */
    MPI_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
    MPI_CHECK(MPI_Comm_create_errhandler(handler, &eh));
    MPI_CHECK(MPI_Comm_set_errhandler(dup, eh));
    MPI_CHECK(MPI_Comm_call_errhandler(dup, MPI_ERR_OTHER));
    CHECK(handler_code == MPI_ERR_OTHER, "handler got %d for MPI_ERR_OTHER", handler_code);
    MPI_CHECK(MPI_Comm_call_errhandler(dup, rc1));
    CHECK(handler_code == rc1, "handler got %d for code %d", handler_code, rc1);
    MPI_CHECK(MPI_Add_error_class(&user_class));
    MPI_CHECK(MPI_Add_error_code(user_class, &user_code));
    MPI_CHECK(MPI_Add_error_string(user_code, "a user code"));
    MPI_CHECK(MPI_Comm_call_errhandler(dup, user_code));
    CHECK(handler_code == user_code, "handler got %d for user code %d", handler_code, user_code);
    CHECK(class_of(user_code) == user_class, "user code's class %d, want %d", class_of(user_code), user_class);
    string_of(user_code, s);
    CHECK(strcmp(s, "a user code") == 0, "user code's string \"%s\"", s);
    rc = MPI_Send(&buf, 1, MPI_INT, 0, -5, dup);
    CHECK(class_of(handler_code) == MPI_ERR_TAG && rc == handler_code, "bad tag: handler code %d, returned %d",
          handler_code, rc);
    MPI_CHECK(MPI_Errhandler_free(&eh));
    MPI_CHECK(MPI_Comm_free(&dup));

    /* Bad input: values that are no error code (MPICH 4.0 does not check them: it returns
     * a class for -1 and crashes in MPI_Error_string, hence oxmpi only). */
    if (MT_OXMPI) {
        cls = 12345;
        rc = MPI_Error_class(-1, &cls);
        CHECK(rc != MPI_SUCCESS && cls == 12345, "Error_class(-1) returned %d, class %d", rc, cls);
        rc = MPI_Error_class(MPI_ERR_LASTCODE - 0x100, &cls);
        CHECK(rc != MPI_SUCCESS, "Error_class of a code never returned gave class %d", cls);
        rc = MPI_Error_string(-1, s, &len);
        CHECK(strstr(s, "nknown") != NULL, "Error_string(-1): %d \"%s\"", rc, s);
    }

    return mt_finalize();
}
