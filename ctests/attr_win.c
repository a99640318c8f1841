/* oxmpi-test: np=1,2 */
/*
 * Window keyvals (no window needed): MPI_Win_create_keyval/MPI_Win_free_keyval with the
 * predefined callbacks, keyvals of one kind rejected by the functions of another
 * (MPI_ERR_KEYVAL), predefined window keyvals that cannot be freed, and a keyval freed
 * twice.
 */
#include "mtest.h"

static int error_class(int rc)
{
    int cls = rc;
    if (rc != MPI_SUCCESS)
        MPI_Error_class(rc, &cls);
    return cls;
}

int main(int argc, char **argv)
{
    int kwin, kwin2, kcomm, ktype, stale, rc, flag;
    void *v;
    static char base[4];

    mt_init(&argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_CHECK(MPI_Win_create_keyval(MPI_WIN_NULL_COPY_FN, MPI_WIN_NULL_DELETE_FN, &kwin, NULL));
    MPI_CHECK(MPI_Win_create_keyval(MPI_WIN_DUP_FN, MPI_WIN_NULL_DELETE_FN, &kwin2, base));
    MPI_CHECK(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, MPI_COMM_NULL_DELETE_FN, &kcomm, NULL));
    MPI_CHECK(MPI_Type_create_keyval(MPI_TYPE_NULL_COPY_FN, MPI_TYPE_NULL_DELETE_FN, &ktype, NULL));
    CHECK(kwin != kwin2 && kwin != kcomm && kwin != ktype && kwin != MPI_KEYVAL_INVALID, "keyvals 0x%x 0x%x 0x%x 0x%x",
          kwin, kwin2, kcomm, ktype);

    /* A window keyval is not a communicator or datatype keyval, and the other way round. */
    rc = MPI_Comm_set_attr(MPI_COMM_WORLD, kwin, base);
    CHECK(error_class(rc) == MPI_ERR_KEYVAL, "window keyval on a communicator: class %d", error_class(rc));
    rc = MPI_Comm_get_attr(MPI_COMM_WORLD, kwin, &v, &flag);
    CHECK(error_class(rc) == MPI_ERR_KEYVAL, "window keyval in MPI_Comm_get_attr: class %d", error_class(rc));
    rc = MPI_Type_set_attr(MPI_INT, kwin, base);
    CHECK(error_class(rc) == MPI_ERR_KEYVAL, "window keyval on a datatype: class %d", error_class(rc));
    rc = MPI_Win_free_keyval(&kcomm);
    CHECK(error_class(rc) == MPI_ERR_KEYVAL, "MPI_Win_free_keyval of a communicator keyval: class %d",
          error_class(rc));
    rc = MPI_Win_free_keyval(&ktype);
    CHECK(error_class(rc) == MPI_ERR_KEYVAL, "MPI_Win_free_keyval of a datatype keyval: class %d", error_class(rc));
    rc = MPI_Comm_free_keyval(&kwin);
    CHECK(error_class(rc) == MPI_ERR_KEYVAL, "MPI_Comm_free_keyval of a window keyval: class %d", error_class(rc));

    /* Freeing: the handle is reset; a second free of the same keyval is an error. */
    stale = kwin;
    MPI_CHECK(MPI_Win_free_keyval(&kwin));
    CHECK(kwin == MPI_KEYVAL_INVALID, "freed keyval not reset (0x%x)", kwin);
    rc = MPI_Win_free_keyval(&kwin);
    CHECK(error_class(rc) == MPI_ERR_KEYVAL, "MPI_Win_free_keyval(MPI_KEYVAL_INVALID): class %d", error_class(rc));
    /* MPICH 4.0.2 does not notice a stale keyval handle. */
    rc = MPI_Win_free_keyval(&stale);
    CHECK_STRICT(error_class(rc) == MPI_ERR_KEYVAL, "double free: class %d", error_class(rc));

    MPI_CHECK(MPI_Win_free_keyval(&kwin2));
    MPI_CHECK(MPI_Comm_free_keyval(&kcomm));
    MPI_CHECK(MPI_Type_free_keyval(&ktype));
    return mt_finalize();
}
