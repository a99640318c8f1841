/* oxmpi-test: np=1 */
/* Bad datatype arguments with MPI_ERRORS_RETURN: the error classes MPICH returns. */
#include "mtest.h"

static void expect(int rc, int cls_want, const char *what)
{
    int cls = -1;
    if (rc == MPI_SUCCESS) {
        CHECK(0, "%s succeeded, want class %d", what, cls_want);
        return;
    }
    MPI_Error_class(rc, &cls);
    CHECK(cls == cls_want, "%s: class %d, want %d", what, cls, cls_want);
}

int main(int argc, char **argv)
{
    MPI_Datatype t, u;
    int buf[16] = {0}, bl[2] = {1, -1}, dp[2] = {0, 4}, sz;
    mt_init(&argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);

    expect(MPI_Type_contiguous(-1, MPI_INT, &t), MPI_ERR_COUNT, "contiguous count -1");
    expect(MPI_Type_vector(-2, 1, 3, MPI_INT, &t), MPI_ERR_COUNT, "vector count -2");
    expect(MPI_Type_vector(2, -1, 3, MPI_INT, &t), MPI_ERR_COUNT, "vector blocklength -1");
    expect(MPI_Type_indexed(2, bl, dp, MPI_INT, &t), MPI_ERR_COUNT, "indexed blocklength -1");
    expect(MPI_Type_contiguous(2, MPI_DATATYPE_NULL, &t), MPI_ERR_TYPE, "contiguous of MPI_DATATYPE_NULL");
    expect(MPI_Type_size(MPI_DATATYPE_NULL, &sz), MPI_ERR_TYPE, "size of MPI_DATATYPE_NULL");
    t = MPI_INT;
    expect(MPI_Type_free(&t), MPI_ERR_TYPE, "free MPI_INT");
    t = MPI_DOUBLE_INT;
    expect(MPI_Type_free(&t), MPI_ERR_TYPE, "free MPI_DOUBLE_INT");
    expect(MPI_Type_match_size(MPI_TYPECLASS_INTEGER, 3, &t), MPI_ERR_ARG, "match_size integer 3");
    expect(MPI_Type_get_contents(MPI_INT, 0, 0, 0, NULL, NULL, NULL), MPI_ERR_TYPE, "contents of a named type");

    /* Uncommitted types cannot communicate or pack. */
    MPI_CHECK(MPI_Type_contiguous(2, MPI_INT, &t));
    expect(MPI_Send(buf, 1, t, 0, 0, MPI_COMM_WORLD), MPI_ERR_TYPE, "send with an uncommitted type");
    {
        char out[64];
        int pos = 0;
        expect(MPI_Pack(buf, 1, t, out, 64, &pos, MPI_COMM_WORLD), MPI_ERR_TYPE, "pack with an uncommitted type");
    }
    /* ... but can be queried and used to build other types. */
    MPI_CHECK(MPI_Type_size(t, &sz));
    CHECK(sz == 8, "size of uncommitted type %d", sz);
    MPI_CHECK(MPI_Type_vector(2, 1, 2, t, &u));
    MPI_CHECK(MPI_Type_commit(&u));
    {
        MPI_Request rq;
        int got[8] = {0};
        buf[0] = 1, buf[1] = 2, buf[4] = 3, buf[5] = 4;
        MPI_CHECK(MPI_Irecv(got, 4, MPI_INT, 0, 3, MPI_COMM_WORLD, &rq));
        MPI_CHECK(MPI_Send(buf, 1, u, 0, 3, MPI_COMM_WORLD));
        MPI_CHECK(MPI_Wait(&rq, MPI_STATUS_IGNORE));
        CHECK(got[0] == 1 && got[1] == 2 && got[2] == 3 && got[3] == 4, "self send of vector of uncommitted");
    }
    MPI_CHECK(MPI_Type_free(&u));
    MPI_CHECK(MPI_Type_free(&t));
    return mt_finalize();
}
