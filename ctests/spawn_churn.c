/* oxmpi-test: np=1,2,3 timeout=120 one-node="MPI_Comm_spawn is implemented under mpiexec on one host only" */
/* Many spawned jobs one after the other, as a task farm makes them: each round spawns 2
 * children, and right away every parent and every child send to every process of the other
 * side at the same time (the first packets between them, so connections open from both
 * ends at once), check what they receive, then disconnect; the children exit while the next
 * round starts. The network library recycles the connection records of the children that
 * ended; simultaneous connections over recycled records lost packets once (a hang). */
#include "comm_mtest.h"

#define ROUNDS 64
#define NCHILD 1
#define WINDOW 2
#define NMSG 4

/* Every process of `inter` sends NMSG values to every remote process, all at once, and
 * checks what came back. `me` is this process's rank in its group. Returns errors. */
static int exchange(MPI_Comm inter, int me, int round, int parents_side)
{
    int rsize, i, k, errs = 0;
    MPI_Comm_remote_size(inter, &rsize);
    int n = rsize * NMSG;
    int *out = malloc(n * sizeof(int)), *in = malloc(n * sizeof(int));
    MPI_Request *reqs = malloc(2 * n * sizeof(MPI_Request));
    MPI_Status *sts = malloc(2 * n * sizeof(MPI_Status));
    /* A value names sender side, sender, receiver, message and round. */
    for (i = 0; i < rsize; i++)
        for (k = 0; k < NMSG; k++) {
            out[i * NMSG + k] = (parents_side ? 1 << 24 : 0) + (me << 16) + (i << 12) + (k << 8) + round;
            MPI_Isend(&out[i * NMSG + k], 1, MPI_INT, i, k, inter, &reqs[i * NMSG + k]);
            MPI_Irecv(&in[i * NMSG + k], 1, MPI_INT, i, k, inter, &reqs[n + i * NMSG + k]);
        }
    MPI_Waitall(2 * n, reqs, sts);
    for (i = 0; i < rsize; i++)
        for (k = 0; k < NMSG; k++) {
            int want = (parents_side ? 0 : 1 << 24) + (i << 16) + (me << 12) + (k << 8) + round;
            if (in[i * NMSG + k] != want) {
                errs++;
                fprintf(stderr, "round %d: message %d from remote %d: %#x, expected %#x\n", round, k, i,
                        in[i * NMSG + k], want);
            }
        }
    free(out);
    free(in);
    free(reqs);
    free(sts);
    return errs;
}

int main(int argc, char **argv)
{
    MPI_Comm parent, inter[WINDOW];
    int rank, round, i, w;
    cm_init(&argc, &argv);
    MPI_Comm_get_parent(&parent);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (parent != MPI_COMM_NULL) {
        int r = argc > 1 ? atoi(argv[1]) : -1, total = 0;
        int errs = exchange(parent, rank, r, 0);
        MPI_Reduce(&errs, &total, 1, MPI_INT, MPI_SUM, 0, parent);
        MPI_Comm_disconnect(&parent);
        MPI_Finalize();
        return errs != 0;
    }
    /* WINDOW jobs at a time, as a task farm keeps several tasks going. */
    for (round = 0; round < ROUNDS; round += WINDOW) {
        for (w = 0; w < WINDOW; w++) {
            char arg[16], *args[] = {arg, NULL};
            int errcodes[NCHILD];
            snprintf(arg, sizeof arg, "%d", round + w);
            for (i = 0; i < NCHILD; i++)
                errcodes[i] = -1;
            int rc = MPI_Comm_spawn(argv[0], args, NCHILD, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &inter[w], errcodes);
            CM_CHECK(rc == MPI_SUCCESS, "round %d: MPI_Comm_spawn returned %d", round + w, rc);
            if (rc != MPI_SUCCESS)
                return cm_finalize();
            for (i = 0; i < NCHILD; i++)
                CM_CHECK(errcodes[i] == MPI_SUCCESS, "round %d: errcodes[%d] = %d", round + w, i, errcodes[i]);
        }
        for (w = 0; w < WINDOW; w++) {
            cm_errs += exchange(inter[w], rank, round + w, 1);
            int dummy = 0, cerrs = 0;
            MPI_Reduce(&dummy, &cerrs, 1, MPI_INT, MPI_SUM, rank == 0 ? MPI_ROOT : MPI_PROC_NULL, inter[w]);
            CM_CHECK(cerrs == 0, "round %d: the children found %d errors", round + w, cerrs);
            MPI_Comm_disconnect(&inter[w]);
        }
    }
    return cm_finalize();
}
