/* oxmpi-test: np=1,2,3,4 timeout=120 */
/*
 * Nonblocking file accesses that run while the program goes on:
 *  - an 8 MiB MPI_File_iwrite_at per rank tested with MPI_Test while the ranks pass
 *    messages round a ring (every message checked), then each rank reads the next rank's
 *    part with MPI_File_iread_at completed by MPI_Waitall together with a receive;
 *  - MPI_File_iwrite twice in a row: the individual pointer moves past each access when it
 *    starts (MPI_File_get_position before any completes), the data lands in order;
 *    MPI_File_iread_shared / iwrite_shared the same with the shared pointer;
 *  - a request freed with MPI_Request_free before it completes: its data is in the file
 *    after MPI_File_close;
 *  - an error found by the system call (a write past RLIMIT_FSIZE) is reported by MPI_Wait
 *    with MPI_ERR_NO_SPACE through the file's error handler, not MPI_COMM_WORLD's;
 *  - an error of the arguments (writing a read-only file) is the starting call's.
 */
#include "io_mtest.h"
#include <signal.h>
#include <string.h>
#include <sys/resource.h>

#define BIG (8 << 20)
#define RING_TAG 77

static int file_errors, world_errors, last_file_error;

static void on_file(MPI_File *fh, int *code, ...)
{
    (void)fh;
    file_errors++;
    last_file_error = *code;
}

static void on_world(MPI_Comm *comm, int *code, ...)
{
    (void)comm;
    (void)code;
    world_errors++;
}

static unsigned char pattern(int rank, size_t i)
{
    return (unsigned char)(rank * 31 + i * 7 + (i >> 12));
}

static void overlap(void)
{
    MPI_File fh;
    MPI_Request req, both[2];
    MPI_Status st, sts[2];
    int flag = 0, rounds = 0, count, next = (mt_rank + 1) % mt_size, prev = (mt_rank + mt_size - 1) % mt_size;
    unsigned char *out = malloc(BIG), *in = malloc(BIG);
    size_t i, bad = 0;

    for (i = 0; i < BIG; i++)
        out[i] = pattern(mt_rank, i);
    MPI_CHECK(MPI_File_open(MPI_COMM_WORLD, io_path("overlap"), MPI_MODE_RDWR | MPI_MODE_CREATE, MPI_INFO_NULL, &fh));
    MPI_CHECK(MPI_File_iwrite_at(fh, (MPI_Offset)mt_rank * BIG, out, BIG, MPI_BYTE, &req));
    /* Messages round the ring while the write runs; every rank does at least 3 rounds. */
    for (;;) {
        int token = mt_rank * 1000 + rounds, got = -1;
        MPI_Sendrecv(&token, 1, MPI_INT, next, RING_TAG, &got, 1, MPI_INT, prev, RING_TAG, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
        CHECK(got == prev * 1000 + rounds, "ring round %d: got %d", rounds, got);
        if (!flag)
            MPI_CHECK(MPI_Test(&req, &flag, &st));
        rounds++;
        /* Every rank does as many rounds as the slowest needs. */
        int all_done = 0, mine = flag && rounds >= 3;
        MPI_Allreduce(&mine, &all_done, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
        if (all_done)
            break;
    }
    MPI_Get_count(&st, MPI_BYTE, &count);
    CHECK(count == BIG, "iwrite_at wrote %d bytes of %d", count, BIG);
    CHECK(req == MPI_REQUEST_NULL, "a completed request was not set to MPI_REQUEST_NULL");
    MPI_Barrier(MPI_COMM_WORLD);

    /* The next rank's part, waited for with a receive. */
    int token = -1, sent = mt_rank;
    MPI_CHECK(MPI_File_iread_at(fh, (MPI_Offset)next * BIG, in, BIG, MPI_BYTE, &both[0]));
    MPI_Irecv(&token, 1, MPI_INT, prev, RING_TAG + 1, MPI_COMM_WORLD, &both[1]);
    MPI_Send(&sent, 1, MPI_INT, next, RING_TAG + 1, MPI_COMM_WORLD);
    MPI_CHECK(MPI_Waitall(2, both, sts));
    MPI_Get_count(&sts[0], MPI_BYTE, &count);
    CHECK(count == BIG && token == prev, "iread_at read %d bytes, token %d", count, token);
    for (i = 0; i < BIG && bad < 5; i++)
        if (in[i] != pattern(next, i)) {
            CHECK(0, "byte %zu of rank %d's part: %d, expected %d", i, next, in[i], pattern(next, i));
            bad++;
        }
    MPI_CHECK(MPI_File_close(&fh));
    free(out);
    free(in);
}

static void pointers(void)
{
    MPI_File fh;
    MPI_Request req[3];
    MPI_Status sts[3];
    MPI_Offset pos;
    int a[100], b[100], got[200], i, count;
    const char *name = io_path("pointers");

    for (i = 0; i < 100; i++) {
        a[i] = mt_rank * 1000 + i;
        b[i] = -(mt_rank * 1000 + i);
    }
    MPI_CHECK(MPI_File_open(MPI_COMM_WORLD, name, MPI_MODE_RDWR | MPI_MODE_CREATE, MPI_INFO_NULL, &fh));
    MPI_CHECK(MPI_File_set_view(fh, (MPI_Offset)mt_rank * sizeof got, MPI_INT, MPI_INT, "native", MPI_INFO_NULL));
    MPI_CHECK(MPI_File_iwrite(fh, a, 100, MPI_INT, &req[0]));
    MPI_CHECK(MPI_File_iwrite(fh, b, 100, MPI_INT, &req[1]));
    MPI_CHECK(MPI_File_get_position(fh, &pos));
    CHECK(pos == 200, "the individual pointer after two iwrites: %lld", (long long)pos);
    MPI_CHECK(MPI_Waitall(2, req, sts));
    MPI_CHECK(MPI_File_seek(fh, 0, MPI_SEEK_SET));
    MPI_CHECK(MPI_File_iread(fh, got, 200, MPI_INT, &req[0]));
    MPI_CHECK(MPI_Wait(&req[0], &sts[0]));
    MPI_Get_count(&sts[0], MPI_INT, &count);
    CHECK(count == 200, "iread read %d ints", count);
    for (i = 0; i < 100; i++)
        CHECK(got[i] == a[i] && got[100 + i] == b[i], "int %d: %d %d", i, got[i], got[100 + i]);

    /* The shared pointer: each rank appends one int, then everyone reads them all. */
    MPI_CHECK(MPI_File_set_view(fh, 0, MPI_INT, MPI_INT, "native", MPI_INFO_NULL));
    MPI_CHECK(MPI_File_seek_shared(fh, (MPI_Offset)mt_size * 200, MPI_SEEK_SET));
    int mine = 5000 + mt_rank, all[64];
    MPI_CHECK(MPI_File_iwrite_shared(fh, &mine, 1, MPI_INT, &req[2]));
    MPI_CHECK(MPI_Wait(&req[2], &sts[2]));
    MPI_CHECK(MPI_File_sync(fh));
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_CHECK(MPI_File_sync(fh));
    MPI_CHECK(MPI_File_read_at(fh, (MPI_Offset)mt_size * 200, all, mt_size, MPI_INT, &sts[0]));
    int seen = 0;
    for (i = 0; i < mt_size; i++)
        seen |= 1 << (all[i] - 5000);
    CHECK(seen == (1 << mt_size) - 1, "the ints appended through the shared pointer: mask %#x", seen);
    MPI_CHECK(MPI_File_close(&fh));
}

static void freed_request(void)
{
    MPI_File fh;
    MPI_Request req;
    MPI_Status st;
    int v[1000], got[1000], i;
    const char *name = io_path("freed");

    for (i = 0; i < 1000; i++)
        v[i] = mt_rank + i;
    MPI_CHECK(MPI_File_open(MPI_COMM_WORLD, name, MPI_MODE_RDWR | MPI_MODE_CREATE, MPI_INFO_NULL, &fh));
    MPI_CHECK(MPI_File_iwrite_at(fh, (MPI_Offset)mt_rank * sizeof v, v, 1000, MPI_INT, &req));
    MPI_CHECK(MPI_Request_free(&req));
    MPI_CHECK(MPI_File_close(&fh));
    MPI_CHECK(MPI_File_open(MPI_COMM_WORLD, name, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh));
    MPI_CHECK(MPI_File_read_at(fh, (MPI_Offset)mt_rank * sizeof v, got, 1000, MPI_INT, &st));
    /* The standard leaves it to the program to complete its accesses before closing; oxmpi's
     * close waits for them (MPICH 4.0.2's does not). */
    for (i = 0; i < 1000; i++)
        CHECK_STRICT(got[i] == v[i], "int %d after a freed iwrite_at: %d", i, got[i]);
    MPI_CHECK(MPI_File_close(&fh));
}

static void errors(void)
{
    MPI_File fh;
    MPI_Request req;
    MPI_Status st;
    MPI_Errhandler feh, weh;
    struct rlimit old, low;
    int buf[256] = {0}, rc;
    char name[600];
    snprintf(name, sizeof name, "%s", io_path("errors"));
    snprintf(name + strlen(name), sizeof name - strlen(name), "-%d", mt_rank);

    MPI_File_create_errhandler(on_file, &feh);
    MPI_Comm_create_errhandler(on_world, &weh);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, weh);
    MPI_CHECK(MPI_File_open(MPI_COMM_SELF, name, MPI_MODE_RDWR | MPI_MODE_CREATE | MPI_MODE_DELETE_ON_CLOSE,
                            MPI_INFO_NULL, &fh));
    MPI_File_set_errhandler(fh, feh);
    /* Files may not grow past 4 KiB in this process: the write's system call fails. */
    signal(SIGXFSZ, SIG_IGN);
    getrlimit(RLIMIT_FSIZE, &old);
    low = old;
    low.rlim_cur = 4096;
    setrlimit(RLIMIT_FSIZE, &low);
    rc = MPI_File_iwrite_at(fh, 8192, buf, 256, MPI_INT, &req);
    CHECK(rc == MPI_SUCCESS, "starting the write failed: %s", mt_errstr(rc));
    if (rc == MPI_SUCCESS) {
        rc = MPI_Wait(&req, &st);
        CHECK(io_class(rc) == MPI_ERR_NO_SPACE, "MPI_Wait: class %d (%s)", io_class(rc), mt_errstr(rc));
        CHECK(file_errors == 1 && io_class(last_file_error) == MPI_ERR_NO_SPACE && world_errors == 0,
              "handlers called: the file's %d times (class %d), MPI_COMM_WORLD's %d times", file_errors,
              io_class(last_file_error), world_errors);
    }
    setrlimit(RLIMIT_FSIZE, &old);
    MPI_CHECK(MPI_File_close(&fh));

    /* A read-only file: the starting call fails, on the file's handler. */
    MPI_CHECK(MPI_File_open(MPI_COMM_SELF, io_path("overlap"), MPI_MODE_RDONLY, MPI_INFO_NULL, &fh));
    MPI_File_set_errhandler(fh, MPI_ERRORS_RETURN);
    req = MPI_REQUEST_NULL;
    CHECK_CLASS(MPI_File_iwrite_at(fh, 0, buf, 1, MPI_INT, &req), MPI_ERR_READ_ONLY);
    CHECK(req == MPI_REQUEST_NULL, "a failed iwrite_at returned a request");
    MPI_CHECK(MPI_File_close(&fh));
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    MPI_Errhandler_free(&feh);
    MPI_Errhandler_free(&weh);
}

int main(int argc, char **argv)
{
    mt_init(&argc, &argv);
    io_make_dir();
    overlap();
    pointers();
    freed_request();
    errors();
    io_remove_dir();
    return mt_finalize();
}
