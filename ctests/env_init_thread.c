/* oxmpi-test: np=1,2,4 */
/* MPI_Init_thread: the provided level is one of the four, ordered constants,
 * MPI_Query_thread agrees, MPI_Is_thread_main is true on the main thread. */
#include "mtest.h"

int main(int argc, char **argv)
{
    int provided = -1, queried = -1, ismain = -1, flag = 0, i, buf[4];
    MPI_Status st;

    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &mt_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &mt_size);

    CHECK(MPI_THREAD_SINGLE < MPI_THREAD_FUNNELED && MPI_THREAD_FUNNELED < MPI_THREAD_SERIALIZED &&
              MPI_THREAD_SERIALIZED < MPI_THREAD_MULTIPLE,
          "thread level constants are not ordered");
    CHECK(provided == MPI_THREAD_SINGLE || provided == MPI_THREAD_FUNNELED ||
              provided == MPI_THREAD_SERIALIZED || provided == MPI_THREAD_MULTIPLE,
          "provided %d is not a thread level", provided);
    /* MULTIPLE was required: provided is the highest supported level, never above it. */
    CHECK(provided <= MPI_THREAD_MULTIPLE, "provided %d above required", provided);
    MPI_CHECK(MPI_Query_thread(&queried));
    CHECK(queried == provided, "MPI_Query_thread %d != provided %d", queried, provided);
    MPI_CHECK(MPI_Is_thread_main(&ismain));
    CHECK(ismain == 1, "MPI_Is_thread_main gave %d", ismain);
    MPI_CHECK(MPI_Initialized(&flag));
    CHECK(flag == 1, "MPI_Initialized gave %d after MPI_Init_thread", flag);

    /* The library works after MPI_Init_thread: a message to self. */
    for (i = 0; i < 4; i++)
        buf[i] = -1;
    {
        int out[4] = {mt_rank, 7, 8, 9};
        MPI_CHECK(MPI_Sendrecv(out, 4, MPI_INT, mt_rank, 5, buf, 4, MPI_INT, mt_rank, 5, MPI_COMM_WORLD, &st));
        CHECK(buf[0] == mt_rank && buf[3] == 9, "self message corrupted");
    }
    return mt_finalize();
}
