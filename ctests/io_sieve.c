/* oxmpi-test: np=1,2,3,5 timeout=120 */
/*
 * Data sieving of independent writes (a small, dense strided write reads its span, copies
 * its blocks over it and writes the span back): every rank writes every np-th block of a
 * shared file at once, for blocks of 1, 8 and 100 bytes, and every byte is checked;
 * meanwhile the last rank writes its blocks of another file with plain write_at calls into
 * the holes of the others' spans (nothing of it may be undone by their read-modify-writes);
 * the same with atomic mode on, with romio_ds_write=disable, on a file opened write-only
 * (no sieving possible), and with spans past the end of the file (holes read as zeros).
 * The sieve buffer (ind_wr_buffer_size) is set small so that a write spans many of them.
 */
#include "io_mtest.h"

#define NBLOCKS 600
#define ROUNDS 3

/* The byte at `i` of block `b` (written by rank b % np). */
static unsigned char byte_of(int b, int i)
{
    return (unsigned char)(b * 31 + i * 7 + 1);
}

/* Opens `name` with `amode` and `info`, and a view where this rank sees its blocks (of
 * `bs` bytes) one after the other. */
static MPI_File open_strided(const char *name, int amode, MPI_Info info, int bs)
{
    MPI_File fh;
    MPI_Datatype block, ftype;
    MPI_Type_contiguous(bs, MPI_BYTE, &block);
    MPI_Type_create_resized(block, 0, (MPI_Aint)mt_size * bs, &ftype);
    MPI_Type_commit(&ftype);
    MPI_CHECK(MPI_File_open(MPI_COMM_WORLD, name, amode, info, &fh));
    MPI_CHECK(MPI_File_set_view(fh, (MPI_Offset)mt_rank * bs, MPI_BYTE, ftype, "native", MPI_INFO_NULL));
    MPI_Type_free(&block);
    MPI_Type_free(&ftype);
    return fh;
}

/* Reads the whole of `name` (rank 0) and checks the NBLOCKS blocks of `bs` bytes; the
 * blocks of ranks in `missing` (a bit per rank, 0: none) must read as zeros. */
static void check_file(const char *name, int bs, unsigned missing, const char *what)
{
    if (mt_rank == 0) {
        MPI_File fh;
        MPI_Offset size;
        MPI_Status st;
        int n, b, i, bad = 0;
        size_t len = (size_t)NBLOCKS * bs;
        unsigned char *got = malloc(len);
        MPI_CHECK(MPI_File_open(MPI_COMM_SELF, name, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh));
        MPI_CHECK(MPI_File_get_size(fh, &size));
        CHECK(size == (MPI_Offset)len, "%s, blocks of %d: size %lld, expected %zu", what, bs, (long long)size, len);
        MPI_CHECK(MPI_File_read_at(fh, 0, got, (int)len, MPI_BYTE, &st));
        MPI_Get_count(&st, MPI_BYTE, &n);
        CHECK(n == (int)len, "%s, blocks of %d: read %d bytes", what, bs, n);
        for (b = 0; b < NBLOCKS && bad < 5; b++)
            for (i = 0; i < bs; i++) {
                unsigned char want = (missing >> (b % mt_size)) & 1 ? 0 : byte_of(b, i);
                if (got[(size_t)b * bs + i] != want) {
                    CHECK(0, "%s, blocks of %d: block %d (rank %d) byte %d is %d, expected %d", what, bs, b,
                          b % mt_size, i, got[(size_t)b * bs + i], want);
                    bad++;
                    break;
                }
            }
        MPI_File_close(&fh);
        free(got);
    }
    MPI_Barrier(MPI_COMM_WORLD);
}

/* This rank's blocks, packed. */
static unsigned char *my_blocks(int bs, int *count)
{
    int mine = 0, b, i;
    unsigned char *buf = malloc((size_t)NBLOCKS * bs);
    for (b = mt_rank; b < NBLOCKS; b += mt_size, mine++)
        for (i = 0; i < bs; i++)
            buf[(size_t)mine * bs + i] = byte_of(b, i);
    *count = mine;
    return buf;
}

/* Every rank writes its blocks through the strided view at once (ROUNDS times, the file
 * removed between rounds); the last rank (with np > 1) instead writes its blocks with one
 * plain write_at each, into the holes of the others' spans. */
static void strided(int bs, int amode, MPI_Info info, int atomic, const char *what)
{
    int round, count, k;
    const char *path = io_path("strided");
    unsigned char *buf = my_blocks(bs, &count);
    int plain = mt_size > 1 && mt_rank == mt_size - 1;
    for (round = 0; round < ROUNDS; round++) {
        MPI_File fh = open_strided(path, amode | MPI_MODE_CREATE, info, bs);
        MPI_CHECK(MPI_File_set_atomicity(fh, atomic));
        MPI_Barrier(MPI_COMM_WORLD);
        if (plain) {
            /* Block k of the view: one run of the file, written as it is. */
            for (k = 0; k < count; k++)
                MPI_CHECK(MPI_File_write_at(fh, (MPI_Offset)k * bs, buf + (size_t)k * bs, bs, MPI_BYTE,
                                            MPI_STATUS_IGNORE));
        } else {
            MPI_Status st;
            int n;
            MPI_CHECK(MPI_File_write(fh, buf, count * bs, MPI_BYTE, &st));
            MPI_Get_count(&st, MPI_BYTE, &n);
            CHECK(n == count * bs, "%s, blocks of %d: wrote %d bytes, expected %d", what, bs, n, count * bs);
        }
        MPI_CHECK(MPI_File_close(&fh));
        check_file(path, bs, 0, what);
        if (mt_rank == 0)
            MPI_File_delete(path, MPI_INFO_NULL);
        MPI_Barrier(MPI_COMM_WORLD);
    }
    free(buf);
}

/* The file is written by every rank but rank 0, whose blocks stay holes: where a span
 * reaches past the end of the file, they must read as zeros (and the file end where the
 * last block does, not at a rounded-up span). */
static void holes_past_the_end(int bs)
{
    int count;
    const char *path = io_path("holes");
    unsigned char *buf = my_blocks(bs, &count);
    MPI_File fh = open_strided(path, MPI_MODE_RDWR | MPI_MODE_CREATE, MPI_INFO_NULL, bs);
    if (mt_rank != 0 || mt_size == 1) {
        /* With one rank, it writes its blocks but the last: the file ends before it. */
        int n = mt_size == 1 ? count - 1 : count;
        MPI_CHECK(MPI_File_write(fh, buf, n * bs, MPI_BYTE, MPI_STATUS_IGNORE));
    }
    MPI_CHECK(MPI_File_close(&fh));
    if (mt_size > 1) {
        /* The last block is rank (NBLOCKS-1) % np's; rank 0's holes are zeros. */
        if ((NBLOCKS - 1) % mt_size != 0)
            check_file(path, bs, 1u, "holes of rank 0");
    } else if (mt_rank == 0) {
        MPI_Offset size;
        MPI_CHECK(MPI_File_open(MPI_COMM_SELF, path, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh));
        MPI_CHECK(MPI_File_get_size(fh, &size));
        CHECK(size == (MPI_Offset)(NBLOCKS - 1) * bs, "one rank: size %lld", (long long)size);
        MPI_File_close(&fh);
    }
    if (mt_rank == 0)
        MPI_File_delete(path, MPI_INFO_NULL);
    MPI_Barrier(MPI_COMM_WORLD);
    free(buf);
}

int main(int argc, char **argv)
{
    static const int sizes[] = {1, 8, 100};
    MPI_Info small, off;
    int s;
    mt_init(&argc, &argv);
    io_make_dir();
    /* A write of 600 blocks spans several sieve buffers. */
    MPI_Info_create(&small);
    MPI_Info_set(small, "ind_wr_buffer_size", "1000");
    MPI_Info_create(&off);
    MPI_Info_set(off, "romio_ds_write", "disable");
    for (s = 0; s < 3; s++) {
        int bs = sizes[s];
        strided(bs, MPI_MODE_RDWR, MPI_INFO_NULL, 0, "default hints");
        strided(bs, MPI_MODE_RDWR, small, 0, "ind_wr_buffer_size 1000");
        strided(bs, MPI_MODE_RDWR, small, 1, "atomic mode");
        strided(bs, MPI_MODE_RDWR, off, 0, "romio_ds_write disable");
        strided(bs, MPI_MODE_WRONLY, small, 0, "write-only");
        holes_past_the_end(bs);
    }
    /* The hint is reported as set. */
    {
        MPI_File fh = open_strided(io_path("info"), MPI_MODE_RDWR | MPI_MODE_CREATE | MPI_MODE_DELETE_ON_CLOSE, off, 4);
        MPI_Info used;
        MPI_CHECK(MPI_File_get_info(fh, &used));
        io_check_hint(used, "romio_ds_write", "disable");
        io_check_hint(used, "ind_wr_buffer_size", "524288");
        MPI_Info_free(&used);
        MPI_CHECK(MPI_File_close(&fh));
    }
    MPI_Info_free(&small);
    MPI_Info_free(&off);
    io_remove_dir();
    return mt_finalize();
}
