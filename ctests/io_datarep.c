/* oxmpi-test: np=1,2,3,5 timeout=120 */
/*
 * User data representations (MPI_Register_datarep): a representation that stores ints
 * byte-reversed (big-endian here), with conversion functions that honour the datatype,
 * count and position the standard gives them (they pack and unpack through the datatype).
 * Every rank writes its blocks of a shared file through an interleaved view in that
 * representation, collectively and independently, from contiguous and strided memory; the
 * raw bytes are checked, then read back through the representation into strided memory
 * (holes untouched), also across the end of the file (whole items only). Also:
 * MPI_CONVERSION_FN_NULL stores native data, MPI_Register_datarep_c's wider functions,
 * MPI_File_get_type_extent and MPI_File_get_view, and the errors: a name in use, a NULL
 * extent function, a conversion function that fails (also on one rank of a collective
 * write: that rank fails, none hangs).
 */
#include "io_mtest.h"
#include <stdint.h>

#define BLOCK 3   /* ints per block of the interleaved view */
#define BLOCKS 10 /* blocks per rank */
#define N (BLOCK * BLOCKS)
#define HOLE (-7)

struct state {
    int reads, writes, extents;
    int fail; /* the next conversion call returns an error */
};

static struct state st_int, st_count, st_null;

static uint32_t swap32(uint32_t v)
{
    return (v >> 24) | ((v >> 8) & 0xff00) | ((v << 8) & 0xff0000) | (v << 24);
}

/* Data items (ints) per element of `datatype`. */
static int items_per_type(MPI_Datatype datatype)
{
    int size;
    MPI_Type_size(datatype, &size);
    return size / (int)sizeof(int);
}

/* Converts `count` data items from item `position` of `datatype` tiled over `userbuf` to or
 * from `filebuf`, through a packed copy of the whole datatypes they touch. */
static int convert(void *userbuf, MPI_Datatype datatype, MPI_Count count, void *filebuf, MPI_Offset position,
                   struct state *s, int to_file)
{
    int per = items_per_type(datatype), pos = 0, outsize;
    MPI_Count end = position + count, k;
    int types = (int)((end + per - 1) / per);
    uint32_t *packed;
    if (s->fail) {
        s->fail = 0;
        return MPI_ERR_OTHER;
    }
    outsize = types * per * (int)sizeof(int);
    packed = malloc(outsize > 0 ? outsize : 1);
    MPI_Pack(userbuf, types, datatype, packed, outsize, &pos, MPI_COMM_SELF);
    for (k = 0; k < count; k++) {
        uint32_t *file = (uint32_t *)filebuf + k;
        if (to_file)
            *file = swap32(packed[position + k]);
        else
            packed[position + k] = swap32(*file);
    }
    if (!to_file) {
        pos = 0;
        MPI_Unpack(packed, outsize, &pos, userbuf, types, datatype, MPI_COMM_SELF);
    }
    free(packed);
    return MPI_SUCCESS;
}

static int read_int(void *u, MPI_Datatype t, int count, void *f, MPI_Offset pos, void *extra)
{
    struct state *s = extra;
    s->reads++;
    return convert(u, t, count, f, pos, s, 0);
}

static int write_int(void *u, MPI_Datatype t, int count, void *f, MPI_Offset pos, void *extra)
{
    struct state *s = extra;
    s->writes++;
    return convert(u, t, count, f, pos, s, 1);
}

static int read_count(void *u, MPI_Datatype t, MPI_Count count, void *f, MPI_Offset pos, void *extra)
{
    struct state *s = extra;
    s->reads++;
    return convert(u, t, count, f, pos, s, 0);
}

static int write_count(void *u, MPI_Datatype t, MPI_Count count, void *f, MPI_Offset pos, void *extra)
{
    struct state *s = extra;
    s->writes++;
    return convert(u, t, count, f, pos, s, 1);
}

/* Every predefined type in its native size (MPI_INT: 4 bytes). */
static int native_extent(MPI_Datatype t, MPI_Aint *extent, void *extra)
{
    struct state *s = extra;
    int size;
    s->extents++;
    MPI_Type_size(t, &size);
    *extent = size;
    return MPI_SUCCESS;
}

/* MPI_INT in 8 bytes. */
static int wide_extent(MPI_Datatype t, MPI_Aint *extent, void *extra)
{
    int size;
    (void)extra;
    MPI_Type_size(t, &size);
    *extent = t == MPI_INT ? 8 : size;
    return MPI_SUCCESS;
}

static int value(int rank, int i)
{
    return rank * 100000 + i * 13 + 1;
}

/* This rank's blocks of BLOCK ints, every mt_size-th block of the file. */
static void set_interleaved_view(MPI_File fh, const char *datarep)
{
    MPI_Datatype block, ftype;
    MPI_Type_contiguous(BLOCK, MPI_INT, &block);
    MPI_Type_create_resized(block, 0, (MPI_Aint)mt_size * BLOCK * sizeof(int), &ftype);
    MPI_Type_commit(&ftype);
    MPI_CHECK(MPI_File_set_view(fh, (MPI_Offset)mt_rank * BLOCK * sizeof(int), MPI_INT, ftype, datarep, MPI_INFO_NULL));
    MPI_Type_free(&block);
    MPI_Type_free(&ftype);
}

/* Every other int of a buffer of 2 * n. */
static MPI_Datatype every_other(void)
{
    MPI_Datatype t;
    MPI_Type_vector(N, 1, 2, MPI_INT, &t);
    MPI_Type_commit(&t);
    return t;
}

/* Rank 0 reads the whole file raw and checks every rank's ints, stored by `store`. */
static void check_raw(const char *name, uint32_t (*store)(uint32_t), const char *what)
{
    if (mt_rank == 0) {
        MPI_File fh;
        MPI_Status st;
        int total = N * mt_size, got, r, i, bad = 0;
        uint32_t *raw = malloc(total * sizeof *raw);
        MPI_CHECK(MPI_File_open(MPI_COMM_SELF, name, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh));
        MPI_CHECK(MPI_File_read_at(fh, 0, raw, total, MPI_INT, &st));
        MPI_Get_count(&st, MPI_INT, &got);
        CHECK(got == total, "%s: read %d ints of %d", what, got, total);
        for (r = 0; r < mt_size; r++)
            for (i = 0; i < N && bad < 5; i++) {
                int at = ((i / BLOCK) * mt_size + r) * BLOCK + i % BLOCK;
                uint32_t want = store((uint32_t)value(r, i));
                if (raw[at] != want) {
                    CHECK(0, "%s: int %d of rank %d is 0x%08x, expected 0x%08x", what, i, r, raw[at], want);
                    bad++;
                }
            }
        MPI_CHECK(MPI_File_close(&fh));
        free(raw);
    }
    MPI_Barrier(MPI_COMM_WORLD);
}

static uint32_t same(uint32_t v)
{
    return v;
}

/* Writes this rank's values through `datarep`: collectively from contiguous memory, or
 * independently from every other int of a strided buffer. */
static void write_values(const char *name, const char *datarep, int collective)
{
    MPI_File fh;
    MPI_Status st;
    int i, n, mine[N], strided[2 * N];
    MPI_Datatype other = every_other();
    for (i = 0; i < N; i++) {
        mine[i] = value(mt_rank, i);
        strided[2 * i] = mine[i];
        strided[2 * i + 1] = HOLE;
    }
    MPI_CHECK(MPI_File_open(MPI_COMM_WORLD, name, MPI_MODE_RDWR | MPI_MODE_CREATE, MPI_INFO_NULL, &fh));
    set_interleaved_view(fh, datarep);
    if (collective) {
        MPI_CHECK(MPI_File_write_at_all(fh, 0, mine, N, MPI_INT, &st));
        MPI_Get_count(&st, MPI_INT, &n);
        CHECK(n == N, "%s: wrote %d ints", datarep, n);
    } else {
        MPI_CHECK(MPI_File_write_at(fh, 0, strided, 1, other, &st));
        MPI_Get_count(&st, other, &n);
        CHECK(n == 1, "%s: wrote %d strided types", datarep, n);
    }
    MPI_CHECK(MPI_File_close(&fh));
    MPI_Type_free(&other);
}

/* Reads this rank's values back through `datarep` into every other int (the holes must
 * stay), collectively or independently. */
static void read_values(const char *name, const char *datarep, int collective)
{
    MPI_File fh;
    MPI_Status st;
    int i, n, strided[2 * N];
    MPI_Datatype other = every_other();
    for (i = 0; i < 2 * N; i++)
        strided[i] = HOLE;
    MPI_CHECK(MPI_File_open(MPI_COMM_WORLD, name, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh));
    set_interleaved_view(fh, datarep);
    if (collective)
        MPI_CHECK(MPI_File_read_at_all(fh, 0, strided, 1, other, &st));
    else
        MPI_CHECK(MPI_File_read_at(fh, 0, strided, 1, other, &st));
    MPI_Get_count(&st, MPI_INT, &n);
    CHECK(n == N, "%s: read %d ints", datarep, n);
    for (i = 0; i < N; i++) {
        CHECK(strided[2 * i] == value(mt_rank, i), "%s: int %d read as %d, expected %d", datarep, i, strided[2 * i],
              value(mt_rank, i));
        CHECK(strided[2 * i + 1] == HOLE, "%s: hole %d overwritten (%d)", datarep, i, strided[2 * i + 1]);
    }
    MPI_CHECK(MPI_File_close(&fh));
    MPI_Type_free(&other);
}

/* A read that meets the end of the file converts the whole ints read and nothing more. */
static void read_past_the_end(const char *name)
{
    MPI_File fh;
    MPI_Status st;
    int i, n, got[2 * 5];
    MPI_Datatype pairs;
    MPI_Type_vector(5, 1, 2, MPI_INT, &pairs);
    MPI_Type_commit(&pairs);
    for (i = 0; i < 10; i++)
        got[i] = HOLE;
    MPI_CHECK(MPI_File_open(MPI_COMM_SELF, name, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh));
    MPI_CHECK(MPI_File_set_view(fh, 0, MPI_INT, MPI_INT, "oxmpi-test-bigend", MPI_INFO_NULL));
    /* The file holds N * mt_size ints; ask for 5 from 3 before its end. */
    MPI_CHECK(MPI_File_read_at(fh, (MPI_Offset)N * mt_size - 3, got, 1, pairs, &st));
    MPI_Get_count(&st, MPI_INT, &n);
    CHECK(n == 3, "past the end: read %d ints, expected 3", n);
    for (i = 0; i < 3; i++) {
        int at = N * mt_size - 3 + i, r = (at / BLOCK) % mt_size, k = (at / BLOCK / mt_size) * BLOCK + at % BLOCK;
        CHECK(got[2 * i] == value(r, k), "past the end: int %d is %d, expected %d", i, got[2 * i], value(r, k));
    }
    for (i = 3; i < 5; i++)
        CHECK(got[2 * i] == HOLE, "past the end: int %d beyond the file was stored (%d)", i, got[2 * i]);
    for (i = 0; i < 5; i++)
        CHECK(got[2 * i + 1] == HOLE, "past the end: hole %d overwritten", i);
    MPI_CHECK(MPI_File_close(&fh));
    MPI_Type_free(&pairs);
}

/* A failing write conversion fails the access (MPI_ERR_CONVERSION) and writes nothing; in
 * a collective write where only `failing` fails its conversion, that rank gets the error and
 * its data is not written, while the others' writes complete (no rank hangs). The file holds
 * native values. */
static void failing_conversion(const char *name, int failing)
{
    MPI_File fh;
    MPI_Status st;
    int i, mine[N], rc;
    for (i = 0; i < N; i++)
        mine[i] = -1;
    MPI_CHECK(MPI_File_open(MPI_COMM_WORLD, name, MPI_MODE_RDWR, MPI_INFO_NULL, &fh));
    set_interleaved_view(fh, "oxmpi-test-bigend");
    st_int.fail = 1;
    CHECK_CLASS(MPI_File_write_at(fh, 0, mine, N, MPI_INT, &st), MPI_ERR_CONVERSION);
    CHECK(st_int.fail == 0, "the conversion function was not called");
    MPI_CHECK(MPI_File_close(&fh));
    check_raw(name, same, "after a failed independent write");

    MPI_CHECK(MPI_File_open(MPI_COMM_WORLD, name, MPI_MODE_RDWR, MPI_INFO_NULL, &fh));
    set_interleaved_view(fh, "oxmpi-test-bigend");
    st_int.fail = mt_rank == failing;
    rc = MPI_File_write_at_all(fh, 0, mine, N, MPI_INT, &st);
    if (mt_rank == failing)
        CHECK_CLASS(rc, MPI_ERR_CONVERSION);
    else
        CHECK(rc == MPI_SUCCESS, "collective write beside a failed conversion: %s", mt_errstr(rc));
    st_int.fail = 0;
    MPI_CHECK(MPI_File_close(&fh));
    if (mt_rank == 0) {
        int got[N];
        MPI_CHECK(MPI_File_open(MPI_COMM_SELF, name, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh));
        for (i = 0; i < BLOCKS; i++)
            MPI_CHECK(MPI_File_read_at(fh, ((MPI_Offset)i * mt_size + failing) * BLOCK * sizeof(int), got + i * BLOCK,
                                       BLOCK, MPI_INT, &st));
        for (i = 0; i < N; i++)
            CHECK(got[i] == value(failing, i), "the failing rank's int %d was written (%d)", i, got[i]);
        MPI_CHECK(MPI_File_close(&fh));
    }
    MPI_Barrier(MPI_COMM_WORLD);
}

int main(int argc, char **argv)
{
    MPI_File fh;
    MPI_Aint extent;
    MPI_Offset disp;
    MPI_Datatype etype, ftype;
    char rep[MPI_MAX_DATAREP_STRING + 1];
    const char *name;
    mt_init(&argc, &argv);
    io_make_dir();
    name = io_path("datarep");

    MPI_CHECK(MPI_Register_datarep("oxmpi-test-bigend", read_int, write_int, native_extent, &st_int));
    MPI_CHECK(MPI_Register_datarep_c("oxmpi-test-bigend-c", read_count, write_count, native_extent, &st_count));
    MPI_CHECK(MPI_Register_datarep("oxmpi-test-null", MPI_CONVERSION_FN_NULL, MPI_CONVERSION_FN_NULL, native_extent,
                                   &st_null));
    MPI_CHECK(MPI_Register_datarep("oxmpi-test-wide", read_int, write_int, wide_extent, NULL));
    CHECK_CLASS(MPI_Register_datarep("oxmpi-test-bigend", read_int, write_int, native_extent, NULL),
                MPI_ERR_DUP_DATAREP);
    CHECK_CLASS(MPI_Register_datarep("external32", read_int, write_int, native_extent, NULL), MPI_ERR_DUP_DATAREP);
    CHECK_CLASS(MPI_Register_datarep("oxmpi-test-noextent", read_int, write_int, NULL, NULL), MPI_ERR_ARG);

    /* Collective write, then independent; raw check; read back both ways. */
    write_values(name, "oxmpi-test-bigend", 1);
    check_raw(name, swap32, "collective write");
    read_values(name, "oxmpi-test-bigend", 1);
    read_values(name, "oxmpi-test-bigend", 0);
    MPI_Barrier(MPI_COMM_WORLD);
    if (mt_rank == 0)
        MPI_File_delete(name, MPI_INFO_NULL);
    MPI_Barrier(MPI_COMM_WORLD);
    write_values(name, "oxmpi-test-bigend", 0);
    check_raw(name, swap32, "independent strided write");
    read_values(name, "oxmpi-test-bigend", 1);
    if (mt_rank == 0)
        read_past_the_end(name);
    CHECK(st_int.writes > 0 && st_int.reads > 0 && st_int.extents > 0,
          "the functions got their extra_state: %d writes, %d reads, %d extents", st_int.writes, st_int.reads,
          st_int.extents);

    /* The MPI_Count functions. */
    write_values(name, "oxmpi-test-bigend-c", 1);
    check_raw(name, swap32, "MPI_Register_datarep_c");
    read_values(name, "oxmpi-test-bigend-c", 0);
    CHECK(st_count.writes > 0 && st_count.reads > 0, "MPI_Register_datarep_c's functions were not called");

    /* MPI_CONVERSION_FN_NULL: the data is stored as in memory. */
    write_values(name, "oxmpi-test-null", 1);
    check_raw(name, same, "MPI_CONVERSION_FN_NULL");
    read_values(name, "oxmpi-test-null", 1);
    CHECK(st_null.extents > 0, "the extent function of the MPI_CONVERSION_FN_NULL representation was not called");

    failing_conversion(name, mt_size - 1);

    /* The view and the extent report the representation; one that changes a type's size
     * reports that size (its data: io_datarep_sizes.c). */
    MPI_CHECK(MPI_File_open(MPI_COMM_WORLD, name, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh));
    MPI_CHECK(MPI_File_set_view(fh, 0, MPI_INT, MPI_INT, "oxmpi-test-bigend", MPI_INFO_NULL));
    MPI_CHECK(MPI_File_get_view(fh, &disp, &etype, &ftype, rep));
    CHECK(!strcmp(rep, "oxmpi-test-bigend"), "MPI_File_get_view: datarep %s", rep);
    MPI_CHECK(MPI_File_get_type_extent(fh, MPI_INT, &extent));
    CHECK(extent == 4, "MPI_File_get_type_extent(MPI_INT): %ld", (long)extent);
    MPI_CHECK(MPI_File_set_view(fh, 0, MPI_INT, MPI_INT, "oxmpi-test-wide", MPI_INFO_NULL));
    MPI_CHECK(MPI_File_get_type_extent(fh, MPI_INT, &extent));
    CHECK(extent == 8, "MPI_File_get_type_extent(MPI_INT) in oxmpi-test-wide: %ld", (long)extent);
    MPI_CHECK(MPI_File_get_type_extent(fh, MPI_DOUBLE, &extent));
    CHECK(extent == 8, "MPI_File_get_type_extent(MPI_DOUBLE) in oxmpi-test-wide: %ld", (long)extent);
    CHECK_CLASS(MPI_File_set_view(fh, 0, MPI_INT, MPI_INT, "oxmpi-test-unknown", MPI_INFO_NULL),
                MPI_ERR_UNSUPPORTED_DATAREP);
    MPI_CHECK(MPI_File_close(&fh));

    io_remove_dir();
    return mt_finalize();
}
