/* oxmpi-test: np=1,2,3,4,8 timeout=240 */
/*
 * Collective I/O under every collective-buffering setting: romio_cb_read/write enable,
 * disable and automatic, cb_buffer_size the default or 1000 bytes (many rounds), cb_nodes 1
 * and 2. For each: an interleaved pattern through the individual pointer, explicit offsets
 * and split collectives; a 3-D block-distributed array from memory with a halo; a pattern
 * with holes that must keep the bytes around it; reads past the end of the file; an ordered
 * write. Every byte of the file is checked. Then: the hints reported, a rank with a bad
 * count in a collective call (it alone fails, the others are not held), split-collective
 * ends that do not match their begin, and a write error at
 * the only aggregator (the file size limit of rank 0), reported on every rank when the data
 * goes through it and on none when each rank writes its own.
 */
#include "io_mtest.h"
#include <signal.h>
#include <sys/resource.h>

#define BS 25 /* ints per block */
#define K 12  /* blocks per rank */
#define N 10  /* ints per side of the 3-D array */

static MPI_Info cfg_info;
static char cfg_name[128];

/* The value of int `i` of the file written by pass `pass`. */
static int value(int pass, long i)
{
    return pass * 1000003 + (int)i;
}

/* An interleaved filetype: BS ints of every `period`-th block, at block `slot`. */
static MPI_Datatype interleaved_type(int period)
{
    MPI_Datatype block, t;
    MPI_Type_contiguous(BS, MPI_INT, &block);
    MPI_Type_create_resized(block, 0, (MPI_Aint)period * BS * sizeof(int), &t);
    MPI_Type_commit(&t);
    MPI_Type_free(&block);
    return t;
}

/* Every rank reads the whole file (independently, bytes view) and checks ints [0, n): value
 * `expect(i)`, or `fill` bytes where expect returns -1. */
static void check_file(MPI_File fh, long n, int (*expect)(long, int), int pass, const char *what)
{
    int *all = mt_malloc(n * sizeof(int)), i, bad = 0, fill;
    MPI_Status st;
    memset(&fill, 0xEE, sizeof fill);
    MPI_CHECK(MPI_File_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL));
    MPI_CHECK(MPI_File_read_at(fh, 0, all, (int)n, MPI_INT, &st));
    for (i = 0; i < n; i++) {
        int want = expect(i, pass);
        if (want == -1)
            want = fill;
        if (all[i] != want && bad++ < 3)
            CHECK(0, "%s (%s): int %d is %d, expected %d", what, cfg_name, i, all[i], want);
    }
    free(all);
}

static int expect_all(long i, int pass)
{
    return value(pass, i);
}

static void interleaved(void)
{
    MPI_File fh;
    MPI_Status st;
    MPI_Datatype ft = interleaved_type(mt_size);
    MPI_Offset disp = (MPI_Offset)mt_rank * BS * sizeof(int), pos;
    int buf[K * BS], got[K * BS], i, b, count;
    long n = (long)mt_size * K * BS;
    const char *path = io_path("interleaved");

    MPI_CHECK(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDWR | MPI_MODE_CREATE, cfg_info, &fh));
    /* Pass 1: two write_all through the individual pointer. */
    for (b = 0; b < K; b++)
        for (i = 0; i < BS; i++)
            buf[b * BS + i] = value(1, ((long)b * mt_size + mt_rank) * BS + i);
    MPI_CHECK(MPI_File_set_view(fh, disp, MPI_INT, ft, "native", MPI_INFO_NULL));
    MPI_CHECK(MPI_File_write_all(fh, buf, K / 2 * BS, MPI_INT, &st));
    MPI_Get_count(&st, MPI_INT, &count);
    CHECK(count == K / 2 * BS, "write_all count %d (%s)", count, cfg_name);
    MPI_CHECK(MPI_File_write_all(fh, buf + K / 2 * BS, (K - K / 2) * BS, MPI_INT, &st));
    MPI_CHECK(MPI_File_get_position(fh, &pos));
    CHECK(pos == K * BS, "position %lld (%s)", (long long)pos, cfg_name);
    memset(got, 0, sizeof got);
    MPI_CHECK(MPI_File_read_at_all(fh, 0, got, K * BS, MPI_INT, &st));
    MPI_Get_count(&st, MPI_INT, &count);
    CHECK(count == K * BS && !memcmp(got, buf, sizeof buf), "read_at_all back: count %d (%s)", count, cfg_name);
    check_file(fh, n, expect_all, 1, "interleaved write_all");

    /* Pass 2: a split collective at explicit offsets, read back through the pointer. */
    for (b = 0; b < K; b++)
        for (i = 0; i < BS; i++)
            buf[b * BS + i] = value(2, ((long)b * mt_size + mt_rank) * BS + i);
    MPI_CHECK(MPI_File_set_view(fh, disp, MPI_INT, ft, "native", MPI_INFO_NULL));
    MPI_CHECK(MPI_File_write_at_all_begin(fh, 0, buf, K * BS, MPI_INT));
    MPI_CHECK(MPI_File_write_at_all_end(fh, buf, &st));
    MPI_Get_count(&st, MPI_INT, &count);
    CHECK(count == K * BS, "write_at_all_end count %d (%s)", count, cfg_name);
    memset(got, 0, sizeof got);
    MPI_CHECK(MPI_File_read_all_begin(fh, got, K * BS, MPI_INT));
    MPI_CHECK(MPI_File_read_all_end(fh, got, &st));
    CHECK(!memcmp(got, buf, sizeof buf), "read_all_begin/end back (%s)", cfg_name);
    MPI_CHECK(MPI_File_get_position(fh, &pos));
    CHECK(pos == K * BS, "position after read_all_end %lld (%s)", (long long)pos, cfg_name);
    check_file(fh, n, expect_all, 2, "interleaved split collective");

    /* Past the end: the file cut in the middle of a block, each rank reads all its blocks. */
    {
        MPI_Offset size = (MPI_Offset)(n / 2) * sizeof(int) + 6;
        long want = 0;
        /* Every rank's check of the whole file is done before it shrinks. */
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_CHECK(MPI_File_set_size(fh, size));
        for (b = 0; b < K; b++) {
            MPI_Offset off = ((MPI_Offset)b * mt_size + mt_rank) * BS * sizeof(int);
            long have = size - off < 0 ? 0 : size - off > BS * 4 ? BS * 4 : size - off;
            want += have;
            if (have < BS * 4)
                break;
        }
        MPI_CHECK(MPI_File_set_view(fh, disp, MPI_INT, ft, "native", MPI_INFO_NULL));
        memset(got, 0, sizeof got);
        MPI_CHECK(MPI_File_read_at_all(fh, 0, got, K * BS, MPI_INT, &st));
        MPI_Get_count(&st, MPI_BYTE, &count);
        /* ROMIO reports the whole request of a non-contiguous read that meets the end. */
        CHECK_STRICT(count == want, "read_at_all past the end: %d bytes, expected %ld (%s)", count, want, cfg_name);
        CHECK(!memcmp(got, buf, want), "read_at_all past the end: data (%s)", cfg_name);
    }
    MPI_CHECK(MPI_File_close(&fh));
    MPI_Type_free(&ft);
    mt_barrier();
    if (mt_rank == 0)
        MPI_File_delete(path, MPI_INFO_NULL);
}

/* The global index of element (x, y, z) of the N^3 array. */
static long index3(int x, int y, int z)
{
    return ((long)x * N + y) * N + z;
}

static int expect_array(long i, int pass)
{
    return value(pass, i);
}

/* Start and size of part `c` of `d` parts of N. */
static void split(int c, int d, int *start, int *len)
{
    *len = N / d + (c < N % d);
    *start = c * (N / d) + (c < N % d ? c : N % d);
}

static void block3d(void)
{
    MPI_File fh;
    MPI_Status st;
    MPI_Datatype ft, mt;
    int dims[3] = {0, 0, 0}, coords[3], r = mt_rank, s[3], l[3], gs[3] = {N, N, N}, ms[3], ml[3] = {1, 1, 1};
    int x, y, z, count, bad = 0;
    const char *path = io_path("block3d");

    MPI_Dims_create(mt_size, 3, dims);
    coords[2] = r % dims[2];
    coords[1] = r / dims[2] % dims[1];
    coords[0] = r / dims[2] / dims[1];
    for (x = 0; x < 3; x++) {
        split(coords[x], dims[x], &s[x], &l[x]);
        ms[x] = l[x] + 2; /* a halo of 1 on each side in memory */
    }
    MPI_Type_create_subarray(3, gs, l, s, MPI_ORDER_C, MPI_INT, &ft);
    MPI_Type_commit(&ft);
    MPI_Type_create_subarray(3, ms, l, ml, MPI_ORDER_C, MPI_INT, &mt);
    MPI_Type_commit(&mt);
    {
        int *mem = mt_malloc((size_t)ms[0] * ms[1] * ms[2] * sizeof(int));
        int *back = mt_malloc((size_t)l[0] * l[1] * l[2] * sizeof(int) + 1);
        for (x = 0; x < ms[0] * ms[1] * ms[2]; x++)
            mem[x] = -7;
        for (x = 0; x < l[0]; x++)
            for (y = 0; y < l[1]; y++)
                for (z = 0; z < l[2]; z++)
                    mem[((x + 1) * ms[1] + y + 1) * ms[2] + z + 1] = value(3, index3(s[0] + x, s[1] + y, s[2] + z));
        MPI_CHECK(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDWR | MPI_MODE_CREATE, cfg_info, &fh));
        MPI_CHECK(MPI_File_set_view(fh, 0, MPI_INT, ft, "native", MPI_INFO_NULL));
        MPI_CHECK(MPI_File_write_all(fh, mem, 1, mt, &st));
        MPI_Get_count(&st, mt, &count);
        CHECK(count == 1, "3-D write_all count %d (%s)", count, cfg_name);
        MPI_CHECK(MPI_File_read_at_all(fh, 0, back, l[0] * l[1] * l[2], MPI_INT, &st));
        for (x = 0; x < l[0]; x++)
            for (y = 0; y < l[1]; y++)
                for (z = 0; z < l[2]; z++) {
                    int v = back[(x * l[1] + y) * l[2] + z], w = value(3, index3(s[0] + x, s[1] + y, s[2] + z));
                    if (v != w && bad++ < 3)
                        CHECK(0, "3-D read back (%d,%d,%d): %d, expected %d (%s)", x, y, z, v, w, cfg_name);
                }
        /* Read into memory with a halo: the halo stays as it was. */
        for (x = 0; x < ms[0] * ms[1] * ms[2]; x++)
            mem[x] = -7;
        MPI_CHECK(MPI_File_read_at_all(fh, 0, mem, 1, mt, &st));
        for (x = 0; x < ms[0]; x++)
            for (y = 0; y < ms[1]; y++)
                for (z = 0; z < ms[2]; z++) {
                    int inside = x >= 1 && x <= l[0] && y >= 1 && y <= l[1] && z >= 1 && z <= l[2];
                    int v = mem[(x * ms[1] + y) * ms[2] + z];
                    int w = inside ? value(3, index3(s[0] + x - 1, s[1] + y - 1, s[2] + z - 1)) : -7;
                    if (v != w && bad++ < 3)
                        CHECK(0, "3-D read into halo memory (%d,%d,%d): %d, expected %d (%s)", x, y, z, v, w, cfg_name);
                }
        check_file(fh, (long)N * N * N, expect_array, 3, "3-D block array");
        MPI_CHECK(MPI_File_close(&fh));
        free(mem);
        free(back);
    }
    MPI_Type_free(&ft);
    MPI_Type_free(&mt);
    mt_barrier();
    if (mt_rank == 0)
        MPI_File_delete(path, MPI_INFO_NULL);
}

/* Holes: each rank writes block `rank` of every period of 2 * np blocks; the file was filled
 * with 0xEE first, which must stay in the other blocks. */
static int expect_holes(long i, int pass)
{
    long block = i / BS, period = 2L * mt_size;
    if (block % period < mt_size && block / period < K)
        return value(pass, i);
    return -1;
}

static void holes(void)
{
    MPI_File fh;
    MPI_Status st;
    MPI_Datatype ft = interleaved_type(2 * mt_size);
    long n = 2L * mt_size * K * BS;
    int buf[K * BS], b, i;
    const char *path = io_path("holes");

    MPI_CHECK(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDWR | MPI_MODE_CREATE, cfg_info, &fh));
    if (mt_rank == 0) {
        char *fill = mt_malloc(n * sizeof(int));
        memset(fill, 0xEE, n * sizeof(int));
        MPI_CHECK(MPI_File_write_at(fh, 0, fill, (int)(n * sizeof(int)), MPI_BYTE, &st));
        free(fill);
    }
    MPI_CHECK(MPI_File_sync(fh));
    for (b = 0; b < K; b++)
        for (i = 0; i < BS; i++)
            buf[b * BS + i] = value(4, ((long)b * 2 * mt_size + mt_rank) * BS + i);
    MPI_CHECK(MPI_File_set_view(fh, (MPI_Offset)mt_rank * BS * sizeof(int), MPI_INT, ft, "native", MPI_INFO_NULL));
    MPI_CHECK(MPI_File_write_at_all(fh, 0, buf, K * BS, MPI_INT, &st));
    check_file(fh, n, expect_holes, 4, "holes");
    MPI_CHECK(MPI_File_close(&fh));
    MPI_Type_free(&ft);
    mt_barrier();
    if (mt_rank == 0)
        MPI_File_delete(path, MPI_INFO_NULL);
}

/* An ordered write: the ranks' pieces one after the other in rank order. */
static int expect_ordered(long i, int pass)
{
    return value(pass, i);
}

static void ordered(void)
{
    MPI_File fh;
    MPI_Status st;
    int buf[BS * 3], i, count;
    const char *path = io_path("ordered");

    for (i = 0; i < BS * 3; i++)
        buf[i] = value(5, (long)mt_rank * BS * 3 + i);
    MPI_CHECK(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDWR | MPI_MODE_CREATE, cfg_info, &fh));
    MPI_CHECK(MPI_File_write_ordered(fh, buf, BS * 3, MPI_INT, &st));
    MPI_Get_count(&st, MPI_INT, &count);
    CHECK(count == BS * 3, "write_ordered count %d (%s)", count, cfg_name);
    check_file(fh, (long)mt_size * BS * 3, expect_ordered, 5, "ordered");
    MPI_CHECK(MPI_File_close(&fh));
    mt_barrier();
    if (mt_rank == 0)
        MPI_File_delete(path, MPI_INFO_NULL);
}

static void hints_reported(void)
{
    MPI_File fh;
    MPI_Info info, used;
    char v[MPI_MAX_INFO_VAL + 1];
    int flag;

    MPI_Info_create(&info);
    MPI_Info_set(info, "cb_nodes", "64");
    MPI_Info_set(info, "cb_buffer_size", "65536");
    MPI_Info_set(info, "romio_cb_write", "enable");
    MPI_CHECK(MPI_File_open(MPI_COMM_WORLD, io_path("hints"), MPI_MODE_RDWR | MPI_MODE_CREATE | MPI_MODE_DELETE_ON_CLOSE,
                            info, &fh));
    MPI_CHECK(MPI_File_get_info(fh, &used));
    MPI_Info_get(used, "cb_nodes", MPI_MAX_INFO_VAL, v, &flag);
    /* ROMIO keeps to one aggregator per node (its cb_config_list "*:1") and reports that. */
    CHECK(flag, "cb_nodes not reported");
    CHECK_STRICT(flag && atoi(v) == (mt_size < 64 ? mt_size : 64), "cb_nodes reported %s", flag ? v : "(none)");
    io_check_hint(used, "cb_buffer_size", "65536");
    io_check_hint(used, "romio_cb_write", "enable");
    MPI_Info_free(&used);
    MPI_CHECK(MPI_File_close(&fh));
    MPI_Info_free(&info);
}

/* A rank with a bad count in a collective write gets MPI_ERR_COUNT; the others write and
 * are not held. (MPICH checks the count before the collective step: the others would wait,
 * so this runs on oxmpi only.) */
static void bad_count(void)
{
#if MT_OXMPI
    MPI_File fh;
    MPI_Status st;
    int buf[BS], i, count, bad = mt_size - 1;
    for (i = 0; i < BS; i++)
        buf[i] = value(6, (long)mt_rank * BS + i);
    MPI_File_open(MPI_COMM_WORLD, io_path("badcount"), MPI_MODE_RDWR | MPI_MODE_CREATE | MPI_MODE_DELETE_ON_CLOSE,
                  cfg_info, &fh);
    if (mt_rank == bad) {
        CHECK_CLASS(MPI_File_write_at_all(fh, (MPI_Offset)mt_rank * BS * 4, buf, -1, MPI_INT, &st), MPI_ERR_COUNT);
    } else {
        MPI_CHECK(MPI_File_write_at_all(fh, (MPI_Offset)mt_rank * BS * 4, buf, BS, MPI_INT, &st));
        MPI_Get_count(&st, MPI_INT, &count);
        CHECK(count == BS, "write_at_all beside a bad count: %d (%s)", count, cfg_name);
    }
    MPI_CHECK(MPI_File_close(&fh));
#endif
}

/* An _end must end the kind of split collective its _begin started (MPI-4.1 section
 * 14.4.5); MPICH does not check, so this runs on oxmpi only. */
static void split_mismatch(void)
{
#if MT_OXMPI
    MPI_File fh;
    MPI_Status st;
    int buf[BS] = {0}, count;
    MPI_CHECK(MPI_File_open(MPI_COMM_WORLD, io_path("split"), MPI_MODE_RDWR | MPI_MODE_CREATE | MPI_MODE_DELETE_ON_CLOSE,
                            MPI_INFO_NULL, &fh));
    MPI_CHECK(MPI_File_write_at_all_begin(fh, (MPI_Offset)mt_rank * sizeof buf, buf, BS, MPI_INT));
    CHECK_CLASS(MPI_File_write_all_end(fh, buf, &st), MPI_ERR_IO);
    CHECK_CLASS(MPI_File_read_at_all_end(fh, buf, &st), MPI_ERR_IO);
    CHECK_CLASS(MPI_File_write_ordered_end(fh, buf, &st), MPI_ERR_IO);
    MPI_CHECK(MPI_File_write_at_all_end(fh, buf, &st));
    MPI_Get_count(&st, MPI_INT, &count);
    CHECK(count == BS, "write_at_all_end after mismatched ends: count %d", count);
    CHECK_CLASS(MPI_File_write_at_all_end(fh, buf, &st), MPI_ERR_IO);
    MPI_CHECK(MPI_File_close(&fh));
#endif
}

/* Rank 0, the only aggregator, may not grow files past 4 KiB. It writes one block at the
 * start; the others write theirs beyond 4 KiB. Through the aggregator every rank's write
 * fails with MPI_ERR_NO_SPACE; independent, every write succeeds. */
static void write_error_at_aggregator(const char *cb)
{
    MPI_File fh;
    MPI_Status st;
    MPI_Info info;
    struct rlimit old, low;
    int buf[K * BS], i, rc, through_aggregator = !strcmp(cb, "enable") && mt_size > 1;
    MPI_Offset at = mt_rank == 0 ? 0 : 8192 + (MPI_Offset)mt_rank * sizeof buf;

    for (i = 0; i < K * BS; i++)
        buf[i] = i;
    MPI_Info_create(&info);
    MPI_Info_set(info, "romio_cb_write", cb);
    MPI_Info_set(info, "cb_nodes", "1");
    MPI_CHECK(MPI_File_open(MPI_COMM_WORLD, io_path("limit"), MPI_MODE_RDWR | MPI_MODE_CREATE | MPI_MODE_DELETE_ON_CLOSE,
                            info, &fh));
    MPI_File_set_errhandler(fh, MPI_ERRORS_RETURN);
    if (mt_rank == 0) {
        signal(SIGXFSZ, SIG_IGN);
        getrlimit(RLIMIT_FSIZE, &old);
        low = old;
        low.rlim_cur = 4096;
        setrlimit(RLIMIT_FSIZE, &low);
    }
    rc = MPI_File_write_at_all(fh, at, buf, mt_rank == 0 ? BS : K * BS, MPI_INT, &st);
    if (mt_rank == 0)
        setrlimit(RLIMIT_FSIZE, &old);
    if (!through_aggregator)
        CHECK(rc == MPI_SUCCESS, "romio_cb_write=%s: write_at_all failed: %s", cb, mt_errstr(rc));
    else if (mt_rank == 0) {
        /* ROMIO reports EFBIG as MPI_ERR_IO. */
        CHECK(rc != MPI_SUCCESS, "at the aggregator: no error");
        CHECK_STRICT(io_class(rc) == MPI_ERR_NO_SPACE, "at the aggregator: class %d (%s)", io_class(rc), mt_errstr(rc));
    } else /* ROMIO reports it on the aggregator only */
        CHECK_STRICT(io_class(rc) == MPI_ERR_NO_SPACE, "beside the aggregator: class %d", io_class(rc));
    MPI_CHECK(MPI_File_close(&fh));
    MPI_Info_free(&info);
}

int main(int argc, char **argv)
{
    const char *cbs[] = {"enable", "disable", "automatic"};
    const char *sizes[] = {NULL, "1000"};
    const char *nodes[] = {"1", "2"};
    int c, s, n;

    mt_init(&argc, &argv);
    io_make_dir();
    for (c = 0; c < 3; c++)
        for (s = 0; s < 2; s++)
            for (n = 0; n < 2; n++) {
                MPI_Info_create(&cfg_info);
                MPI_Info_set(cfg_info, "romio_cb_write", cbs[c]);
                MPI_Info_set(cfg_info, "romio_cb_read", cbs[c]);
                if (sizes[s])
                    MPI_Info_set(cfg_info, "cb_buffer_size", sizes[s]);
                MPI_Info_set(cfg_info, "cb_nodes", nodes[n]);
                snprintf(cfg_name, sizeof cfg_name, "cb %s, cb_buffer_size %s, cb_nodes %s", cbs[c],
                         sizes[s] ? sizes[s] : "default", nodes[n]);
                interleaved();
                block3d();
                holes();
                ordered();
                bad_count();
                MPI_Info_free(&cfg_info);
            }
    hints_reported();
    split_mismatch();
    write_error_at_aggregator("enable");
    write_error_at_aggregator("disable");
    io_remove_dir();
    return mt_finalize();
}
