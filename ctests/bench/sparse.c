/* Sparse allreduce: MPI_Allreduce (SUM) of a vector of doubles of which only a fraction (the
 * density, in percent) is non-zero on each rank, at rank-dependent positions. One benchmark
 * per --density item, named sparse_allreduce_dD. `size` is the vector's bytes (size / 8
 * doubles); sizes below 8 are skipped. --vary moves the non-zeros every iteration. */
#include "common.h"

#include <stdio.h>
#include <stdlib.h>

static bench_opts o;

/* Whether rank r has a non-zero at element i in iteration it, and its value (small integer). */
static double value(int r, size_t i, uint64_t it, uint64_t threshold)
{
    uint64_t h = bench_hash(((uint64_t)r << 40) ^ (it << 20) ^ 0x5A5A, i);
    if ((h >> 32) >= threshold)
        return 0.0;
    return (double)(1 + (h & 3));
}

int main(int argc, char **argv)
{
    static const bench_spec spec = {
        "bench_sparse", "allreduce (SUM of doubles) of sparse vectors", 200, 20, (size_t)4 << 20,
        0, 1, "--density", "comma-separated percentages of non-zero elements", "1,10,100"};
    char items[16][32];
    double *sv, *rv, *t, *tmax;
    int n, d;
    int rc = bench_init(&argc, &argv, &spec, &o);
    if (rc)
        return rc == 1 ? 0 : rc;
    n = bench_split_list(o.list, items, 16);
    sv = bench_alloc(o.max_size + 8);
    rv = bench_alloc(o.max_size + 8);
    t = bench_alloc(sizeof(double) * (size_t)(o.iters + 1));
    tmax = bench_alloc(sizeof(double) * (size_t)(o.iters + 1));
    for (d = 0; d < n; d++) {
        char *end, name[64];
        double pct = strtod(items[d], &end);
        uint64_t threshold;
        size_t size;
        if (end == items[d] || *end || pct < 0 || pct > 100) {
            if (bench_rank == 0)
                fprintf(stderr, "bench_sparse: bad --density item %s (want a percentage 0..100)\n", items[d]);
            MPI_Finalize();
            return 2;
        }
        threshold = (uint64_t)(pct / 100.0 * 4294967296.0);
        snprintf(name, sizeof name, "sparse_allreduce_d%.31s", items[d]);
        for (size = bench_first_size(&o) < 8 ? 8 : bench_first_size(&o); size <= o.max_size;
             size = bench_next_size(&o, size)) {
            size_t count = size / 8, i;
            int iters = bench_iters_for(&o, size), warm = bench_warmup_for(&o, size);
            int batch = bench_batch_for(&o, size);
            int nsamp = iters / batch > 0 ? iters / batch : 1;
            int total = warm + nsamp * batch, k, s = 0, r;
            double t0 = 0;
            if (size % 8)
                continue;
            for (i = 0; i < count; i++)
                sv[i] = value(bench_rank, i, 0, threshold);
            MPI_Barrier(MPI_COMM_WORLD);
            for (k = 0; k < total; k++) {
                int timed = k >= warm;
                uint64_t it = o.vary ? (uint64_t)k : 0;
                if (o.vary && k > 0)
                    for (i = 0; i < count; i++)
                        sv[i] = value(bench_rank, i, it, threshold);
                if (o.check)
                    bench_poison(rv, size);
                if (timed && (k - warm) % batch == 0)
                    t0 = MPI_Wtime();
                MPI_Allreduce(sv, rv, (int)count, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
                if (timed && (k - warm) % batch == batch - 1)
                    t[s++] = (MPI_Wtime() - t0) * 1e6 / batch;
                if (o.check)
                    for (i = 0; i < count; i++) {
                        double want = 0;
                        for (r = 0; r < bench_np; r++)
                            want += value(r, i, it, threshold);
                        if (rv[i] != want)
                            bench_fail("%s, size %zu: element %zu is %g, expected %g", name, size, i,
                                       rv[i], want);
                    }
            }
            MPI_Reduce(t, tmax, s, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
            if (bench_rank == 0) {
                double med, p90;
                bench_stats(tmax, s, &med, &p90);
                bench_emit(&o, name, bench_np, size, med, p90, med > 0 ? size / med : 0, 0);
            }
        }
    }
    return bench_finish();
}
