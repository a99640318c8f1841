/* oxmpi-test: np=1,2,8 expect-exit=nonzero oxmpi-strict=exit,output expect-stderr="MPI_Put" max-wall=20 */
/*
 * The handler an object reports is the handler its errors go to. With
 * MPI_COMM_WORLD returning errors: a communicator made from it reports
 * MPI_ERRORS_RETURN and returns errors; a new file reports MPI_FILE_NULL's
 * handler (MPI_ERRORS_RETURN) and returns errors; a new window reports
 * MPI_ERRORS_ARE_FATAL, the standard's default for windows, so an error on it
 * ends the job (the expected non-zero exit). MPICH 4.0 reports
 * MPI_ERRORS_ARE_FATAL for the window but returns the error (hence
 * oxmpi-strict): then this program prints " Found 1 errors".
 */
#include "mtest.h"
#include <unistd.h>

int main(int argc, char **argv)
{
    int buf = 0, rc, flag;
    char path[64];
    MPI_Errhandler got;
    MPI_Comm dup;
    MPI_File fh;
    MPI_Win win;

    mt_init(&argc, &argv);
    MPI_CHECK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));

    MPI_CHECK(MPI_Comm_split(MPI_COMM_WORLD, mt_rank % 2, 0, &dup));
    MPI_CHECK(MPI_Comm_get_errhandler(dup, &got));
    CHECK(got == MPI_ERRORS_RETURN, "split of WORLD reports handler 0x%x", (unsigned)got);
    rc = MPI_Send(&buf, 1, MPI_INT, -5, 0, dup);
    CHECK(rc != MPI_SUCCESS, "error on the split communicator not returned");
    MPI_CHECK(MPI_Comm_free(&dup));

    snprintf(path, sizeof path, "/tmp/oxmpi-errh-%d", (int)getpid());
    MPI_CHECK(MPI_File_open(MPI_COMM_SELF, path, MPI_MODE_CREATE | MPI_MODE_RDWR | MPI_MODE_DELETE_ON_CLOSE,
                            MPI_INFO_NULL, &fh));
    MPI_CHECK(MPI_File_get_errhandler(fh, &got));
    CHECK(got == MPI_ERRORS_RETURN, "new file reports handler 0x%x", (unsigned)got);
    rc = MPI_File_seek(fh, -1, MPI_SEEK_SET);
    CHECK(rc != MPI_SUCCESS, "error on the file not returned");
    MPI_CHECK(MPI_File_close(&fh));

    MPI_CHECK(MPI_Win_create(&buf, sizeof buf, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    MPI_CHECK(MPI_Win_get_errhandler(win, &got));
    CHECK(got == MPI_ERRORS_ARE_FATAL, "new window reports handler 0x%x", (unsigned)got);
    MPI_CHECK(MPI_Initialized(&flag));
    /* Outside any epoch, to a rank that does not exist: must end the job. */
    rc = MPI_Put(&buf, 1, MPI_INT, mt_size + 3, 0, 1, MPI_INT, win);
    CHECK(0, "error on a window whose handler is MPI_ERRORS_ARE_FATAL returned %d", rc);
    MPI_Win_free(&win);
    return mt_finalize();
}
