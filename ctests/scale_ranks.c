/* oxmpi-test: np=32,64,256 timeout=300 one-node="the shared-memory layout of many ranks on one node" */
/* Many ranks on one node, far more than cores (the shared-memory layout of many ranks: small
 * ring slots, payloads in cells): starts, runs barriers, an allreduce loop, a ring of messages
 * that need cells, an alltoall and a broadcast, checks every result, and ends cleanly. */
#include "mtest.h"

int main(int argc, char **argv)
{
    mt_init(&argc, &argv);
    MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
    for (int i = 0; i < 10; i++) {
        long v = mt_rank + i, r = -1;
        MPI_CHECK(MPI_Allreduce(&v, &r, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD));
        long want = (long)mt_size * (mt_size - 1) / 2 + (long)mt_size * i;
        CHECK(r == want, "allreduce %d: %ld, want %ld", i, r, want);
    }
    /* A ring of 4 KiB messages, five steps deep: payloads in cells, both neighbours at once. */
    enum { LEN = 4096, STEPS = 5 };
    unsigned char *out = mt_malloc(LEN), *in = mt_malloc(LEN);
    int right = (mt_rank + 1) % mt_size, left = (mt_rank + mt_size - 1) % mt_size;
    for (int s = 0; s < STEPS; s++) {
        mt_fill_bytes(out, LEN, (unsigned)(mt_rank * 10 + s));
        MPI_CHECK(MPI_Sendrecv(out, LEN, MPI_BYTE, right, s, in, LEN, MPI_BYTE, left, s, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        CHECK(mt_check_bytes(in, LEN, (unsigned)(left * 10 + s)) == (size_t)-1, "ring step %d: wrong data from %d", s, left);
    }
    int *a = mt_malloc(sizeof(int) * (size_t)mt_size * 2), *b = a + mt_size;
    for (int d = 0; d < mt_size; d++)
        a[d] = mt_rank * 100000 + d;
    MPI_CHECK(MPI_Alltoall(a, 1, MPI_INT, b, 1, MPI_INT, MPI_COMM_WORLD));
    for (int s = 0; s < mt_size; s++)
        CHECK(b[s] == s * 100000 + mt_rank, "alltoall: %d from %d", b[s], s);
    enum { BCAST = 65536 };
    unsigned char *big = mt_malloc(BCAST);
    if (mt_rank == mt_size / 2)
        mt_fill_bytes(big, BCAST, 77);
    MPI_CHECK(MPI_Bcast(big, BCAST, MPI_BYTE, mt_size / 2, MPI_COMM_WORLD));
    CHECK(mt_check_bytes(big, BCAST, 77) == (size_t)-1, "bcast: wrong data");
    free(out);
    free(in);
    free(a);
    free(big);
    return mt_finalize();
}
