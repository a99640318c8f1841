/* oxmpi-test: np=1,2 */
/* With MPI_ERRORS_RETURN on MPI_COMM_WORLD (and MPI_COMM_SELF), each kind of
 * bad argument returns an error of the right class, MPI_Error_string gives a
 * nonempty message, and the library still works afterwards. */
#include "mtest.h"

static void expect_class(const char *what, int rc, int want)
{
    int cls = -1, len = -1;
    char msg[MPI_MAX_ERROR_STRING];
    CHECK(rc != MPI_SUCCESS, "%s: returned MPI_SUCCESS", what);
    if (rc == MPI_SUCCESS)
        return;
    MPI_CHECK(MPI_Error_class(rc, &cls));
    CHECK(cls == want, "%s: error class %d, want %d (%s)", what, cls, want, mt_errstr(rc));
    msg[0] = 0;
    MPI_CHECK(MPI_Error_string(rc, msg, &len));
    CHECK(len > 0 && (size_t)len == strlen(msg), "%s: error string length %d (\"%s\")", what, len, msg);
}

int main(int argc, char **argv)
{
    int buf[4] = {0, 1, 2, 3}, flag, eh_is_return;
    MPI_Request rq = MPI_REQUEST_NULL;
    MPI_Status st;
    MPI_Errhandler eh;

    mt_init(&argc, &argv);
    MPI_CHECK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    MPI_CHECK(MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN));
    MPI_CHECK(MPI_Comm_get_errhandler(MPI_COMM_WORLD, &eh));
    eh_is_return = (eh == MPI_ERRORS_RETURN);
    CHECK(eh_is_return, "Comm_get_errhandler did not return MPI_ERRORS_RETURN");
    MPI_CHECK(MPI_Errhandler_free(&eh));

    expect_class("Send count -1", MPI_Send(buf, -1, MPI_INT, 0, 0, MPI_COMM_WORLD), MPI_ERR_COUNT);
    expect_class("Recv count -1", MPI_Recv(buf, -1, MPI_INT, 0, 0, MPI_COMM_WORLD, &st), MPI_ERR_COUNT);
    expect_class("Isend count -1", MPI_Isend(buf, -1, MPI_INT, 0, 0, MPI_COMM_WORLD, &rq), MPI_ERR_COUNT);
    expect_class("Send rank size", MPI_Send(buf, 1, MPI_INT, mt_size, 0, MPI_COMM_WORLD), MPI_ERR_RANK);
    expect_class("Send rank -7", MPI_Send(buf, 1, MPI_INT, -7, 0, MPI_COMM_WORLD), MPI_ERR_RANK);
    expect_class("Recv rank size+3", MPI_Recv(buf, 1, MPI_INT, mt_size + 3, 0, MPI_COMM_WORLD, &st), MPI_ERR_RANK);
    expect_class("Irecv rank size", MPI_Irecv(buf, 1, MPI_INT, mt_size, 0, MPI_COMM_WORLD, &rq), MPI_ERR_RANK);
    expect_class("Send tag -5", MPI_Send(buf, 1, MPI_INT, 0, -5, MPI_COMM_WORLD), MPI_ERR_TAG);
    expect_class("Send tag ANY_TAG", MPI_Send(buf, 1, MPI_INT, 0, MPI_ANY_TAG, MPI_COMM_WORLD), MPI_ERR_TAG);
    expect_class("Recv tag -5", MPI_Recv(buf, 1, MPI_INT, 0, -5, MPI_COMM_WORLD, &st), MPI_ERR_TAG);
    {
        int *ub = NULL;
        flag = 0;
        MPI_CHECK(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &ub, &flag));
        CHECK(flag && ub && *ub >= 32767, "MPI_TAG_UB attribute: flag %d value %d", flag, ub ? *ub : -1);
        if (flag && ub && *ub < 0x7fffffff)
            expect_class("Send tag TAG_UB+1", MPI_Send(buf, 1, MPI_INT, 0, *ub + 1, MPI_COMM_WORLD), MPI_ERR_TAG);
    }
    expect_class("Send DATATYPE_NULL", MPI_Send(buf, 1, MPI_DATATYPE_NULL, 0, 0, MPI_COMM_WORLD), MPI_ERR_TYPE);
    expect_class("Recv DATATYPE_NULL", MPI_Recv(buf, 1, MPI_DATATYPE_NULL, 0, 0, MPI_COMM_WORLD, &st), MPI_ERR_TYPE);
    expect_class("Send COMM_NULL", MPI_Send(buf, 1, MPI_INT, 0, 0, MPI_COMM_NULL), MPI_ERR_COMM);
    expect_class("Recv COMM_NULL", MPI_Recv(buf, 1, MPI_INT, 0, 0, MPI_COMM_NULL, &st), MPI_ERR_COMM);
    expect_class("Comm_size COMM_NULL", MPI_Comm_size(MPI_COMM_NULL, &flag), MPI_ERR_COMM);
    expect_class("Comm_rank COMM_NULL", MPI_Comm_rank(MPI_COMM_NULL, &flag), MPI_ERR_COMM);
    expect_class("Send NULL buffer", MPI_Send(NULL, 4, MPI_INT, 0, 0, MPI_COMM_WORLD), MPI_ERR_BUFFER);
    expect_class("Recv NULL buffer", MPI_Recv(NULL, 4, MPI_INT, 0, 0, MPI_COMM_WORLD, &st), MPI_ERR_BUFFER);
    rq = MPI_REQUEST_NULL;
    expect_class("Start(REQUEST_NULL)", MPI_Start(&rq), MPI_ERR_REQUEST);
    rq = MPI_REQUEST_NULL;
    expect_class("Request_free(REQUEST_NULL)", MPI_Request_free(&rq), MPI_ERR_REQUEST);

    /* A NULL buffer with count 0 is fine, as is MPI_PROC_NULL with any tag >= 0. */
    MPI_CHECK(MPI_Sendrecv(NULL, 0, MPI_INT, mt_rank, 1, NULL, 0, MPI_INT, mt_rank, 1, MPI_COMM_WORLD, &st));
    MPI_CHECK(MPI_Send(buf, 1, MPI_INT, MPI_PROC_NULL, 12345, MPI_COMM_WORLD));

    /* Error strings for every predefined class are nonempty; classes map to themselves. */
    {
        int classes[] = {MPI_SUCCESS, MPI_ERR_BUFFER, MPI_ERR_COUNT, MPI_ERR_TYPE, MPI_ERR_TAG, MPI_ERR_COMM,
                         MPI_ERR_RANK, MPI_ERR_REQUEST, MPI_ERR_TRUNCATE, MPI_ERR_OTHER, MPI_ERR_INTERN,
                         MPI_ERR_IN_STATUS, MPI_ERR_PENDING, MPI_ERR_ARG, MPI_ERR_UNKNOWN};
        int i, n = (int)(sizeof classes / sizeof classes[0]), cls, len;
        char msg[MPI_MAX_ERROR_STRING];
        for (i = 0; i < n; i++) {
            cls = -1;
            MPI_CHECK(MPI_Error_class(classes[i], &cls));
            CHECK(cls == classes[i], "Error_class(%d) = %d", classes[i], cls);
            len = -1;
            msg[0] = 0;
            MPI_CHECK(MPI_Error_string(classes[i], msg, &len));
            CHECK(len > 0 && len < MPI_MAX_ERROR_STRING && (size_t)len == strlen(msg),
                  "Error_string(%d): len %d", classes[i], len);
        }
        CHECK(MPI_ERR_LASTCODE >= MPI_ERR_UNKNOWN, "MPI_ERR_LASTCODE %d", MPI_ERR_LASTCODE);
    }

    /* Still working: a message to self. */
    {
        int v = -1, w = 55;
        MPI_CHECK(MPI_Sendrecv(&w, 1, MPI_INT, mt_rank, 2, &v, 1, MPI_INT, mt_rank, 2, MPI_COMM_WORLD, &st));
        CHECK(v == 55, "self message after errors: %d", v);
    }
    mt_barrier();
    return mt_finalize();
}
