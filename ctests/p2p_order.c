/* oxmpi-test: np=2,4,8 */
/* Non-overtaking: many messages with the same (source, tag, comm) arrive in
 * the order sent, including a mix of small (eager) and large (rendezvous)
 * messages, with blocking and non-blocking sends, and with receives by
 * specific source, MPI_ANY_SOURCE and MPI_ANY_TAG. Ranks work in pairs. */
#include "mtest.h"

#define NMSG 200
#define BIG (256 * 1024 + 8)

static size_t len_of(int i)
{
    /* every 17th message is large, others vary from 4 to ~2 KiB */
    return (i % 17 == 5) ? BIG : (size_t)(4 + (i * 37) % 2048);
}

int main(int argc, char **argv)
{
    int partner, i;
    unsigned char *buf;
    MPI_Request *rq;

    mt_init(&argc, &argv);
    partner = mt_rank ^ 1;
    buf = mt_malloc((size_t)BIG * 4);
    rq = mt_malloc(sizeof(MPI_Request) * NMSG);
    if (partner < mt_size) {
        if (mt_rank % 2 == 0) {
            /* blocking sends, sequence number in the first 4 bytes */
            for (i = 0; i < NMSG; i++) {
                size_t n = len_of(i);
                mt_fill_bytes(buf, n, (unsigned)i);
                memcpy(buf, &i, sizeof i);
                MPI_CHECK(MPI_Send(buf, (int)n, MPI_BYTE, partner, 3, MPI_COMM_WORLD));
            }
            /* non-blocking sends, all in flight at once, with separate buffers */
            {
                unsigned char **bufs = mt_malloc(sizeof(unsigned char *) * NMSG);
                for (i = 0; i < NMSG; i++) {
                    size_t n = len_of(i);
                    bufs[i] = mt_malloc(n);
                    mt_fill_bytes(bufs[i], n, (unsigned)i + 7);
                    memcpy(bufs[i], &i, sizeof i);
                    MPI_CHECK(MPI_Isend(bufs[i], (int)n, MPI_BYTE, partner, 4, MPI_COMM_WORLD, &rq[i]));
                }
                MPI_CHECK(MPI_Waitall(NMSG, rq, MPI_STATUSES_IGNORE));
                for (i = 0; i < NMSG; i++)
                    free(bufs[i]);
                free(bufs);
            }
        } else {
            MPI_Status st;
            for (i = 0; i < NMSG; i++) {
                size_t n = len_of(i);
                int seq = -1, count = -1;
                /* alternate between specific, ANY_SOURCE and ANY_TAG receives */
                int src = (i % 3 == 1) ? MPI_ANY_SOURCE : partner;
                int tag = (i % 3 == 2) ? MPI_ANY_TAG : 3;
                MPI_CHECK(MPI_Recv(buf, BIG, MPI_BYTE, src, tag, MPI_COMM_WORLD, &st));
                MPI_CHECK(MPI_Get_count(&st, MPI_BYTE, &count));
                memcpy(&seq, buf, sizeof seq);
                CHECK(seq == i && count == (int)n, "blocking: message %d arrived as %d (count %d)", i, seq, count);
                if (seq == i) {
                    unsigned char *tmp = mt_malloc(n);
                    mt_fill_bytes(tmp, n, (unsigned)i);
                    memcpy(tmp, &i, sizeof i);
                    CHECK(memcmp(tmp, buf, n) == 0, "blocking: message %d data differs", i);
                    free(tmp);
                }
            }
            /* Pre-post half the receives, receive the rest after a delay. */
            {
                unsigned char **bufs = mt_malloc(sizeof(unsigned char *) * NMSG);
                for (i = 0; i < NMSG; i++)
                    bufs[i] = mt_malloc(BIG);
                for (i = 0; i < NMSG / 2; i++)
                    MPI_CHECK(MPI_Irecv(bufs[i], BIG, MPI_BYTE, partner, 4, MPI_COMM_WORLD, &rq[i]));
                for (i = NMSG / 2; i < NMSG; i++)
                    MPI_CHECK(MPI_Irecv(bufs[i], BIG, MPI_BYTE, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &rq[i]));
                for (i = 0; i < NMSG; i++) {
                    int seq = -1, count = -1;
                    MPI_CHECK(MPI_Wait(&rq[i], &st));
                    MPI_CHECK(MPI_Get_count(&st, MPI_BYTE, &count));
                    memcpy(&seq, bufs[i], sizeof seq);
                    CHECK(seq == i && count == (int)len_of(i), "non-blocking: message %d arrived as %d (count %d)",
                          i, seq, count);
                    if (seq == i) {
                        unsigned char *tmp = mt_malloc(len_of(i));
                        mt_fill_bytes(tmp, len_of(i), (unsigned)i + 7);
                        memcpy(tmp, &i, sizeof i);
                        CHECK(memcmp(tmp, bufs[i], len_of(i)) == 0, "non-blocking: message %d data differs", i);
                        free(tmp);
                    }
                    free(bufs[i]);
                }
                free(bufs);
            }
        }
    }
    free(buf);
    free(rq);
    return mt_finalize();
}
