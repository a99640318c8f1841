/* oxmpi-test: np=1,2,4,8 */
/* Environment: MPI_Initialized/MPI_Finalized before and after, versions,
 * processor name, MPI_Wtime/MPI_Wtick, MPI_Query_thread, MPI_Is_thread_main. */
#include "mtest.h"
#include <unistd.h>

int main(int argc, char **argv)
{
    int flag = -1, major = -1, minor = -1, len = -1, level = -1, ismain = -1, i;
    char lib[MPI_MAX_LIBRARY_VERSION_STRING + 1];
    char proc[MPI_MAX_PROCESSOR_NAME + 1];
    double t0, t1, tick;
    int pre_errs = 0;

    /* Allowed before MPI_Init. */
    if (MPI_Initialized(&flag) != MPI_SUCCESS || flag != 0)
        pre_errs++;
    flag = -1;
    if (MPI_Finalized(&flag) != MPI_SUCCESS || flag != 0)
        pre_errs++;
    if (MPI_Get_version(&major, &minor) != MPI_SUCCESS || major != 4 || minor != 0)
        pre_errs++;
    len = -1;
    lib[0] = 0;
    if (MPI_Get_library_version(lib, &len) != MPI_SUCCESS || len <= 0 || (size_t)len != strlen(lib))
        pre_errs++;

    mt_init(&argc, &argv);
    CHECK(pre_errs == 0, "%d errors in calls made before MPI_Init", pre_errs);

    flag = -1;
    MPI_CHECK(MPI_Initialized(&flag));
    CHECK(flag == 1, "MPI_Initialized after MPI_Init gave %d", flag);
    flag = -1;
    MPI_CHECK(MPI_Finalized(&flag));
    CHECK(flag == 0, "MPI_Finalized before MPI_Finalize gave %d", flag);

    MPI_CHECK(MPI_Get_version(&major, &minor));
    CHECK(major == MPI_VERSION && minor == MPI_SUBVERSION, "version %d.%d vs header %d.%d", major, minor,
          MPI_VERSION, MPI_SUBVERSION);
    CHECK(major == 4 && minor == 0, "MPI_Get_version gave %d.%d, want 4.0", major, minor);

    memset(lib, 'x', sizeof lib);
    len = -1;
    MPI_CHECK(MPI_Get_library_version(lib, &len));
    CHECK(len > 0 && len < MPI_MAX_LIBRARY_VERSION_STRING, "library version length %d", len);
    CHECK(len >= 0 && len < (int)sizeof lib && lib[len] == 0, "library version not NUL-terminated at %d", len);
    CHECK(len >= 0 && (size_t)len == strnlen(lib, sizeof lib), "resultlen %d != strlen %zu", len,
          strnlen(lib, sizeof lib));

    memset(proc, 'x', sizeof proc);
    len = -1;
    MPI_CHECK(MPI_Get_processor_name(proc, &len));
    CHECK(len > 0 && len < MPI_MAX_PROCESSOR_NAME, "processor name length %d", len);
    CHECK(len >= 0 && len < (int)sizeof proc && proc[len] == 0, "processor name not NUL-terminated");
    CHECK(len >= 0 && (size_t)len == strnlen(proc, sizeof proc), "processor name resultlen %d != strlen", len);

    tick = MPI_Wtick();
    CHECK(tick > 0.0 && tick < 1.0, "MPI_Wtick %g", tick);
    t0 = MPI_Wtime();
    for (i = 0; i < 1000; i++) {
        t1 = MPI_Wtime();
        CHECK(t1 >= t0, "MPI_Wtime went backwards: %.9f then %.9f", t0, t1);
        if (t1 < t0)
            break;
        t0 = t1;
    }
    t0 = MPI_Wtime();
    usleep(20000);
    t1 = MPI_Wtime();
    CHECK(t1 - t0 >= 0.015 && t1 - t0 < 5.0, "20 ms sleep measured as %g s", t1 - t0);

    MPI_CHECK(MPI_Query_thread(&level));
    CHECK(level == MPI_THREAD_SINGLE || level == MPI_THREAD_FUNNELED || level == MPI_THREAD_SERIALIZED ||
              level == MPI_THREAD_MULTIPLE,
          "MPI_Query_thread gave %d", level);
    MPI_CHECK(MPI_Is_thread_main(&ismain));
    CHECK(ismain == 1, "MPI_Is_thread_main gave %d", ismain);

    {
        int rc = mt_finalize();
        int fl = -1, in = -1;
        /* Allowed after MPI_Finalize. */
        if (MPI_Finalized(&fl) != MPI_SUCCESS || fl != 1) {
            fprintf(stderr, "[rank %d] MPI_Finalized after MPI_Finalize gave %d\n", mt_rank, fl);
            rc = 1;
        }
        if (MPI_Initialized(&in) != MPI_SUCCESS || in != 1) {
            fprintf(stderr, "[rank %d] MPI_Initialized after MPI_Finalize gave %d\n", mt_rank, in);
            rc = 1;
        }
        return rc;
    }
}
