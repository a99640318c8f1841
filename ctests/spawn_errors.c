/* oxmpi-test: np=1,2,4 timeout=120 one-node="MPI_Comm_spawn is implemented under mpiexec on one host only" */
/* MPI_Comm_spawn's errors, returned (MPI_ERRORS_RETURN) on every parent rather than hangs:
 * a program that does not exist (MPI_ERR_SPAWN, an error code per process, no
 * intercommunicator), a program that exits at once without MPI, a host that is not this
 * machine, maxprocs of 0 and -1 (MPI_ERR_ARG), a root that is not a rank (MPI_ERR_ROOT),
 * MPI_Comm_spawn_multiple with count 0. Then a spawn that works: the job goes on after
 * failed spawns, whose processes are gone, and the child's data arrives. */
#include "comm_mtest.h"
#include <string.h>

static void expect_spawn_failure(const char *what, char *command, int maxprocs, MPI_Info info, int root,
                                 int cls)
{
    MPI_Comm inter = MPI_COMM_WORLD;
    int codes[4] = {MPI_SUCCESS, MPI_SUCCESS, MPI_SUCCESS, MPI_SUCCESS};
    int rc = MPI_Comm_spawn(command, MPI_ARGV_NULL, maxprocs, info, root, MPI_COMM_WORLD, &inter, codes);
    int got = MPI_SUCCESS;
    if (rc != MPI_SUCCESS)
        MPI_Error_class(rc, &got);
    CM_CHECK(rc != MPI_SUCCESS && got == cls, "%s: returned %d (class %d), expected class %d", what, rc, got, cls);
    if (rc != MPI_SUCCESS && cls == MPI_ERR_SPAWN) {
        CM_CHECK(inter == MPI_COMM_NULL, "%s: intercomm is not MPI_COMM_NULL", what);
        for (int i = 0; i < maxprocs && i < 4; i++)
            CM_CHECK(codes[i] != MPI_SUCCESS, "%s: errcodes[%d] is MPI_SUCCESS", what, i);
    }
    if (rc == MPI_SUCCESS && inter != MPI_COMM_NULL && inter != MPI_COMM_WORLD)
        MPI_Comm_disconnect(&inter);
}

int main(int argc, char **argv)
{
    MPI_Comm parent, inter;
    int size, rank;
    cm_init(&argc, &argv);
    MPI_Comm_get_parent(&parent);
    if (parent != MPI_COMM_NULL) {
        /* The child of the spawn that works: sends its argument's length back. */
        int n = argc > 1 ? (int)strlen(argv[1]) : -1;
        MPI_Send(&n, 1, MPI_INT, 0, 3, parent);
        MPI_Comm_disconnect(&parent);
        MPI_Finalize();
        return 0;
    }
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);

    expect_spawn_failure("a program that does not exist", "/nonexistent/oxmpi-no-such-program", 2, MPI_INFO_NULL, 0,
                         MPI_ERR_SPAWN);
    expect_spawn_failure("a program that exits at once", "/bin/true", 2, MPI_INFO_NULL, 0, MPI_ERR_SPAWN);
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "host", "oxmpi-no-such-host.invalid");
    expect_spawn_failure("a host that is not this machine", argv[0], 1, info, 0, MPI_ERR_SPAWN);
    MPI_Info_free(&info);
    MPI_Info_create(&info);
    MPI_Info_set(info, "wdir", "/nonexistent/oxmpi-no-such-dir");
    expect_spawn_failure("a working directory that does not exist", argv[0], 1, info, 0, MPI_ERR_SPAWN);
    MPI_Info_free(&info);
    expect_spawn_failure("maxprocs 0", argv[0], 0, MPI_INFO_NULL, 0, MPI_ERR_ARG);
    expect_spawn_failure("maxprocs -1", argv[0], -1, MPI_INFO_NULL, 0, MPI_ERR_ARG);
    expect_spawn_failure("root = size", argv[0], 1, MPI_INFO_NULL, size, MPI_ERR_ROOT);
    expect_spawn_failure("root = -1", argv[0], 1, MPI_INFO_NULL, -1, MPI_ERR_ROOT);
    int maxprocs = 1;
    MPI_Info infos[1] = {MPI_INFO_NULL};
    char *commands[1] = {argv[0]};
    CM_EXPECT_ERR(MPI_Comm_spawn_multiple(0, commands, MPI_ARGVS_NULL, &maxprocs, infos, 0, MPI_COMM_WORLD, &inter,
                                          MPI_ERRCODES_IGNORE),
                  MPI_ERR_ARG);
    CM_EXPECT_ERR(MPI_Comm_get_parent(NULL), MPI_ERR_ARG);

    /* A spawn that works, from the last rank, errcodes ignored. */
    char *args[] = {"12345", NULL};
    CM_OK(MPI_Comm_spawn(argv[0], args, 1, MPI_INFO_NULL, size - 1, MPI_COMM_WORLD, &inter, MPI_ERRCODES_IGNORE));
    if (rank == 0) {
        int n = -1;
        MPI_Recv(&n, 1, MPI_INT, 0, 3, inter, MPI_STATUS_IGNORE);
        CM_CHECK(n == 5, "the child's answer: %d", n);
    }
    MPI_Comm_disconnect(&inter);
    return cm_finalize();
}
