/* Pack/unpack throughput against memcpy, and the single-copy (process_vm_readv) cost model that
 * decides between moving a non-contiguous message as a list of blocks or packed (one rank;
 * built with any MPI). For each --blocks item BL:STRIDE (bytes) and size (bytes of data):
 *   memcpy_bB_sS      memcpy of `size` contiguous bytes (the reference)
 *   pack_bB_sS        MPI_Pack of a vector of BL-byte blocks STRIDE apart into a packed buffer
 *   unpack_bB_sS      MPI_Unpack of it back
 *   cma_contig_*      process_vm_readv of `size` contiguous bytes (one iovec each side)
 *   cma_remote_*      the blocks as remote iovecs, read into a contiguous local buffer
 *   cma_local_*       a contiguous remote range read into the blocks as local iovecs
 *   cma_span_*        the blocks' whole span as few remote iovecs, gaps read into a sink
 * (process_vm_readv of this process itself: the kernel path is the one between ranks.)
 * All in MB/s of data moved (`size` per operation). Linux only for the cma_* records. */
#define _GNU_SOURCE
#include "common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef __linux__
#include <sys/uio.h>
#include <unistd.h>
#endif

static bench_opts o;
static double *t;

typedef void (*op_fn)(void *ctx);

static void run(const char *name, size_t bl, size_t stride, size_t size, op_fn f, void *ctx)
{
    char full[64];
    int iters = bench_iters_for(&o, size), warm = bench_warmup_for(&o, size), k, s = 0;
    double med, p90;
    snprintf(full, sizeof full, "%s_b%zu_s%zu", name, bl, stride);
    for (k = 0; k < warm + iters; k++) {
        double t0 = MPI_Wtime();
        f(ctx);
        if (k >= warm)
            t[s++] = (MPI_Wtime() - t0) * 1e6;
    }
    bench_stats(t, s, &med, &p90);
    bench_emit(&o, full, 1, size, med, p90, med > 0 ? size / med : 0, 0);
}

typedef struct {
    char *strided, *packed, *sink;
    size_t bl, stride, count, size;
    MPI_Datatype vt;
#ifdef __linux__
    struct iovec *blocks, *mixed, *span;
    size_t nmixed, nspan;
#endif
} ctx_t;

static void do_memcpy(void *p)
{
    ctx_t *c = p;
    memcpy(c->packed, c->strided, c->size);
}

static void do_pack(void *p)
{
    ctx_t *c = p;
    int pos = 0;
    MPI_Pack(c->strided, 1, c->vt, c->packed, (int)c->size, &pos, MPI_COMM_SELF);
}

static void do_unpack(void *p)
{
    ctx_t *c = p;
    int pos = 0;
    MPI_Unpack(c->packed, (int)c->size, &pos, c->strided, 1, c->vt, MPI_COMM_SELF);
}

#ifdef __linux__
#define IOVS 1024
static void readv1(struct iovec *l, size_t nl, char *remote)
{
    size_t i, len = 0;
    struct iovec r;
    for (i = 0; i < nl; i++)
        len += l[i].iov_len;
    r.iov_base = remote;
    r.iov_len = len;
    if (process_vm_readv(getpid(), l, nl, &r, 1, 0) != (ssize_t)len)
        bench_fail("process_vm_readv failed");
}

static void do_cma_contig(void *p)
{
    ctx_t *c = p;
    struct iovec l = {c->packed, c->size};
    readv1(&l, 1, c->strided);
}

static void do_cma_remote(void *p)
{
    ctx_t *c = p;
    struct iovec l = {c->packed, c->size};
    /* local: one iovec, but split to match the remote batches of IOVS blocks */
    size_t i;
    for (i = 0; i < c->count; i += IOVS) {
        size_t n = c->count - i < IOVS ? c->count - i : IOVS;
        l.iov_base = c->packed + i * c->bl;
        l.iov_len = n * c->bl;
        if (process_vm_readv(getpid(), &l, 1, c->blocks + i, n, 0) != (ssize_t)(n * c->bl))
            bench_fail("process_vm_readv failed");
    }
}

static void do_cma_local(void *p)
{
    ctx_t *c = p;
    size_t i;
    for (i = 0; i < c->count; i += IOVS) {
        size_t n = c->count - i < IOVS ? c->count - i : IOVS;
        struct iovec r = {c->packed + i * c->bl, n * c->bl};
        if (process_vm_readv(getpid(), c->blocks + i, n, &r, 1, 0) != (ssize_t)(n * c->bl))
            bench_fail("process_vm_readv failed");
    }
}

static void do_cma_span(void *p)
{
    ctx_t *c = p;
    size_t i, j, off = 0;
    /* local batches of IOVS entries against the matching stretch of the one remote span */
    for (i = 0; i < c->nmixed; i += IOVS) {
        size_t n = c->nmixed - i < IOVS ? c->nmixed - i : IOVS;
        readv1(c->mixed + i, n, c->strided + off);
        for (j = 0; j < n; j++)
            off += c->mixed[i + j].iov_len;
    }
}
#endif

int main(int argc, char **argv)
{
    static const bench_spec spec = {
        "bench_pack", "MPI_Pack/MPI_Unpack vs memcpy, and process_vm_readv block-list costs (1 rank)",
        50, 5, (size_t)4 << 20, 0, 0, "--blocks", "comma-separated BL:STRIDE vector shapes in bytes",
        "8:16,64:128,512:1024,4096:8192"};
    char items[16][32];
    int n, i, rc = bench_init(&argc, &argv, &spec, &o);
    if (rc)
        return rc == 1 ? 0 : rc;
    t = bench_alloc(sizeof(double) * (size_t)(o.iters + 1));
    n = bench_split_list(o.list, items, 16);
    for (i = 0; i < n && bench_rank == 0; i++) {
        unsigned long bl = 0, stride = 0;
        size_t size;
        if (sscanf(items[i], "%lu:%lu", &bl, &stride) != 2 || bl == 0 || stride < bl) {
            fprintf(stderr, "bench_pack: bad --blocks item %s\n", items[i]);
            break;
        }
        for (size = bench_first_size(&o); size <= o.max_size; size = bench_next_size(&o, size)) {
            ctx_t c;
            size_t j;
            if (size < bl || size % bl)
                continue;
            memset(&c, 0, sizeof c);
            c.bl = bl;
            c.stride = stride;
            c.count = size / bl;
            c.size = size;
            c.strided = bench_alloc(c.count * stride + 4096);
            c.packed = bench_alloc(size + 4096);
            c.sink = bench_alloc(size + 8192);
            MPI_Type_vector((int)c.count, (int)bl, (int)stride, MPI_BYTE, &c.vt);
            MPI_Type_commit(&c.vt);
            run("memcpy", bl, stride, size, do_memcpy, &c);
            run("pack", bl, stride, size, do_pack, &c);
            run("unpack", bl, stride, size, do_unpack, &c);
#ifdef __linux__
            c.blocks = malloc(sizeof(struct iovec) * c.count);
            c.mixed = malloc(sizeof(struct iovec) * 2 * c.count);
            c.span = malloc(sizeof(struct iovec) * c.count);
            for (j = 0; j < c.count; j++) {
                c.blocks[j].iov_base = c.strided + j * stride;
                c.blocks[j].iov_len = bl;
            }
            /* span: when the gaps are under a page, the whole span as one remote iovec, and
             * locally the blocks with the gaps between them read into a sink */
            c.nspan = stride - bl < 4096 ? 1 : 0;
            c.nmixed = 0;
            c.span[0].iov_base = c.strided;
            c.span[0].iov_len = (c.count - 1) * stride + bl;
            for (j = 0; c.nspan && j < c.count; j++) {
                if (j > 0) {
                    c.mixed[c.nmixed].iov_base = c.sink;
                    c.mixed[c.nmixed++].iov_len = stride - bl;
                }
                c.mixed[c.nmixed].iov_base = c.packed + j * bl;
                c.mixed[c.nmixed++].iov_len = bl;
            }
            run("cma_contig", bl, stride, size, do_cma_contig, &c);
            run("cma_remote", bl, stride, size, do_cma_remote, &c);
            run("cma_local", bl, stride, size, do_cma_local, &c);
            if (c.nspan)
                run("cma_span", bl, stride, size, do_cma_span, &c);
            free(c.blocks);
            free(c.mixed);
            free(c.span);
#endif
            MPI_Type_free(&c.vt);
            free(c.strided);
            free(c.packed);
            free(c.sink);
        }
    }
    return bench_finish();
}
