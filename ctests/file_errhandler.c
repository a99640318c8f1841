/* oxmpi-test: np=1,2 */
/*
 * File error handlers on MPI_FILE_NULL (the default handler of files): MPI_ERRORS_RETURN by
 * default; MPI_File_create_errhandler, MPI_File_set_errhandler / get / call with a user
 * handler that gets the file and the code; errors of MPI_File_open going to it; and bad
 * input.
 */
#include "mtest.h"

static int calls = 0, last_code = MPI_SUCCESS;
static MPI_File last_file = (MPI_File)1;

static void file_handler(MPI_File *fh, int *code, ...)
{
    calls++;
    last_file = *fh;
    last_code = *code;
}

static void win_handler(MPI_Win *win, int *code, ...)
{
    (void)win;
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
    int rc;
    MPI_Errhandler eh, got, weh;
    MPI_File fh;

    mt_init(&argc, &argv);

    MPI_CHECK(MPI_File_get_errhandler(MPI_FILE_NULL, &got));
    CHECK(got == MPI_ERRORS_RETURN, "default file handler 0x%x", (unsigned)got);
    MPI_Errhandler_free(&got);
    rc = MPI_File_call_errhandler(MPI_FILE_NULL, MPI_ERR_IO);
    CHECK(rc == MPI_SUCCESS, "MPI_File_call_errhandler with MPI_ERRORS_RETURN returned %d", rc);

    /* A file that cannot be opened: the error comes back (MPI_ERRORS_RETURN). */
    rc = MPI_File_open(MPI_COMM_WORLD, "/nonexistent-dir-oxmpi/x", MPI_MODE_RDONLY, MPI_INFO_NULL, &fh);
    CHECK(rc != MPI_SUCCESS, "MPI_File_open of a missing file succeeded");

    MPI_CHECK(MPI_File_create_errhandler(file_handler, &eh));
    MPI_CHECK(MPI_File_set_errhandler(MPI_FILE_NULL, eh));
    MPI_CHECK(MPI_Errhandler_free(&eh));
    MPI_CHECK(MPI_File_get_errhandler(MPI_FILE_NULL, &got));
    CHECK(got != MPI_ERRORS_RETURN && got != MPI_ERRORS_ARE_FATAL, "user handler not returned");
    MPI_Errhandler_free(&got);
    MPI_CHECK(MPI_File_call_errhandler(MPI_FILE_NULL, MPI_ERR_IO));
    CHECK(calls == 1 && last_file == MPI_FILE_NULL && last_code == MPI_ERR_IO, "%d calls, code %d", calls,
          last_code);
    rc = MPI_File_open(MPI_COMM_WORLD, "/nonexistent-dir-oxmpi/x", MPI_MODE_RDONLY, MPI_INFO_NULL, &fh);
    CHECK(rc != MPI_SUCCESS && calls == 2 && last_code == rc, "MPI_File_open error: rc %d, %d calls", rc, calls);

    /* A window handler does not go on files. */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_CHECK(MPI_Win_create_errhandler(win_handler, &weh));
    rc = MPI_File_set_errhandler(MPI_FILE_NULL, weh);
    CHECK(rc != MPI_SUCCESS && calls == 2, "window handler accepted on a file (%d calls)", calls);
    MPI_Errhandler_free(&weh);
    rc = MPI_File_create_errhandler(NULL, &eh);
    CHECK(rc != MPI_SUCCESS, "null handler function accepted");

    /* Back to the default. */
    MPI_CHECK(MPI_File_set_errhandler(MPI_FILE_NULL, MPI_ERRORS_RETURN));
    rc = MPI_File_call_errhandler(MPI_FILE_NULL, MPI_ERR_IO);
    CHECK(rc == MPI_SUCCESS && calls == 2, "handler still called (%d calls)", calls);
    /* A bogus file handle (MPICH 4.0.2 does not check it); the error goes to
     * MPI_COMM_WORLD's handler, which returns it. */
    rc = MPI_File_get_errhandler((MPI_File)&calls, &got);
    CHECK_STRICT(error_class(rc) == MPI_ERR_FILE && calls == 2, "invalid file: class %d", error_class(rc));
    return mt_finalize();
}
