/* Collectives over an intercommunicator, shared by coll_inter.c (blocking forms, errors) and
 * coll_inter_nb.c (nonblocking and persistent forms, overlap).
 *
 * The world is split into two uneven, interleaved groups (world ranks 0, 3, 6, ... form
 * group 0, the others group 1) joined by MPI_Intercomm_create. Every collective is checked
 * element by element, for every root of both groups: MPI_ROOT at the root, MPI_PROC_NULL at
 * the other processes of its group (whose buffers must stay untouched), the root's rank in
 * the other group. Results follow MPI-4.1 (allreduce, allgather and reduce-scatter give each
 * group the other group's data). Modes: 0 blocking, 1 nonblocking + MPI_Wait, 2 persistent
 * (one MPI_*_init, started twice with new data each time). */
#ifndef COLL_INTER_H
#define COLL_INTER_H
#include "coll_mtest.h"

/* The harness defines MT_OXMPI=1 on oxmpi. The tests are validated on MPICH 4.0.2, which fails
 * two things checked here: its persistent intercommunicator gather, scatter, allgather and
 * reduce-scatter read the input of the first start again at the second (so only the first
 * start is checked there), and its MPI_Ibcast / MPI_Bcast_init on an intercommunicator fail an
 * assertion when the root is not rank 0 of its group, its MPI_Iscatter(v) fails with "Invalid
 * communicator" when the remote group is large, as do its MPI_Iallreduce with a
 * non-commutative operation and its MPI_Ireduce_scatter(_block) (those are not run there:
 * MPICH_BROKEN). */
#ifndef MT_OXMPI
#define MT_OXMPI 0
#endif
#define MPICH_BROKEN(c) (!MT_OXMPI && (c)->mode != 0)
#define CHECK_REP(c, rep, cond, ...)                                                               \
    do {                                                                                           \
        if (MT_OXMPI || (c)->mode != 2 || (rep) == 0)                                              \
            CHECK(cond, __VA_ARGS__);                                                              \
    } while (0)

typedef struct {
    MPI_Comm comm;
    int color, lrank, lsize, rsize;
    int mode;
} ictx;

/* The value element i of process (group g, rank r) contributes in repetition `seed`. */
static int val(int seed, int g, int r, int i)
{
    return seed * 1000000 + g * 100000 + r * 1000 + i;
}

static int group_size(const ictx *c, int g)
{
    return g == c->color ? c->lsize : c->rsize;
}

static int reps(const ictx *c)
{
    return c->mode == 2 ? 2 : 1;
}

/* Runs one collective in the context's mode: BLK is the blocking call, NB the nonblocking
 * one (its last argument is &req), INIT the persistent one (last arguments info, &req; made
 * at the first repetition, started at each). */
#define DO3(c, req, rep, BLK, NB, INIT)                                                            \
    do {                                                                                           \
        int rc_ = MPI_SUCCESS;                                                                     \
        if ((c)->mode == 0)                                                                        \
            rc_ = BLK;                                                                             \
        else if ((c)->mode == 1)                                                                   \
            rc_ = NB;                                                                              \
        else {                                                                                     \
            if ((rep) == 0)                                                                        \
                rc_ = INIT;                                                                        \
            if (rc_ == MPI_SUCCESS)                                                                \
                rc_ = MPI_Start(&(req));                                                           \
        }                                                                                          \
        CHECK(rc_ == MPI_SUCCESS, "collective call returned %d (mode %d)", rc_, (c)->mode);       \
        if ((c)->mode != 0 && rc_ == MPI_SUCCESS)                                                  \
            MPI_Wait(&(req), MPI_STATUS_IGNORE);                                                   \
    } while (0)

#define FREE_PERSISTENT(c, req)                                                                    \
    do {                                                                                           \
        if ((c)->mode == 2)                                                                        \
            MPI_Request_free(&(req));                                                              \
    } while (0)

static void fill(int *b, int n, int v)
{
    for (int i = 0; i < n; i++)
        b[i] = v;
}

/* A non-commutative, associative operation on (first, last) pairs encoded as first * 1000 +
 * last: the result names the first and the last contribution in reduction order. */
static void first_last(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    int *a = in, *b = inout;
    (void)dt;
    for (int i = 0; i < *len; i++)
        b[i] = (a[i] / 1000) * 1000 + b[i] % 1000;
}

static MPI_Op op_first_last;

/* ---------- barrier, bcast ---------- */

static void t_barrier(const ictx *c)
{
    MPI_Request req = MPI_REQUEST_NULL;
    for (int rep = 0; rep < reps(c); rep++)
        DO3(c, req, rep, MPI_Barrier(c->comm), MPI_Ibarrier(c->comm, &req),
            MPI_Barrier_init(c->comm, MPI_INFO_NULL, &req));
    FREE_PERSISTENT(c, req);
}

static void t_bcast(const ictx *c, int rg, int rr)
{
    enum { N = 5 };
    int buf[N], root;
    MPI_Request req = MPI_REQUEST_NULL;
    int in_root_group = c->color == rg, is_root = in_root_group && c->lrank == rr;
    root = in_root_group ? (is_root ? MPI_ROOT : MPI_PROC_NULL) : rr;
    if (MPICH_BROKEN(c) && rr != 0)
        return;
    for (int rep = 0; rep < reps(c); rep++) {
        for (int i = 0; i < N; i++)
            buf[i] = is_root ? val(rep + 1, rg, rr, i) : -7;
        DO3(c, req, rep, MPI_Bcast(buf, N, MPI_INT, root, c->comm),
            MPI_Ibcast(buf, N, MPI_INT, root, c->comm, &req),
            MPI_Bcast_init(buf, N, MPI_INT, root, c->comm, MPI_INFO_NULL, &req));
        for (int i = 0; i < N; i++) {
            int want = is_root || !in_root_group ? val(rep + 1, rg, rr, i) : -7;
            CHECK_REP(c, rep, buf[i] == want, "bcast rg %d rr %d mode %d: buf[%d] = %d, want %d", rg, rr, c->mode, i, buf[i],
                  want);
        }
    }
    FREE_PERSISTENT(c, req);
}

/* ---------- reductions ---------- */

static void t_reduce(const ictx *c, int rg, int rr, int noncomm)
{
    if (MPICH_BROKEN(c) && noncomm)
        return;
    enum { N = 4 };
    int sb[N], rb[N], root;
    MPI_Request req = MPI_REQUEST_NULL;
    MPI_Op op = noncomm ? op_first_last : MPI_SUM;
    int in_root_group = c->color == rg, is_root = in_root_group && c->lrank == rr;
    int og = 1 - rg, on = group_size(c, og);
    root = in_root_group ? (is_root ? MPI_ROOT : MPI_PROC_NULL) : rr;
    for (int rep = 0; rep < reps(c); rep++) {
        for (int i = 0; i < N; i++)
            sb[i] = noncomm ? c->lrank * 1000 + c->lrank : val(rep + 1, c->color, c->lrank, i);
        fill(rb, N, -7);
        DO3(c, req, rep, MPI_Reduce(sb, rb, N, MPI_INT, op, root, c->comm),
            MPI_Ireduce(sb, rb, N, MPI_INT, op, root, c->comm, &req),
            MPI_Reduce_init(sb, rb, N, MPI_INT, op, root, c->comm, MPI_INFO_NULL, &req));
        for (int i = 0; i < N; i++) {
            int want = -7;
            if (is_root) {
                want = 0;
                for (int q = 0; q < on; q++)
                    want += val(rep + 1, og, q, i);
                if (noncomm)
                    want = on - 1;
            }
            CHECK_REP(c, rep, rb[i] == want, "reduce%s rg %d rr %d mode %d: rb[%d] = %d, want %d", noncomm ? "(noncomm)" : "", rg,
                  rr, c->mode, i, rb[i], want);
        }
    }
    FREE_PERSISTENT(c, req);
}

static void t_allreduce(const ictx *c, int noncomm)
{
    if (MPICH_BROKEN(c) && noncomm)
        return;
    enum { N = 3 };
    int sb[N], rb[N];
    MPI_Request req = MPI_REQUEST_NULL;
    MPI_Op op = noncomm ? op_first_last : MPI_SUM;
    int og = 1 - c->color;
    for (int rep = 0; rep < reps(c); rep++) {
        for (int i = 0; i < N; i++)
            sb[i] = noncomm ? c->lrank * 1000 + c->lrank : val(rep + 1, c->color, c->lrank, i);
        fill(rb, N, -7);
        DO3(c, req, rep, MPI_Allreduce(sb, rb, N, MPI_INT, op, c->comm),
            MPI_Iallreduce(sb, rb, N, MPI_INT, op, c->comm, &req),
            MPI_Allreduce_init(sb, rb, N, MPI_INT, op, c->comm, MPI_INFO_NULL, &req));
        for (int i = 0; i < N; i++) {
            int want = 0;
            for (int q = 0; q < c->rsize; q++)
                want += val(rep + 1, og, q, i);
            if (noncomm)
                want = c->rsize - 1;
            CHECK_REP(c, rep, rb[i] == want, "allreduce mode %d: rb[%d] = %d, want %d", c->mode, i, rb[i], want);
        }
    }
    FREE_PERSISTENT(c, req);
}

/* Reduce_scatter_block with recvcount = remote size (the input, local size * remote size
 * elements, is as long in both groups), and Reduce_scatter with uneven counts (a zero one). */
static void t_reduce_scatter(const ictx *c, int block)
{
    if (MPICH_BROKEN(c))
        return;
    int n = c->lsize * c->rsize, og = 1 - c->color;
    int *sb = malloc(n * sizeof(int)), *rb = malloc(n * sizeof(int)), *counts = malloc(c->lsize * sizeof(int));
    MPI_Request req = MPI_REQUEST_NULL;
    for (int r = 0; r < c->lsize; r++)
        counts[r] = c->rsize;
    if (!block && c->lsize >= 2) {
        counts[0] += counts[1];
        counts[1] = 0;
    }
    int off = 0;
    for (int r = 0; r < c->lrank; r++)
        off += counts[r];
    for (int rep = 0; rep < reps(c); rep++) {
        for (int i = 0; i < n; i++)
            sb[i] = val(rep + 1, c->color, c->lrank, i);
        fill(rb, n, -7);
        if (block)
            DO3(c, req, rep, MPI_Reduce_scatter_block(sb, rb, c->rsize, MPI_INT, MPI_SUM, c->comm),
                MPI_Ireduce_scatter_block(sb, rb, c->rsize, MPI_INT, MPI_SUM, c->comm, &req),
                MPI_Reduce_scatter_block_init(sb, rb, c->rsize, MPI_INT, MPI_SUM, c->comm, MPI_INFO_NULL, &req));
        else
            DO3(c, req, rep, MPI_Reduce_scatter(sb, rb, counts, MPI_INT, MPI_SUM, c->comm),
                MPI_Ireduce_scatter(sb, rb, counts, MPI_INT, MPI_SUM, c->comm, &req),
                MPI_Reduce_scatter_init(sb, rb, counts, MPI_INT, MPI_SUM, c->comm, MPI_INFO_NULL, &req));
        for (int k = 0; k < n; k++) {
            int want = -7;
            if (k < counts[c->lrank]) {
                want = 0;
                for (int q = 0; q < c->rsize; q++)
                    want += val(rep + 1, og, q, off + k);
            }
            CHECK_REP(c, rep, rb[k] == want, "reduce_scatter%s mode %d: rb[%d] = %d, want %d", block ? "_block" : "", c->mode, k,
                  rb[k], want);
        }
    }
    FREE_PERSISTENT(c, req);
    free(sb);
    free(rb);
    free(counts);
}

/* ---------- gather, scatter ---------- */

/* Per-process count of the v-forms: (q + 1) % 3, so rank 2 has none. */
static int vcount(int q)
{
    return (q + 1) % 3;
}

static void t_gather(const ictx *c, int rg, int rr, int v)
{
    enum { K = 3 };
    int in_root_group = c->color == rg, is_root = in_root_group && c->lrank == rr;
    int root = in_root_group ? (is_root ? MPI_ROOT : MPI_PROC_NULL) : rr;
    int og = 1 - rg, on = group_size(c, og);
    int total = on * (K + 1), sb[K];
    int *rb = malloc(total * sizeof(int)), *counts = malloc(on * sizeof(int)), *displs = malloc(on * sizeof(int));
    MPI_Request req = MPI_REQUEST_NULL;
    for (int q = 0, d = 0; q < on; q++) {
        counts[q] = v ? vcount(q) : K;
        displs[q] = d + (v ? 1 : 0);
        d = displs[q] + counts[q];
    }
    int mycount = v ? vcount(c->lrank) : K;
    for (int rep = 0; rep < reps(c); rep++) {
        for (int i = 0; i < K; i++)
            sb[i] = val(rep + 1, c->color, c->lrank, i);
        fill(rb, total, -7);
        if (v)
            DO3(c, req, rep, MPI_Gatherv(sb, mycount, MPI_INT, rb, counts, displs, MPI_INT, root, c->comm),
                MPI_Igatherv(sb, mycount, MPI_INT, rb, counts, displs, MPI_INT, root, c->comm, &req),
                MPI_Gatherv_init(sb, mycount, MPI_INT, rb, counts, displs, MPI_INT, root, c->comm, MPI_INFO_NULL,
                                 &req));
        else
            DO3(c, req, rep, MPI_Gather(sb, K, MPI_INT, rb, K, MPI_INT, root, c->comm),
                MPI_Igather(sb, K, MPI_INT, rb, K, MPI_INT, root, c->comm, &req),
                MPI_Gather_init(sb, K, MPI_INT, rb, K, MPI_INT, root, c->comm, MPI_INFO_NULL, &req));
        for (int j = 0; j < total; j++) {
            int want = -7;
            if (is_root)
                for (int q = 0; q < on; q++)
                    if (j >= displs[q] && j < displs[q] + counts[q])
                        want = val(rep + 1, og, q, j - displs[q]);
            CHECK_REP(c, rep, rb[j] == want, "gather%s rg %d rr %d mode %d: rb[%d] = %d, want %d", v ? "v" : "", rg, rr, c->mode,
                  j, rb[j], want);
        }
    }
    FREE_PERSISTENT(c, req);
    free(rb);
    free(counts);
    free(displs);
}

static void t_scatter(const ictx *c, int rg, int rr, int v)
{
    enum { K = 3 };
    if (MPICH_BROKEN(c))
        return;
    int in_root_group = c->color == rg, is_root = in_root_group && c->lrank == rr;
    int root = in_root_group ? (is_root ? MPI_ROOT : MPI_PROC_NULL) : rr;
    int og = 1 - rg, on = group_size(c, og);
    int total = on * (K + 1), rb[K];
    int *sb = malloc(total * sizeof(int)), *counts = malloc(on * sizeof(int)), *displs = malloc(on * sizeof(int));
    MPI_Request req = MPI_REQUEST_NULL;
    for (int q = 0, d = 0; q < on; q++) {
        counts[q] = v ? vcount(q) : K;
        displs[q] = d + (v ? 1 : 0);
        d = displs[q] + counts[q];
    }
    int mycount = v ? vcount(c->lrank) : K;
    for (int rep = 0; rep < reps(c); rep++) {
        for (int j = 0; j < total; j++)
            sb[j] = is_root ? val(rep + 1, rg, rr, j) : -5;
        fill(rb, K, -7);
        if (v)
            DO3(c, req, rep, MPI_Scatterv(sb, counts, displs, MPI_INT, rb, mycount, MPI_INT, root, c->comm),
                MPI_Iscatterv(sb, counts, displs, MPI_INT, rb, mycount, MPI_INT, root, c->comm, &req),
                MPI_Scatterv_init(sb, counts, displs, MPI_INT, rb, mycount, MPI_INT, root, c->comm, MPI_INFO_NULL,
                                  &req));
        else
            DO3(c, req, rep, MPI_Scatter(sb, K, MPI_INT, rb, K, MPI_INT, root, c->comm),
                MPI_Iscatter(sb, K, MPI_INT, rb, K, MPI_INT, root, c->comm, &req),
                MPI_Scatter_init(sb, K, MPI_INT, rb, K, MPI_INT, root, c->comm, MPI_INFO_NULL, &req));
        for (int i = 0; i < K; i++) {
            int want = -7;
            if (!in_root_group && i < mycount)
                want = val(rep + 1, rg, rr, (v ? displs[c->lrank] : c->lrank * K) + i);
            CHECK_REP(c, rep, rb[i] == want, "scatter%s rg %d rr %d mode %d: rb[%d] = %d, want %d", v ? "v" : "", rg, rr, c->mode,
                  i, rb[i], want);
        }
    }
    FREE_PERSISTENT(c, req);
    free(sb);
    free(counts);
    free(displs);
}

/* ---------- allgather, all-to-all ---------- */

static void t_allgather(const ictx *c, int v)
{
    enum { K = 2 };
    int og = 1 - c->color, total = c->rsize * (K + 1), sb[K];
    int *rb = malloc(total * sizeof(int)), *counts = malloc(c->rsize * sizeof(int)),
        *displs = malloc(c->rsize * sizeof(int));
    MPI_Request req = MPI_REQUEST_NULL;
    /* v: process q of group g sends (q + g) % 3 elements */
    for (int q = 0, d = 0; q < c->rsize; q++) {
        counts[q] = v ? (q + og) % 3 : K;
        displs[q] = d + (v ? 1 : 0);
        d = displs[q] + counts[q];
    }
    int mycount = v ? (c->lrank + c->color) % 3 : K;
    for (int rep = 0; rep < reps(c); rep++) {
        for (int i = 0; i < K; i++)
            sb[i] = val(rep + 1, c->color, c->lrank, i);
        fill(rb, total, -7);
        if (v)
            DO3(c, req, rep, MPI_Allgatherv(sb, mycount, MPI_INT, rb, counts, displs, MPI_INT, c->comm),
                MPI_Iallgatherv(sb, mycount, MPI_INT, rb, counts, displs, MPI_INT, c->comm, &req),
                MPI_Allgatherv_init(sb, mycount, MPI_INT, rb, counts, displs, MPI_INT, c->comm, MPI_INFO_NULL, &req));
        else
            DO3(c, req, rep, MPI_Allgather(sb, K, MPI_INT, rb, K, MPI_INT, c->comm),
                MPI_Iallgather(sb, K, MPI_INT, rb, K, MPI_INT, c->comm, &req),
                MPI_Allgather_init(sb, K, MPI_INT, rb, K, MPI_INT, c->comm, MPI_INFO_NULL, &req));
        for (int j = 0; j < total; j++) {
            int want = -7;
            for (int q = 0; q < c->rsize; q++)
                if (j >= displs[q] && j < displs[q] + counts[q])
                    want = val(rep + 1, og, q, j - displs[q]);
            CHECK_REP(c, rep, rb[j] == want, "allgather%s mode %d: rb[%d] = %d, want %d", v ? "v" : "", c->mode, j, rb[j], want);
        }
    }
    FREE_PERSISTENT(c, req);
    free(rb);
    free(counts);
    free(displs);
}

/* Count sent by process `from` of group `g` to remote rank `to` (v and w forms). */
static int a2a_count(int g, int from, int to)
{
    return (from + 2 * to + g) % 3;
}

/* kind 0: Alltoall, 1: Alltoallv, 2: Alltoallw (byte displacements). */
static void t_alltoall(const ictx *c, int kind)
{
    enum { K = 2 };
    int og = 1 - c->color, n = c->rsize, cap = n * (K + 1);
    int *sb = malloc(cap * sizeof(int)), *rb = malloc(cap * sizeof(int));
    int *sc = malloc(n * sizeof(int)), *sd = malloc(n * sizeof(int)), *rc = malloc(n * sizeof(int)),
        *rd = malloc(n * sizeof(int));
    MPI_Datatype *types = malloc(n * sizeof(MPI_Datatype));
    MPI_Request req = MPI_REQUEST_NULL;
    for (int j = 0, s = 0, r = 0; j < n; j++) {
        sc[j] = kind ? a2a_count(c->color, c->lrank, j) : K;
        rc[j] = kind ? a2a_count(og, j, c->lrank) : K;
        sd[j] = s + (kind ? 1 : 0);
        rd[j] = r + (kind ? 1 : 0);
        s = sd[j] + sc[j];
        r = rd[j] + rc[j];
        types[j] = MPI_INT;
    }
    int *sdb = malloc(n * sizeof(int)), *rdb = malloc(n * sizeof(int));
    for (int j = 0; j < n; j++) {
        sdb[j] = sd[j] * (int)sizeof(int);
        rdb[j] = rd[j] * (int)sizeof(int);
    }
    for (int rep = 0; rep < reps(c); rep++) {
        fill(sb, cap, -5);
        for (int j = 0; j < n; j++)
            for (int i = 0; i < sc[j]; i++)
                sb[sd[j] + i] = val(rep + 1, c->color, c->lrank, j * 10 + i);
        fill(rb, cap, -7);
        if (kind == 0)
            DO3(c, req, rep, MPI_Alltoall(sb, K, MPI_INT, rb, K, MPI_INT, c->comm),
                MPI_Ialltoall(sb, K, MPI_INT, rb, K, MPI_INT, c->comm, &req),
                MPI_Alltoall_init(sb, K, MPI_INT, rb, K, MPI_INT, c->comm, MPI_INFO_NULL, &req));
        else if (kind == 1)
            DO3(c, req, rep, MPI_Alltoallv(sb, sc, sd, MPI_INT, rb, rc, rd, MPI_INT, c->comm),
                MPI_Ialltoallv(sb, sc, sd, MPI_INT, rb, rc, rd, MPI_INT, c->comm, &req),
                MPI_Alltoallv_init(sb, sc, sd, MPI_INT, rb, rc, rd, MPI_INT, c->comm, MPI_INFO_NULL, &req));
        else
            DO3(c, req, rep, MPI_Alltoallw(sb, sc, sdb, types, rb, rc, rdb, types, c->comm),
                MPI_Ialltoallw(sb, sc, sdb, types, rb, rc, rdb, types, c->comm, &req),
                MPI_Alltoallw_init(sb, sc, sdb, types, rb, rc, rdb, types, c->comm, MPI_INFO_NULL, &req));
        for (int j = 0; j < cap; j++) {
            int want = -7;
            for (int q = 0; q < n; q++)
                if (j >= rd[q] && j < rd[q] + rc[q])
                    want = val(rep + 1, og, q, c->lrank * 10 + j - rd[q]);
            CHECK_REP(c, rep, rb[j] == want, "alltoall kind %d mode %d: rb[%d] = %d, want %d", kind, c->mode, j, rb[j], want);
        }
    }
    FREE_PERSISTENT(c, req);
    free(sb);
    free(rb);
    free(sc);
    free(sd);
    free(rc);
    free(rd);
    free(sdb);
    free(rdb);
    free(types);
}

/* Every collective in mode `mode`, every root of both groups for the rooted ones. */
static void run_all(const ictx *c)
{
    t_barrier(c);
    for (int rg = 0; rg < 2; rg++)
        for (int rr = 0; rr < group_size(c, rg); rr++) {
            t_bcast(c, rg, rr);
            t_reduce(c, rg, rr, 0);
            t_reduce(c, rg, rr, 1);
            t_gather(c, rg, rr, 0);
            t_gather(c, rg, rr, 1);
            t_scatter(c, rg, rr, 0);
            t_scatter(c, rg, rr, 1);
        }
    t_allreduce(c, 0);
    t_allreduce(c, 1);
    t_reduce_scatter(c, 1);
    t_reduce_scatter(c, 0);
    t_allgather(c, 0);
    t_allgather(c, 1);
    t_alltoall(c, 0);
    t_alltoall(c, 1);
    t_alltoall(c, 2);
    t_barrier(c);
}

/* Splits MPI_COMM_WORLD into the two groups and joins them (needs at least 2 processes). */
static void make_inter(ictx *c)
{
    int rank, size;
    MPI_Comm local;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    c->color = rank % 3 == 0 ? 0 : 1;
    MPI_Comm_split(MPI_COMM_WORLD, c->color, rank, &local);
    /* leaders: world rank 0 (group 0) and world rank 1 (group 1) */
    MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, c->color == 0 ? 1 : 0, 11, &c->comm);
    MPI_Comm_free(&local);
    MPI_Comm_rank(c->comm, &c->lrank);
    MPI_Comm_size(c->comm, &c->lsize);
    MPI_Comm_remote_size(c->comm, &c->rsize);
    MPI_Op_create(first_last, 0, &op_first_last);
}

static void free_inter(ictx *c)
{
    MPI_Op_free(&op_first_last);
    MPI_Comm_free(&c->comm);
}
#endif
