/* Blocking collectives on MPI_COMM_WORLD, root 0: barrier, bcast, reduce, allreduce, allgather,
 * alltoall, gather, scatter, reduce_scatter (select with --ops). `size` is bytes per rank: the
 * bcast message; each rank's contribution (allgather, gather) or block per peer (alltoall,
 * scatter); the vector of doubles reduced (reduce, allreduce; SUM); each rank's block of the
 * result (reduce_scatter, whose input is np * size bytes). Reductions skip sizes below 8.
 * barrier runs once, as size 0. A sample's time is the slowest rank's (MPI_MAX over ranks);
 * mbps is size / median. --vary gives the send buffers new contents before every call. */
#include "common.h"

#include <stdio.h>
#include <string.h>

enum { BARRIER, BCAST, REDUCE, ALLREDUCE, ALLGATHER, ALLTOALL, GATHER, SCATTER, REDUCE_SCATTER, NOPS };
static const char *op_names[NOPS] = {"barrier", "bcast", "reduce", "allreduce", "allgather",
                                     "alltoall", "gather", "scatter", "reduce_scatter"};

static bench_opts o;
static char *sbuf, *rbuf;
static int *counts;

static int is_reduction(int op)
{
    return op == REDUCE || op == ALLREDUCE || op == REDUCE_SCATTER;
}

/* The value rank r contributes at element i in iteration `it`: small integers, exact sums. */
static double contrib(int r, size_t i, uint64_t it)
{
    return (double)(r + 1) + (double)((i + it) % 13);
}

static double expected_sum(size_t i, uint64_t it)
{
    return (double)bench_np * (bench_np + 1) / 2.0 + (double)bench_np * (double)((i + it) % 13);
}

/* Fills the send side for iteration `it` (and poisons the receive side when checking). */
static void prepare(int op, size_t size, uint64_t seed, uint64_t it)
{
    size_t count = size / 8, i;
    int r = bench_rank, np = bench_np, d;
    double *sd = (double *)sbuf;
    switch (op) {
    case BARRIER:
        break;
    case BCAST:
        if (r == 0)
            bench_fill(sbuf, size, seed);
        else if (o.check)
            bench_poison(sbuf, size);
        break;
    case REDUCE:
    case ALLREDUCE:
        for (i = 0; i < count; i++)
            sd[i] = contrib(r, i, it);
        if (o.check)
            bench_poison(rbuf, size);
        break;
    case REDUCE_SCATTER:
        for (i = 0; i < count * (size_t)np; i++)
            sd[i] = contrib(r, i, it);
        if (o.check)
            bench_poison(rbuf, size);
        break;
    case ALLGATHER:
    case GATHER:
        bench_fill(sbuf, size, seed + (uint64_t)r);
        if (o.check)
            bench_poison(rbuf, size * (size_t)np);
        break;
    case ALLTOALL:
        for (d = 0; d < np; d++)
            bench_fill(sbuf + (size_t)d * size, size, seed + (uint64_t)(r * np + d));
        if (o.check)
            bench_poison(rbuf, size * (size_t)np);
        break;
    case SCATTER:
        if (r == 0)
            for (d = 0; d < np; d++)
                bench_fill(sbuf + (size_t)d * size, size, seed + (uint64_t)d);
        if (o.check)
            bench_poison(rbuf, size);
        break;
    }
}

static void verify_sums(const double *v, size_t n, size_t first, uint64_t it, const char *what,
                        size_t size)
{
    size_t i;
    for (i = 0; i < n; i++)
        if (v[i] != expected_sum(first + i, it))
            bench_fail("%s, size %zu: element %zu is %g, expected %g", what, size, i, v[i],
                       expected_sum(first + i, it));
}

static void verify(int op, size_t size, uint64_t seed, uint64_t it)
{
    size_t count = size / 8;
    int r = bench_rank, np = bench_np, j;
    switch (op) {
    case BARRIER:
        break;
    case BCAST:
        bench_verify(sbuf, size, seed, 0, "bcast", size);
        break;
    case REDUCE:
        if (r == 0)
            verify_sums((double *)rbuf, count, 0, it, "reduce", size);
        break;
    case ALLREDUCE:
        verify_sums((double *)rbuf, count, 0, it, "allreduce", size);
        break;
    case REDUCE_SCATTER:
        verify_sums((double *)rbuf, count, (size_t)r * count, it, "reduce_scatter", size);
        break;
    case ALLGATHER:
        for (j = 0; j < np; j++)
            bench_verify(rbuf + (size_t)j * size, size, seed + (uint64_t)j, 0, "allgather", size);
        break;
    case GATHER:
        if (r == 0)
            for (j = 0; j < np; j++)
                bench_verify(rbuf + (size_t)j * size, size, seed + (uint64_t)j, 0, "gather", size);
        break;
    case ALLTOALL:
        for (j = 0; j < np; j++)
            bench_verify(rbuf + (size_t)j * size, size, seed + (uint64_t)(j * np + r), 0, "alltoall", size);
        break;
    case SCATTER:
        bench_verify(rbuf, size, seed + (uint64_t)r, 0, "scatter", size);
        break;
    }
}

static void call(int op, size_t size)
{
    int n = (int)size, c = (int)(size / 8);
    switch (op) {
    case BARRIER:
        MPI_Barrier(MPI_COMM_WORLD);
        break;
    case BCAST:
        MPI_Bcast(sbuf, n, MPI_BYTE, 0, MPI_COMM_WORLD);
        break;
    case REDUCE:
        MPI_Reduce(sbuf, rbuf, c, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
        break;
    case ALLREDUCE:
        MPI_Allreduce(sbuf, rbuf, c, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        break;
    case REDUCE_SCATTER:
        MPI_Reduce_scatter(sbuf, rbuf, counts, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        break;
    case ALLGATHER:
        MPI_Allgather(sbuf, n, MPI_BYTE, rbuf, n, MPI_BYTE, MPI_COMM_WORLD);
        break;
    case GATHER:
        MPI_Gather(sbuf, n, MPI_BYTE, rbuf, n, MPI_BYTE, 0, MPI_COMM_WORLD);
        break;
    case ALLTOALL:
        MPI_Alltoall(sbuf, n, MPI_BYTE, rbuf, n, MPI_BYTE, MPI_COMM_WORLD);
        break;
    case SCATTER:
        MPI_Scatter(sbuf, n, MPI_BYTE, rbuf, n, MPI_BYTE, 0, MPI_COMM_WORLD);
        break;
    }
}

int main(int argc, char **argv)
{
    static const bench_spec spec = {
        "bench_coll", "blocking collectives on MPI_COMM_WORLD", 200, 20, (size_t)1 << 20, 0, 1,
        "--ops", "comma-separated collectives",
        "barrier,bcast,reduce,allreduce,allgather,alltoall,gather,scatter,reduce_scatter"};
    char items[NOPS * 2][32];
    int ops[NOPS * 2], nops = 0, n, i, j;
    double *t, *tmax;
    int rc = bench_init(&argc, &argv, &spec, &o);
    if (rc)
        return rc == 1 ? 0 : rc;
    n = bench_split_list(o.list, items, NOPS * 2);
    for (i = 0; i < n; i++) {
        for (j = 0; j < NOPS && strcmp(items[i], op_names[j]); j++)
            ;
        if (j == NOPS) {
            if (bench_rank == 0)
                fprintf(stderr, "bench_coll: unknown collective %s (known: %s)\n", items[i], spec.list_default);
            MPI_Finalize();
            return 2;
        }
        ops[nops++] = j;
    }
    sbuf = bench_alloc(o.max_size * (size_t)bench_np + 8);
    rbuf = bench_alloc(o.max_size * (size_t)bench_np + 8);
    counts = bench_alloc(sizeof(int) * (size_t)bench_np);
    t = bench_alloc(sizeof(double) * (size_t)(o.iters + 1));
    tmax = bench_alloc(sizeof(double) * (size_t)(o.iters + 1));

    for (i = 0; i < nops; i++) {
        int op = ops[i];
        size_t size;
        for (size = bench_first_size(&o); size <= o.max_size; size = bench_next_size(&o, size)) {
            int iters = bench_iters_for(&o, size), warm = bench_warmup_for(&o, size);
            int batch = bench_batch_for(&o, size);
            int nsamp = iters / batch > 0 ? iters / batch : 1;
            int total = warm + nsamp * batch, k, s = 0;
            int refill = o.check || o.vary;
            double t0 = 0;
            if (op == BARRIER && size > 0)
                break;
            if (is_reduction(op) && size % 8)
                continue;
            for (j = 0; j < bench_np; j++)
                counts[j] = (int)(size / 8);
            prepare(op, size, (uint64_t)size << 32, 0);
            MPI_Barrier(MPI_COMM_WORLD);
            for (k = 0; k < total; k++) {
                int timed = k >= warm;
                uint64_t it = refill ? (uint64_t)k : 0, seed = ((uint64_t)size << 32) + it * 4096;
                if (refill)
                    prepare(op, size, seed, it);
                if (timed && (k - warm) % batch == 0)
                    t0 = MPI_Wtime();
                call(op, size);
                if (timed && (k - warm) % batch == batch - 1)
                    t[s++] = (MPI_Wtime() - t0) * 1e6 / batch;
                if (o.check)
                    verify(op, size, seed, it);
            }
            MPI_Reduce(t, tmax, s, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
            if (bench_rank == 0) {
                double med, p90;
                bench_stats(tmax, s, &med, &p90);
                bench_emit(&o, op_names[op], bench_np, size, med, p90, med > 0 ? size / med : 0, 0);
            }
        }
    }
    return bench_finish();
}
