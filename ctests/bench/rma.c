/* One-sided latency and bandwidth: rank 0 issues operations on rank 1's window (other ranks
 * take part in fences only). Each item of --ops is OP_SYNC_WINDOW:
 *   OP     put, get, acc (MPI_SUM on MPI_DOUBLE), fop (Fetch_and_op, MPI_SUM on one
 *          int64), cas (Compare_and_swap on one int64);
 *   SYNC   flush: inside MPI_Win_lock_all, each operation followed by MPI_Win_flush;
 *          busy: as flush, while the target computes outside MPI (it watches the last byte
 *          of its window, which the origin sets when done): only an MPI whose target needs
 *          no MPI calls for passive-target progress (a progress thread, or hardware) ends;
 *          fence: each operation followed by MPI_Win_fence on every rank;
 *   WINDOW alloc: memory of MPI_Win_allocate; create: MPI_Win_create over malloc'ed memory;
 *          allocmem: MPI_Win_create over memory of MPI_Alloc_mem.
 * Records are named after the item; put, get and acc run at every size (a sample is the
 * time of one operation and its synchronisation), fop and cas at 8 bytes. With --check, the
 * target verifies the data of put and the origin that of get, after each size. */
#include "common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NITEMS 40

enum { PUT, GET, ACC, FOP, CAS };
static const char *op_names[] = {"put", "get", "acc", "fop", "cas"};

enum { FLUSH, FENCE, BUSY };

static int parse(const char *item, int *op, int *sync_mode, int *create)
{
    char buf[32];
    char *sync, *win;
    int i;
    snprintf(buf, sizeof buf, "%s", item);
    sync = strchr(buf, '_');
    win = sync ? strchr(sync + 1, '_') : NULL;
    if (!sync || !win)
        return -1;
    *sync++ = 0;
    *win++ = 0;
    for (i = 0; i < 5 && strcmp(buf, op_names[i]); i++)
        ;
    if (i == 5)
        return -1;
    *op = i;
    if (!strcmp(sync, "flush"))
        *sync_mode = FLUSH;
    else if (!strcmp(sync, "fence"))
        *sync_mode = FENCE;
    else if (!strcmp(sync, "busy"))
        *sync_mode = BUSY;
    else
        return -1;
    if (!strcmp(win, "alloc"))
        *create = 0;
    else if (!strcmp(win, "create"))
        *create = 1;
    else if (!strcmp(win, "allocmem"))
        *create = 2;
    else
        return -1;
    return 0;
}

/* One operation of `size` bytes from `src` (results into `dst`) at displacement 0 of rank 1. */
static void issue(int op, size_t size, char *src, char *dst, MPI_Win win)
{
    int64_t one = 1, cmp = 0;
    switch (op) {
    case PUT:
        MPI_Put(src, (int)size, MPI_BYTE, 1, 0, (int)size, MPI_BYTE, win);
        break;
    case GET:
        MPI_Get(dst, (int)size, MPI_BYTE, 1, 0, (int)size, MPI_BYTE, win);
        break;
    case ACC:
        MPI_Accumulate(src, (int)(size / 8), MPI_DOUBLE, 1, 0, (int)(size / 8), MPI_DOUBLE, MPI_SUM, win);
        break;
    case FOP:
        MPI_Fetch_and_op(&one, dst, MPI_INT64_T, 1, 0, MPI_SUM, win);
        break;
    default:
        MPI_Compare_and_swap(&one, &cmp, dst, MPI_INT64_T, 1, 0, win);
        break;
    }
}

int main(int argc, char **argv)
{
    static const bench_spec spec = {
        "bench_rma", "one-sided operations from rank 0 to rank 1's window", 1000, 100, (size_t)4 << 20, 0, 0,
        "--ops",
        "comma-separated OP_SYNC_WINDOW items (OP: put get acc fop cas; SYNC: flush fence busy; WINDOW: alloc create allocmem)",
        "put_flush_alloc,get_flush_alloc,acc_flush_alloc,fop_flush_alloc,cas_flush_alloc,put_fence_alloc,"
        "get_fence_alloc,put_flush_create,get_flush_create,acc_flush_create,fop_flush_create,cas_flush_create,"
        "put_flush_allocmem,get_flush_allocmem,acc_flush_allocmem"};
    bench_opts o;
    char items[NITEMS][32];
    char *src, *dst, *mem;
    double *t;
    int n, i, rc = bench_init(&argc, &argv, &spec, &o);
    if (rc)
        return rc == 1 ? 0 : rc;
    if (bench_np < 2) {
        if (bench_rank == 0)
            fprintf(stderr, "bench_rma: needs at least 2 ranks\n");
        MPI_Finalize();
        return 2;
    }
    n = bench_split_list(o.list, items, NITEMS);
    for (i = 0; i < n; i++) {
        int op, sync, create;
        if (parse(items[i], &op, &sync, &create)) {
            if (bench_rank == 0)
                fprintf(stderr, "bench_rma: bad item %s (OP_SYNC_WINDOW, e.g. put_flush_alloc)\n", items[i]);
            MPI_Finalize();
            return 2;
        }
    }
    src = bench_alloc(o.max_size + 8);
    dst = bench_alloc(o.max_size + 8);
    t = bench_alloc(sizeof(double) * (size_t)(o.iters + 1));

    for (i = 0; i < n; i++) {
        int op, sync, create;
        size_t size, first = bench_first_size(&o), last = o.max_size;
        MPI_Win win;
        parse(items[i], &op, &sync, &create);
        if (op == FOP || op == CAS)
            first = last = 8;
        if (first == 0) /* an empty transfer measures nothing (and MPICH 4.0.2 then loses the next put) */
            first = 1;
        if (create) {
            if (create == 1)
                mem = bench_alloc(o.max_size + 8);
            else {
                MPI_Alloc_mem((MPI_Aint)o.max_size + 8, MPI_INFO_NULL, &mem);
                memset(mem, 0, o.max_size + 8);
            }
            MPI_Win_create(mem, (MPI_Aint)o.max_size + 8, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win);
        } else {
            MPI_Win_allocate((MPI_Aint)o.max_size + 8, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &win);
            MPI_Win_lock(MPI_LOCK_EXCLUSIVE, bench_rank, 0, win);
            memset(mem, 0, o.max_size + 8);
            MPI_Win_unlock(bench_rank, win);
        }
        for (size = first; size <= last; size = bench_next_size(&o, size)) {
            int iters = bench_iters_for(&o, size), warm = bench_warmup_for(&o, size);
            int batch = bench_batch_for(&o, size);
            int nsamp = iters / batch > 0 ? iters / batch : 1;
            int total = warm + nsamp * batch, k, s = 0;
            double t0 = 0;
            uint64_t seed = ((uint64_t)size << 8) + (uint64_t)i;
            if (op == ACC && size < 8)
                continue;
            if (o.check && op == PUT && bench_rank == 0)
                bench_fill(src, size, seed);
            if (o.check && op == GET && bench_rank == 1) {
                MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 1, 0, win);
                bench_fill(mem, size, seed);
                MPI_Win_unlock(1, win);
            }
            if (o.check && op == GET && bench_rank == 0)
                bench_poison(dst, size);
            MPI_Barrier(MPI_COMM_WORLD);
            if (sync != FENCE && bench_rank == 0)
                MPI_Win_lock_all(0, win);
            if (sync == FENCE)
                MPI_Win_fence(0, win);
            if (sync == BUSY && bench_rank == 1) {
                /* Compute, outside MPI, until the origin says it is done. */
                volatile char *done = (volatile char *)mem + o.max_size + 7;
                while (!*done)
                    __sync_synchronize();
                *done = 0;
            }
            for (k = 0; k < total && !(sync == BUSY && bench_rank != 0); k++) {
                int timed = k >= warm, first_of_batch = timed && (k - warm) % batch == 0;
                if (bench_rank == 0 && first_of_batch)
                    t0 = MPI_Wtime();
                if (bench_rank == 0)
                    issue(op, size, src, dst, win);
                if (sync == FENCE)
                    MPI_Win_fence(0, win);
                else if (bench_rank == 0)
                    MPI_Win_flush(1, win);
                if (bench_rank == 0 && timed && (k - warm) % batch == batch - 1)
                    t[s++] = (MPI_Wtime() - t0) * 1e6 / batch;
            }
            if (sync == BUSY && bench_rank == 0) {
                char one = 1;
                MPI_Put(&one, 1, MPI_CHAR, 1, (MPI_Aint)o.max_size + 7, 1, MPI_CHAR, win);
                MPI_Win_flush(1, win);
            }
            if (sync != FENCE && bench_rank == 0)
                MPI_Win_unlock_all(win);
            if (sync == FENCE)
                MPI_Win_fence(MPI_MODE_NOSUCCEED, win);
            if (o.check) {
                MPI_Barrier(MPI_COMM_WORLD);
                if (op == PUT && bench_rank == 1) {
                    /* a passive epoch on its own memory makes the updates visible */
                    MPI_Win_lock(MPI_LOCK_SHARED, 1, 0, win);
                    bench_verify(mem, size, seed, 0, "rma: the target's window after put", size);
                    MPI_Win_unlock(1, win);
                }
                if (op == GET && bench_rank == 0)
                    bench_verify(dst, size, seed, 0, "rma: the origin's buffer after get", size);
            }
            if (bench_rank == 0) {
                double med, p90;
                bench_stats(t, s, &med, &p90);
                bench_emit(&o, items[i], bench_np, size, med, p90, med > 0 ? size / med : 0, med > 0 ? 1e6 / med : 0);
            }
        }
        MPI_Win_free(&win);
        if (create == 1)
            free(mem);
        else if (create == 2)
            MPI_Free_mem(mem);
    }
    return bench_finish();
}
