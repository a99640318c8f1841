/* oxmpi-test: np=1,2,3,4,8 */
/* A nonblocking collective started on one rank before a blocking one that the other ranks call
 * first (mpi4py's Iagree test does this with Iallreduce and Barrier). The standard asks for the
 * same order everywhere, but MPICH tolerates it; at MPI_THREAD_MULTIPLE oxmpi runs blocking
 * collectives as schedules, which must then not take the nonblocking ones' messages. Run at
 * MPI_THREAD_MULTIPLE and checked for the values and for an early completion. */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    int rank, size, root, provided, errs = 0, i;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (provided != MPI_THREAD_MULTIPLE) {
        errs++;
        printf("provided %d\n", provided);
    }
    for (i = 0; i < 5; i++) {
        int in = i, out = -1;
        MPI_Request r;
        MPI_Iallreduce(&in, &out, 1, MPI_INT, MPI_BAND, MPI_COMM_WORLD, &r);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
        if (out != i) {
            errs++;
            printf("round %d: %d\n", i, out);
        }
    }
    for (root = 0; root < size; root++) {
        int in, out = -1, flag = 0, sum = -1;
        MPI_Request r;
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == root) {
            in = 11; /* 1011 */
            MPI_Iallreduce(&in, &out, 1, MPI_INT, MPI_BAND, MPI_COMM_WORLD, &r);
            MPI_Test(&r, &flag, MPI_STATUS_IGNORE);
            if (flag && size > 1) {
                errs++;
                printf("root %d: the allreduce completed before the others joined\n", root);
            }
            MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        } else {
            in = 13; /* 1101 */
            MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
            MPI_Iallreduce(&in, &out, 1, MPI_INT, MPI_BAND, MPI_COMM_WORLD, &r);
        }
        if (!flag)
            MPI_Wait(&r, MPI_STATUS_IGNORE);
        if (out != (size > 1 ? 9 : 11) || sum != size * (size - 1) / 2) {
            errs++;
            printf("rank %d root %d: band %d, sum %d\n", rank, root, out, sum);
        }
    }
    MPI_Allreduce(MPI_IN_PLACE, &errs, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0 && errs == 0)
        printf("No Errors\n");
    MPI_Finalize();
    return 0;
}
