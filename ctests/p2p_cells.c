/* oxmpi-test: np=2,3,5,8 env=OXMPI_SHM_CELLS=2 env=OXMPI_SHM_SLOTS=2 */
/* Payloads in cells (the shared-memory layout of many ranks, forced here with two cells per
 * rank and two slots per ring): every rank sends every other a stream of messages whose sizes
 * mix those that fit a slot (up to 112 bytes), those that need a cell (up to the eager limit)
 * and rendezvous ones, all in flight at once, so senders run out of cells and slots and must
 * wait for receivers that are themselves sending. Checks content, order (a sequence number
 * in every message of a (source, tag) stream) and statuses; then the same with receives by
 * MPI_ANY_SOURCE, and synchronous sends. */
#include "mtest.h"

#define NMSG 60

static size_t len_of(int i, int src)
{
    static const size_t sizes[] = {0, 1, 80, 81, 112, 113, 200, 2048, 4096, 12288, 12289, 40000};
    return sizes[(i * 7 + src) % (int)(sizeof sizes / sizeof sizes[0])];
}

static unsigned seed_of(int src, int dst, int i)
{
    return (unsigned)(src * 1000003 + dst * 1009 + i);
}

/* Round `round`: every rank sends NMSG messages to every other (nonblocking, or synchronous
 * when `sync`), receiving by source (or MPI_ANY_SOURCE when `any`). */
static void exchange(int round, int any, int sync)
{
    int peers = mt_size - 1, n = peers * NMSG, i, k = 0;
    MPI_Request *sreq = mt_malloc(sizeof(MPI_Request) * (size_t)n);
    MPI_Request *rreq = mt_malloc(sizeof(MPI_Request) * (size_t)n);
    unsigned char **sbuf = mt_malloc(sizeof(unsigned char *) * (size_t)n);
    unsigned char **rbuf = mt_malloc(sizeof(unsigned char *) * (size_t)n);
    int *next_from = calloc((size_t)mt_size, sizeof(int));
    for (i = 0; i < NMSG; i++)
        for (int d = 0; d < mt_size; d++) {
            if (d == mt_rank)
                continue;
            size_t len = len_of(i, mt_rank);
            sbuf[k] = mt_malloc(len + 4);
            mt_fill_bytes(sbuf[k], len, seed_of(mt_rank, d, i));
            if (sync)
                MPI_CHECK(MPI_Issend(sbuf[k], (int)len, MPI_BYTE, d, round, MPI_COMM_WORLD, &sreq[k]));
            else
                MPI_CHECK(MPI_Isend(sbuf[k], (int)len, MPI_BYTE, d, round, MPI_COMM_WORLD, &sreq[k]));
            k++;
        }
    if (!any) {
        k = 0;
        for (i = 0; i < NMSG; i++)
            for (int s = 0; s < mt_size; s++) {
                if (s == mt_rank)
                    continue;
                rbuf[k] = mt_malloc(40004);
                MPI_CHECK(MPI_Irecv(rbuf[k], 40004, MPI_BYTE, s, round, MPI_COMM_WORLD, &rreq[k]));
                k++;
            }
        MPI_Status *st = mt_malloc(sizeof(MPI_Status) * (size_t)n);
        MPI_CHECK(MPI_Waitall(n, rreq, st));
        k = 0;
        for (i = 0; i < NMSG; i++)
            for (int s = 0; s < mt_size; s++) {
                if (s == mt_rank)
                    continue;
                int got;
                size_t len = len_of(i, s);
                MPI_Get_count(&st[k], MPI_BYTE, &got);
                CHECK(st[k].MPI_SOURCE == s && got == (int)len, "round %d message %d from %d: source %d, %d bytes (want %zu)",
                      round, i, s, st[k].MPI_SOURCE, got, len);
                CHECK(mt_check_bytes(rbuf[k], len, seed_of(s, mt_rank, i)) == (size_t)-1,
                      "round %d message %d from %d (%zu bytes): wrong content", round, i, s, len);
                free(rbuf[k]);
                k++;
            }
        free(st);
    } else {
        unsigned char *buf = mt_malloc(40004);
        for (k = 0; k < n; k++) {
            MPI_Status st;
            int got;
            MPI_CHECK(MPI_Recv(buf, 40004, MPI_BYTE, MPI_ANY_SOURCE, round, MPI_COMM_WORLD, &st));
            int s = st.MPI_SOURCE, i = next_from[s]++;
            size_t len = len_of(i, s);
            MPI_Get_count(&st, MPI_BYTE, &got);
            CHECK(got == (int)len, "round %d message %d from %d: %d bytes (want %zu)", round, i, s, got, len);
            CHECK(mt_check_bytes(buf, len, seed_of(s, mt_rank, i)) == (size_t)-1,
                  "round %d message %d from %d (%zu bytes): wrong content or order", round, i, s, len);
        }
        free(buf);
    }
    MPI_CHECK(MPI_Waitall(n, sreq, MPI_STATUSES_IGNORE));
    for (k = 0; k < n; k++)
        free(sbuf[k]);
    free(sreq);
    free(rreq);
    free(sbuf);
    free(rbuf);
    free(next_from);
}

int main(int argc, char **argv)
{
    mt_init(&argc, &argv);
    exchange(1, 0, 0);
    exchange(2, 1, 0);
    exchange(3, 0, 1);
    /* Blocking sends around a ring while everyone sends: a sender waiting for a cell must keep
     * receiving, or every rank waits for the next one. */
    for (int i = 0; i < 200; i++) {
        size_t len = len_of(i, mt_rank) % 13000;
        unsigned char *out = mt_malloc(len + 1), *in = mt_malloc(13001);
        int right = (mt_rank + 1) % mt_size, left = (mt_rank + mt_size - 1) % mt_size, got;
        MPI_Status st;
        mt_fill_bytes(out, len, seed_of(mt_rank, right, i));
        MPI_CHECK(MPI_Sendrecv(out, (int)len, MPI_BYTE, right, 4, in, 13001, MPI_BYTE, left, 4, MPI_COMM_WORLD, &st));
        MPI_Get_count(&st, MPI_BYTE, &got);
        size_t want = len_of(i, left) % 13000;
        CHECK(got == (int)want && mt_check_bytes(in, want, seed_of(left, mt_rank, i)) == (size_t)-1,
              "ring step %d: %d bytes from %d (want %zu) or wrong content", i, got, left, want);
        free(out);
        free(in);
    }
    return mt_finalize();
}
