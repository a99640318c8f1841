/* MPI-IO: time to write and to read one shared file of `size` bytes (all ranks together) in
 * the access patterns of --patterns, with the MPI's default hints:
 *   block3d     collective (write_all/read_all): a 3-D array of doubles, N^3 bytes * 8 about
 *               `size`, distributed in blocks over MPI_Dims_create(np, 3) ranks through a
 *               subarray view (records io_b3d_wr, io_b3d_rd)
 *   strided     collective: each rank has every np-th block of 4 KiB ($BENCH_IO_BLOCK bytes
 *               if set; a resized filetype);
 *               (io_str_wr, io_str_rd)
 *   contig      independent (write_at/read_at): each rank one contiguous 1/np of the file
 *               (io_ind_wr, io_ind_rd)
 *   indstrided  independent (write/read through the strided view above) (io_inds_wr,
 *               io_inds_rd)
 *   overlap     nonblocking (iwrite_at/iread_at of contig's parts) overlapped with computation:
 *               a sample starts the access, computes (spins) for as long as the blocking
 *               access took in this run ($BENCH_IO_COMPUTE_US microseconds if set), then
 *               waits (io_ovl_wr, io_ovl_rd). About the blocking time when the I/O runs in the
 *               background, about twice that when it runs in the call or in the wait.
 * A sample is one call on every rank between two barriers (the time of the slowest rank);
 * open and close are outside it, and so is the disk: files stay in the page cache (no sync).
 * The file is in $BENCH_IO_DIR (default /tmp), removed at the end; records start with
 * $BENCH_IO_NAME (default io) instead of "io" (scripts/compare.sh: io, ioshm). After the timed
 * reads of each pattern the data read is checked against what was written. */
#define _POSIX_C_SOURCE 200809L /* strtok_r, getpid under -std=c99 */
#include "common.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Block of the strided patterns: $BENCH_IO_BLOCK bytes, default 4096. */
static size_t block = 4096;

static bench_opts o;
static char path[512];
static const char *record_prefix = "io";

typedef struct {
    const char *name;   /* record prefix */
    int collective;     /* _all calls */
    int explicit_at;    /* independent at an offset (contig, overlap) */
    int overlap;        /* nonblocking, overlapped with computation */
    MPI_Datatype ftype; /* the view's filetype (MPI_BYTE: none) */
    MPI_Offset disp;
    MPI_Offset offset;  /* explicit offset (contig) */
    size_t bytes;       /* this rank's bytes */
    size_t total;       /* the file's bytes */
} pattern;

/* Sets up pattern `which` for a file of about `size` bytes; returns 0 when it does not fit. */
static int make_pattern(const char *which, size_t size, pattern *p)
{
    memset(p, 0, sizeof *p);
    p->ftype = MPI_BYTE;
    if (!strcmp(which, "block3d")) {
        int dims[3] = {0, 0, 0}, gs[3], ls[3], st[3], c[3], r = bench_rank, i;
        int n = (int)floor(cbrt((double)size / 8.0) + 0.5);
        MPI_Dims_create(bench_np, 3, dims);
        if (n < dims[0] || n < dims[1] || n < dims[2])
            return 0;
        c[2] = r % dims[2];
        c[1] = r / dims[2] % dims[1];
        c[0] = r / dims[2] / dims[1];
        p->bytes = 8;
        for (i = 0; i < 3; i++) {
            gs[i] = n;
            ls[i] = n / dims[i] + (c[i] < n % dims[i]);
            st[i] = c[i] * (n / dims[i]) + (c[i] < n % dims[i] ? c[i] : n % dims[i]);
            p->bytes *= (size_t)ls[i];
        }
        MPI_Type_create_subarray(3, gs, ls, st, MPI_ORDER_C, MPI_DOUBLE, &p->ftype);
        MPI_Type_commit(&p->ftype);
        p->name = "io_b3d";
        p->collective = 1;
        p->total = (size_t)n * n * n * 8;
        return 1;
    }
    if (!strcmp(which, "strided") || !strcmp(which, "indstrided")) {
        size_t blocks = size / block / bench_np;
        MPI_Datatype b;
        if (blocks == 0)
            return 0;
        MPI_Type_contiguous((int)block, MPI_BYTE, &b);
        MPI_Type_create_resized(b, 0, (MPI_Aint)(bench_np * block), &p->ftype);
        MPI_Type_commit(&p->ftype);
        MPI_Type_free(&b);
        p->disp = (MPI_Offset)(bench_rank * block);
        p->bytes = blocks * block;
        p->total = p->bytes * bench_np;
        p->collective = !strcmp(which, "strided");
        p->name = p->collective ? "io_str" : "io_inds";
        return 1;
    }
    if (!strcmp(which, "contig") || !strcmp(which, "overlap")) {
        p->bytes = size / bench_np;
        if (p->bytes == 0)
            return 0;
        p->offset = (MPI_Offset)bench_rank * p->bytes;
        p->total = p->bytes * bench_np;
        p->explicit_at = 1;
        p->overlap = !strcmp(which, "overlap");
        p->name = p->overlap ? "io_ovl" : "io_ind";
        return 1;
    }
    bench_fail("unknown pattern %s (block3d, strided, contig, indstrided, overlap)", which);
    return 0;
}

/* Computation of the overlap pattern: spins for `us` microseconds. */
static void compute(double us)
{
    double until = MPI_Wtime() + us * 1e-6;
    volatile double x = 1.0;
    while (MPI_Wtime() < until)
        for (int k = 0; k < 1000; k++)
            x = x * 1.0000001 + 1e-9;
}

/* One access of the pattern (write when `write`); the overlap pattern computes for
 * `compute_us` between starting it and waiting. */
static int access_once(MPI_File fh, const pattern *p, char *buf, int write, double compute_us)
{
    MPI_Status st;
    int count = (int)p->bytes;
    if (p->overlap) {
        MPI_Request req;
        int rc = write ? MPI_File_iwrite_at(fh, p->offset, buf, count, MPI_BYTE, &req)
                       : MPI_File_iread_at(fh, p->offset, buf, count, MPI_BYTE, &req);
        if (rc != MPI_SUCCESS)
            return rc;
        compute(compute_us);
        return MPI_Wait(&req, &st);
    }
    if (p->explicit_at)
        return write ? MPI_File_write_at(fh, p->offset, buf, count, MPI_BYTE, &st)
                     : MPI_File_read_at(fh, p->offset, buf, count, MPI_BYTE, &st);
    MPI_File_seek(fh, 0, MPI_SEEK_SET);
    if (p->collective)
        return write ? MPI_File_write_all(fh, buf, count, MPI_BYTE, &st)
                     : MPI_File_read_all(fh, buf, count, MPI_BYTE, &st);
    return write ? MPI_File_write(fh, buf, count, MPI_BYTE, &st) : MPI_File_read(fh, buf, count, MPI_BYTE, &st);
}

static void run_pattern(const char *which, size_t size, double *t)
{
    pattern p;
    MPI_File fh;
    char *wbuf, *rbuf, rec[64];
    int op, i, rc, iters = o.iters, warm = o.warmup;
    if (!make_pattern(which, size, &p))
        return;
    wbuf = bench_alloc(p.bytes ? p.bytes : 1);
    rbuf = bench_alloc(p.bytes ? p.bytes : 1);
    bench_fill(wbuf, p.bytes, 1000 + (uint64_t)bench_rank);
    rc = MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDWR | MPI_MODE_CREATE, MPI_INFO_NULL, &fh);
    bench_check_rc(rc, "MPI_File_open", size);
    MPI_File_set_errhandler(fh, MPI_ERRORS_RETURN);
    if (p.ftype != MPI_BYTE)
        bench_check_rc(MPI_File_set_view(fh, p.disp, MPI_BYTE, p.ftype, "native", MPI_INFO_NULL), "set_view", size);
    for (op = 0; op < 2; op++) {
        int write = op == 0, n = 0;
        double compute_us = 0;
        if (p.overlap) {
            /* As long as the blocking access takes here (the slowest rank's median). */
            const char *env = getenv("BENCH_IO_COMPUTE_US");
            pattern blocking = p;
            blocking.overlap = 0;
            for (i = 0; i < warm + iters; i++) {
                double t0;
                MPI_Barrier(MPI_COMM_WORLD);
                t0 = MPI_Wtime();
                bench_check_rc(access_once(fh, &blocking, write ? wbuf : rbuf, write, 0), "blocking access", size);
                MPI_Barrier(MPI_COMM_WORLD);
                if (i >= warm)
                    t[n++] = (MPI_Wtime() - t0) * 1e6;
            }
            if (bench_rank == 0) {
                double p90;
                bench_stats(t, n, &compute_us, &p90);
            }
            MPI_Bcast(&compute_us, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
            if (env && atof(env) > 0)
                compute_us = atof(env);
            if (bench_rank == 0)
                bench_note("overlap %s: computing %.0f us per sample", write ? "write" : "read", compute_us);
            n = 0;
        }
        for (i = 0; i < warm + iters; i++) {
            double t0;
            MPI_Barrier(MPI_COMM_WORLD);
            t0 = MPI_Wtime();
            bench_check_rc(access_once(fh, &p, write ? wbuf : rbuf, write, compute_us), write ? "write" : "read",
                           size);
            MPI_Barrier(MPI_COMM_WORLD);
            if (i >= warm)
                t[n++] = (MPI_Wtime() - t0) * 1e6;
        }
        if (bench_rank == 0) {
            double med, p90;
            bench_stats(t, n, &med, &p90);
            snprintf(rec, sizeof rec, "%s%s_%s", record_prefix, p.name + 2, write ? "wr" : "rd");
            bench_emit(&o, rec, bench_np, p.total, med, p90, (double)p.total / med, 0);
        }
    }
    bench_verify(rbuf, p.bytes, 1000 + (uint64_t)bench_rank, 0, p.name, size);
    MPI_File_close(&fh);
    if (p.ftype != MPI_BYTE)
        MPI_Type_free(&p.ftype);
    free(wbuf);
    free(rbuf);
    MPI_Barrier(MPI_COMM_WORLD);
    if (bench_rank == 0)
        MPI_File_delete(path, MPI_INFO_NULL);
    MPI_Barrier(MPI_COMM_WORLD);
}

int main(int argc, char **argv)
{
    static const bench_spec spec = {
        "bench_io", "MPI-IO write and read of one shared file in several patterns", 5, 1, (size_t)64 << 20,
        0, 0, "--patterns", "comma list of block3d,strided,contig,indstrided,overlap", "block3d,strided,contig,indstrided"};
    char list[BENCH_LIST_MAX], *tok, *save = NULL;
    double *t;
    size_t size;
    int r = bench_init(&argc, &argv, &spec, &o);
    if (r)
        return r - 1;
    if (bench_rank == 0) {
        const char *dir = getenv("BENCH_IO_DIR"), *name = getenv("BENCH_IO_NAME");
        if (name && *name)
            record_prefix = name;
        snprintf(path, sizeof path, "%s/bench_io.%ld", dir && *dir ? dir : "/tmp", (long)getpid());
        bench_note("file: %s", path);
    }
    MPI_Bcast(path, sizeof path, MPI_CHAR, 0, MPI_COMM_WORLD);
    {
        const char *b = getenv("BENCH_IO_BLOCK");
        if (b && atol(b) > 0)
            block = (size_t)atol(b);
    }
    t = malloc(sizeof(double) * (o.iters + 1));
    for (size = o.min_size ? o.min_size : (size_t)1 << 20; size <= o.max_size; size = bench_next_size(&o, size)) {
        snprintf(list, sizeof list, "%s", o.list);
        for (tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
            run_pattern(tok, size, t);
    }
    free(t);
    return bench_finish();
}
