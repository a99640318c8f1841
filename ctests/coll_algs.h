/* Results of allreduce, reduce, bcast, allgather(v), alltoall(v), reduce_scatter(_block) at
 * counts 0, 1, odd and large, in place or not, several types and operations, and a
 * non-commutative user operation (rank order checked). Included by coll_alg_*.c, each of
 * which forces a set of algorithms through OXMPI_* variables in its metadata (a reference
 * MPI ignores them); coll_alg_nb_*.c run the same checks on the nonblocking or persistent
 * forms. */
#include "coll_mtest.h"
#include <stdint.h>

#if defined(COLL_ALGS_NONBLOCKING) || defined(COLL_ALGS_PERSISTENT)
/* Every collective below as its nonblocking form and MPI_Wait (COLL_ALGS_NONBLOCKING), or as
 * a persistent request started once (COLL_ALGS_PERSISTENT): oxmpi's schedules, which choose
 * their algorithms from the same table as the blocking collectives. */
static int nb_run(int rc, MPI_Request *q)
{
    if (rc != MPI_SUCCESS)
        return rc;
#ifdef COLL_ALGS_PERSISTENT
    if ((rc = MPI_Start(q)) != MPI_SUCCESS || (rc = MPI_Wait(q, MPI_STATUS_IGNORE)) != MPI_SUCCESS)
        return rc;
    return MPI_Request_free(q);
#else
    return MPI_Wait(q, MPI_STATUS_IGNORE);
#endif
}
#ifdef COLL_ALGS_PERSISTENT
#define NB(icall, pcall, ...) nb_run(MPI_##pcall(__VA_ARGS__, MPI_INFO_NULL, &q), &q)
#else
#define NB(icall, pcall, ...) nb_run(MPI_##icall(__VA_ARGS__, &q), &q)
#endif
static int nb_Allreduce(const void *s, void *r, int c, MPI_Datatype t, MPI_Op o, MPI_Comm comm)
{
    MPI_Request q;
    return NB(Iallreduce, Allreduce_init, s, r, c, t, o, comm);
}
static int nb_Reduce(const void *s, void *r, int c, MPI_Datatype t, MPI_Op o, int root, MPI_Comm comm)
{
    MPI_Request q;
    return NB(Ireduce, Reduce_init, s, r, c, t, o, root, comm);
}
static int nb_Bcast(void *b, int c, MPI_Datatype t, int root, MPI_Comm comm)
{
    MPI_Request q;
    return NB(Ibcast, Bcast_init, b, c, t, root, comm);
}
static int nb_Allgather(const void *s, int sc, MPI_Datatype st, void *r, int rc, MPI_Datatype rt, MPI_Comm comm)
{
    MPI_Request q;
    return NB(Iallgather, Allgather_init, s, sc, st, r, rc, rt, comm);
}
static int nb_Allgatherv(const void *s, int sc, MPI_Datatype st, void *r, const int *rc, const int *rd,
                         MPI_Datatype rt, MPI_Comm comm)
{
    MPI_Request q;
    return NB(Iallgatherv, Allgatherv_init, s, sc, st, r, rc, rd, rt, comm);
}
static int nb_Alltoall(const void *s, int sc, MPI_Datatype st, void *r, int rc, MPI_Datatype rt, MPI_Comm comm)
{
    MPI_Request q;
    return NB(Ialltoall, Alltoall_init, s, sc, st, r, rc, rt, comm);
}
static int nb_Alltoallv(const void *s, const int *sc, const int *sd, MPI_Datatype st, void *r, const int *rc,
                        const int *rd, MPI_Datatype rt, MPI_Comm comm)
{
    MPI_Request q;
    return NB(Ialltoallv, Alltoallv_init, s, sc, sd, st, r, rc, rd, rt, comm);
}
static int nb_Gather(const void *s, int sc, MPI_Datatype st, void *r, int rc, MPI_Datatype rt, int root,
                     MPI_Comm comm)
{
    MPI_Request q;
    return NB(Igather, Gather_init, s, sc, st, r, rc, rt, root, comm);
}
static int nb_Scatter(const void *s, int sc, MPI_Datatype st, void *r, int rc, MPI_Datatype rt, int root,
                      MPI_Comm comm)
{
    MPI_Request q;
    return NB(Iscatter, Scatter_init, s, sc, st, r, rc, rt, root, comm);
}
static int nb_Reduce_scatter(const void *s, void *r, const int *rc, MPI_Datatype t, MPI_Op o, MPI_Comm comm)
{
    MPI_Request q;
    return NB(Ireduce_scatter, Reduce_scatter_init, s, r, rc, t, o, comm);
}
static int nb_Reduce_scatter_block(const void *s, void *r, int rc, MPI_Datatype t, MPI_Op o, MPI_Comm comm)
{
    MPI_Request q;
    return NB(Ireduce_scatter_block, Reduce_scatter_block_init, s, r, rc, t, o, comm);
}
#define MPI_Allreduce nb_Allreduce
#define MPI_Reduce nb_Reduce
#define MPI_Bcast nb_Bcast
#define MPI_Allgather nb_Allgather
#define MPI_Allgatherv nb_Allgatherv
#define MPI_Alltoall nb_Alltoall
#define MPI_Alltoallv nb_Alltoallv
#define MPI_Gather nb_Gather
#define MPI_Scatter nb_Scatter
#define MPI_Reduce_scatter nb_Reduce_scatter
#define MPI_Reduce_scatter_block nb_Reduce_scatter_block
#endif

static int rank, size;

/* Rank r's contribution at element i: small integers (exact in every type and order). */
static long val(int r, long i)
{
    return (r * 7 + i * 3) % 11 - 5;
}

/* PROD operands: 1 mostly, 2 or -1 at some places; products stay small. */
static long pval(int r, long i)
{
    return (r + i) % 3 == 0 ? 2 : ((r + i) % 5 == 0 ? -1 : 1);
}

/* Non-commutative op on (first, last, ok) int triples: (a, b) combine when a.last + 1 ==
 * b.first; the result of a correct rank-order reduction is (0, size - 1, 1). */
static void seq_op(void *invec, void *inoutvec, int *len, MPI_Datatype *dt)
{
    int *a = invec, *b = inoutvec;
    (void)dt;
    for (int i = 0; i + 2 < *len; i += 3) {
        int ok = a[i + 2] && b[i + 2] && a[i + 1] + 1 == b[i];
        b[i] = a[i];
        b[i + 2] = ok;
    }
}

enum { T_INT, T_LONG, T_DOUBLE };
static const MPI_Datatype types[] = {MPI_INT, MPI_LONG, MPI_DOUBLE};
static const char *tnames[] = {"int", "long", "double"};
static const size_t tsize[] = {sizeof(int), sizeof(long), sizeof(double)};

static void put(void *buf, int t, long i, long v)
{
    if (t == T_INT)
        ((int *)buf)[i] = (int)v;
    else if (t == T_LONG)
        ((long *)buf)[i] = v;
    else
        ((double *)buf)[i] = (double)v;
}

static long get(const void *buf, int t, long i)
{
    if (t == T_INT)
        return ((const int *)buf)[i];
    if (t == T_LONG)
        return ((const long *)buf)[i];
    return (long)((const double *)buf)[i];
}

/* The expected reduction of element i over all ranks. */
static long expect(MPI_Op op, long i)
{
    long acc = op == MPI_PROD ? pval(0, i) : val(0, i);
    for (int r = 1; r < size; r++) {
        long v = op == MPI_PROD ? pval(r, i) : val(r, i);
        if (op == MPI_SUM)
            acc += v;
        else if (op == MPI_MAX)
            acc = v > acc ? v : acc;
        else if (op == MPI_MIN)
            acc = v < acc ? v : acc;
        else if (op == MPI_PROD)
            acc *= v;
        else if (op == MPI_BOR)
            acc |= v;
    }
    return acc;
}

static const char *opname(MPI_Op op)
{
    return op == MPI_SUM ? "SUM" : op == MPI_MAX ? "MAX" : op == MPI_MIN ? "MIN" : op == MPI_PROD ? "PROD" : "BOR";
}

/* Allreduce (and Reduce to `root`) of `count` elements of type t with `op`. */
static void check_reduce(long count, int t, MPI_Op op, int in_place, int root)
{
    size_t bytes = (size_t)(count ? count : 1) * tsize[t];
    void *in = calloc(1, bytes), *out = calloc(1, bytes);
    for (long i = 0; i < count; i++) {
        put(in, t, i, op == MPI_PROD ? pval(rank, i) : val(rank, i));
        put(out, t, i, in_place ? get(in, t, i) : -99);
    }
    MPI_Allreduce(in_place ? MPI_IN_PLACE : in, out, (int)count, types[t], op, MPI_COMM_WORLD);
    int bad = 0;
    for (long i = 0; i < count && bad < 3; i++)
        if (get(out, t, i) != expect(op, i)) {
            bad++;
            CHECK(0, "Allreduce %s %s count %ld%s: [%ld] = %ld, expected %ld", opname(op), tnames[t], count,
                  in_place ? " in place" : "", i, get(out, t, i), expect(op, i));
        }
    /* Reduce: in place at the root only, and only at root 0: MPICH 4.0 (Debian) crashes in
     * an in-place Reduce of a few thousand elements at another root. */
    in_place = in_place && rank == root && root == 0;
    for (long i = 0; i < count; i++)
        put(out, t, i, in_place ? get(in, t, i) : -99);
    MPI_Reduce(in_place ? MPI_IN_PLACE : in, out, (int)count, types[t], op, root,
               MPI_COMM_WORLD);
    bad = 0;
    for (long i = 0; rank == root && i < count && bad < 3; i++)
        if (get(out, t, i) != expect(op, i)) {
            bad++;
            CHECK(0, "Reduce %s %s count %ld root %d%s: [%ld] = %ld, expected %ld", opname(op), tnames[t], count,
                  root, in_place ? " in place" : "", i, get(out, t, i), expect(op, i));
        }
    free(in);
    free(out);
}

/* Allreduce and Reduce with the non-commutative user op on `triples` triples. */
static void check_noncommutative(MPI_Op seq, int triples, int root)
{
    int n = 3 * triples;
    int *in = malloc((n ? n : 1) * sizeof(int)), *out = malloc((n ? n : 1) * sizeof(int));
    for (int i = 0; i < n; i += 3) {
        in[i] = in[i + 1] = rank;
        in[i + 2] = 1;
    }
    MPI_Allreduce(in, out, n, MPI_INT, seq, MPI_COMM_WORLD);
    int bad = 0;
    for (int i = 0; i < n && bad < 3; i += 3)
        if (!(out[i] == 0 && out[i + 1] == size - 1 && out[i + 2] == 1)) {
            bad++;
            CHECK(0, "non-commutative Allreduce, %d triples: [%d] = (%d, %d, %d)", triples, i / 3, out[i], out[i + 1],
                  out[i + 2]);
        }
    MPI_Reduce(in, out, n, MPI_INT, seq, root, MPI_COMM_WORLD);
    bad = 0;
    for (int i = 0; rank == root && i < n && bad < 3; i += 3)
        if (!(out[i] == 0 && out[i + 1] == size - 1 && out[i + 2] == 1)) {
            bad++;
            CHECK(0, "non-commutative Reduce root %d, %d triples: [%d] = (%d, %d, %d)", root, triples, i / 3, out[i],
                  out[i + 1], out[i + 2]);
        }
    free(in);
    free(out);
}

static void check_bcast(long count, int t, int root)
{
    size_t bytes = (size_t)(count ? count : 1) * tsize[t];
    void *buf = malloc(bytes);
    for (long i = 0; i < count; i++)
        put(buf, t, i, rank == root ? val(root, i) : -99);
    MPI_Bcast(buf, (int)count, types[t], root, MPI_COMM_WORLD);
    int bad = 0;
    for (long i = 0; i < count && bad < 3; i++)
        if (get(buf, t, i) != val(root, i)) {
            bad++;
            CHECK(0, "Bcast %s count %ld root %d: [%ld] = %ld", tnames[t], count, root, i, get(buf, t, i));
        }
    free(buf);
}

/* Allgather of `count` ints per rank, and Allgatherv with rank r giving (r % 3) * count. */
static void check_allgather(int count, int in_place)
{
    int *out = malloc(((size_t)size * count + 1) * sizeof(int)), *in = malloc((count + 1) * sizeof(int));
    for (int i = 0; i < count; i++)
        in[i] = (int)val(rank, i) * 1000 + rank;
    for (int i = 0; i < size * count; i++)
        out[i] = (in_place && i / count == rank) ? in[i % count] : -99;
    MPI_Allgather(in_place ? MPI_IN_PLACE : in, count, MPI_INT, out, count, MPI_INT, MPI_COMM_WORLD);
    int bad = 0;
    for (int i = 0; i < size * count && bad < 3; i++)
        if (out[i] != (int)val(i / count, i % count) * 1000 + i / count) {
            bad++;
            CHECK(0, "Allgather count %d%s: [%d] = %d", count, in_place ? " in place" : "", i, out[i]);
        }
    free(out);
    free(in);
    int *counts = malloc(size * sizeof(int)), *displs = malloc(size * sizeof(int)), total = 0;
    for (int r = 0; r < size; r++) {
        counts[r] = (r % 3) * count;
        displs[r] = total;
        total += counts[r];
    }
    out = malloc((total + 1) * sizeof(int));
    in = malloc((counts[rank] + 1) * sizeof(int));
    for (int i = 0; i < counts[rank]; i++)
        in[i] = (int)val(rank, i) * 1000 + rank;
    for (int i = 0; i < total; i++)
        out[i] = -99;
    if (in_place)
        memcpy(out + displs[rank], in, counts[rank] * sizeof(int));
    MPI_Allgatherv(in_place ? MPI_IN_PLACE : in, counts[rank], MPI_INT, out, counts, displs, MPI_INT, MPI_COMM_WORLD);
    bad = 0;
    for (int r = 0; r < size; r++)
        for (int i = 0; i < counts[r] && bad < 3; i++)
            if (out[displs[r] + i] != (int)val(r, i) * 1000 + r) {
                bad++;
                CHECK(0, "Allgatherv count %d%s: rank %d [%d] = %d", count, in_place ? " in place" : "", r, i,
                      out[displs[r] + i]);
            }
    free(out);
    free(in);
    free(counts);
    free(displs);
}

/* What rank `from` sends rank `to` at element i of their block. */
static int a2a(int from, int to, int i)
{
    return from * 100000 + to * 1000 + i % 1000;
}

/* Alltoall of `count` ints per pair, and Alltoallv with (from + to) % 3 * count per pair. */
static void check_alltoall(int count, int in_place)
{
    size_t n = (size_t)size * count + 1;
    int *in = malloc(n * sizeof(int)), *out = malloc(n * sizeof(int));
    for (int j = 0; j < size; j++)
        for (int i = 0; i < count; i++) {
            in[j * count + i] = a2a(rank, j, i);
            out[j * count + i] = in_place ? in[j * count + i] : -99;
        }
    MPI_Alltoall(in_place ? MPI_IN_PLACE : in, count, MPI_INT, out, count, MPI_INT, MPI_COMM_WORLD);
    int bad = 0;
    for (int j = 0; j < size; j++)
        for (int i = 0; i < count && bad < 3; i++)
            if (out[j * count + i] != a2a(j, rank, i)) {
                bad++;
                CHECK(0, "Alltoall count %d%s: from %d [%d] = %d", count, in_place ? " in place" : "", j, i,
                      out[j * count + i]);
            }
    free(in);
    free(out);
    int *sc = malloc(size * sizeof(int)), *sd = malloc(size * sizeof(int)), *rc = malloc(size * sizeof(int)),
        *rd = malloc(size * sizeof(int)), st = 0, rt = 0;
    for (int j = 0; j < size; j++) {
        sc[j] = (rank + j) % 3 * count;
        rc[j] = (j + rank) % 3 * count;
        sd[j] = st;
        rd[j] = rt;
        st += sc[j];
        rt += rc[j];
    }
    in = malloc((st + 1) * sizeof(int));
    out = malloc((rt + 1) * sizeof(int));
    for (int j = 0; j < size; j++)
        for (int i = 0; i < sc[j]; i++)
            in[sd[j] + i] = a2a(rank, j, i);
    for (int i = 0; i < rt; i++)
        out[i] = -99;
    if (in_place)
        memcpy(out, in, rt * sizeof(int)); /* sc == rc here, so the layouts agree */
    MPI_Alltoallv(in_place ? MPI_IN_PLACE : in, sc, sd, MPI_INT, out, rc, rd, MPI_INT, MPI_COMM_WORLD);
    bad = 0;
    for (int j = 0; j < size; j++)
        for (int i = 0; i < rc[j] && bad < 3; i++)
            if (out[rd[j] + i] != a2a(j, rank, i)) {
                bad++;
                CHECK(0, "Alltoallv count %d%s: from %d [%d] = %d", count, in_place ? " in place" : "", j, i,
                      out[rd[j] + i]);
            }
    free(in);
    free(out);
    free(sc);
    free(sd);
    free(rc);
    free(rd);
}

/* Reduce_scatter_block with `count` per rank and Reduce_scatter with (r % 3) * count, SUM
 * or MAX on type t, in place or not. */
static void check_reduce_scatter(int count, int t, MPI_Op op, int in_place)
{
    int *counts = malloc(size * sizeof(int));
    for (int pass = 0; pass < 2; pass++) {
        long total = 0, start = 0;
        for (int r = 0; r < size; r++) {
            counts[r] = pass == 0 ? count : (r % 3) * count;
            if (r < rank)
                start += counts[r];
            total += counts[r];
        }
        void *in = malloc((total + 1) * tsize[t]), *out = malloc((total + 1) * tsize[t]);
        for (long i = 0; i < total; i++) {
            put(in, t, i, val(rank, i));
            put(out, t, i, -99);
        }
        void *res = in_place ? in : out;
        if (pass == 0)
            MPI_Reduce_scatter_block(in_place ? MPI_IN_PLACE : in, res, count, types[t], op, MPI_COMM_WORLD);
        else
            MPI_Reduce_scatter(in_place ? MPI_IN_PLACE : in, res, counts, types[t], op, MPI_COMM_WORLD);
        int bad = 0;
        for (long k = 0; k < counts[rank] && bad < 3; k++)
            if (get(res, t, k) != expect(op, start + k)) {
                bad++;
                CHECK(0, "Reduce_scatter%s %s %s count %d%s: [%ld] = %ld, expected %ld", pass == 0 ? "_block" : "",
                      opname(op), tnames[t], count, in_place ? " in place" : "", k, get(res, t, k),
                      expect(op, start + k));
            }
        free(in);
        free(out);
    }
    free(counts);
}

static void check_noncommutative_reduce_scatter(MPI_Op seq, int triples)
{
    int n = 3 * triples;
    int *t = malloc(((size_t)size * n + 1) * sizeof(int)), *tout = malloc((n + 1) * sizeof(int));
    for (int i = 0; i < size * n; i += 3) {
        t[i] = t[i + 1] = rank;
        t[i + 2] = 1;
    }
    MPI_Reduce_scatter_block(t, tout, n, MPI_INT, seq, MPI_COMM_WORLD);
    int bad = 0;
    for (int k = 0; k < n && bad < 3; k += 3)
        if (!(tout[k] == 0 && tout[k + 1] == size - 1 && tout[k + 2] == 1)) {
            bad++;
            CHECK(0, "non-commutative Reduce_scatter_block, %d triples: [%d] = (%d, %d, %d)", triples, k / 3, tout[k],
                  tout[k + 1], tout[k + 2]);
        }
    free(t);
    free(tout);
}

/* Gather and Scatter of `count` ints per rank at `root`, in place at the root or not. */
static void check_gather_scatter(int count, int root, int in_place)
{
    size_t n = (size_t)size * count + 1;
    int *all = malloc(n * sizeof(int)), *mine = malloc((count + 1) * sizeof(int));
    for (int i = 0; i < count; i++)
        mine[i] = a2a(rank, root, i);
    for (size_t i = 0; i < n; i++)
        all[i] = -99;
    int ip = in_place && rank == root;
    if (ip)
        memcpy(all + (size_t)root * count, mine, count * sizeof(int));
    MPI_Gather(ip ? MPI_IN_PLACE : mine, count, MPI_INT, all, count, MPI_INT, root, MPI_COMM_WORLD);
    int bad = 0;
    for (int j = 0; rank == root && j < size; j++)
        for (int i = 0; i < count && bad < 3; i++)
            if (all[j * count + i] != a2a(j, root, i)) {
                bad++;
                CHECK(0, "Gather count %d root %d%s: from %d [%d] = %d", count, root, ip ? " in place" : "", j, i,
                      all[j * count + i]);
            }
    /* Scatter: the root sends rank j a2a(root, j, i). */
    for (int j = 0; j < size; j++)
        for (int i = 0; i < count; i++)
            all[j * count + i] = a2a(root, j, i);
    for (int i = 0; i < count; i++)
        mine[i] = -99;
    MPI_Scatter(all, count, MPI_INT, ip ? MPI_IN_PLACE : mine, count, MPI_INT, root, MPI_COMM_WORLD);
    bad = 0;
    const int *got = ip ? all + (size_t)root * count : mine;
    for (int i = 0; i < count && bad < 3; i++)
        if (got[i] != a2a(root, rank, i)) {
            bad++;
            CHECK(0, "Scatter count %d root %d%s: [%d] = %d", count, root, ip ? " in place" : "", i, got[i]);
        }
    free(all);
    free(mine);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    static const long counts[] = {0, 1, 37, 1001, 300001};
    const int ncounts = sizeof counts / sizeof counts[0];
    static const MPI_Op ops[] = {MPI_SUM, MPI_MAX, MPI_MIN, MPI_PROD, MPI_BOR};

    for (int c = 0; c < ncounts; c++)
        for (int t = 0; t < 3; t++)
            for (int o = 0; o < 5; o++) {
                if (ops[o] == MPI_BOR && t == T_DOUBLE)
                    continue;
                /* The large count: SUM on every type, the rest on one. */
                if (counts[c] > 100000 && o > 0 && t != T_LONG)
                    continue;
                check_reduce(counts[c], t, ops[o], (c + t + o) % 2, (c + o) % size);
            }
    check_reduce(300001, T_DOUBLE, MPI_SUM, 1, size - 1);

    MPI_Op seq;
    MPI_Op_create(seq_op, 0, &seq);
    check_noncommutative(seq, 1, size - 1);
    check_noncommutative(seq, 37, 0);
    check_noncommutative(seq, 2000, size / 2);
    check_noncommutative(seq, 100001, size - 1);

    for (int c = 0; c < ncounts; c++) {
        check_bcast(counts[c], T_INT, 0);
        check_bcast(counts[c], c % 2 ? T_DOUBLE : T_LONG, size - 1);
    }
    check_bcast(3, T_INT, size / 2);
    check_bcast(1, T_INT, size / 2);

    static const int gcounts[] = {0, 1, 37, 3001, 40000};
    for (int c = 0; c < 5; c++) {
        check_allgather(gcounts[c], 0);
        check_allgather(gcounts[c], 1);
    }
    static const int acounts[] = {0, 1, 37, 20000};
    for (int c = 0; c < 4; c++) {
        check_alltoall(acounts[c], 0);
        check_alltoall(acounts[c], 1);
    }
    static const int scounts[] = {0, 1, 37, 3001, 30000};
    for (int c = 0; c < 5; c++)
        for (int k = 0; k < 3; k++)
            check_gather_scatter(scounts[c], k == 0 ? 0 : k == 1 ? size - 1 : size / 2, (c + k) % 2);
    static const int rcounts[] = {0, 1, 37, 50001};
    for (int c = 0; c < 4; c++) {
        check_reduce_scatter(rcounts[c], T_INT, MPI_SUM, 0);
        check_reduce_scatter(rcounts[c], T_DOUBLE, MPI_MAX, rcounts[c] < 1000);
        /* Not in place at the large count: MPICH 4.0 (Debian) asserts on its own memcpy there. */
        check_reduce_scatter(rcounts[c], T_LONG, MPI_BOR, c == 1);
    }
    check_noncommutative_reduce_scatter(seq, 1);
    check_noncommutative_reduce_scatter(seq, 5000);
    MPI_Op_free(&seq);
    return coll_finish();
}
