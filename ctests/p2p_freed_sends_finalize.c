/* oxmpi-test: np=2,3,4,8 timeout=60 */
/*
 * Sends whose requests are freed (MPI_Request_free) before they complete, many more than
 * a peer's ring holds, at eager and rendezvous sizes: the receivers get every message intact,
 * and MPI_Finalize returns (the senders' acknowledgements must drain while ranks finalize).
 */
#include "mtest.h"

#define ROUNDS 200

/* Even ranks send to the next rank, odd ranks receive and check; nothing else follows, so the
 * receivers' acknowledgements are still on their way when the senders reach MPI_Finalize. */
static void run(size_t len)
{
    int peer = mt_rank ^ 1;
    if (peer >= mt_size)
        return;
    unsigned char *buf = malloc(len * ROUNDS);
    for (int i = 0; i < ROUNDS; i++) {
        unsigned char *b = buf + (size_t)i * len;
        if (mt_rank % 2 == 0) {
            memset(b, (mt_rank * 31 + i) & 0xff, len);
            MPI_Request req;
            MPI_CHECK(MPI_Isend(b, (int)len, MPI_BYTE, peer, i, MPI_COMM_WORLD, &req));
            MPI_CHECK(MPI_Request_free(&req));
            CHECK(req == MPI_REQUEST_NULL, "MPI_Request_free did not null the handle");
        } else {
            MPI_Status st;
            int count;
            MPI_CHECK(MPI_Recv(b, (int)len, MPI_BYTE, peer, i, MPI_COMM_WORLD, &st));
            MPI_Get_count(&st, MPI_BYTE, &count);
            CHECK(count == (int)len, "round %d: got %d bytes, want %zu", i, count, len);
            unsigned char want = (unsigned char)((peer * 31 + i) & 0xff);
            CHECK(b[0] == want && b[len - 1] == want, "round %d (%zu B): wrong data from rank %d", i, len, peer);
        }
    }
    /* The send buffers stay allocated: the program ends without knowing when they are read. */
}

int main(int argc, char **argv)
{
    mt_init(&argc, &argv);
    run(64);
    run(65536);
    run(300000);
    /* Every rank reports through its exit status; no message may follow the sends. */
    MPI_CHECK(MPI_Finalize());
    if (mt_errs)
        return 1;
    if (mt_rank == 0)
        printf("No Errors\n");
    return 0;
}
