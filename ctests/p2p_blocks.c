/* oxmpi-test: np=2,4 */
/* Large non-contiguous messages whose layouts are a few large blocks (across nodes they go
 * straight from and into the blocks, as iovec messages: send-gather, receive-scatter, in
 * more pieces when one operation cannot take them all) or many small ones (packed and
 * staged), between ranks paired 0-1, 2-3 (on different hosts when the multi-node tests
 * spread them round robin). Checks every byte that arrives and that the holes of the receive
 * layouts are left alone. */
#include "mtest.h"

#define HOLE 0xee

/* A layout of `count` blocks of `block` bytes every `stride` bytes. */
static MPI_Datatype strided(int count, int block, int stride)
{
    MPI_Datatype t;
    MPI_CHECK(MPI_Type_vector(count, block, stride, MPI_BYTE, &t));
    MPI_CHECK(MPI_Type_commit(&t));
    return t;
}

/* Fills the bytes of `type` at `buf` with the message pattern, in type order. */
static void fill_typed(unsigned char *buf, MPI_Datatype type, size_t len, unsigned seed)
{
    unsigned char *packed = mt_malloc(len);
    int pos = 0;
    mt_fill_bytes(packed, len, seed);
    MPI_CHECK(MPI_Unpack(packed, (int)len, &pos, buf, 1, type, MPI_COMM_SELF));
    free(packed);
}

/* Checks that `buf` holds, through `type`, the message pattern and elsewhere (within `extent`
 * bytes) `hole`. */
static void check_typed(const unsigned char *buf, MPI_Datatype type, size_t len, size_t extent, unsigned seed,
                        int hole, const char *what)
{
    unsigned char *expect = mt_malloc(extent), *packed = mt_malloc(len);
    int pos = 0;
    memset(expect, hole, extent);
    mt_fill_bytes(packed, len, seed);
    MPI_CHECK(MPI_Unpack(packed, (int)len, &pos, expect, 1, type, MPI_COMM_SELF));
    size_t i;
    for (i = 0; i < extent && buf[i] == expect[i]; i++)
        ;
    CHECK(i == extent, "%s: byte %zu is %d, want %d", what, i, i < extent ? buf[i] : 0, i < extent ? expect[i] : 0);
    free(expect);
    free(packed);
}

struct layout_case {
    const char *what;
    int scount, sblock, sstride; /* send layout (scount 0: contiguous) */
    int rcount, rblock, rstride; /* receive layout */
};

int main(int argc, char **argv)
{
    static const struct layout_case cases[] = {
        {"3 blocks to contiguous", 3, 100000, 150000, 0, 300000, 0},
        {"contiguous to 2 blocks", 0, 300000, 0, 2, 150000, 200000},
        {"4 blocks of 256 KiB to 2 of 512 KiB", 4, 262144, 300000, 2, 524288, 600000},
        {"2 blocks to 3", 2, 393216, 400000, 3, 262144, 270000},
        {"2000 small blocks to 1000", 2000, 512, 700, 1000, 1024, 1500},
        {"64 blocks of 8 KiB to 8 of 64 KiB", 64, 8192, 9000, 8, 65536, 70000},
        /* More large blocks than one operation takes: across nodes the receiver cuts the
         * transfer into more pieces, which the sender follows. */
        {"12 blocks of 128 KiB to 24 of 64 KiB", 12, 131072, 140000, 24, 65536, 70000},
        {"6 blocks of 100000 to 20 of 30000", 6, 100000, 100100, 20, 30000, 30001},
    };
    mt_init(&argc, &argv);
    int partner = mt_rank ^ 1;
    if (partner >= mt_size) /* odd rank count: the last rank has no partner */
        return mt_finalize();
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const struct layout_case *k = &cases[c];
        MPI_Datatype stype = k->scount ? strided(k->scount, k->sblock, k->sstride) : MPI_BYTE;
        MPI_Datatype rtype = strided(k->rcount ? k->rcount : 1, k->rblock, k->rstride ? k->rstride : k->rblock);
        int scount = k->scount ? 1 : k->sblock;
        size_t len = k->scount ? (size_t)k->scount * k->sblock : (size_t)k->sblock;
        size_t sext = k->scount ? (size_t)(k->scount - 1) * k->sstride + k->sblock : len;
        size_t rext = k->rcount ? (size_t)(k->rcount - 1) * k->rstride + k->rblock : (size_t)k->rblock;
        /* Both ranks of a pair send and receive at once, each with its own seed. */
        unsigned char *sbuf = mt_malloc(sext), *rbuf = mt_malloc(rext);
        memset(sbuf, 0x11, sext);
        memset(rbuf, HOLE, rext);
        if (k->scount)
            fill_typed(sbuf, stype, len, (unsigned)(c * 10 + mt_rank));
        else
            mt_fill_bytes(sbuf, len, (unsigned)(c * 10 + mt_rank));
        MPI_Request r[2];
        MPI_Status st;
        MPI_CHECK(MPI_Irecv(rbuf, 1, rtype, partner, (int)c, MPI_COMM_WORLD, &r[0]));
        MPI_CHECK(MPI_Isend(sbuf, scount, stype, partner, (int)c, MPI_COMM_WORLD, &r[1]));
        MPI_CHECK(MPI_Wait(&r[0], &st));
        MPI_CHECK(MPI_Wait(&r[1], MPI_STATUS_IGNORE));
        int got;
        MPI_Get_count(&st, MPI_BYTE, &got);
        CHECK(got == (int)len, "%s: %d bytes arrived, want %zu", k->what, got, len);
        check_typed(rbuf, rtype, len, rext, (unsigned)(c * 10 + partner), HOLE, k->what);
        /* The send buffer is unchanged. */
        if (k->scount)
            check_typed(sbuf, stype, len, sext, (unsigned)(c * 10 + mt_rank), 0x11, "send buffer");
        free(sbuf);
        free(rbuf);
        if (k->scount)
            MPI_Type_free(&stype);
        MPI_Type_free(&rtype);
    }
    return mt_finalize();
}
