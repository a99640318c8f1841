/* oxmpi-test: np=1,2,3,4,8 */
/* Barrier: nobody leaves before the last rank arrives; user messages with any tag are not
   confused with barrier traffic; works on MPI_COMM_SELF and on a duplicate. */
#include "coll_mtest.h"
#include <time.h>
#include <unistd.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    int rank, size, i;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    for (i = 0; i < 50; i++)
        MPI_Barrier(MPI_COMM_WORLD);

    /* The last rank arrives late and says when; nobody may leave before that time. */
    double arrived = 0, left;
    if (rank == size - 1) {
        usleep(100000);
        arrived = now();
    }
    MPI_Barrier(MPI_COMM_WORLD);
    left = now();
    MPI_Bcast(&arrived, 1, MPI_DOUBLE, size - 1, MPI_COMM_WORLD);
    CHECK(left >= arrived, "left the barrier %.6f s before the last rank arrived", arrived - left);

    /* A user message sent around a barrier, with tags the library might use internally. */
    for (int tag = 0; tag < 200; tag += 16) {
        int out = rank * 1000 + tag, in = -1;
        int to = (rank + 1) % size, from = (rank + size - 1) % size;
        MPI_Request rq;
        MPI_Irecv(&in, 1, MPI_INT, from, tag, MPI_COMM_WORLD, &rq);
        MPI_Send(&out, 1, MPI_INT, to, tag, MPI_COMM_WORLD);
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Wait(&rq, MPI_STATUS_IGNORE);
        CHECK(in == from * 1000 + tag, "tag %d: got %d", tag, in);
    }

    MPI_Barrier(MPI_COMM_SELF);
    MPI_Comm dup;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    for (i = 0; i < 10; i++)
        MPI_Barrier(dup);
    MPI_Comm_free(&dup);
    return coll_finish();
}
