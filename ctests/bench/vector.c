/* Non-contiguous point-to-point between ranks 0 and 1 (other ranks idle): both sides send and
 * receive one MPI_Type_vector of doubles (count blocks of `bl` doubles, `stride` doubles apart).
 * For each --blocks item bl:stride (in doubles) it runs a ping-pong latency (vec_lat_bB_sS)
 * and a windowed bandwidth (vec_bw_bB_sS), B and S in bytes. `size` is the payload (bytes of
 * data actually moved), so the buffers span about size * stride / bl bytes.
 *
 * An MPI without derived datatypes (MPI_Type_vector fails) is reported and skipped, exit 0:
 * the program sets MPI_ERRORS_RETURN. */
#include "common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define REGION ((size_t)16 << 20)

static bench_opts o;
static char *sbuf, *rbuf;
static MPI_Request *req;
static MPI_Status *sts;
static double *t;

/* The blocks of the vector hold the stream `seed` at their own offsets; the gaps the poison. */
static void verify_vector(const char *buf, size_t count, size_t bl, size_t stride, uint64_t seed,
                          const char *what, size_t size)
{
    size_t b, i, blen = bl * 8, step = stride * 8;
    for (b = 0; b < count; b++) {
        bench_verify(buf + b * step, blen, seed, b * step, what, size);
        if (b + 1 < count)
            for (i = blen; i < step; i++)
                if ((unsigned char)buf[b * step + i] != 0xA5)
                    bench_fail("%s, size %zu: gap byte %zu after block %zu was overwritten", what,
                               size, i - blen, b);
    }
}

/* 0 when done; 1 when the MPI has no MPI_Type_vector (already reported). */
static int run_config(size_t bl, size_t stride)
{
    char lat_name[64], bw_name[64];
    size_t size, unit = bl * 8, first;
    snprintf(lat_name, sizeof lat_name, "vec_lat_b%zu_s%zu", bl * 8, stride * 8);
    snprintf(bw_name, sizeof bw_name, "vec_bw_b%zu_s%zu", bl * 8, stride * 8);
    first = o.min_size > unit ? o.min_size : unit;
    for (size = first; size <= o.max_size; size = bench_next_size(&o, size)) {
        size_t count = size / unit, extent, region, slots;
        MPI_Datatype vt;
        int rc, bad, any_bad, phase, peer = 1 - bench_rank;
        if (size % unit)
            continue;
        extent = ((count - 1) * stride + bl) * 8;
        rc = MPI_Type_vector((int)count, (int)bl, (int)stride, MPI_DOUBLE, &vt);
        if (rc == MPI_SUCCESS)
            rc = MPI_Type_commit(&vt);
        bad = rc != MPI_SUCCESS;
        MPI_Allreduce(&bad, &any_bad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
        if (any_bad) {
            if (bench_rank == 0) {
                char msg[MPI_MAX_ERROR_STRING];
                int len = 0;
                msg[0] = '\0';
                if (bad)
                    MPI_Error_string(rc, msg, &len);
                bench_note("SKIPPED %s/%s: MPI_Type_vector or MPI_Type_commit failed (%s): derived "
                           "datatypes are not supported by this MPI", lat_name, bw_name, msg);
            }
            return 1;
        }
        region = extent * (size_t)o.window;
        if (region > REGION)
            region = REGION > extent ? REGION : extent;
        slots = region / extent;
        if (slots > (size_t)o.window)
            slots = (size_t)o.window;
        for (phase = 0; phase < 2; phase++) {
            int iters = bench_iters_for(&o, size), warm = bench_warmup_for(&o, size);
            int batch = phase == 0 ? bench_batch_for(&o, size) : 1;
            int nsamp = iters / batch > 0 ? iters / batch : 1;
            int total = warm + nsamp * batch, k, j, s = 0;
            double t0 = 0;
            MPI_Barrier(MPI_COMM_WORLD);
            if (bench_rank > 1)
                continue;
            for (k = 0; k < total; k++) {
                int timed = k >= warm;
                uint64_t seed = ((uint64_t)size << 32) + ((uint64_t)phase << 30) + (uint64_t)k * 1024;
                if (phase == 0) { /* ping-pong */
                    if (o.check) {
                        bench_fill(sbuf, extent, seed + (uint64_t)bench_rank);
                        bench_poison(rbuf, extent);
                    }
                    if (timed && (k - warm) % batch == 0)
                        t0 = MPI_Wtime();
                    if (bench_rank == 0) {
                        bench_check_rc(MPI_Send(sbuf, 1, vt, 1, 7, MPI_COMM_WORLD), "MPI_Send(vector)", size);
                        bench_check_rc(MPI_Recv(rbuf, 1, vt, 1, 7, MPI_COMM_WORLD, &sts[0]), "MPI_Recv(vector)", size);
                    } else {
                        bench_check_rc(MPI_Recv(rbuf, 1, vt, 0, 7, MPI_COMM_WORLD, &sts[0]), "MPI_Recv(vector)", size);
                        bench_check_rc(MPI_Send(sbuf, 1, vt, 0, 7, MPI_COMM_WORLD), "MPI_Send(vector)", size);
                    }
                    if (bench_rank == 0 && timed && (k - warm) % batch == batch - 1)
                        t[s++] = (MPI_Wtime() - t0) * 1e6 / (2.0 * batch);
                    if (o.check)
                        verify_vector(rbuf, count, bl, stride, seed + (uint64_t)peer, lat_name, size);
                } else { /* window of messages 0 -> 1, 4-byte ack back */
                    int ack = 0;
                    if (o.check)
                        for (j = 0; j < (int)slots; j++) {
                            if (bench_rank == 0)
                                bench_fill(sbuf + j * extent, extent, seed + (uint64_t)j);
                            else
                                bench_poison(rbuf + j * extent, extent);
                        }
                    t0 = MPI_Wtime();
                    if (bench_rank == 0) {
                        for (j = 0; j < o.window; j++)
                            bench_check_rc(MPI_Isend(sbuf + (j % slots) * extent, 1, vt, 1, 8, MPI_COMM_WORLD, &req[j]),
                                     "MPI_Isend(vector)", size);
                        bench_check_rc(MPI_Waitall(o.window, req, sts), "MPI_Waitall", size);
                        MPI_Recv(&ack, 1, MPI_INT, 1, 9, MPI_COMM_WORLD, &sts[0]);
                        if (timed)
                            t[s++] = (MPI_Wtime() - t0) * 1e6;
                    } else {
                        for (j = 0; j < o.window; j++)
                            bench_check_rc(MPI_Irecv(rbuf + (j % slots) * extent, 1, vt, 0, 8, MPI_COMM_WORLD, &req[j]),
                                     "MPI_Irecv(vector)", size);
                        bench_check_rc(MPI_Waitall(o.window, req, sts), "MPI_Waitall", size);
                        MPI_Send(&ack, 1, MPI_INT, 0, 9, MPI_COMM_WORLD);
                        if (o.check)
                            for (j = 0; j < (int)slots; j++)
                                verify_vector(rbuf + j * extent, count, bl, stride, seed + (uint64_t)j,
                                              bw_name, size);
                    }
                }
            }
            if (bench_rank == 0) {
                double med, p90;
                bench_stats(t, s, &med, &p90);
                if (phase == 0)
                    bench_emit(&o, lat_name, bench_np, size, med, p90, med > 0 ? size / med : 0, 0);
                else
                    bench_emit(&o, bw_name, bench_np, size, med, p90,
                               med > 0 ? (double)size * o.window / med : 0,
                               med > 0 ? o.window * 1e6 / med : 0);
            }
        }
        MPI_Type_free(&vt);
    }
    return 0;
}

int main(int argc, char **argv)
{
    static const bench_spec spec = {
        "bench_vector", "MPI_Type_vector latency and bandwidth, both sides non-contiguous",
        200, 20, (size_t)4 << 20, 1, 0, "--blocks",
        "comma-separated BL:STRIDE vector shapes in doubles", "1:2,1:8,16:32,512:1024"};
    char items[16][32];
    size_t maxbl = 1, maxratio = 1, bufbytes;
    int n, i;
    int rc = bench_init(&argc, &argv, &spec, &o);
    if (rc)
        return rc == 1 ? 0 : rc;
    if (bench_np < 2) {
        if (bench_rank == 0)
            fprintf(stderr, "bench_vector: needs at least 2 ranks\n");
        MPI_Finalize();
        return 2;
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    n = bench_split_list(o.list, items, 16);
    for (i = 0; i < n; i++) {
        unsigned long bl = 0, stride = 0;
        if (sscanf(items[i], "%lu:%lu", &bl, &stride) != 2 || bl == 0 || stride < bl) {
            if (bench_rank == 0)
                fprintf(stderr, "bench_vector: bad --blocks item %s (want BL:STRIDE, STRIDE >= BL >= 1)\n",
                        items[i]);
            MPI_Finalize();
            return 2;
        }
        if (bl > maxbl)
            maxbl = bl;
        if ((stride + bl - 1) / bl > maxratio)
            maxratio = (stride + bl - 1) / bl;
    }
    bufbytes = o.max_size * maxratio + maxbl * 8;
    if (bufbytes * (size_t)o.window < REGION)
        bufbytes *= (size_t)o.window;
    else if (bufbytes < REGION)
        bufbytes = REGION;
    sbuf = bench_alloc(bufbytes);
    rbuf = bench_alloc(bufbytes);
    req = bench_alloc(sizeof(MPI_Request) * (size_t)o.window);
    sts = bench_alloc(sizeof(MPI_Status) * (size_t)o.window);
    t = bench_alloc(sizeof(double) * (size_t)(o.iters + 1));
    for (i = 0; i < n; i++) {
        unsigned long bl = 0, stride = 0;
        sscanf(items[i], "%lu:%lu", &bl, &stride);
        if (run_config(bl, stride))
            break;
    }
    return bench_finish();
}
