/* oxmpi-test: np=1,2,3,4,8 timeout=120 */
/* Blocking Bcast, Reduce, Allreduce, Gather, Scatter, Allgather and Alltoall with contiguous
   buffers (the paths that take them as bytes) against the general ones: every root,
   MPI_IN_PLACE, sizes from 1 byte to past the shared-memory lanes, a contiguous derived type
   whose data starts after the buffer pointer, a non-contiguous type, ranks taking different
   paths in one call; count 0 of every kind (no effect on the buffers, NULL allowed); and bad
   arguments rejected, with count 0 too. */
#include "coll_mtest.h"
#ifndef MT_OXMPI
#define MT_OXMPI 0 /* set by the harness when testing oxmpi */
#endif

static int rank, size;

static unsigned char pat(int who, int i)
{
    return (unsigned char)(who * 31 + i * 7 + 1);
}

static void expect(int rc, int cls, const char *what)
{
    int got = -1;
    if (rc != MPI_SUCCESS)
        MPI_Error_class(rc, &got);
    CHECK(rc != MPI_SUCCESS && got == cls, "%s: rc %d class %d, want class %d", what, rc, got, cls);
}

/* Allgather and Alltoall of `len` bytes per block, plain and in place. */
static void exchange_bytes(int len)
{
    size_t all = (size_t)len * size;
    unsigned char *a = malloc(all + 8), *b = malloc(all + 8);
    int i, j, inplace;
    for (inplace = 0; inplace < 2; inplace++) {
        for (i = 0; i < len; i++)
            a[i] = pat(rank, i);
        for (i = 0; i < (int)all; i++)
            b[i] = 0;
        if (inplace)
            memcpy(b + (size_t)rank * len, a, (size_t)len);
        MPI_Allgather(inplace ? MPI_IN_PLACE : a, len, MPI_BYTE, b, len, MPI_BYTE, MPI_COMM_WORLD);
        for (j = 0; j < size; j++) {
            for (i = 0; i < len && b[(size_t)j * len + i] == pat(j, i); i++)
                ;
            CHECK(i == len, "Allgather len %d inplace %d: block %d byte %d", len, inplace, j, i);
        }
        /* Alltoall: the block for rank j carries pat(rank * size + j, i). */
        unsigned char *src = inplace ? b : a;
        for (j = 0; j < size; j++)
            for (i = 0; i < len; i++)
                src[(size_t)j * len + i] = pat(rank * size + j, i);
        if (!inplace)
            memset(b, 0, all);
        MPI_Alltoall(inplace ? MPI_IN_PLACE : a, len, MPI_BYTE, b, len, MPI_BYTE, MPI_COMM_WORLD);
        for (j = 0; j < size; j++) {
            for (i = 0; i < len && b[(size_t)j * len + i] == pat(j * size + rank, i); i++)
                ;
            CHECK(i == len, "Alltoall len %d inplace %d: block from %d byte %d", len, inplace, j, i);
        }
    }
    free(a);
    free(b);
}

/* Bytes of every rooted collective and of Allreduce, `len` bytes per rank. */
static void bytes_paths(int len)
{
    int n = len, root, i, j;
    unsigned char *a = malloc((size_t)len * size + 8), *b = malloc((size_t)len * size + 8);
    for (root = 0; root < size; root++) {
        /* Bcast */
        for (i = 0; i < n; i++)
            a[i] = rank == root ? pat(root, i) : 0;
        MPI_Bcast(a, n, MPI_BYTE, root, MPI_COMM_WORLD);
        for (i = 0; i < n && a[i] == pat(root, i); i++)
            ;
        CHECK(i == n, "Bcast len %d root %d: byte %d", len, root, i);

        /* Scatter, then in place at the root */
        for (int inplace = 0; inplace < 2; inplace++) {
            for (i = 0; i < n * size; i++)
                a[i] = rank == root ? pat(i / n, i % n) : 0;
            memset(b, 0, (size_t)n);
            void *rb = inplace && rank == root ? MPI_IN_PLACE : b;
            MPI_Scatter(a, n, MPI_BYTE, rb, n, MPI_BYTE, root, MPI_COMM_WORLD);
            const unsigned char *mine = inplace && rank == root ? a + (size_t)root * n : b;
            for (i = 0; i < n && mine[i] == pat(rank, i); i++)
                ;
            CHECK(i == n, "Scatter len %d root %d inplace %d: byte %d", len, root, inplace, i);
        }

        /* Gather, then in place at the root */
        for (int inplace = 0; inplace < 2; inplace++) {
            for (i = 0; i < n; i++)
                a[i] = pat(rank, i);
            for (i = 0; i < n * size; i++)
                b[i] = inplace && rank == root && i / n == root ? pat(root, i % n) : 0;
            const void *sb = inplace && rank == root ? MPI_IN_PLACE : a;
            MPI_Gather(sb, n, MPI_BYTE, b, n, MPI_BYTE, root, MPI_COMM_WORLD);
            if (rank == root) {
                for (i = 0; i < n * size && b[i] == pat(i / n, i % n); i++)
                    ;
                CHECK(i == n * size, "Gather len %d root %d inplace %d: byte %d", len, root, inplace, i);
            }
        }
    }

    /* Reductions of ints (len / 4 of them, at least 1), every root, in place too */
    int c = len / 4 > 0 ? len / 4 : 1;
    int *x = malloc(sizeof(int) * c), *y = malloc(sizeof(int) * c);
    for (root = 0; root < size; root++) {
        for (int inplace = 0; inplace < 2; inplace++) {
            /* MPICH 4.0.2 dereferences MPI_IN_PLACE in Reduce from about 3 KB on. */
            if (inplace && !MT_OXMPI && len >= 3000)
                continue;
            for (j = 0; j < c; j++) {
                x[j] = rank + j;
                y[j] = -1;
            }
            int at_root = rank == root;
            if (inplace && at_root)
                memcpy(y, x, sizeof(int) * c);
            MPI_Reduce(inplace && at_root ? MPI_IN_PLACE : x, y, c, MPI_INT, MPI_SUM, root, MPI_COMM_WORLD);
            if (at_root) {
                for (j = 0; j < c && y[j] == size * (size - 1) / 2 + size * j; j++)
                    ;
                CHECK(j == c, "Reduce count %d root %d inplace %d: element %d = %d", c, root, inplace, j, y[j < c ? j : 0]);
            } else {
                CHECK(y[0] == -1, "Reduce wrote a non-root's recvbuf");
            }
        }
    }
    for (int inplace = 0; inplace < 2; inplace++) {
        for (j = 0; j < c; j++) {
            x[j] = rank * 3 + j;
            y[j] = inplace ? x[j] : -1;
        }
        MPI_Allreduce(inplace ? MPI_IN_PLACE : x, y, c, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
        for (j = 0; j < c && y[j] == (size - 1) * 3 + j; j++)
            ;
        CHECK(j == c, "Allreduce count %d inplace %d: element %d", c, inplace, j);
    }
    free(x);
    free(y);
    free(a);
    free(b);
    exchange_bytes(len);
}

/* A contiguous type of 2 ints whose data starts 8 bytes after the buffer pointer (lb 8,
   extent 8), and a strided one (every other int); Bcast, Gather and Scatter with them. */
static void type_paths(void)
{
    MPI_Datatype t0, shifted, strided;
    int bl = 2;
    MPI_Aint disp = 8;
    MPI_Type_create_hindexed(1, &bl, &disp, MPI_INT, &t0);
    MPI_Type_create_resized(t0, 8, 8, &shifted);
    MPI_Type_commit(&shifted);
    MPI_Type_vector(2, 1, 2, MPI_INT, &strided);
    MPI_Type_commit(&strided);
    int root, i, k = 3; /* elements per rank */
    int *buf = calloc((size_t)(2 * k * size + 8), sizeof(int));
    int *mine = calloc((size_t)(2 * k + 8), sizeof(int));
    for (root = 0; root < size; root++) {
        /* Bcast of k shifted elements: ints 2..2k+1 of buf. */
        for (i = 0; i < 2 * k + 4; i++)
            buf[i] = rank == root ? 1000 * root + i : -1;
        MPI_Bcast(buf, k, shifted, root, MPI_COMM_WORLD);
        for (i = 2; i < 2 * k + 2 && buf[i] == 1000 * root + i; i++)
            ;
        CHECK(i == 2 * k + 2, "Bcast shifted root %d: int %d = %d", root, i, buf[i]);
        CHECK(rank == root || (buf[0] == -1 && buf[1] == -1 && buf[2 * k + 2] == -1),
              "Bcast shifted wrote outside the data");

        /* Scatter shifted at the root to strided ints elsewhere, and back with Gather. */
        for (i = 0; i < 2 * k * size + 2; i++)
            buf[i] = rank == root ? i : -1;
        for (i = 0; i < 4 * k; i++)
            mine[i] = -1;
        MPI_Scatter(buf, k, shifted, mine, k, strided, root, MPI_COMM_WORLD);
        /* Rank r's ints are 2 + 2kr .. 2 + 2k(r+1) - 1 of the root's buffer; a strided
           element takes ints 0 and 2 of 3 (extent 3 ints). */
        for (i = 0; i < 2 * k; i++) {
            int at = (i / 2) * 3 + (i % 2) * 2;
            CHECK(mine[at] == 2 + 2 * k * rank + i, "Scatter shifted->strided root %d: int %d = %d", root, at,
                  mine[at]);
        }
        /* The same from plain ints at the root (contiguous at the root only). */
        for (i = 0; i < 2 * k * size; i++)
            buf[i] = rank == root ? 5000 + i : -1;
        for (i = 0; i < 4 * k; i++)
            mine[i] = -1;
        MPI_Scatter(buf, 2 * k, MPI_INT, mine, k, strided, root, MPI_COMM_WORLD);
        for (i = 0; i < 2 * k; i++) {
            int at = (i / 2) * 3 + (i % 2) * 2;
            CHECK(mine[at] == 5000 + 2 * k * rank + i, "Scatter int->strided root %d: int %d = %d", root, at, mine[at]);
        }
        for (i = 0; i < 2 * k * size; i++)
            buf[i] = -1;
        MPI_Gather(mine, k, strided, buf, 2 * k, MPI_INT, root, MPI_COMM_WORLD);
        if (rank == root) {
            for (i = 0; i < 2 * k * size && buf[i] == 5000 + i; i++)
                ;
            CHECK(i == 2 * k * size, "Gather strided->int root %d: int %d = %d", root, i, buf[i]);
        }
        for (i = 0; i < 4 * k; i++)
            mine[i] = -1;
        for (i = 0; i < 2 * k; i++)
            mine[(i / 2) * 3 + (i % 2) * 2] = 2 + 2 * k * rank + i;
        for (i = 0; i < 2 * k * size + 2; i++)
            buf[i] = -1;
        MPI_Gather(mine, k, strided, buf, k, shifted, root, MPI_COMM_WORLD);
        if (rank == root) {
            for (i = 2; i < 2 * k * size + 2 && buf[i] == i; i++)
                ;
            CHECK(i == 2 * k * size + 2, "Gather strided->shifted root %d: int %d = %d", root, i, buf[i]);
            CHECK(buf[0] == -1 && buf[1] == -1, "Gather shifted wrote before the data");
        }
    }
    /* Allgather and Alltoall with the types differing between ranks (same signatures):
       even ranks send `shifted` elements (one run: the byte path), odd ranks `strided` ones
       (the general path); received as plain ints on even ranks, `strided` on odd ones. */
    {
        int odd = rank % 2, n2 = 2 * k;
        MPI_Datatype stype = odd ? strided : shifted, rtype = odd ? strided : MPI_INT;
        int rcount = odd ? k : n2;
        int *s2 = calloc((size_t)(3 * k * size + 8), sizeof(int));
        int *r2 = calloc((size_t)(3 * k * size + 8), sizeof(int));
        /* The i-th int of the block for rank j (Alltoall) or of the block (Allgather). */
#define VAL(from, to, i) (100000 * (from) + 1000 * (to) + (i))
        /* Where send element ints live: shifted: ints 2.. of each 2-int element (one run
           from int 2); strided: ints 0 and 2 of each 3-int element. */
#define SAT(blk, i) (odd ? 3 * k * (blk) + ((i) / 2) * 3 + ((i) % 2) * 2 : 2 + n2 * (blk) + (i))
#define RAT(blk, i) (odd ? 3 * k * (blk) + ((i) / 2) * 3 + ((i) % 2) * 2 : n2 * (blk) + (i))
        for (i = 0; i < n2; i++)
            s2[SAT(0, i)] = VAL(rank, 0, i);
        for (i = 0; i < 3 * k * size; i++)
            r2[i] = -1;
        MPI_Allgather(s2, k, stype, r2, rcount, rtype, MPI_COMM_WORLD);
        for (int j = 0; j < size; j++)
            for (i = 0; i < n2; i++)
                CHECK(r2[RAT(j, i)] == VAL(j, 0, i), "Allgather mixed types: block %d int %d = %d", j, i,
                      r2[RAT(j, i)]);
        for (int j = 0; j < size; j++)
            for (i = 0; i < n2; i++)
                s2[SAT(j, i)] = VAL(rank, j, i);
        for (i = 0; i < 3 * k * size; i++)
            r2[i] = -1;
        MPI_Alltoall(s2, k, stype, r2, rcount, rtype, MPI_COMM_WORLD);
        for (int j = 0; j < size; j++)
            for (i = 0; i < n2; i++)
                CHECK(r2[RAT(j, i)] == VAL(j, rank, i), "Alltoall mixed types: from %d int %d = %d", j, i,
                      r2[RAT(j, i)]);
#undef VAL
#undef SAT
#undef RAT
        free(s2);
        free(r2);
    }
    free(buf);
    free(mine);
    MPI_Type_free(&t0);
    MPI_Type_free(&shifted);
    MPI_Type_free(&strided);
}

/* Count 0 of every blocking collective, every root, in place too: success, buffers left as
   they are; NULL buffers allowed. */
static void zero_counts(void)
{
    int a[4] = {7, 7, 7, 7}, b[4] = {9, 9, 9, 9}, root, rc = 0;
    int *zeros = calloc((size_t)size, sizeof(int));
    for (root = 0; root < size; root++) {
        int me = rank == root;
        rc |= MPI_Bcast(a, 0, MPI_INT, root, MPI_COMM_WORLD);
        rc |= MPI_Bcast(NULL, 0, MPI_INT, root, MPI_COMM_WORLD);
        rc |= MPI_Reduce(a, b, 0, MPI_INT, MPI_SUM, root, MPI_COMM_WORLD);
        rc |= MPI_Reduce(me ? MPI_IN_PLACE : a, b, 0, MPI_INT, MPI_SUM, root, MPI_COMM_WORLD);
        rc |= MPI_Reduce(NULL, NULL, 0, MPI_DOUBLE, MPI_MAX, root, MPI_COMM_WORLD);
        rc |= MPI_Gather(a, 0, MPI_INT, b, 0, MPI_INT, root, MPI_COMM_WORLD);
        rc |= MPI_Gather(me ? MPI_IN_PLACE : a, 0, MPI_INT, b, 0, MPI_INT, root, MPI_COMM_WORLD);
        rc |= MPI_Scatter(a, 0, MPI_INT, b, 0, MPI_INT, root, MPI_COMM_WORLD);
        rc |= MPI_Scatter(a, 0, MPI_INT, me ? MPI_IN_PLACE : b, 0, MPI_INT, root, MPI_COMM_WORLD);
        rc |= MPI_Gatherv(a, 0, MPI_INT, b, zeros, zeros, MPI_INT, root, MPI_COMM_WORLD);
        rc |= MPI_Scatterv(a, zeros, zeros, MPI_INT, b, 0, MPI_INT, root, MPI_COMM_WORLD);
    }
    rc |= MPI_Allreduce(a, b, 0, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    rc |= MPI_Allreduce(MPI_IN_PLACE, b, 0, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    rc |= MPI_Allreduce(NULL, NULL, 0, MPI_INT, MPI_PROD, MPI_COMM_WORLD);
    rc |= MPI_Allgather(a, 0, MPI_INT, b, 0, MPI_INT, MPI_COMM_WORLD);
    rc |= MPI_Alltoall(a, 0, MPI_INT, b, 0, MPI_INT, MPI_COMM_WORLD);
    rc |= MPI_Reduce_scatter_block(a, b, 0, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    rc |= MPI_Reduce_scatter(a, b, zeros, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    rc |= MPI_Scan(a, b, 0, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    rc |= MPI_Exscan(a, b, 0, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    CHECK(rc == MPI_SUCCESS, "a count-0 collective failed");
    for (int i = 0; i < 4; i++)
        CHECK(a[i] == 7 && b[i] == 9, "a count-0 collective changed a buffer (a[%d] %d b[%d] %d)", i, a[i], i, b[i]);
    free(zeros);
}

/* Bad arguments are rejected with count 0 as well (every rank makes the same bad call). */
static void zero_count_errors(void)
{
    int a[4] = {0}, b[4] = {0};
    expect(MPI_Bcast(a, 0, MPI_INT, size, MPI_COMM_WORLD), MPI_ERR_ROOT, "Bcast count 0 root=size");
    expect(MPI_Bcast(a, -1, MPI_INT, 0, MPI_COMM_WORLD), MPI_ERR_COUNT, "Bcast count=-1");
    expect(MPI_Bcast(a, 0, MPI_INT, 0, MPI_COMM_NULL), MPI_ERR_COMM, "Bcast count 0 COMM_NULL");
    expect(MPI_Allreduce(a, b, 0, MPI_INT, MPI_OP_NULL, MPI_COMM_WORLD), MPI_ERR_OP, "Allreduce count 0 OP_NULL");
    expect(MPI_Allreduce(a, b, 0, MPI_DOUBLE, MPI_BAND, MPI_COMM_WORLD), MPI_ERR_OP,
           "Allreduce count 0 BAND on DOUBLE");
    expect(MPI_Allreduce(a, b, 0, MPI_INT, MPI_SUM, MPI_COMM_NULL), MPI_ERR_COMM, "Allreduce count 0 COMM_NULL");
    expect(MPI_Reduce(a, b, 0, MPI_INT, MPI_OP_NULL, 0, MPI_COMM_WORLD), MPI_ERR_OP, "Reduce count 0 OP_NULL");
    expect(MPI_Reduce(a, b, 0, MPI_INT, MPI_SUM, -1, MPI_COMM_WORLD), MPI_ERR_ROOT, "Reduce count 0 root=-1");
    expect(MPI_Gather(a, 0, MPI_INT, b, 0, MPI_INT, size, MPI_COMM_WORLD), MPI_ERR_ROOT, "Gather count 0 root=size");
    expect(MPI_Scatter(a, 0, MPI_INT, b, 0, MPI_INT, -2, MPI_COMM_WORLD), MPI_ERR_ROOT, "Scatter count 0 root=-2");
    expect(MPI_Scatter(a, 0, MPI_INT, b, -1, MPI_INT, 0, MPI_COMM_WORLD), MPI_ERR_COUNT, "Scatter recvcount=-1");
    expect(MPI_Gather(a, -1, MPI_INT, b, 0, MPI_INT, 0, MPI_COMM_WORLD), MPI_ERR_COUNT, "Gather sendcount=-1");
    /* The exchanges' byte paths check as the general ones do. */
    int *big = calloc((size_t)size + 1, sizeof(int));
    expect(MPI_Allgather(a, 1, MPI_INT, NULL, 1, MPI_INT, MPI_COMM_WORLD), MPI_ERR_BUFFER, "Allgather NULL recvbuf");
    expect(MPI_Allgather(NULL, 1, MPI_INT, big, 1, MPI_INT, MPI_COMM_WORLD), MPI_ERR_BUFFER, "Allgather NULL sendbuf");
    /* MPICH reports aliasing only where sendbuf is the rank's own block of recvbuf (here on
       rank 0 alone, the others then wait in the collective); oxmpi on every rank. */
    if (MT_OXMPI)
        expect(MPI_Allgather(big, 1, MPI_INT, big, 1, MPI_INT, MPI_COMM_WORLD), MPI_ERR_BUFFER, "Allgather aliased");
    expect(MPI_Allgather(a, 1, MPI_INT, big, -1, MPI_INT, MPI_COMM_WORLD), MPI_ERR_COUNT, "Allgather recvcount=-1");
    expect(MPI_Allgather(a, 1, MPI_INT, big, 1, MPI_DATATYPE_NULL, MPI_COMM_WORLD), MPI_ERR_TYPE,
           "Allgather recvtype NULL");
    expect(MPI_Alltoall(big, 1, MPI_INT, NULL, 1, MPI_INT, MPI_COMM_WORLD), MPI_ERR_BUFFER, "Alltoall NULL recvbuf");
    expect(MPI_Alltoall(NULL, 1, MPI_INT, big, 1, MPI_INT, MPI_COMM_WORLD), MPI_ERR_BUFFER, "Alltoall NULL sendbuf");
    expect(MPI_Alltoall(big, 1, MPI_INT, big, 1, MPI_INT, MPI_COMM_WORLD), MPI_ERR_BUFFER, "Alltoall aliased");
    expect(MPI_Alltoall(big, -1, MPI_INT, b, 1, MPI_INT, MPI_COMM_WORLD), MPI_ERR_COUNT, "Alltoall sendcount=-1");
    expect(MPI_Alltoall(MPI_IN_PLACE, 1, MPI_INT, MPI_IN_PLACE, 1, MPI_INT, MPI_COMM_WORLD), MPI_ERR_BUFFER,
           "Alltoall recvbuf MPI_IN_PLACE");
    free(big);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    static const int lens[] = {1, 8, 100, 1024, 3000, 70000};
    for (unsigned i = 0; i < sizeof lens / sizeof lens[0]; i++)
        bytes_paths(lens[i]);
    type_paths();
    zero_counts();
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    zero_count_errors();
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    return coll_finish();
}
