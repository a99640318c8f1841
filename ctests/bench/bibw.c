/* Bidirectional bandwidth between ranks 0 and 1 (other ranks idle): each posts --window
 * receives and --window sends to the other at once. One iteration is one window; mbps counts
 * the bytes of both directions (2 * window * size). */
#include "common.h"

#include <stdio.h>

#define REGION ((size_t)16 << 20)

int main(int argc, char **argv)
{
    static const bench_spec spec = {"bench_bibw", "windowed bidirectional bandwidth, ranks 0 <-> 1",
                                    100, 10, (size_t)4 << 20, 1, 0, NULL, NULL, NULL};
    bench_opts o;
    char *sbuf, *rbuf;
    MPI_Request *req;
    MPI_Status *sts;
    double *t;
    size_t size, region;
    int rc = bench_init(&argc, &argv, &spec, &o);
    if (rc)
        return rc == 1 ? 0 : rc;
    if (bench_np < 2) {
        if (bench_rank == 0)
            fprintf(stderr, "bench_bibw: needs at least 2 ranks\n");
        MPI_Finalize();
        return 2;
    }
    region = o.max_size * (size_t)o.window;
    if (region > REGION)
        region = REGION > o.max_size ? REGION : o.max_size;
    sbuf = bench_alloc(region);
    rbuf = bench_alloc(region);
    req = bench_alloc(sizeof(MPI_Request) * 2 * (size_t)o.window);
    sts = bench_alloc(sizeof(MPI_Status) * 2 * (size_t)o.window);
    t = bench_alloc(sizeof(double) * (size_t)(o.iters + 1));

    for (size = bench_first_size(&o); size <= o.max_size; size = bench_next_size(&o, size)) {
        int iters = bench_iters_for(&o, size), warm = bench_warmup_for(&o, size);
        int total = warm + iters, k, j, s = 0, peer = 1 - bench_rank;
        size_t slots = size ? region / size : (size_t)o.window;
        if (slots > (size_t)o.window)
            slots = (size_t)o.window;
        MPI_Barrier(MPI_COMM_WORLD);
        if (bench_rank > 1)
            continue;
        for (k = 0; k < total; k++) {
            /* each direction has its own stream of seeds */
            uint64_t seed = ((uint64_t)size << 32) + (uint64_t)k * 1024;
            uint64_t mine = seed + 512 * (uint64_t)bench_rank, theirs = seed + 512 * (uint64_t)peer;
            double t0;
            if (o.check) {
                for (j = 0; j < (int)slots; j++) {
                    bench_fill(sbuf + j * size, size, mine + (uint64_t)j);
                    bench_poison(rbuf + j * size, size);
                }
            }
            t0 = MPI_Wtime();
            for (j = 0; j < o.window; j++)
                MPI_Irecv(rbuf + (j % slots) * size, (int)size, MPI_BYTE, peer, 4, MPI_COMM_WORLD, &req[j]);
            for (j = 0; j < o.window; j++)
                MPI_Isend(sbuf + (j % slots) * size, (int)size, MPI_BYTE, peer, 4, MPI_COMM_WORLD,
                          &req[o.window + j]);
            MPI_Waitall(2 * o.window, req, sts);
            if (bench_rank == 0 && k >= warm)
                t[s++] = (MPI_Wtime() - t0) * 1e6;
            if (o.check)
                for (j = 0; j < (int)slots; j++)
                    bench_verify(rbuf + j * size, size, theirs + (uint64_t)j, 0, "bibw: received", size);
        }
        if (bench_rank == 0) {
            double med, p90;
            bench_stats(t, s, &med, &p90);
            bench_emit(&o, "bibw", bench_np, size, med, p90,
                       med > 0 ? 2.0 * (double)size * o.window / med : 0,
                       med > 0 ? 2.0 * o.window * 1e6 / med : 0);
        }
    }
    return bench_finish();
}
