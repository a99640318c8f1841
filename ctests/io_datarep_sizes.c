/* oxmpi-test: np=1,2,3,4 timeout=120 */
/*
 * Data representations that store a type in another size than memory:
 *  - external32's MPI_LONG (4 bytes in the file, 8 in memory here): every rank writes its
 *    blocks of a shared file collectively through a vector filetype of MPI_LONG (an element
 *    stride, which MPI scales to the file's sizes), negative values included; the raw bytes
 *    are checked (4-byte big-endian two's complement at the scaled places), then read back
 *    independently into strided memory (holes untouched) and collectively; a read across
 *    the end of the file stores whole longs only and MPI_Get_count says how many;
 *    MPI_File_get_type_extent and MPI_File_get_byte_offset count in the file's sizes;
 *  - external32 of a struct memory type {int, long, double} (16 bytes a struct in the file);
 *  - a user representation storing MPI_INT in 8 bytes (sign-extended big-endian).
 */
#include "io_mtest.h"
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define BLOCK 3   /* longs per block */
#define BLOCKS 5  /* blocks per rank */
#define N (BLOCK * BLOCKS)
#define HOLE (-7)

static long value(int rank, int i)
{
    long v = rank * 100000L + i * 13 + 1;
    return i % 2 ? -v : v;
}

/* A big-endian two's complement integer of `n` bytes at `p`. */
static int64_t big_endian(const unsigned char *p, int n)
{
    int64_t v = (p[0] & 0x80) ? -1 : 0;
    for (int i = 0; i < n; i++)
        v = (int64_t)((uint64_t)v << 8 | p[i]);
    return v;
}

/* Every rank's blocks, every mt_size-th block of the file, in external32 longs. */
static void set_long_view(MPI_File fh)
{
    MPI_Datatype ftype;
    MPI_Aint ext;
    /* The etype's extent in the file, as the standard says to find it. */
    MPI_CHECK(MPI_File_set_view(fh, 0, MPI_LONG, MPI_LONG, "external32", MPI_INFO_NULL));
    MPI_CHECK(MPI_File_get_type_extent(fh, MPI_LONG, &ext));
    CHECK(ext == 4, "MPI_File_get_type_extent(MPI_LONG) in external32: %ld", (long)ext);
    MPI_Type_vector(BLOCKS, BLOCK, BLOCK * mt_size, MPI_LONG, &ftype);
    MPI_Type_commit(&ftype);
    MPI_CHECK(MPI_File_set_view(fh, (MPI_Offset)mt_rank * BLOCK * ext, MPI_LONG, ftype, "external32", MPI_INFO_NULL));
    MPI_Type_free(&ftype);
}

static void longs(void)
{
    MPI_File fh;
    MPI_Status st;
    MPI_Offset off;
    MPI_Datatype other;
    long mine[N], strided[2 * N];
    int i, n;
    const char *name = io_path("longs");

    for (i = 0; i < N; i++)
        mine[i] = value(mt_rank, i);
    MPI_CHECK(MPI_File_open(MPI_COMM_WORLD, name, MPI_MODE_RDWR | MPI_MODE_CREATE, MPI_INFO_NULL, &fh));
    set_long_view(fh);
    MPI_CHECK(MPI_File_write_at_all(fh, 0, mine, N, MPI_LONG, &st));
    MPI_Get_count(&st, MPI_LONG, &n);
    CHECK(n == N, "wrote %d longs of %d", n, N);
    MPI_CHECK(MPI_File_get_byte_offset(fh, BLOCK + 1, &off));
    CHECK(off == ((MPI_Offset)mt_size * BLOCK + mt_rank * BLOCK + 1) * 4, "byte offset of long %d: %lld", BLOCK + 1,
          (long long)off);
    MPI_CHECK(MPI_File_close(&fh));
    MPI_Barrier(MPI_COMM_WORLD);

    /* The raw file: 4 bytes a long, big-endian, block by block of the ranks. */
    if (mt_rank == 0) {
        MPI_Offset size;
        int total = N * mt_size * 4, bad = 0, r;
        unsigned char *raw = malloc(total);
        MPI_CHECK(MPI_File_open(MPI_COMM_SELF, name, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh));
        MPI_CHECK(MPI_File_get_size(fh, &size));
        CHECK(size == total, "the file has %lld bytes, expected %d", (long long)size, total);
        MPI_CHECK(MPI_File_read_at(fh, 0, raw, total, MPI_BYTE, &st));
        for (r = 0; r < mt_size; r++)
            for (i = 0; i < N && bad < 5; i++) {
                int at = ((i / BLOCK) * mt_size + r) * BLOCK + i % BLOCK;
                int64_t got = big_endian(raw + 4 * at, 4);
                if (got != value(r, i)) {
                    CHECK(0, "long %d of rank %d is %lld in the file, expected %ld", i, r, (long long)got, value(r, i));
                    bad++;
                }
            }
        MPI_CHECK(MPI_File_close(&fh));
        free(raw);
    }
    MPI_Barrier(MPI_COMM_WORLD);

    /* Back into every other long, independently, then collectively. */
    MPI_Type_vector(N, 1, 2, MPI_LONG, &other);
    MPI_Type_commit(&other);
    MPI_CHECK(MPI_File_open(MPI_COMM_WORLD, name, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh));
    set_long_view(fh);
    for (int collective = 0; collective < 2; collective++) {
        for (i = 0; i < 2 * N; i++)
            strided[i] = HOLE;
        if (collective)
            MPI_CHECK(MPI_File_read_at_all(fh, 0, strided, 1, other, &st));
        else
            MPI_CHECK(MPI_File_read_at(fh, 0, strided, 1, other, &st));
        MPI_Get_elements(&st, MPI_LONG, &n);
        CHECK(n == N, "read %d longs of %d (collective %d)", n, N, collective);
        for (i = 0; i < N; i++) {
            CHECK(strided[2 * i] == value(mt_rank, i), "long %d read as %ld, expected %ld (collective %d)", i,
                  strided[2 * i], value(mt_rank, i), collective);
            CHECK(strided[2 * i + 1] == HOLE, "hole %d overwritten: %ld", i, strided[2 * i + 1]);
        }
    }
    MPI_CHECK(MPI_File_close(&fh));
    MPI_Type_free(&other);

    /* Across the end of the file: 2 longs are left after offset total - 2. */
    if (mt_rank == 0) {
        long got[5] = {HOLE, HOLE, HOLE, HOLE, HOLE};
        int total = N * mt_size, last = total - 1;
        MPI_CHECK(MPI_File_open(MPI_COMM_SELF, name, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh));
        MPI_CHECK(MPI_File_set_view(fh, 0, MPI_LONG, MPI_LONG, "external32", MPI_INFO_NULL));
        MPI_CHECK(MPI_File_read_at(fh, total - 2, got, 5, MPI_LONG, &st));
        MPI_Get_count(&st, MPI_LONG, &n);
        CHECK(n == 2, "a read across the end got %d longs, expected 2", n);
        /* The file's last two longs: the last rank's last block. */
        int r = mt_size - 1;
        CHECK(got[0] == value(r, N - 2) && got[1] == value(r, N - 1) && got[2] == HOLE,
              "across the end: %ld %ld %ld, expected %ld %ld %d", got[0], got[1], got[2], value(r, N - 2),
              value(r, N - 1), HOLE);
        MPI_CHECK(MPI_File_seek(fh, 0, MPI_SEEK_END));
        MPI_CHECK(MPI_File_get_position(fh, &off));
        CHECK(off == last + 1, "MPI_SEEK_END at long %lld, expected %d", (long long)off, last + 1);
        MPI_CHECK(MPI_File_close(&fh));
    }
    MPI_Barrier(MPI_COMM_WORLD);
}

struct item {
    int a;
    long b;
    double c;
};

/* external32 of a struct memory type: 4 + 4 + 8 bytes an item in the file. */
static void structs(void)
{
    MPI_File fh;
    MPI_Status st;
    MPI_Datatype type;
    MPI_Aint ext;
    struct item out[4], in[4];
    int bl[3] = {1, 1, 1}, i, n;
    MPI_Aint disps[3] = {offsetof(struct item, a), offsetof(struct item, b), offsetof(struct item, c)};
    MPI_Datatype types[3] = {MPI_INT, MPI_LONG, MPI_DOUBLE};
    const char *name = io_path("structs");

    MPI_Type_create_struct(3, bl, disps, types, &type);
    MPI_Type_commit(&type);
    for (i = 0; i < 4; i++) {
        out[i].a = mt_rank * 10 + i;
        out[i].b = -(mt_rank * 1000L + i);
        out[i].c = mt_rank + i / 4.0;
    }
    MPI_CHECK(MPI_File_open(MPI_COMM_WORLD, name, MPI_MODE_RDWR | MPI_MODE_CREATE, MPI_INFO_NULL, &fh));
    MPI_CHECK(MPI_File_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "external32", MPI_INFO_NULL));
    MPI_CHECK(MPI_File_get_type_extent(fh, type, &ext));
    CHECK(ext == 24, "the struct's extent in external32: %ld (its byte displacements stay)", (long)ext);
    MPI_CHECK(MPI_File_write_at(fh, (MPI_Offset)mt_rank * 4 * 16, out, 4, type, &st));
    MPI_Get_count(&st, type, &n);
    CHECK(n == 4, "wrote %d structs", n);
    MPI_CHECK(MPI_File_sync(fh));
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_CHECK(MPI_File_sync(fh));
    if (mt_rank == 0) {
        unsigned char raw[16];
        int r = mt_size - 1;
        MPI_CHECK(MPI_File_read_at(fh, (MPI_Offset)(r * 4 + 3) * 16, raw, 16, MPI_BYTE, &st));
        CHECK(big_endian(raw, 4) == r * 10 + 3 && big_endian(raw + 4, 4) == -(r * 1000L + 3),
              "rank %d's last struct in the file: %lld %lld", r, (long long)big_endian(raw, 4),
              (long long)big_endian(raw + 4, 4));
    }
    memset(in, 0, sizeof in);
    MPI_CHECK(MPI_File_read_at(fh, (MPI_Offset)mt_rank * 4 * 16, in, 4, type, &st));
    MPI_Get_count(&st, type, &n);
    CHECK(n == 4, "read %d structs", n);
    for (i = 0; i < 4; i++)
        CHECK(in[i].a == out[i].a && in[i].b == out[i].b && in[i].c == out[i].c,
              "struct %d read as {%d, %ld, %g}, expected {%d, %ld, %g}", i, in[i].a, in[i].b, in[i].c, out[i].a,
              out[i].b, out[i].c);
    MPI_CHECK(MPI_File_close(&fh));
    MPI_Type_free(&type);
}

/* The user representation: MPI_INT as a big-endian 64-bit integer. The memory type is
 * MPI_INT here, `position` counts ints. */
static int wide_write(void *user, MPI_Datatype t, int count, void *file, MPI_Offset position, void *extra)
{
    (void)extra;
    if (t != MPI_INT)
        return MPI_ERR_TYPE;
    for (int k = 0; k < count; k++) {
        uint64_t v = (uint64_t)(int64_t)((int *)user)[position + k];
        for (int b = 0; b < 8; b++)
            ((unsigned char *)file)[8 * k + b] = (unsigned char)(v >> (56 - 8 * b));
    }
    return MPI_SUCCESS;
}

static int wide_read(void *user, MPI_Datatype t, int count, void *file, MPI_Offset position, void *extra)
{
    (void)extra;
    if (t != MPI_INT)
        return MPI_ERR_TYPE;
    for (int k = 0; k < count; k++)
        ((int *)user)[position + k] = (int)big_endian((unsigned char *)file + 8 * k, 8);
    return MPI_SUCCESS;
}

static int wide_extent(MPI_Datatype t, MPI_Aint *extent, void *extra)
{
    int size;
    (void)extra;
    MPI_Type_size(t, &size);
    *extent = t == MPI_INT ? 8 : size;
    return MPI_SUCCESS;
}

static void wide_ints(void)
{
    MPI_File fh;
    MPI_Status st;
    MPI_Aint ext;
    MPI_Offset size;
    int mine[N], back[N + 2], i, n;
    const char *name = io_path("wide");

    MPI_CHECK(MPI_Register_datarep("oxmpi-test-wide-ints", wide_read, wide_write, wide_extent, NULL));
    for (i = 0; i < N; i++)
        mine[i] = (int)value(mt_rank, i);
    MPI_CHECK(MPI_File_open(MPI_COMM_WORLD, name, MPI_MODE_RDWR | MPI_MODE_CREATE, MPI_INFO_NULL, &fh));
    MPI_CHECK(MPI_File_set_view(fh, 0, MPI_INT, MPI_INT, "oxmpi-test-wide-ints", MPI_INFO_NULL));
    MPI_CHECK(MPI_File_get_type_extent(fh, MPI_INT, &ext));
    CHECK(ext == 8, "MPI_File_get_type_extent(MPI_INT) in the wide representation: %ld", (long)ext);
    MPI_CHECK(MPI_File_write_at_all(fh, (MPI_Offset)mt_rank * N, mine, N, MPI_INT, &st));
    MPI_Get_count(&st, MPI_INT, &n);
    CHECK(n == N, "wrote %d ints", n);
    MPI_CHECK(MPI_File_get_size(fh, &size));
    CHECK(size == (MPI_Offset)mt_size * N * 8, "the file has %lld bytes, expected %d", (long long)size,
          mt_size * N * 8);
    MPI_CHECK(MPI_File_sync(fh));
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_CHECK(MPI_File_sync(fh));
    /* The next rank's ints, then a read across the end of the file. */
    int from = (mt_rank + 1) % mt_size;
    for (i = 0; i < N + 2; i++)
        back[i] = HOLE;
    MPI_CHECK(MPI_File_read_at(fh, (MPI_Offset)from * N, back, N, MPI_INT, &st));
    MPI_Get_count(&st, MPI_INT, &n);
    CHECK(n == N, "read %d ints of rank %d", n, from);
    for (i = 0; i < N; i++)
        CHECK(back[i] == (int)value(from, i), "int %d of rank %d read as %d", i, from, back[i]);
    MPI_CHECK(MPI_File_read_at(fh, (MPI_Offset)mt_size * N - 1, back, 3, MPI_INT, &st));
    MPI_Get_count(&st, MPI_INT, &n);
    CHECK(n == 1 && back[0] == (int)value(mt_size - 1, N - 1), "across the end: %d ints, first %d", n, back[0]);
    MPI_CHECK(MPI_File_close(&fh));
}

int main(int argc, char **argv)
{
    mt_init(&argc, &argv);
    io_make_dir();
    longs();
    structs();
    wide_ints();
    io_remove_dir();
    return mt_finalize();
}
