/* oxmpi-test: np=2,3,4,8 */
/* Blocking collectives over an intercommunicator (see coll_inter.h), and the errors of bad
 * input: a root that is neither MPI_ROOT, MPI_PROC_NULL nor a remote rank (MPI_ERR_ROOT),
 * MPI_IN_PLACE (MPI_ERR_BUFFER), and Scan/Exscan, not defined on intercommunicators
 * (MPI_ERR_COMM). */
#include "coll_inter.h"

static void check_class(int rc, int want, const char *what)
{
    int cls = MPI_SUCCESS;
    if (rc != MPI_SUCCESS)
        MPI_Error_class(rc, &cls);
    CHECK(cls == want, "%s: error class %d, want %d", what, cls, want);
}

static void t_errors(const ictx *c)
{
    int a[4] = {1, 2, 3, 4}, b[4];
    MPI_Request req;
    MPI_Comm_set_errhandler(c->comm, MPI_ERRORS_RETURN);
    /* every process passes the same bad argument, so no process waits for another */
    check_class(MPI_Bcast(a, 1, MPI_INT, c->rsize, c->comm), MPI_ERR_ROOT, "Bcast root = remote size");
    check_class(MPI_Bcast(a, 1, MPI_INT, -7, c->comm), MPI_ERR_ROOT, "Bcast root = -7");
    check_class(MPI_Reduce(a, b, 1, MPI_INT, MPI_SUM, c->rsize + 3, c->comm), MPI_ERR_ROOT, "Reduce bad root");
    check_class(MPI_Gather(a, 1, MPI_INT, b, 1, MPI_INT, -7, c->comm), MPI_ERR_ROOT, "Gather bad root");
    check_class(MPI_Iscatter(a, 1, MPI_INT, b, 1, MPI_INT, c->rsize, c->comm, &req), MPI_ERR_ROOT,
                "Iscatter bad root");
#if MT_OXMPI
    /* MPICH 4.0.2 does not check these and hangs */
    check_class(MPI_Allreduce(MPI_IN_PLACE, b, 1, MPI_INT, MPI_SUM, c->comm), MPI_ERR_BUFFER, "Allreduce in place");
    check_class(MPI_Allgather(MPI_IN_PLACE, 0, MPI_INT, b, 1, MPI_INT, c->comm), MPI_ERR_BUFFER,
                "Allgather in place");
    check_class(MPI_Alltoall(MPI_IN_PLACE, 1, MPI_INT, b, 1, MPI_INT, c->comm), MPI_ERR_BUFFER, "Alltoall in place");
#endif
    check_class(MPI_Scan(a, b, 1, MPI_INT, MPI_SUM, c->comm), MPI_ERR_COMM, "Scan");
    check_class(MPI_Exscan(a, b, 1, MPI_INT, MPI_SUM, c->comm), MPI_ERR_COMM, "Exscan");
    check_class(MPI_Iscan(a, b, 1, MPI_INT, MPI_SUM, c->comm, &req), MPI_ERR_COMM, "Iscan");
    /* the communicator still works afterwards */
    b[0] = -1;
    MPI_Allreduce(a, b, 1, MPI_INT, MPI_SUM, c->comm);
    CHECK(b[0] == c->rsize, "allreduce after the errors: %d, want %d", b[0], c->rsize);
    /* The idle members of the root's group may pass any datatype and operation (mpi4py passes
       MPI_BYTE with count 0 for MPI_SUM): the root is group 0's rank 0. */
    int root = c->color == 0 ? (c->lrank == 0 ? MPI_ROOT : MPI_PROC_NULL) : 0;
    b[0] = -1;
    if (root == MPI_PROC_NULL)
        check_class(MPI_Reduce(NULL, NULL, 0, MPI_BYTE, MPI_SUM, root, c->comm), MPI_SUCCESS, "idle Reduce");
    else
        check_class(MPI_Reduce(a, b, 1, MPI_INT, MPI_SUM, root, c->comm), MPI_SUCCESS, "Reduce to group 0");
    if (root == MPI_ROOT)
        CHECK(b[0] == c->rsize, "Reduce to group 0's rank 0: %d, want %d", b[0], c->rsize);
}

int main(int argc, char **argv)
{
    ictx c;
    MPI_Init(&argc, &argv);
    make_inter(&c);
    c.mode = 0;
    run_all(&c);
    t_errors(&c);
    free_inter(&c);
    return coll_finish();
}
