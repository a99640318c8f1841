/* oxmpi-test: np=1,2,3,4 timeout=120 one-node="MPI_Comm_spawn is implemented under mpiexec on one host only" */
/* MPI_Intercomm_create whose groups reach processes of another job, and with an
 * intercommunicator as the peer communicator (as MPICH allows):
 *  A. world rank 0 spawns 2 children alone (MPI_COMM_SELF), and the parents' world and the
 *     children's world make an intercommunicator over the spawn's intercommunicator: parents
 *     other than rank 0 had no connection to the children;
 *  B. that intercommunicator merged, split into even and odd ranks (each group holding
 *     processes of both jobs), and the two halves made an intercommunicator over the merged
 *     communicator;
 *  C. in the parents' job alone: the two halves of the world made an intercommunicator, and
 *     from it as the peer a second one;
 *  D. bad input: a remote leader out of range of an intercommunicator peer's remote group;
 *  E. MPI_Comm_spawn from a communicator merged from A's (processes of both jobs), rooted at
 *     a parent and then at a child.
 * On each new intercommunicator every process sends to every remote process and checks what
 * arrives, and an intercommunicator Allreduce is checked. */
#include "comm_mtest.h"
#include <string.h>

#define NCHILD 2

/* Every process sends `mine` to every remote process of `inter` and receives theirs; the
 * remote process of rank i must send want(i). Returns errors. */
static int exchange(MPI_Comm inter, int mine, int (*want)(int), const char *what)
{
    int rsize, i, errs = 0;
    MPI_Comm_remote_size(inter, &rsize);
    int *in = malloc(rsize * sizeof(int));
    MPI_Request *reqs = malloc(2 * rsize * sizeof(MPI_Request));
    MPI_Status *sts = malloc(2 * rsize * sizeof(MPI_Status));
    for (i = 0; i < rsize; i++) {
        MPI_Irecv(&in[i], 1, MPI_INT, i, 5, inter, &reqs[i]);
        MPI_Isend(&mine, 1, MPI_INT, i, 5, inter, &reqs[rsize + i]);
    }
    MPI_Waitall(2 * rsize, reqs, sts);
    for (i = 0; i < rsize; i++)
        if (in[i] != want(i)) {
            errs++;
            fprintf(stderr, "%s: from remote rank %d: %d, expected %d\n", what, i, in[i], want(i));
        }
    free(in);
    free(reqs);
    free(sts);
    return errs;
}

static int nparents;
/* Part A: parents send 1000 + world rank, children 2000 + world rank. */
static int parent_value(int i) { return 1000 + i; }
static int child_value(int i) { return 2000 + i; }
/* Part B: the halves are ordered by merged rank; each sends 3000 + its merged rank. */
static int even_value(int i) { return 3000 + 2 * i; }
static int odd_value(int i) { return 3000 + 2 * i + 1; }
/* Part C: each sends 4000 + its world rank; the upper half starts at nparents / 2. */
static int lower_value(int i) { return 4000 + i; }
static int upper_value(int i) { return 4000 + nparents / 2 + i; }
/* Part E: the spawning members send 5000 + their merged rank, the grandchild 6000. */
static int merged_value(int i) { return 5000 + i; }
static int grandchild_value(int i) { return 6000 + i; }

/* Part E on both jobs: spawns one grandchild from the communicator merged from `ic`
 * (children high), rooted at merged rank `root`; every member and the grandchild exchange
 * values and reduce. */
static int spawn_from_merged(MPI_Comm ic, int high, const char *prog, int root)
{
    MPI_Comm merged, gc;
    int mrank, msize, errs = 0, code = -1, sum = -1, gerrs = -1, dummy = 0;
    char arg[] = "grandchild", *args[] = {arg, NULL};
    MPI_Intercomm_merge(ic, high, &merged);
    MPI_Comm_rank(merged, &mrank);
    MPI_Comm_size(merged, &msize);
    int rc = MPI_Comm_spawn(prog, args, 1, MPI_INFO_NULL, root, merged, &gc, &code);
    if (rc != MPI_SUCCESS || code != MPI_SUCCESS) {
        fprintf(stderr, "part E (root %d): MPI_Comm_spawn returned %d, error code %d\n", root, rc, code);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    errs += exchange(gc, 5000 + mrank, grandchild_value, "part E");
    MPI_Allreduce(&mrank, &sum, 1, MPI_INT, MPI_SUM, gc);
    if (sum != 77) {
        fprintf(stderr, "part E: Allreduce gave %d, expected the grandchild's 77\n", sum);
        errs++;
    }
    /* The grandchild reports to merged rank 0. */
    MPI_Reduce(&dummy, &gerrs, 1, MPI_INT, MPI_SUM, mrank == 0 ? MPI_ROOT : MPI_PROC_NULL, gc);
    if (mrank == 0 && gerrs != 0) {
        fprintf(stderr, "part E: the grandchild found %d errors\n", gerrs);
        errs++;
    }
    MPI_Comm_disconnect(&gc);
    MPI_Comm_free(&merged);
    return errs;
}

/* A grandchild of part E: its parents are the merged communicator's members. */
static int grandchild(MPI_Comm parent)
{
    int msize, errs = 0, mine = 77, sum = -1;
    MPI_Comm_remote_size(parent, &msize);
    errs += exchange(parent, 6000, merged_value, "part E (grandchild)");
    MPI_Allreduce(&mine, &sum, 1, MPI_INT, MPI_SUM, parent);
    if (sum != msize * (msize - 1) / 2) {
        fprintf(stderr, "grandchild: Allreduce gave %d, expected %d\n", sum, msize * (msize - 1) / 2);
        errs++;
    }
    MPI_Reduce(&errs, NULL, 1, MPI_INT, MPI_SUM, 0, parent);
    MPI_Comm_disconnect(&parent);
    MPI_Finalize();
    return errs != 0;
}

/* Part B on both jobs: merges `ic` (children high), splits it into even and odd merged
 * ranks, and makes the halves an intercommunicator over the merged communicator. */
static int even_odd(MPI_Comm ic, int high)
{
    MPI_Comm merged, half, ic3;
    int mrank, msize, rc, errs = 0, sum = -1;
    MPI_Intercomm_merge(ic, high, &merged);
    MPI_Comm_rank(merged, &mrank);
    MPI_Comm_size(merged, &msize);
    MPI_Comm_split(merged, mrank % 2, mrank, &half);
    /* The even half's leader is merged rank 0, the odd half's merged rank 1. */
    rc = MPI_Intercomm_create(half, 0, merged, (mrank + 1) % 2, 31, &ic3);
    if (rc != MPI_SUCCESS) {
        fprintf(stderr, "part B: MPI_Intercomm_create returned %d\n", rc);
        return 1;
    }
    int rsize, lsize;
    MPI_Comm_remote_size(ic3, &rsize);
    MPI_Comm_size(ic3, &lsize);
    if (lsize + rsize != msize || lsize != (msize + 1 - mrank % 2) / 2) {
        fprintf(stderr, "part B: group sizes %d and %d of %d\n", lsize, rsize, msize);
        errs++;
    }
    errs += exchange(ic3, 3000 + mrank, mrank % 2 ? even_value : odd_value, "part B");
    /* Each side gets the sum of the other's merged ranks. */
    MPI_Allreduce(&mrank, &sum, 1, MPI_INT, MPI_SUM, ic3);
    int want = 0;
    for (int r = (mrank + 1) % 2; r < msize; r += 2)
        want += r;
    if (sum != want) {
        fprintf(stderr, "part B: Allreduce gave %d, expected %d\n", sum, want);
        errs++;
    }
    MPI_Barrier(ic3);
    MPI_Comm_free(&ic3);
    MPI_Comm_free(&half);
    MPI_Comm_free(&merged);
    return errs;
}

int main(int argc, char **argv)
{
    MPI_Comm parent, spawned = MPI_COMM_NULL, ic2;
    int wrank, wsize, sum = -1, rc;
    cm_init(&argc, &argv);
    MPI_Comm_get_parent(&parent);
    MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    MPI_Comm_size(MPI_COMM_WORLD, &wsize);

    if (parent != MPI_COMM_NULL && argc > 1 && !strcmp(argv[1], "grandchild"))
        return grandchild(parent);
    if (parent != MPI_COMM_NULL) {
        /* A child: the parents' root (rank 0 of the spawn's remote group) leads the parents. */
        int errs = 0, total = 0, np = 0;
        MPI_Comm_set_errhandler(parent, MPI_ERRORS_RETURN);
        rc = MPI_Intercomm_create(MPI_COMM_WORLD, 0, parent, 0, 17, &ic2);
        if (rc != MPI_SUCCESS) {
            fprintf(stderr, "child %d: MPI_Intercomm_create returned %d\n", wrank, rc);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        MPI_Comm_remote_size(ic2, &np);
        errs += exchange(ic2, 2000 + wrank, parent_value, "part A (child)");
        MPI_Allreduce(&wrank, &sum, 1, MPI_INT, MPI_SUM, ic2);
        if (sum != np * (np - 1) / 2) {
            fprintf(stderr, "child %d: Allreduce gave %d, expected %d\n", wrank, sum, np * (np - 1) / 2);
            errs++;
        }
        errs += even_odd(ic2, 1);
        errs += spawn_from_merged(ic2, 1, argv[0], 0);
        errs += spawn_from_merged(ic2, 1, argv[0], np + wsize - 1);
        MPI_Reduce(&errs, &total, 1, MPI_INT, MPI_SUM, 0, ic2);
        MPI_Comm_free(&ic2);
        MPI_Comm_disconnect(&parent);
        MPI_Finalize();
        return errs != 0;
    }

    nparents = wsize;
    int errcodes[NCHILD] = {-1, -1};
    if (wrank == 0) {
        rc = MPI_Comm_spawn(argv[0], MPI_ARGV_NULL, NCHILD, MPI_INFO_NULL, 0, MPI_COMM_SELF, &spawned, errcodes);
        CM_CHECK(rc == MPI_SUCCESS, "MPI_Comm_spawn returned %d", rc);
        if (rc != MPI_SUCCESS)
            MPI_Abort(MPI_COMM_WORLD, 1);
        MPI_Comm_set_errhandler(spawned, MPI_ERRORS_RETURN);
    }

    /* A: the parents' world and the children's, over the spawn's intercommunicator (only
     * rank 0 has it). */
    rc = MPI_Intercomm_create(MPI_COMM_WORLD, 0, spawned, 0, 17, &ic2);
    CM_CHECK(rc == MPI_SUCCESS, "part A: MPI_Intercomm_create returned %d", rc);
    if (rc != MPI_SUCCESS)
        MPI_Abort(MPI_COMM_WORLD, 1);
    int rsize = -1, flag = 0;
    MPI_Comm_remote_size(ic2, &rsize);
    MPI_Comm_test_inter(ic2, &flag);
    CM_CHECK(flag && rsize == NCHILD, "part A: inter %d, remote size %d", flag, rsize);
    cm_errs += exchange(ic2, 1000 + wrank, child_value, "part A (parent)");
    MPI_Allreduce(&wrank, &sum, 1, MPI_INT, MPI_SUM, ic2);
    CM_CHECK(sum == NCHILD * (NCHILD - 1) / 2, "part A: Allreduce gave %d", sum);

    /* D: bad input at a leader alone (MPI_COMM_SELF as the local group). */
    if (wrank == 0) {
        MPI_Comm bad = MPI_COMM_NULL;
        CM_EXPECT_ERR(MPI_Intercomm_create(MPI_COMM_SELF, 0, spawned, NCHILD, 3, &bad), MPI_ERR_RANK);
        CM_EXPECT_ERR(MPI_Intercomm_create(MPI_COMM_SELF, 0, spawned, -1, 3, &bad), MPI_ERR_RANK);
        CM_CHECK(bad == MPI_COMM_NULL, "a failed MPI_Intercomm_create set newintercomm");
    }

    cm_errs += even_odd(ic2, 0);
    cm_errs += spawn_from_merged(ic2, 0, argv[0], 0);
    cm_errs += spawn_from_merged(ic2, 0, argv[0], wsize + NCHILD - 1);
    int cerrs = -1, dummy = 0;
    MPI_Reduce(&dummy, &cerrs, 1, MPI_INT, MPI_SUM, wrank == 0 ? MPI_ROOT : MPI_PROC_NULL, ic2);
    if (wrank == 0)
        CM_CHECK(cerrs == 0, "the children found %d errors", cerrs);
    MPI_Comm_free(&ic2);
    if (spawned != MPI_COMM_NULL)
        MPI_Comm_disconnect(&spawned);

    /* C: one job, an intercommunicator as the peer of another. */
    if (wsize >= 2) {
        MPI_Comm half, ic_a, ic_b;
        int upper = wrank >= wsize / 2;
        MPI_Comm_split(MPI_COMM_WORLD, upper, wrank, &half);
        MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, upper ? 0 : wsize / 2, 41, &ic_a);
        rc = MPI_Intercomm_create(half, 0, ic_a, 0, 43, &ic_b);
        CM_CHECK(rc == MPI_SUCCESS, "part C: MPI_Intercomm_create over an intercommunicator returned %d", rc);
        if (rc == MPI_SUCCESS) {
            int hrank;
            MPI_Comm_rank(half, &hrank);
            MPI_Comm_remote_size(ic_b, &rsize);
            CM_CHECK(rsize == (upper ? wsize / 2 : wsize - wsize / 2), "part C: remote size %d", rsize);
            cm_errs += exchange(ic_b, 4000 + wrank, upper ? lower_value : upper_value, "part C");
            MPI_Allreduce(&hrank, &sum, 1, MPI_INT, MPI_SUM, ic_b);
            CM_CHECK(sum == rsize * (rsize - 1) / 2, "part C: Allreduce gave %d", sum);
            if (hrank == 0) {
                MPI_Comm bad = MPI_COMM_NULL;
                CM_EXPECT_ERR(MPI_Intercomm_create(MPI_COMM_SELF, 0, ic_a, rsize, 3, &bad), MPI_ERR_RANK);
            }
            MPI_Comm_free(&ic_b);
        }
        MPI_Comm_free(&ic_a);
        MPI_Comm_free(&half);
    }
    return cm_finalize();
}
