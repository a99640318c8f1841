/* oxmpi-test: np=1,2,4,8 */
/* MPI_ANY_SOURCE / MPI_ANY_TAG: rank 0 receives one message from every rank
 * (itself included) with wildcards and checks MPI_SOURCE, MPI_TAG and the
 * count in each status; then ANY_TAG with a fixed source and ANY_SOURCE with
 * a fixed tag. The other ranks are held back by release messages so that
 * no unrelated message can match a wildcard receive. */
#include "mtest.h"

int main(int argc, char **argv)
{
    int i, buf[64], seen[1024];
    MPI_Status st;
    MPI_Request self_rq = MPI_REQUEST_NULL;

    mt_init(&argc, &argv);
    for (i = 0; i < 64; i++)
        buf[i] = mt_rank * 100 + i;

    /* Phase 1: everyone (rank 0 too, non-blocking) sends rank+1 ints, tag 10+rank. */
    if (mt_rank == 0)
        MPI_CHECK(MPI_Isend(buf, 1, MPI_INT, 0, 10, MPI_COMM_WORLD, &self_rq));
    else
        MPI_CHECK(MPI_Send(buf, mt_rank + 1, MPI_INT, 0, 10 + mt_rank, MPI_COMM_WORLD));
    if (mt_rank == 0) {
        memset(seen, 0, sizeof seen);
        for (i = 0; i < mt_size; i++) {
            int in[64], count = -1, j, src;
            for (j = 0; j < 64; j++)
                in[j] = -1;
            MPI_CHECK(MPI_Recv(in, 64, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st));
            src = st.MPI_SOURCE;
            CHECK(src >= 0 && src < mt_size, "bad MPI_SOURCE %d", src);
            if (src < 0 || src >= mt_size)
                continue;
            CHECK(!seen[src], "two messages from %d", src);
            seen[src] = 1;
            CHECK(st.MPI_TAG == 10 + src, "from %d: tag %d", src, st.MPI_TAG);
            MPI_CHECK(MPI_Get_count(&st, MPI_INT, &count));
            CHECK(count == src + 1, "from %d: count %d", src, count);
            for (j = 0; j < count && j < 64; j++)
                CHECK(in[j] == src * 100 + j, "from %d: element %d = %d", src, j, in[j]);
            CHECK(in[src + 1 < 64 ? src + 1 : 63] == -1 || src + 1 >= 64, "from %d: wrote past count", src);
        }
        MPI_CHECK(MPI_Wait(&self_rq, MPI_STATUS_IGNORE));
        /* Release the others only now: any message they sent earlier would
         * match the wildcard receives above. */
        for (i = 1; i < mt_size; i++)
            MPI_CHECK(MPI_Send(buf, 0, MPI_INT, i, 40, MPI_COMM_WORLD));
    } else {
        MPI_CHECK(MPI_Recv(buf, 0, MPI_INT, 0, 40, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    }

    /* Phase 2: rank 1 sends three messages with tags 5, 6, 7; rank 0 receives
     * them with ANY_TAG from source 1 (in order), then rank 1 sends with tag 9
     * and rank 0 receives from ANY_SOURCE with tag 9. */
    if (mt_size >= 2) {
        if (mt_rank == 1) {
            int t;
            for (t = 5; t <= 7; t++) {
                int v = t * 11;
                MPI_CHECK(MPI_Send(&v, 1, MPI_INT, 0, t, MPI_COMM_WORLD));
            }
            i = 99;
            MPI_CHECK(MPI_Send(&i, 1, MPI_INT, 0, 9, MPI_COMM_WORLD));
        } else if (mt_rank == 0) {
            int t, v;
            for (t = 5; t <= 7; t++) {
                v = -1;
                MPI_CHECK(MPI_Recv(&v, 1, MPI_INT, 1, MPI_ANY_TAG, MPI_COMM_WORLD, &st));
                CHECK(st.MPI_TAG == t && v == t * 11 && st.MPI_SOURCE == 1, "ANY_TAG: tag %d value %d source %d",
                      st.MPI_TAG, v, st.MPI_SOURCE);
            }
            v = -1;
            MPI_CHECK(MPI_Recv(&v, 1, MPI_INT, MPI_ANY_SOURCE, 9, MPI_COMM_WORLD, &st));
            CHECK(st.MPI_SOURCE == 1 && st.MPI_TAG == 9 && v == 99, "ANY_SOURCE: source %d tag %d value %d",
                  st.MPI_SOURCE, st.MPI_TAG, v);
        }
    }
    mt_barrier();

    /* Phase 3: a posted wildcard receive is matched by the first message of a
     * specific tag; a later specific receive takes the other one. */
    if (mt_size >= 2 && mt_rank <= 1) {
        if (mt_rank == 0) {
            int a = -1, b = -1;
            MPI_Request r1, r2;
            MPI_CHECK(MPI_Irecv(&a, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &r1));
            MPI_CHECK(MPI_Irecv(&b, 1, MPI_INT, 1, 21, MPI_COMM_WORLD, &r2));
            i = 0;
            MPI_CHECK(MPI_Send(&i, 0, MPI_INT, 1, 20, MPI_COMM_WORLD)); /* go */
            MPI_CHECK(MPI_Wait(&r1, &st));
            CHECK(a == 2020 && st.MPI_TAG == 20, "wildcard got %d tag %d", a, st.MPI_TAG);
            MPI_CHECK(MPI_Wait(&r2, &st));
            CHECK(b == 2121 && st.MPI_TAG == 21, "specific got %d tag %d", b, st.MPI_TAG);
            for (i = 2; i < mt_size; i++)
                MPI_CHECK(MPI_Send(&i, 0, MPI_INT, i, 41, MPI_COMM_WORLD)); /* release */
        } else {
            int v;
            MPI_CHECK(MPI_Recv(&v, 0, MPI_INT, 0, 20, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            v = 2020;
            MPI_CHECK(MPI_Send(&v, 1, MPI_INT, 0, 20, MPI_COMM_WORLD));
            v = 2121;
            MPI_CHECK(MPI_Send(&v, 1, MPI_INT, 0, 21, MPI_COMM_WORLD));
        }
    }
    if (mt_size >= 2 && mt_rank >= 2)
        MPI_CHECK(MPI_Recv(buf, 0, MPI_INT, 0, 41, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    return mt_finalize();
}
