/* ABI test program: built with Debian's mpicc.mpich, run on oxmpi through
 * LD_LIBRARY_PATH (libmpich.so.12 link) or LD_PRELOAD, launched by oxmpi's
 * mpiexec and by mpiexec.mpich (tests/ctests.rs, abi_mpich_built_binary).
 * With the argument "expect-oxmpi" it fails if the library that answers is
 * MPICH itself (MPI_Get_library_version starting with "MPICH"). */
#include "../mtest.h"

int main(int argc, char **argv)
{
    char lib[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0, i, left, right, n = 100000, count = -1, res = -1;
    int *a, *b;
    MPI_Request rq[2];
    MPI_Status st;
    MPI_Comm dup;

    mt_init(&argc, &argv);
    MPI_CHECK(MPI_Get_library_version(lib, &len));
    if (mt_rank == 0)
        printf("library: %.*s\n", (int)strcspn(lib, "\n"), lib);
    if (argc > 1 && strcmp(argv[1], "expect-oxmpi") == 0)
        CHECK(strncmp(lib, "MPICH", 5) != 0, "the MPICH library answered, not oxmpi: %.60s", lib);

    right = (mt_rank + 1) % mt_size;
    left = (mt_rank + mt_size - 1) % mt_size;
    a = mt_malloc(sizeof(int) * n);
    b = mt_malloc(sizeof(int) * n);
    for (i = 0; i < n; i++)
        a[i] = i + mt_rank;
    /* predefined handles as compiled into an MPICH binary */
    MPI_CHECK(MPI_Irecv(b, n, MPI_INT, left, 3, MPI_COMM_WORLD, &rq[0]));
    MPI_CHECK(MPI_Isend(a, n, MPI_INT, right, 3, MPI_COMM_WORLD, &rq[1]));
    MPI_CHECK(MPI_Waitall(2, rq, MPI_STATUSES_IGNORE));
    for (i = 0; i < n; i++)
        if (b[i] != i + left) {
            CHECK(0, "element %d is %d", i, b[i]);
            break;
        }
    MPI_CHECK(MPI_Sendrecv(a, 7, MPI_DOUBLE, right, 4, b, 20, MPI_DOUBLE, left, 4, MPI_COMM_WORLD, &st));
    MPI_CHECK(MPI_Get_count(&st, MPI_DOUBLE, &count));
    CHECK(count == 7 && st.MPI_SOURCE == left && st.MPI_TAG == 4, "status count %d source %d tag %d", count,
          st.MPI_SOURCE, st.MPI_TAG);
    MPI_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
    MPI_CHECK(MPI_Comm_compare(MPI_COMM_WORLD, dup, &res));
    CHECK(res == MPI_CONGRUENT, "compare %d", res);
    MPI_CHECK(MPI_Comm_free(&dup));
    MPI_CHECK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    {
        int rc = MPI_Send(a, -1, MPI_INT, 0, 0, MPI_COMM_WORLD), cls = -1;
        MPI_Error_class(rc, &cls);
        CHECK(cls == MPI_ERR_COUNT, "error class %d", cls);
    }
    free(a);
    free(b);
    return mt_finalize();
}
