/* oxmpi-test: np=1,2,4,8 */
/* MPI_Probe / MPI_Iprobe: the status gives source, tag and (through
 * MPI_Get_count) the size, which is then used to allocate and receive;
 * probing does not consume the message; Iprobe of a tag never sent gives
 * flag 0; wildcards; MPI_PROC_NULL. Every rank sends to its right neighbour. */
#include "mtest.h"

int main(int argc, char **argv)
{
    static const int sizes[] = {0, 3, 4000, 200000};
    int left, right, k, i, flag, count;
    MPI_Status st, st2;
    MPI_Request rq[4];
    int *sb[4];

    mt_init(&argc, &argv);
    right = (mt_rank + 1) % mt_size;
    left = (mt_rank + mt_size - 1) % mt_size;

    /* Nothing was sent with tag 999: Iprobe says so. */
    flag = -1;
    MPI_CHECK(MPI_Iprobe(MPI_ANY_SOURCE, 999, MPI_COMM_WORLD, &flag, &st));
    CHECK(flag == 0, "Iprobe of an unsent tag gave flag %d", flag);

    for (k = 0; k < 4; k++) {
        sb[k] = mt_malloc(sizeof(int) * (sizes[k] + 1));
        for (i = 0; i < sizes[k]; i++)
            sb[k][i] = mt_rank + i * 2 + k;
        MPI_CHECK(MPI_Isend(sb[k], sizes[k], MPI_INT, right, 10 + k, MPI_COMM_WORLD, &rq[k]));
    }
    /* Receive in reverse order of sending, sizing each by a probe. */
    for (k = 3; k >= 0; k--) {
        int *buf;
        if (k % 2) {
            MPI_CHECK(MPI_Probe(left, 10 + k, MPI_COMM_WORLD, &st));
        } else {
            flag = 0;
            while (!flag)
                MPI_CHECK(MPI_Iprobe(MPI_ANY_SOURCE, 10 + k, MPI_COMM_WORLD, &flag, &st));
        }
        CHECK(st.MPI_SOURCE == left && st.MPI_TAG == 10 + k, "probe %d: source %d tag %d", k, st.MPI_SOURCE,
              st.MPI_TAG);
        count = -1;
        MPI_CHECK(MPI_Get_count(&st, MPI_INT, &count));
        CHECK(count == sizes[k], "probe %d: count %d, want %d", k, count, sizes[k]);
        if (count < 0 || count > sizes[k])
            count = sizes[k];
        /* A second probe sees the same message. */
        MPI_CHECK(MPI_Probe(MPI_ANY_SOURCE, 10 + k, MPI_COMM_WORLD, &st2));
        CHECK(st2.MPI_SOURCE == left && st2.MPI_TAG == 10 + k, "re-probe %d: source %d tag %d", k,
              st2.MPI_SOURCE, st2.MPI_TAG);
        buf = mt_malloc(sizeof(int) * (count + 1));
        MPI_CHECK(MPI_Recv(buf, count, MPI_INT, st.MPI_SOURCE, st.MPI_TAG, MPI_COMM_WORLD, &st2));
        for (i = 0; i < count; i++)
            if (buf[i] != left + i * 2 + k) {
                CHECK(0, "message %d: element %d is %d", k, i, buf[i]);
                break;
            }
        free(buf);
    }
    MPI_CHECK(MPI_Waitall(4, rq, MPI_STATUSES_IGNORE));
    for (k = 0; k < 4; k++)
        free(sb[k]);

    /* ANY_TAG probe sees the first message sent. */
    {
        int a = 1, b = 2, v = 0;
        MPI_CHECK(MPI_Isend(&a, 1, MPI_INT, right, 21, MPI_COMM_WORLD, &rq[0]));
        MPI_CHECK(MPI_Isend(&b, 1, MPI_INT, right, 20, MPI_COMM_WORLD, &rq[1]));
        MPI_CHECK(MPI_Probe(left, MPI_ANY_TAG, MPI_COMM_WORLD, &st));
        CHECK(st.MPI_TAG == 21, "ANY_TAG probe: tag %d, want 21 (first sent)", st.MPI_TAG);
        MPI_CHECK(MPI_Recv(&v, 1, MPI_INT, left, 20, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        CHECK(v == 2, "tag 20: %d", v);
        MPI_CHECK(MPI_Recv(&v, 1, MPI_INT, left, 21, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        CHECK(v == 1, "tag 21: %d", v);
        MPI_CHECK(MPI_Waitall(2, rq, MPI_STATUSES_IGNORE));
    }

    /* MPI_PROC_NULL: Probe and Iprobe return at once with the PROC_NULL status. */
    MPI_CHECK(MPI_Probe(MPI_PROC_NULL, 5, MPI_COMM_WORLD, &st));
    count = -1;
    MPI_Get_count(&st, MPI_INT, &count);
    CHECK(st.MPI_SOURCE == MPI_PROC_NULL && st.MPI_TAG == MPI_ANY_TAG && count == 0,
          "Probe(PROC_NULL): source %d tag %d count %d", st.MPI_SOURCE, st.MPI_TAG, count);
    flag = 0;
    MPI_CHECK(MPI_Iprobe(MPI_PROC_NULL, 5, MPI_COMM_WORLD, &flag, &st));
    CHECK(flag == 1 && st.MPI_SOURCE == MPI_PROC_NULL && st.MPI_TAG == MPI_ANY_TAG,
          "Iprobe(PROC_NULL): flag %d source %d tag %d", flag, st.MPI_SOURCE, st.MPI_TAG);
    return mt_finalize();
}
