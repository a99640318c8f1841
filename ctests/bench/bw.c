/* Unidirectional bandwidth, ranks 0 -> 1 (other ranks idle): rank 0 keeps --window messages in
 * flight (MPI_Isend), rank 1 receives them (MPI_Irecv) and answers with a 4-byte ack. One
 * iteration is one window; mbps counts window * size bytes. */
#include "common.h"

#include <stdio.h>

#define REGION ((size_t)16 << 20) /* distinct buffers per message up to this many bytes */

int main(int argc, char **argv)
{
    static const bench_spec spec = {"bench_bw", "windowed unidirectional bandwidth, rank 0 -> rank 1",
                                    100, 10, (size_t)4 << 20, 1, 0, NULL, NULL, NULL};
    bench_opts o;
    char *buf;
    MPI_Request *req;
    MPI_Status *sts;
    double *t;
    size_t size, region;
    int ack = 0;
    int rc = bench_init(&argc, &argv, &spec, &o);
    if (rc)
        return rc == 1 ? 0 : rc;
    if (bench_np < 2) {
        if (bench_rank == 0)
            fprintf(stderr, "bench_bw: needs at least 2 ranks\n");
        MPI_Finalize();
        return 2;
    }
    region = o.max_size * (size_t)o.window;
    if (region > REGION)
        region = REGION > o.max_size ? REGION : o.max_size;
    buf = bench_alloc(region);
    req = bench_alloc(sizeof(MPI_Request) * (size_t)o.window);
    sts = bench_alloc(sizeof(MPI_Status) * (size_t)o.window);
    t = bench_alloc(sizeof(double) * (size_t)(o.iters + 1));

    for (size = bench_first_size(&o); size <= o.max_size; size = bench_next_size(&o, size)) {
        int iters = bench_iters_for(&o, size), warm = bench_warmup_for(&o, size);
        int total = warm + iters, k, j, s = 0;
        size_t slots = size ? region / size : (size_t)o.window;
        if (slots > (size_t)o.window)
            slots = (size_t)o.window;
        MPI_Barrier(MPI_COMM_WORLD);
        if (bench_rank > 1)
            continue;
        for (k = 0; k < total; k++) {
            uint64_t seed = ((uint64_t)size << 32) + (uint64_t)k * 1024;
            double t0;
            if (o.check) {
                for (j = 0; j < (int)slots; j++) {
                    if (bench_rank == 0)
                        bench_fill(buf + j * size, size, seed + (uint64_t)j);
                    else
                        bench_poison(buf + j * size, size);
                }
            }
            t0 = MPI_Wtime();
            if (bench_rank == 0) {
                for (j = 0; j < o.window; j++)
                    MPI_Isend(buf + (j % slots) * size, (int)size, MPI_BYTE, 1, 2, MPI_COMM_WORLD, &req[j]);
                MPI_Waitall(o.window, req, sts);
                MPI_Recv(&ack, 1, MPI_INT, 1, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                if (k >= warm)
                    t[s++] = (MPI_Wtime() - t0) * 1e6;
            } else {
                for (j = 0; j < o.window; j++)
                    MPI_Irecv(buf + (j % slots) * size, (int)size, MPI_BYTE, 0, 2, MPI_COMM_WORLD, &req[j]);
                MPI_Waitall(o.window, req, sts);
                MPI_Send(&ack, 1, MPI_INT, 0, 3, MPI_COMM_WORLD);
                if (o.check)
                    for (j = 0; j < (int)slots; j++)
                        bench_verify(buf + j * size, size, seed + (uint64_t)j, 0, "bw: rank 1 received", size);
            }
        }
        if (bench_rank == 0) {
            double med, p90;
            bench_stats(t, s, &med, &p90);
            bench_emit(&o, "bw", bench_np, size, med, p90, med > 0 ? (double)size * o.window / med : 0,
                       med > 0 ? o.window * 1e6 / med : 0);
        }
    }
    return bench_finish();
}
