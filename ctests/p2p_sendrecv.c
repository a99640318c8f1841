/* oxmpi-test: np=1,2,3,4,8 */
/* MPI_Sendrecv and MPI_Sendrecv_replace: a ring shift in both directions with
 * small and large messages, different send and receive counts, and
 * MPI_PROC_NULL at the ends of a non-periodic chain. */
#include "mtest.h"

int main(int argc, char **argv)
{
    static const int sizes[] = {0, 1, 1000, 70000, 300000};
    int left, right, k, i, count;
    int *sb, *rb;
    MPI_Status st;

    mt_init(&argc, &argv);
    right = (mt_rank + 1) % mt_size;
    left = (mt_rank + mt_size - 1) % mt_size;
    sb = mt_malloc(sizeof(int) * 300001);
    rb = mt_malloc(sizeof(int) * 300001);

    for (k = 0; k < 5; k++) {
        int n = sizes[k];
        for (i = 0; i < n; i++)
            sb[i] = mt_rank * 7 + i;
        for (i = 0; i <= n; i++)
            rb[i] = -1;
        /* send n to the right, receive up to n+1 from the left */
        MPI_CHECK(MPI_Sendrecv(sb, n, MPI_INT, right, k, rb, n + 1, MPI_INT, left, k, MPI_COMM_WORLD, &st));
        count = -1;
        MPI_CHECK(MPI_Get_count(&st, MPI_INT, &count));
        CHECK(count == n && st.MPI_SOURCE == left && st.MPI_TAG == k, "Sendrecv n=%d: count %d source %d tag %d",
              n, count, st.MPI_SOURCE, st.MPI_TAG);
        for (i = 0; i < n; i++)
            if (rb[i] != left * 7 + i) {
                CHECK(0, "Sendrecv n=%d: element %d is %d", n, i, rb[i]);
                break;
            }
        CHECK(rb[n] == -1, "Sendrecv n=%d: wrote past the message", n);

        /* replace: shift to the left */
        for (i = 0; i < n; i++)
            sb[i] = mt_rank * 11 + i;
        MPI_CHECK(MPI_Sendrecv_replace(sb, n, MPI_INT, left, 100 + k, right, 100 + k, MPI_COMM_WORLD, &st));
        count = -1;
        MPI_CHECK(MPI_Get_count(&st, MPI_INT, &count));
        CHECK(count == n && st.MPI_SOURCE == right && st.MPI_TAG == 100 + k,
              "Sendrecv_replace n=%d: count %d source %d tag %d", n, count, st.MPI_SOURCE, st.MPI_TAG);
        for (i = 0; i < n; i++)
            if (sb[i] != right * 11 + i) {
                CHECK(0, "Sendrecv_replace n=%d: element %d is %d", n, i, sb[i]);
                break;
            }
    }

    /* Non-periodic chain: the ends use MPI_PROC_NULL. */
    {
        int l = mt_rank == 0 ? MPI_PROC_NULL : mt_rank - 1;
        int r = mt_rank == mt_size - 1 ? MPI_PROC_NULL : mt_rank + 1;
        int v = mt_rank, got = -5;
        MPI_CHECK(MPI_Sendrecv(&v, 1, MPI_INT, r, 9, &got, 1, MPI_INT, l, 9, MPI_COMM_WORLD, &st));
        if (l == MPI_PROC_NULL) {
            count = -1;
            MPI_Get_count(&st, MPI_INT, &count);
            CHECK(got == -5 && st.MPI_SOURCE == MPI_PROC_NULL && st.MPI_TAG == MPI_ANY_TAG && count == 0,
                  "Sendrecv from PROC_NULL: got %d source %d tag %d count %d", got, st.MPI_SOURCE, st.MPI_TAG,
                  count);
        } else {
            CHECK(got == l && st.MPI_SOURCE == l, "chain: got %d source %d", got, st.MPI_SOURCE);
        }
        v = mt_rank + 100;
        MPI_CHECK(MPI_Sendrecv_replace(&v, 1, MPI_INT, l, 10, r, 10, MPI_COMM_WORLD, &st));
        if (r == MPI_PROC_NULL)
            CHECK(v == mt_rank + 100 && st.MPI_SOURCE == MPI_PROC_NULL, "replace from PROC_NULL: v %d source %d",
                  v, st.MPI_SOURCE);
        else
            CHECK(v == r + 100 && st.MPI_SOURCE == r, "chain replace: v %d source %d", v, st.MPI_SOURCE);
    }
    free(sb);
    free(rb);
    return mt_finalize();
}
