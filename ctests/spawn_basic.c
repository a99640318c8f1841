/* oxmpi-test: np=1,2,3,5 timeout=120 one-node="MPI_Comm_spawn is implemented under mpiexec on one host only" */
/* Dynamic processes: the world spawns 3 copies of this program (MPI_Comm_spawn, with
 * arguments, one containing a space), which find their parents with MPI_Comm_get_parent.
 * Parents and children exchange data both ways on the intercommunicator (every parent with
 * every child), run collectives on it (bcast from each side's root, allreduce, barrier),
 * merge it (MPI_Intercomm_merge, parents first) and reduce over the merged communicator,
 * then disconnect. A second round spawns with MPI_Comm_spawn_multiple two programs (1 and
 * 2 processes) with the info keys `path` (the program named without its directory), `wdir`
 * and `host`, and the children check their MPI_APPNUM, working directory and arguments.
 * Children report their error counts to the parents, which print the result. */
#include "comm_mtest.h"
#include <libgen.h>
#include <string.h>
#include <unistd.h>

#define NCHILD 3

/* A child's checks; returns its error count (also sent to the parents). */
static int child(MPI_Comm parent, int argc, char **argv)
{
    int rank, size, nparents, lsize, v, i;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_remote_size(parent, &nparents);
    MPI_Comm_size(parent, &lsize);
    int test_inter = 0;
    MPI_Comm_test_inter(parent, &test_inter);
    CM_CHECK(test_inter, "the parent communicator is an intercommunicator");
    CM_CHECK(lsize == size, "local group of the parent intercommunicator: %d, world %d", lsize, size);
    if (argc >= 2 && strcmp(argv[1], "round1") == 0) {
        CM_CHECK(size == NCHILD, "spawned world size %d, expected %d", size, NCHILD);
        CM_CHECK(argc == 3 && strcmp(argv[2], "two words") == 0, "arguments: argc %d", argc);
        /* From every parent: 1000 * parent + rank; back: the value + 1. */
        for (i = 0; i < nparents; i++) {
            MPI_Status st;
            MPI_Recv(&v, 1, MPI_INT, MPI_ANY_SOURCE, 10, parent, &st);
            CM_CHECK(v == 1000 * st.MPI_SOURCE + rank, "from parent %d: %d", st.MPI_SOURCE, v);
            v += 1;
            MPI_Send(&v, 1, MPI_INT, st.MPI_SOURCE, 11, parent);
        }
        /* Bcast from the parents' root 0, then from the children's root 0. */
        int b = -1;
        MPI_Bcast(&b, 1, MPI_INT, 0, parent);
        CM_CHECK(b == 4242, "bcast from the parents: %d", b);
        int mine = 777;
        MPI_Bcast(&mine, 1, MPI_INT, rank == 0 ? MPI_ROOT : MPI_PROC_NULL, parent);
        /* Allreduce: each group gets the sum of the other's contributions. */
        int contrib = 1, sum = 0;
        MPI_Allreduce(&contrib, &sum, 1, MPI_INT, MPI_SUM, parent);
        CM_CHECK(sum == 100 * nparents, "allreduce over the intercommunicator: %d", sum);
        MPI_Barrier(parent);
        /* Merged: the parents (low) first, then the children. */
        MPI_Comm merged;
        int mrank, msize;
        MPI_Intercomm_merge(parent, 1, &merged);
        MPI_Comm_rank(merged, &mrank);
        MPI_Comm_size(merged, &msize);
        CM_CHECK(msize == nparents + size, "merged size %d", msize);
        CM_CHECK(mrank == nparents + rank, "merged rank %d, expected %d", mrank, nparents + rank);
        int rsum = 0;
        MPI_Allreduce(&mrank, &rsum, 1, MPI_INT, MPI_SUM, merged);
        CM_CHECK(rsum == msize * (msize - 1) / 2, "allreduce over the merged communicator: %d", rsum);
        MPI_Comm_free(&merged);
    } else {
        int *appnum, flag;
        char cwd[4096];
        MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_APPNUM, &appnum, &flag);
        CM_CHECK(flag, "MPI_APPNUM is set");
        CM_CHECK(size == 3, "spawn_multiple world size %d", size);
        int expected_app = rank == 0 ? 0 : 1;
        CM_CHECK(flag && *appnum == expected_app, "rank %d appnum %d", rank, flag ? *appnum : -1);
        CM_CHECK(argc == 2 && strcmp(argv[1], expected_app == 0 ? "first" : "second") == 0,
                 "rank %d arguments", rank);
        CM_CHECK(getcwd(cwd, sizeof cwd) && strcmp(cwd, "/tmp") == 0, "working directory %s", cwd);
    }
    int errs = cm_errs, total = 0;
    /* Children reduce their errors to the parents' root. */
    MPI_Reduce(&errs, &total, 1, MPI_INT, MPI_SUM, 0, parent);
    MPI_Comm_disconnect(&parent);
    MPI_Comm_get_parent(&parent);
    /* Too late to report to the parents: a failure here shows in the exit status. */
    if (parent != MPI_COMM_NULL) {
        fprintf(stderr, "MPI_Comm_get_parent after the disconnect is not MPI_COMM_NULL\n");
        cm_errs++;
    }
    return cm_errs;
}

/* The children's error count, reduced onto the parents' root. */
static int child_errors(MPI_Comm inter, int rank)
{
    int dummy = 0, total = 0;
    MPI_Reduce(&dummy, &total, 1, MPI_INT, MPI_SUM, rank == 0 ? MPI_ROOT : MPI_PROC_NULL, inter);
    return total;
}

int main(int argc, char **argv)
{
    MPI_Comm parent, inter;
    int rank, size, i, v, errcodes[NCHILD];
    cm_init(&argc, &argv);
    MPI_Comm_get_parent(&parent);
    if (parent != MPI_COMM_NULL) {
        int errs = child(parent, argc, argv);
        MPI_Finalize();
        return errs != 0;
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    /* Round 1: MPI_Comm_spawn. */
    char *args[] = {"round1", "two words", NULL};
    for (i = 0; i < NCHILD; i++)
        errcodes[i] = -1;
    CM_OK(MPI_Comm_spawn(argv[0], args, NCHILD, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &inter, errcodes));
    for (i = 0; i < NCHILD; i++)
        CM_CHECK(errcodes[i] == MPI_SUCCESS, "errcodes[%d] = %d", i, errcodes[i]);
    int rsize = 0, lsize = 0;
    MPI_Comm_remote_size(inter, &rsize);
    MPI_Comm_size(inter, &lsize);
    CM_CHECK(rsize == NCHILD && lsize == size, "remote size %d, local size %d", rsize, lsize);
    for (i = 0; i < rsize; i++) {
        v = 1000 * rank + i;
        MPI_Send(&v, 1, MPI_INT, i, 10, inter);
    }
    for (i = 0; i < rsize; i++) {
        MPI_Status st;
        MPI_Recv(&v, 1, MPI_INT, MPI_ANY_SOURCE, 11, inter, &st);
        CM_CHECK(v == 1000 * rank + st.MPI_SOURCE + 1, "reply from child %d: %d", st.MPI_SOURCE, v);
    }
    int b = 4242;
    MPI_Bcast(&b, 1, MPI_INT, rank == 0 ? MPI_ROOT : MPI_PROC_NULL, inter);
    int theirs = -1;
    MPI_Bcast(&theirs, 1, MPI_INT, 0, inter);
    CM_CHECK(theirs == 777, "bcast from the children: %d", theirs);
    int contrib = 100, sum = 0;
    MPI_Allreduce(&contrib, &sum, 1, MPI_INT, MPI_SUM, inter);
    CM_CHECK(sum == NCHILD, "allreduce over the intercommunicator: %d", sum);
    MPI_Barrier(inter);
    MPI_Comm merged;
    int mrank, msize, rsum = 0;
    MPI_Intercomm_merge(inter, 0, &merged);
    MPI_Comm_rank(merged, &mrank);
    MPI_Comm_size(merged, &msize);
    CM_CHECK(msize == size + NCHILD && mrank == rank, "merged rank %d of %d", mrank, msize);
    MPI_Allreduce(&mrank, &rsum, 1, MPI_INT, MPI_SUM, merged);
    CM_CHECK(rsum == msize * (msize - 1) / 2, "allreduce over the merged communicator: %d", rsum);
    MPI_Comm_free(&merged);
    int cerrs = child_errors(inter, rank);
    CM_CHECK(cerrs == 0, "the children of round 1 found %d errors", cerrs);
    MPI_Comm_disconnect(&inter);
    CM_CHECK(inter == MPI_COMM_NULL, "MPI_Comm_disconnect sets MPI_COMM_NULL");

    /* Round 2: MPI_Comm_spawn_multiple from the last rank, the program found through
     * `path`, run in `wdir` on `host`. */
    char *prog = strdup(argv[0]);
    char *dir = strdup(argv[0]);
    char *commands[2] = {basename(prog), basename(prog)};
    char *argv0[] = {"first", NULL}, *argv1[] = {"second", NULL};
    char **argvs[2] = {argv0, argv1};
    int maxprocs[2] = {1, 2};
    MPI_Info infos[2];
    char absdir[4096];
    CM_CHECK(realpath(dirname(dir), absdir) != NULL, "realpath");
    for (i = 0; i < 2; i++) {
        MPI_Info_create(&infos[i]);
        MPI_Info_set(infos[i], "path", absdir);
        MPI_Info_set(infos[i], "wdir", "/tmp");
        MPI_Info_set(infos[i], "host", "localhost");
    }
    int errs3[3] = {-1, -1, -1};
    CM_OK(MPI_Comm_spawn_multiple(2, commands, argvs, maxprocs, infos, size - 1, MPI_COMM_WORLD, &inter, errs3));
    for (i = 0; i < 3; i++)
        CM_CHECK(errs3[i] == MPI_SUCCESS, "spawn_multiple errcodes[%d] = %d", i, errs3[i]);
    MPI_Comm_remote_size(inter, &rsize);
    CM_CHECK(rsize == 3, "spawn_multiple remote size %d", rsize);
    cerrs = child_errors(inter, rank);
    CM_CHECK(cerrs == 0, "the children of round 2 found %d errors", cerrs);
    MPI_Comm_disconnect(&inter);
    for (i = 0; i < 2; i++)
        MPI_Info_free(&infos[i]);
    free(prog);
    free(dir);
    return cm_finalize();
}
