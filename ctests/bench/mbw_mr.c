/* Multi-pair bandwidth and message rate: rank i < np/2 streams windows of --window messages to
 * rank i + np/2, which acks each window (as bench_bw). A sample is one window; its time is the
 * slowest sender's. mbps and msgrate are totals over all pairs. np must be even. */
#include "common.h"

#include <stdio.h>

#define REGION ((size_t)16 << 20)

int main(int argc, char **argv)
{
    static const bench_spec spec = {"bench_mbw_mr", "multi-pair bandwidth and message rate (np/2 pairs)",
                                    100, 10, (size_t)4 << 20, 1, 0, NULL, NULL, NULL};
    bench_opts o;
    char *buf;
    MPI_Request *req;
    MPI_Status *sts;
    double *t, *tmax;
    size_t size, region;
    int ack = 0, pairs, sender, peer;
    int rc = bench_init(&argc, &argv, &spec, &o);
    if (rc)
        return rc == 1 ? 0 : rc;
    if (bench_np < 2 || bench_np % 2) {
        if (bench_rank == 0)
            fprintf(stderr, "bench_mbw_mr: needs an even number of ranks\n");
        MPI_Finalize();
        return 2;
    }
    pairs = bench_np / 2;
    sender = bench_rank < pairs;
    peer = sender ? bench_rank + pairs : bench_rank - pairs;
    region = o.max_size * (size_t)o.window;
    if (region > REGION)
        region = REGION > o.max_size ? REGION : o.max_size;
    buf = bench_alloc(region);
    req = bench_alloc(sizeof(MPI_Request) * (size_t)o.window);
    sts = bench_alloc(sizeof(MPI_Status) * (size_t)o.window);
    t = bench_alloc(sizeof(double) * (size_t)(o.iters + 1));
    tmax = bench_alloc(sizeof(double) * (size_t)(o.iters + 1));

    for (size = bench_first_size(&o); size <= o.max_size; size = bench_next_size(&o, size)) {
        int iters = bench_iters_for(&o, size), warm = bench_warmup_for(&o, size);
        int total = warm + iters, k, j, s = 0;
        size_t slots = size ? region / size : (size_t)o.window;
        if (slots > (size_t)o.window)
            slots = (size_t)o.window;
        MPI_Barrier(MPI_COMM_WORLD);
        for (k = 0; k < total; k++) {
            uint64_t seed = ((uint64_t)size << 32) + (uint64_t)k * 1024 + ((uint64_t)(sender ? bench_rank : peer) << 20);
            double t0;
            if (o.check) {
                for (j = 0; j < (int)slots; j++) {
                    if (sender)
                        bench_fill(buf + j * size, size, seed + (uint64_t)j);
                    else
                        bench_poison(buf + j * size, size);
                }
            }
            t0 = MPI_Wtime();
            if (sender) {
                for (j = 0; j < o.window; j++)
                    MPI_Isend(buf + (j % slots) * size, (int)size, MPI_BYTE, peer, 5, MPI_COMM_WORLD, &req[j]);
                MPI_Waitall(o.window, req, sts);
                MPI_Recv(&ack, 1, MPI_INT, peer, 6, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                if (k >= warm)
                    t[s++] = (MPI_Wtime() - t0) * 1e6;
            } else {
                for (j = 0; j < o.window; j++)
                    MPI_Irecv(buf + (j % slots) * size, (int)size, MPI_BYTE, peer, 5, MPI_COMM_WORLD, &req[j]);
                MPI_Waitall(o.window, req, sts);
                MPI_Send(&ack, 1, MPI_INT, peer, 6, MPI_COMM_WORLD);
                if (k >= warm)
                    t[s++] = 0;
                if (o.check)
                    for (j = 0; j < (int)slots; j++)
                        bench_verify(buf + j * size, size, seed + (uint64_t)j, 0, "mbw_mr: receiver", size);
            }
        }
        MPI_Reduce(t, tmax, s, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
        if (bench_rank == 0) {
            double med, p90;
            bench_stats(tmax, s, &med, &p90);
            bench_emit(&o, "mbw_mr", bench_np, size, med, p90,
                       med > 0 ? (double)pairs * size * o.window / med : 0,
                       med > 0 ? (double)pairs * o.window * 1e6 / med : 0);
        }
    }
    return bench_finish();
}
