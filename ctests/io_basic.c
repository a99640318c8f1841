/* oxmpi-test: np=1,2,4,5 timeout=120 */
/*
 * MPI-IO basics: opening (amode checks, error classes from the system call, a failed open
 * failing on every rank), closing, MPI_MODE_DELETE_ON_CLOSE, MPI_File_delete, sizes
 * (get_size, set_size, preallocate), get_amode, get_group, hints (get_info, set_info),
 * atomicity, explicit-offset and individual-pointer access with seek / get_position /
 * get_byte_offset, MPI_Get_count after a short read, access-mode errors, nonblocking and
 * split-collective forms, MPI_MODE_SEQUENTIAL and MPI_MODE_APPEND, the shared file pointer
 * (write_shared, write_ordered / read_ordered, seek_shared, get_position_shared).
 */
#include "io_mtest.h"

#define N 64 /* ints per rank */

static void amode_and_errors(void)
{
    MPI_File fh;
    const char *missing = io_path("missing"), *f = io_path("errors");

    CHECK_CLASS(MPI_File_open(MPI_COMM_WORLD, missing, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh), MPI_ERR_NO_SUCH_FILE);
    CHECK(!io_exists(missing), "a failed open created %s", missing);
    CHECK_CLASS(MPI_File_open(MPI_COMM_WORLD, f, MPI_MODE_RDONLY | MPI_MODE_CREATE, MPI_INFO_NULL, &fh), MPI_ERR_AMODE);
    CHECK_CLASS(MPI_File_open(MPI_COMM_WORLD, f, MPI_MODE_RDONLY | MPI_MODE_EXCL, MPI_INFO_NULL, &fh), MPI_ERR_AMODE);
    CHECK_CLASS(MPI_File_open(MPI_COMM_WORLD, f, MPI_MODE_RDWR | MPI_MODE_WRONLY | MPI_MODE_CREATE, MPI_INFO_NULL, &fh),
                MPI_ERR_AMODE);
    CHECK_CLASS(MPI_File_open(MPI_COMM_WORLD, f, MPI_MODE_CREATE, MPI_INFO_NULL, &fh), MPI_ERR_AMODE);
    CHECK_CLASS(MPI_File_open(MPI_COMM_WORLD, f, MPI_MODE_RDWR | MPI_MODE_SEQUENTIAL | MPI_MODE_CREATE, MPI_INFO_NULL, &fh),
                MPI_ERR_AMODE);
    CHECK(!io_exists(f), "an open with a bad amode created the file");

    /* Created once; MPI_MODE_EXCL then finds it there, on every rank. */
    MPI_CHECK(MPI_File_open(MPI_COMM_WORLD, f, MPI_MODE_WRONLY | MPI_MODE_CREATE | MPI_MODE_EXCL, MPI_INFO_NULL, &fh));
    MPI_CHECK(MPI_File_close(&fh));
    CHECK(fh == MPI_FILE_NULL, "close did not reset the handle");
    CHECK_CLASS(MPI_File_open(MPI_COMM_WORLD, f, MPI_MODE_WRONLY | MPI_MODE_CREATE | MPI_MODE_EXCL, MPI_INFO_NULL, &fh),
                MPI_ERR_FILE_EXISTS);

    /* A directory is not a file (opened for writing: EISDIR). */
    CHECK(io_class(MPI_File_open(MPI_COMM_WORLD, io_dir, MPI_MODE_RDWR, MPI_INFO_NULL, &fh)) != MPI_SUCCESS,
          "a directory opened for writing");

    /* Reading a write-only file, writing a read-only one. */
    {
        int v[4] = {1, 2, 3, 4};
        MPI_CHECK(MPI_File_open(MPI_COMM_WORLD, f, MPI_MODE_WRONLY, MPI_INFO_NULL, &fh));
        CHECK_CLASS(MPI_File_read_at(fh, 0, v, 4, MPI_INT, MPI_STATUS_IGNORE), MPI_ERR_ACCESS);
        MPI_CHECK(MPI_File_close(&fh));
        MPI_CHECK(MPI_File_open(MPI_COMM_WORLD, f, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh));
        CHECK_CLASS(MPI_File_write_at(fh, 0, v, 4, MPI_INT, MPI_STATUS_IGNORE), MPI_ERR_READ_ONLY);
        CHECK_CLASS(MPI_File_set_size(fh, 0), MPI_ERR_READ_ONLY);
        CHECK_CLASS(MPI_File_read_at(fh, -1, v, 4, MPI_INT, MPI_STATUS_IGNORE), MPI_ERR_ARG);
        CHECK_CLASS(MPI_File_read_at(fh, 0, v, -1, MPI_INT, MPI_STATUS_IGNORE), MPI_ERR_COUNT);
        CHECK_CLASS(MPI_File_seek(fh, 0, 12345), MPI_ERR_ARG);
        CHECK_CLASS(MPI_File_seek(fh, -1, MPI_SEEK_SET), MPI_ERR_ARG);
        MPI_CHECK(MPI_File_close(&fh));
    }
    /* Operations on a closed or null handle. */
    {
        MPI_Offset size;
        CHECK_CLASS(MPI_File_get_size(MPI_FILE_NULL, &size), MPI_ERR_FILE);
        CHECK_CLASS(MPI_File_close(&fh), MPI_ERR_FILE);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (mt_rank == 0) {
        MPI_CHECK(MPI_File_delete(f, MPI_INFO_NULL));
        CHECK(!io_exists(f), "MPI_File_delete left the file");
        CHECK_CLASS(MPI_File_delete(f, MPI_INFO_NULL), MPI_ERR_NO_SUCH_FILE);
    }
    MPI_Barrier(MPI_COMM_WORLD);
}

static void explicit_and_individual(void)
{
    MPI_File fh;
    MPI_Status st;
    MPI_Offset off, size;
    int buf[N], got[N], i, count, amode, flag;
    const char *f = io_path("data");
    MPI_Group g, wg;
    MPI_Info info;

    MPI_CHECK(MPI_File_open(MPI_COMM_WORLD, f, MPI_MODE_RDWR | MPI_MODE_CREATE, MPI_INFO_NULL, &fh));
    MPI_CHECK(MPI_File_get_amode(fh, &amode));
    CHECK(amode == (MPI_MODE_RDWR | MPI_MODE_CREATE), "amode %d", amode);
    MPI_CHECK(MPI_File_get_group(fh, &g));
    MPI_Comm_group(MPI_COMM_WORLD, &wg);
    MPI_Group_compare(g, wg, &flag);
    CHECK(flag == MPI_IDENT, "file group compares %d with the world's", flag);
    MPI_Group_free(&g);
    MPI_Group_free(&wg);
    MPI_CHECK(MPI_File_get_atomicity(fh, &flag));
    CHECK(flag == 0, "atomic mode on by default");
    MPI_CHECK(MPI_File_set_atomicity(fh, 1));
    MPI_CHECK(MPI_File_get_atomicity(fh, &flag));
    CHECK(flag == 1, "atomic mode not set");

    /* Each rank writes its block at an explicit offset, then reads its neighbour's. */
    for (i = 0; i < N; i++)
        buf[i] = mt_rank * 1000 + i;
    MPI_CHECK(MPI_File_write_at(fh, (MPI_Offset)mt_rank * N * sizeof(int), buf, N, MPI_INT, &st));
    MPI_Get_count(&st, MPI_INT, &count);
    CHECK(count == N, "write_at count %d", count);
    MPI_CHECK(MPI_File_set_atomicity(fh, 0));
    MPI_CHECK(MPI_File_sync(fh));
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_CHECK(MPI_File_sync(fh));
    MPI_CHECK(MPI_File_get_size(fh, &size));
    CHECK(size == (MPI_Offset)mt_size * N * sizeof(int), "size %lld", (long long)size);
    {
        int peer = (mt_rank + 1) % mt_size;
        MPI_CHECK(MPI_File_read_at(fh, (MPI_Offset)peer * N * sizeof(int), got, N, MPI_INT, &st));
        MPI_Get_count(&st, MPI_INT, &count);
        CHECK(count == N, "read_at count %d", count);
        for (i = 0; i < N; i++)
            CHECK(got[i] == peer * 1000 + i, "got[%d] = %d", i, got[i]);
    }

    /* A short read at the end of the file: Get_count says how much came. */
    memset(got, 0, sizeof got);
    MPI_CHECK(MPI_File_read_at(fh, size - 3 * sizeof(int), got, N, MPI_INT, &st));
    MPI_Get_count(&st, MPI_INT, &count);
    CHECK(count == 3, "short read count %d", count);
    CHECK(got[0] == (mt_size - 1) * 1000 + N - 3 && got[2] == (mt_size - 1) * 1000 + N - 1 && got[3] == 0,
          "short read data %d %d %d", got[0], got[2], got[3]);
    MPI_CHECK(MPI_File_read_at(fh, size + 100, got, N, MPI_INT, &st));
    MPI_Get_count(&st, MPI_INT, &count);
    CHECK(count == 0, "read past the end: count %d", count);
    /* 6 bytes are not a whole number of ints. */
    MPI_CHECK(MPI_File_read_at(fh, size - 6, got, 2, MPI_INT, &st));
    MPI_Get_count(&st, MPI_INT, &count);
    CHECK(count == MPI_UNDEFINED, "partial int: count %d", count);
    MPI_Get_count(&st, MPI_BYTE, &count);
    CHECK(count == 6, "partial int: %d bytes", count);

    /* The individual pointer: seek, read, position. */
    MPI_CHECK(MPI_File_get_position(fh, &off));
    CHECK(off == 0, "initial position %lld", (long long)off);
    MPI_CHECK(MPI_File_seek(fh, (MPI_Offset)mt_rank * N * sizeof(int) + 8, MPI_SEEK_SET));
    MPI_CHECK(MPI_File_read(fh, got, 2, MPI_INT, &st));
    CHECK(got[0] == mt_rank * 1000 + 2 && got[1] == mt_rank * 1000 + 3, "read after seek %d %d", got[0], got[1]);
    MPI_CHECK(MPI_File_get_position(fh, &off));
    CHECK(off == (MPI_Offset)mt_rank * N * sizeof(int) + 16, "position %lld", (long long)off);
    MPI_CHECK(MPI_File_seek(fh, -4, MPI_SEEK_CUR));
    MPI_CHECK(MPI_File_read(fh, got, 1, MPI_INT, &st));
    CHECK(got[0] == mt_rank * 1000 + 3, "read after SEEK_CUR %d", got[0]);
    MPI_CHECK(MPI_File_seek(fh, -(MPI_Offset)sizeof(int), MPI_SEEK_END));
    MPI_CHECK(MPI_File_get_position(fh, &off));
    CHECK(off == size - 4, "SEEK_END position %lld", (long long)off);
    MPI_CHECK(MPI_File_get_byte_offset(fh, 10, &off));
    CHECK(off == 10, "byte offset %lld in the default view", (long long)off);
    MPI_Barrier(MPI_COMM_WORLD);

    /* Individual pointer writes, collective: each rank overwrites its block's first two ints. */
    MPI_CHECK(MPI_File_seek(fh, (MPI_Offset)mt_rank * N * sizeof(int), MPI_SEEK_SET));
    buf[0] = -1 - mt_rank;
    buf[1] = -100 - mt_rank;
    MPI_CHECK(MPI_File_write_all(fh, buf, 2, MPI_INT, &st));
    MPI_Get_count(&st, MPI_INT, &count);
    CHECK(count == 2, "write_all count %d", count);
    {
        int peer = (mt_rank + mt_size - 1) % mt_size;
        MPI_CHECK(MPI_File_read_at_all(fh, (MPI_Offset)peer * N * sizeof(int), got, 2, MPI_INT, &st));
        CHECK(got[0] == -1 - peer && got[1] == -100 - peer, "read_at_all after write_all: %d %d", got[0], got[1]);
    }

    /* Nonblocking and split collective forms. */
    {
        MPI_Request req[2];
        int v = 7000 + mt_rank, w = -1;
        MPI_Offset at = (MPI_Offset)mt_rank * N * sizeof(int) + 4 * sizeof(int);
        MPI_CHECK(MPI_File_iwrite_at(fh, at, &v, 1, MPI_INT, &req[0]));
        MPI_CHECK(MPI_Wait(&req[0], &st));
        MPI_Get_count(&st, MPI_INT, &count);
        CHECK(count == 1, "iwrite_at count %d", count);
        MPI_CHECK(MPI_File_iread_at(fh, at, &w, 1, MPI_INT, &req[1]));
        MPI_CHECK(MPI_Wait(&req[1], &st));
        CHECK(w == v, "iread_at got %d", w);
        w = -1;
        MPI_CHECK(MPI_File_read_at_all_begin(fh, at, &w, 1, MPI_INT));
        CHECK_CLASS(MPI_File_read_at_all_begin(fh, at, &w, 1, MPI_INT), MPI_ERR_IO);
        MPI_CHECK(MPI_File_read_at_all_end(fh, &w, &st));
        MPI_Get_count(&st, MPI_INT, &count);
        CHECK(w == v && count == 1, "split read got %d, count %d", w, count);
        CHECK_CLASS(MPI_File_read_at_all_end(fh, &w, &st), MPI_ERR_IO);
    }

    /* Hints: defaults reported, accepted values reported back. */
    {
        char value[MPI_MAX_INFO_VAL + 1];
        MPI_Info_create(&info);
        MPI_Info_set(info, "cb_buffer_size", "1048576");
        MPI_Info_set(info, "romio_ds_write", "disable");
        MPI_Info_set(info, "striping_unit", "65536");
        MPI_CHECK(MPI_File_set_info(fh, info));
        MPI_Info_free(&info);
        MPI_CHECK(MPI_File_get_info(fh, &info));
        MPI_Info_get(info, "cb_buffer_size", MPI_MAX_INFO_VAL, value, &flag);
        CHECK(flag && !strcmp(value, "1048576"), "cb_buffer_size %s", flag ? value : "(unset)");
        MPI_Info_get(info, "romio_ds_write", MPI_MAX_INFO_VAL, value, &flag);
        CHECK(flag && !strcmp(value, "disable"), "romio_ds_write %s", flag ? value : "(unset)");
        MPI_Info_get(info, "striping_unit", MPI_MAX_INFO_VAL, value, &flag);
        CHECK(flag && !strcmp(value, "65536"), "striping_unit %s", flag ? value : "(unset)");
        MPI_Info_get(info, "ind_rd_buffer_size", MPI_MAX_INFO_VAL, value, &flag);
        CHECK(flag, "ind_rd_buffer_size not reported");
        MPI_Info_free(&info);
    }

    /* Sizes: set_size shrinks and grows, preallocate only grows. Each rank looks at the size
     * before the next collective changes it (collectives need not synchronise). */
    MPI_CHECK(MPI_File_set_size(fh, 100));
    MPI_CHECK(MPI_File_get_size(fh, &size));
    CHECK(size == 100, "size after set_size(100): %lld", (long long)size);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_CHECK(MPI_File_preallocate(fh, 50));
    MPI_CHECK(MPI_File_get_size(fh, &size));
    CHECK(size == 100, "preallocate(50) changed the size to %lld", (long long)size);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_CHECK(MPI_File_preallocate(fh, 4096));
    MPI_CHECK(MPI_File_get_size(fh, &size));
    CHECK(size == 4096, "size after preallocate(4096): %lld", (long long)size);
    CHECK_CLASS(MPI_File_set_size(fh, -1), MPI_ERR_ARG);
    MPI_CHECK(MPI_File_close(&fh));
    CHECK(io_exists(f), "the file is gone after close");
}

static void modes(void)
{
    MPI_File fh;
    MPI_Status st;
    MPI_Offset off, size;
    int v[4], i, count;
    const char *f = io_path("modes"), *tmp = io_path("delete-on-close");

    /* MPI_MODE_DELETE_ON_CLOSE. */
    MPI_CHECK(MPI_File_open(MPI_COMM_WORLD, tmp, MPI_MODE_RDWR | MPI_MODE_CREATE | MPI_MODE_DELETE_ON_CLOSE,
                            MPI_INFO_NULL, &fh));
    MPI_CHECK(MPI_File_write_at(fh, mt_rank, "x", 1, MPI_CHAR, &st));
    CHECK(io_exists(tmp), "the file is missing before close");
    MPI_CHECK(MPI_File_close(&fh));
    CHECK(!io_exists(tmp), "MPI_MODE_DELETE_ON_CLOSE left the file");

    /* MPI_MODE_APPEND: both pointers start at the end. */
    if (mt_rank == 0) {
        FILE *c = fopen(f, "w");
        fwrite("0123456789", 1, 10, c);
        fclose(c);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_CHECK(MPI_File_open(MPI_COMM_WORLD, f, MPI_MODE_WRONLY | MPI_MODE_APPEND | MPI_MODE_UNIQUE_OPEN, MPI_INFO_NULL,
                            &fh));
    MPI_CHECK(MPI_File_get_position(fh, &off));
    CHECK(off == 10, "MPI_MODE_APPEND position %lld", (long long)off);
    MPI_CHECK(MPI_File_get_position_shared(fh, &off));
    CHECK(off == 10, "MPI_MODE_APPEND shared position %lld", (long long)off);
    MPI_CHECK(MPI_File_close(&fh));

    /* The shared pointer: every rank appends one int; all of them land, once each. */
    MPI_CHECK(MPI_File_open(MPI_COMM_WORLD, f, MPI_MODE_RDWR, MPI_INFO_NULL, &fh));
    MPI_CHECK(MPI_File_set_size(fh, 0));
    v[0] = 500 + mt_rank;
    MPI_CHECK(MPI_File_write_shared(fh, v, 1, MPI_INT, &st));
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_CHECK(MPI_File_get_position_shared(fh, &off));
    /* MPICH 4.0.2 (ROMIO) reports 12 at np 2 here. */
    CHECK_STRICT(off == (MPI_Offset)mt_size * sizeof(int), "shared position %lld", (long long)off);
    {
        int *all = mt_malloc(mt_size * sizeof(int)), seen = 0;
        MPI_CHECK(MPI_File_read_at(fh, 0, all, mt_size, MPI_INT, &st));
        for (i = 0; i < mt_size; i++)
            if (all[i] >= 500 && all[i] < 500 + mt_size)
                seen |= 1 << (all[i] - 500);
        CHECK(seen == (1 << mt_size) - 1, "shared-pointer writes seen: 0x%x", seen);
        free(all);
    }
    /* Ordered: rank r writes r + 1 ints of value r, in rank order after the shared writes. */
    for (i = 0; i < 4; i++)
        v[i] = mt_rank;
    MPI_CHECK(MPI_File_write_ordered(fh, v, mt_rank < 4 ? mt_rank + 1 : 4, MPI_INT, &st));
    MPI_Get_count(&st, MPI_INT, &count);
    CHECK(count == (mt_rank < 4 ? mt_rank + 1 : 4), "write_ordered count %d", count);
    MPI_CHECK(MPI_File_seek_shared(fh, (MPI_Offset)mt_size * sizeof(int), MPI_SEEK_SET));
    MPI_CHECK(MPI_File_read_ordered(fh, v, mt_rank < 4 ? mt_rank + 1 : 4, MPI_INT, &st));
    for (i = 0; i < (mt_rank < 4 ? mt_rank + 1 : 4); i++)
        CHECK(v[i] == mt_rank, "read_ordered v[%d] = %d", i, v[i]);
    MPI_CHECK(MPI_File_get_size(fh, &size));
    {
        MPI_Offset ints = mt_size;
        for (i = 0; i < mt_size; i++)
            ints += i < 4 ? i + 1 : 4;
        CHECK(size == ints * (MPI_Offset)sizeof(int), "size after ordered writes %lld", (long long)size);
        MPI_CHECK(MPI_File_get_position_shared(fh, &off));
        CHECK(off == size, "shared position after read_ordered %lld", (long long)off);
    }
    MPI_CHECK(MPI_File_close(&fh));

    /* MPI_MODE_SEQUENTIAL: only the shared pointer. */
    MPI_CHECK(MPI_File_open(MPI_COMM_WORLD, f, MPI_MODE_RDONLY | MPI_MODE_SEQUENTIAL, MPI_INFO_NULL, &fh));
    CHECK_CLASS(MPI_File_read_at(fh, 0, v, 1, MPI_INT, &st), MPI_ERR_UNSUPPORTED_OPERATION);
    CHECK_CLASS(MPI_File_read(fh, v, 1, MPI_INT, &st), MPI_ERR_UNSUPPORTED_OPERATION);
    CHECK_CLASS(MPI_File_seek(fh, 0, MPI_SEEK_SET), MPI_ERR_UNSUPPORTED_OPERATION);
    MPI_CHECK(MPI_File_read_ordered(fh, v, 1, MPI_INT, &st));
    CHECK(v[0] >= 500 && v[0] < 500 + mt_size, "sequential read_ordered got %d", v[0]);
    MPI_CHECK(MPI_File_close(&fh));
}

int main(int argc, char **argv)
{
    mt_init(&argc, &argv);
    io_make_dir();
    amode_and_errors();
    explicit_and_individual();
    modes();
    io_remove_dir();
    return mt_finalize();
}
