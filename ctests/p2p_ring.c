/* oxmpi-test: np=1,2,3,4,8 */
/* A token travels around a ring over all ranks several times with blocking
 * MPI_Send/MPI_Recv; each rank adds its rank. Then a ring shift of a large
 * buffer (MPI_Irecv from the left, MPI_Send to the right). */
#include "mtest.h"

int main(int argc, char **argv)
{
    int left, right, lap, laps = 5;
    long token = 0, expect;
    MPI_Status st;

    mt_init(&argc, &argv);
    right = (mt_rank + 1) % mt_size;
    left = (mt_rank + mt_size - 1) % mt_size;
    if (mt_size == 1) {
        /* A ring of one: pass to self with a pre-posted receive. */
        MPI_Request rq;
        for (lap = 0; lap < laps; lap++) {
            MPI_CHECK(MPI_Irecv(&token, 1, MPI_LONG, 0, 1, MPI_COMM_WORLD, &rq));
            {
                long t2 = token + 1;
                MPI_CHECK(MPI_Send(&t2, 1, MPI_LONG, 0, 1, MPI_COMM_WORLD));
            }
            MPI_CHECK(MPI_Wait(&rq, &st));
        }
        CHECK(token == laps, "token %ld after %d laps", token, laps);
    } else {
        long sum = (long)mt_size * (mt_size - 1) / 2;
        for (lap = 0; lap < laps; lap++) {
            if (mt_rank == 0) {
                token = lap * 1000000L;
                MPI_CHECK(MPI_Send(&token, 1, MPI_LONG, right, 1, MPI_COMM_WORLD));
                MPI_CHECK(MPI_Recv(&token, 1, MPI_LONG, left, 1, MPI_COMM_WORLD, &st));
                expect = lap * 1000000L + sum;
                CHECK(token == expect, "lap %d: token %ld, want %ld", lap, token, expect);
            } else {
                MPI_CHECK(MPI_Recv(&token, 1, MPI_LONG, left, 1, MPI_COMM_WORLD, &st));
                expect = lap * 1000000L + (long)mt_rank * (mt_rank - 1) / 2;
                CHECK(token == expect, "lap %d: token %ld, want %ld", lap, token, expect);
                token += mt_rank;
                MPI_CHECK(MPI_Send(&token, 1, MPI_LONG, right, 1, MPI_COMM_WORLD));
            }
            CHECK(st.MPI_SOURCE == left && st.MPI_TAG == 1, "status source %d tag %d", st.MPI_SOURCE, st.MPI_TAG);
        }
    }

    /* Ring shift of 1 MiB + 3 bytes. */
    {
        size_t n = (1 << 20) + 3;
        unsigned char *a = mt_malloc(n), *b = mt_malloc(n);
        MPI_Request rq;
        size_t bad;
        int count = -1;
        mt_fill_bytes(a, n, (unsigned)mt_rank + 1);
        memset(b, 0, n);
        MPI_CHECK(MPI_Irecv(b, (int)n, MPI_BYTE, left, 2, MPI_COMM_WORLD, &rq));
        MPI_CHECK(MPI_Send(a, (int)n, MPI_BYTE, right, 2, MPI_COMM_WORLD));
        MPI_CHECK(MPI_Wait(&rq, &st));
        MPI_CHECK(MPI_Get_count(&st, MPI_BYTE, &count));
        CHECK(count == (int)n && st.MPI_SOURCE == left, "shift: count %d source %d", count, st.MPI_SOURCE);
        bad = mt_check_bytes(b, n, (unsigned)left + 1);
        CHECK(bad == (size_t)-1, "shift: byte %zu differs", bad);
        free(a);
        free(b);
    }
    return mt_finalize();
}
