/* Ping-pong latency between ranks 0 and 1 (other ranks idle): half the round-trip time. */
#include "common.h"

#include <stdio.h>

int main(int argc, char **argv)
{
    static const bench_spec spec = {"bench_latency", "ping-pong latency (half round trip), ranks 0 and 1",
                                    1000, 100, (size_t)4 << 20, 0, 0, NULL, NULL, NULL};
    bench_opts o;
    char *sbuf, *rbuf;
    double *t;
    size_t size;
    int rc = bench_init(&argc, &argv, &spec, &o);
    if (rc)
        return rc == 1 ? 0 : rc;
    if (bench_np < 2) {
        if (bench_rank == 0)
            fprintf(stderr, "bench_latency: needs at least 2 ranks\n");
        MPI_Finalize();
        return 2;
    }
    sbuf = bench_alloc(o.max_size);
    rbuf = bench_alloc(o.max_size);
    t = bench_alloc(sizeof(double) * (size_t)(o.iters + 1));

    for (size = bench_first_size(&o); size <= o.max_size; size = bench_next_size(&o, size)) {
        int iters = bench_iters_for(&o, size), warm = bench_warmup_for(&o, size);
        int batch = bench_batch_for(&o, size);
        int nsamp = iters / batch > 0 ? iters / batch : 1;
        int total = warm + nsamp * batch, k, s = 0;
        double t0 = 0;
        MPI_Barrier(MPI_COMM_WORLD);
        if (bench_rank > 1)
            continue;
        for (k = 0; k < total; k++) {
            int timed = k >= warm, first = timed && (k - warm) % batch == 0;
            uint64_t seed = ((uint64_t)size << 32) + (uint64_t)k;
            MPI_Status st;
            int count;
            if (bench_rank == 0) {
                if (o.check) {
                    bench_fill(sbuf, size, seed);
                    bench_poison(rbuf, size);
                }
                if (first)
                    t0 = MPI_Wtime();
                MPI_Send(sbuf, (int)size, MPI_BYTE, 1, 1, MPI_COMM_WORLD);
                MPI_Recv(rbuf, (int)size, MPI_BYTE, 1, 1, MPI_COMM_WORLD, &st);
                if (timed && (k - warm) % batch == batch - 1)
                    t[s++] = (MPI_Wtime() - t0) * 1e6 / (2.0 * batch);
                if (o.check) {
                    MPI_Get_count(&st, MPI_BYTE, &count);
                    if ((size_t)count != size)
                        bench_fail("latency: rank 0 received %d bytes, expected %zu", count, size);
                    bench_verify(rbuf, size, seed + 1, 0, "latency: rank 0 received", size);
                }
            } else {
                if (o.check)
                    bench_poison(rbuf, size);
                MPI_Recv(rbuf, (int)size, MPI_BYTE, 0, 1, MPI_COMM_WORLD, &st);
                if (o.check) {
                    MPI_Get_count(&st, MPI_BYTE, &count);
                    if ((size_t)count != size)
                        bench_fail("latency: rank 1 received %d bytes, expected %zu", count, size);
                    bench_verify(rbuf, size, seed, 0, "latency: rank 1 received", size);
                    bench_fill(sbuf, size, seed + 1);
                }
                MPI_Send(sbuf, (int)size, MPI_BYTE, 0, 1, MPI_COMM_WORLD);
            }
        }
        if (bench_rank == 0) {
            double med, p90;
            bench_stats(t, s, &med, &p90);
            bench_emit(&o, "latency", bench_np, size, med, p90, med > 0 ? size / med : 0, 0);
        }
    }
    return bench_finish();
}
