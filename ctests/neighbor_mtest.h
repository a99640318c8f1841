/* Shared driver of the neighbourhood collective tests: on a communicator with a topology, runs
 * MPI_Neighbor_allgather, _allgatherv, _alltoall, _alltoallv and _alltoallw blocking,
 * nonblocking (MPI_Ineighbor_*) and persistent (MPI_Neighbor_*_init, started twice with new
 * data), each in the int and the large-count (_c) form, and checks every receive buffer
 * exactly: blocks from MPI_PROC_NULL and the gaps between blocks keep their sentinel.
 *
 * Which send block lands in receive block i: on a Cartesian grid, the sender's block i ^ 1
 * (its negative-direction block arrives from our positive side and the reverse); on graphs,
 * the k-th occurrence of a source s in our source list is matched with the k-th occurrence of
 * us in s's destination list (messages between a pair match in order). The destination lists
 * of every rank are gathered first, so lists in any order (MPI_Dist_graph_create) work. */
#ifndef NEIGHBOR_MTEST_H
#define NEIGHBOR_MTEST_H

#include "comm_mtest.h"
#include <string.h>

/* The harness defines MT_OXMPI=1 when testing oxmpi; checks that MPICH 4.0.2 fails are made
 * only then (see nb_tolerated). */
#ifndef MT_OXMPI
#define MT_OXMPI 0
#endif

#define NB_SENTINEL (-7)
#define NB_C 2 /* count of the allgather and alltoall forms */

typedef struct {
    MPI_Comm comm;
    const char *name;
    int rank, indeg, outdeg;
    int *src, *dst; /* MPI_PROC_NULL allowed */
    int *src_index; /* for receive block i: the index of the matching block in src[i]'s sends */
    int repeated;   /* some rank has a neighbour twice in a list */
    int lopsided;   /* some rank has indegree != outdegree */
} nb_topo;

/* Value of element e sent by `s` in its send block j, in round `round`. */
static inline int nb_val(int s, int j, int round, int e)
{
    return 1 + ((s * 32 + j) * 4 + round) * 8 + e;
}

/* Count of block j sent by s in the v and w forms (1..3). */
static inline int nb_cnt(int s, int j)
{
    return 1 + (s + 2 * j) % 3;
}

/* Graph topologies: the lists, and for each receive block the matching send block of its
 * source (everyone's destination lists are gathered to pair repeated edges). */
static inline void nb_pair_edges(nb_topo *t, MPI_Comm comm, int size, const char *name)
{
    int kind;
    MPI_Topo_test(comm, &kind);
    if (kind == MPI_GRAPH) {
        int n;
        MPI_Graph_neighbors_count(comm, t->rank, &n);
        t->indeg = t->outdeg = n;
        t->src = malloc((n + 1) * sizeof(int));
        t->dst = malloc((n + 1) * sizeof(int));
        MPI_Graph_neighbors(comm, t->rank, n, t->src);
        memcpy(t->dst, t->src, n * sizeof(int));
    } else {
        int w;
        MPI_Dist_graph_neighbors_count(comm, &t->indeg, &t->outdeg, &w);
        t->src = malloc((t->indeg + 1) * sizeof(int));
        t->dst = malloc((t->outdeg + 1) * sizeof(int));
        MPI_Dist_graph_neighbors(comm, t->indeg, t->src, MPI_UNWEIGHTED, t->outdeg, t->dst, MPI_UNWEIGHTED);
    }
    /* Everyone's destination lists, to pair repeated edges. */
    int *outdegs = malloc(size * sizeof(int)), *offs = malloc(size * sizeof(int));
    MPI_Allgather(&t->outdeg, 1, MPI_INT, outdegs, 1, MPI_INT, comm);
    int total = 0;
    for (int p = 0; p < size; p++) {
        offs[p] = total;
        total += outdegs[p];
    }
    int *all = malloc((total + 1) * sizeof(int));
    MPI_Allgatherv(t->dst, t->outdeg, MPI_INT, all, outdegs, offs, MPI_INT, comm);
    t->src_index = malloc((t->indeg + 1) * sizeof(int));
    for (int i = 0; i < t->indeg; i++) {
        int s = t->src[i], k = 0, j;
        for (int q = 0; q < i; q++)
            k += t->src[q] == s;
        t->src_index[i] = -1;
        for (j = 0; j < outdegs[s]; j++)
            if (all[offs[s] + j] == t->rank && k-- == 0) {
                t->src_index[i] = j;
                break;
            }
        CM_CHECK(t->src_index[i] >= 0, "%s: source %d does not list rank %d as a destination", name, s, t->rank);
    }
    free(all);
    free(outdegs);
    free(offs);
}

/* Fills t from the topology of t->comm. */
static inline void nb_describe(nb_topo *t, MPI_Comm comm, const char *name)
{
    int kind, size;
    t->comm = comm;
    t->name = name;
    MPI_Comm_rank(comm, &t->rank);
    MPI_Comm_size(comm, &size);
    MPI_Topo_test(comm, &kind);
    if (kind == MPI_CART) {
        int nd;
        MPI_Cartdim_get(comm, &nd);
        t->indeg = t->outdeg = 2 * nd;
        t->src = malloc((2 * nd + 1) * sizeof(int));
        t->dst = malloc((2 * nd + 1) * sizeof(int));
        t->src_index = malloc((2 * nd + 1) * sizeof(int));
        for (int d = 0; d < nd; d++) {
            int lo, hi;
            MPI_Cart_shift(comm, d, 1, &lo, &hi);
            t->src[2 * d] = t->dst[2 * d] = lo;
            t->src[2 * d + 1] = t->dst[2 * d + 1] = hi;
        }
        for (int i = 0; i < t->indeg; i++)
            t->src_index[i] = i ^ 1;
    } else {
        nb_pair_edges(t, comm, size, name);
    }
    /* Properties of the whole topology, for nb_tolerated. */
    int mine[2] = {0, t->indeg != t->outdeg}, all[2];
    for (int i = 0; i < t->indeg; i++)
        for (int k = 0; k < i; k++)
            mine[0] |= t->src[i] != MPI_PROC_NULL && t->src[i] == t->src[k];
    for (int i = 0; i < t->outdeg; i++)
        for (int k = 0; k < i; k++)
            mine[0] |= t->dst[i] != MPI_PROC_NULL && t->dst[i] == t->dst[k];
    MPI_Allreduce(mine, all, 2, MPI_INT, MPI_MAX, comm);
    t->repeated = all[0];
    t->lopsided = all[1];
}

static inline void nb_forget(nb_topo *t)
{
    free(t->src);
    free(t->dst);
    free(t->src_index);
}

enum { NB_ALLGATHER, NB_ALLGATHERV, NB_ALLTOALL, NB_ALLTOALLV, NB_ALLTOALLW, NB_KINDS };
enum { NB_BLOCKING, NB_NONBLOCKING, NB_PERSISTENT, NB_MODES };
static const char *nb_kind_name[] = {"allgather", "allgatherv", "alltoall", "alltoallv", "alltoallw"};
static const char *nb_mode_name[] = {"blocking", "nonblocking", "persistent"};

/* The buffers and argument arrays of one call (int and large-count copies of each array). */
typedef struct {
    int *sbuf, *rbuf, *expect;
    int slen, rlen;
    int scount, *scounts, *sdispls, *rcounts, *rdispls;
    MPI_Count *scounts_c, *rcounts_c;
    MPI_Aint *sdispls_c, *rdispls_c, *sbytes, *rbytes;
    MPI_Datatype *stypes, *rtypes;
} nb_args;

/* Count a source sends to us, per kind (PROC_NULL sources: any count, 2). */
static inline int nb_recv_count(const nb_topo *t, int kind, int i)
{
    int s = t->src[i];
    if (s == MPI_PROC_NULL)
        return NB_C;
    if (kind == NB_ALLGATHERV)
        return nb_cnt(s, 0);
    if (kind == NB_ALLTOALLV || kind == NB_ALLTOALLW)
        return nb_cnt(s, t->src_index[i]);
    return NB_C;
}

static inline void nb_setup(const nb_topo *t, int kind, nb_args *a)
{
    int in = t->indeg, out = t->outdeg;
    a->scounts = malloc((out + 1) * sizeof(int));
    a->sdispls = malloc((out + 1) * sizeof(int));
    a->scounts_c = malloc((out + 1) * sizeof(MPI_Count));
    a->sdispls_c = malloc((out + 1) * sizeof(MPI_Aint));
    a->sbytes = malloc((out + 1) * sizeof(MPI_Aint));
    a->stypes = malloc((out + 1) * sizeof(MPI_Datatype));
    a->rcounts = malloc((in + 1) * sizeof(int));
    a->rdispls = malloc((in + 1) * sizeof(int));
    a->rcounts_c = malloc((in + 1) * sizeof(MPI_Count));
    a->rdispls_c = malloc((in + 1) * sizeof(MPI_Aint));
    a->rbytes = malloc((in + 1) * sizeof(MPI_Aint));
    a->rtypes = malloc((in + 1) * sizeof(MPI_Datatype));
    /* Send side: blocks with a gap of one element between them (v and w forms). */
    int pos = 0;
    a->scount = kind == NB_ALLGATHERV ? nb_cnt(t->rank, 0) : NB_C;
    for (int j = 0; j < out; j++) {
        int c = (kind == NB_ALLTOALLV || kind == NB_ALLTOALLW) ? nb_cnt(t->rank, j) : NB_C;
        a->scounts[j] = c;
        a->sdispls[j] = kind == NB_ALLTOALL ? j * NB_C : pos + 1;
        pos = a->sdispls[j] + c;
        a->stypes[j] = MPI_INT;
    }
    a->slen = kind <= NB_ALLGATHERV ? a->scount : pos + 1;
    /* Receive side: the same gaps; alltoallw receives into every other int (a vector type). */
    pos = 0;
    for (int i = 0; i < in; i++) {
        int c = nb_recv_count(t, kind, i);
        a->rcounts[i] = c;
        if (kind == NB_ALLGATHER || kind == NB_ALLTOALL)
            a->rdispls[i] = i * NB_C;
        else
            a->rdispls[i] = pos + 1;
        pos = a->rdispls[i] + (kind == NB_ALLTOALLW ? 2 * c : c);
        a->rtypes[i] = MPI_INT;
        if (kind == NB_ALLTOALLW) {
            MPI_Type_vector(c, 1, 2, MPI_INT, &a->rtypes[i]);
            MPI_Type_commit(&a->rtypes[i]);
            a->rcounts[i] = 1;
        }
    }
    a->rlen = pos + 1;
    for (int j = 0; j < out; j++) {
        a->scounts_c[j] = a->scounts[j];
        a->sdispls_c[j] = a->sdispls[j];
        a->sbytes[j] = (MPI_Aint)a->sdispls[j] * sizeof(int);
    }
    for (int i = 0; i < in; i++) {
        a->rcounts_c[i] = a->rcounts[i];
        a->rdispls_c[i] = a->rdispls[i];
        a->rbytes[i] = (MPI_Aint)a->rdispls[i] * sizeof(int);
    }
    a->sbuf = malloc((a->slen + 1) * sizeof(int));
    a->rbuf = malloc((a->rlen + 1) * sizeof(int));
    a->expect = malloc((a->rlen + 1) * sizeof(int));
}

static inline void nb_teardown(const nb_topo *t, int kind, nb_args *a)
{
    if (kind == NB_ALLTOALLW)
        for (int i = 0; i < t->indeg; i++)
            MPI_Type_free(&a->rtypes[i]);
    free(a->scounts), free(a->sdispls), free(a->scounts_c), free(a->sdispls_c), free(a->sbytes), free(a->stypes);
    free(a->rcounts), free(a->rdispls), free(a->rcounts_c), free(a->rdispls_c), free(a->rbytes), free(a->rtypes);
    free(a->sbuf), free(a->rbuf), free(a->expect);
}

/* Send data of `round`, a receive buffer of sentinels, and the expected result. */
static inline void nb_fill(const nb_topo *t, int kind, nb_args *a, int round)
{
    for (int k = 0; k < a->slen; k++)
        a->sbuf[k] = NB_SENTINEL;
    if (kind <= NB_ALLGATHERV)
        for (int e = 0; e < a->scount; e++)
            a->sbuf[e] = nb_val(t->rank, 0, round, e);
    else
        for (int j = 0; j < t->outdeg; j++)
            for (int e = 0; e < a->scounts[j]; e++)
                a->sbuf[a->sdispls[j] + e] = nb_val(t->rank, j, round, e);
    for (int k = 0; k < a->rlen; k++)
        a->rbuf[k] = a->expect[k] = NB_SENTINEL;
    for (int i = 0; i < t->indeg; i++) {
        int s = t->src[i];
        if (s == MPI_PROC_NULL)
            continue;
        int j = kind <= NB_ALLGATHERV ? 0 : t->src_index[i];
        int c = nb_recv_count(t, kind, i), stride = kind == NB_ALLTOALLW ? 2 : 1;
        for (int e = 0; e < c; e++)
            a->expect[a->rdispls[i] + e * stride] = nb_val(s, j, round, e);
    }
}

/* Results that MPICH 4.0.2 gets wrong, checked on oxmpi only: with a neighbour repeated in a
 * list, MPICH pairs the blocks of the all-to-all forms in another order (on Cartesian grids
 * with periodic extents 1 and 2 by list order instead of by direction; on multigraphs
 * alltoall differs from alltoallv); and MPI_Neighbor_alltoallw (int form) converts the send
 * counts for indegree entries and the receive counts for outdegree entries, so ranks whose
 * degrees differ send or receive wrong amounts. */
static inline int nb_tolerated(const nb_topo *t, int kind, int wide)
{
    if (MT_OXMPI)
        return 0;
    return (kind >= NB_ALLTOALL && t->repeated) || (kind == NB_ALLTOALLW && !wide && t->lopsided);
}

static inline void nb_check(const nb_topo *t, int kind, int mode, int wide, const nb_args *a, int round)
{
    if (nb_tolerated(t, kind, wide))
        return;
    for (int k = 0; k < a->rlen; k++)
        if (a->rbuf[k] != a->expect[k]) {
            CM_CHECK(0, "%s: %s %s%s round %d: recvbuf[%d] = %d, expected %d", t->name, nb_kind_name[kind],
                     nb_mode_name[mode], wide ? " (_c)" : "", round, k, a->rbuf[k], a->expect[k]);
            return;
        }
}

/* Calls the collective of `kind` in `mode` (int or _c form); `req` for the other modes. */
static inline int nb_call(const nb_topo *t, int kind, int mode, int wide, nb_args *a, MPI_Request *req)
{
    MPI_Comm c = t->comm;
    MPI_Info i = MPI_INFO_NULL;
    void *s = a->sbuf, *r = a->rbuf;
#define NB_PICK(blocking, nonblocking, persistent)                                                                    \
    (mode == NB_BLOCKING ? (blocking) : mode == NB_NONBLOCKING ? (nonblocking) : (persistent))
    switch (kind) {
    case NB_ALLGATHER:
        if (wide)
            return NB_PICK(MPI_Neighbor_allgather_c(s, a->scount, MPI_INT, r, NB_C, MPI_INT, c),
                           MPI_Ineighbor_allgather_c(s, a->scount, MPI_INT, r, NB_C, MPI_INT, c, req),
                           MPI_Neighbor_allgather_init_c(s, a->scount, MPI_INT, r, NB_C, MPI_INT, c, i, req));
        return NB_PICK(MPI_Neighbor_allgather(s, a->scount, MPI_INT, r, NB_C, MPI_INT, c),
                       MPI_Ineighbor_allgather(s, a->scount, MPI_INT, r, NB_C, MPI_INT, c, req),
                       MPI_Neighbor_allgather_init(s, a->scount, MPI_INT, r, NB_C, MPI_INT, c, i, req));
    case NB_ALLGATHERV:
        if (wide)
            return NB_PICK(
                MPI_Neighbor_allgatherv_c(s, a->scount, MPI_INT, r, a->rcounts_c, a->rdispls_c, MPI_INT, c),
                MPI_Ineighbor_allgatherv_c(s, a->scount, MPI_INT, r, a->rcounts_c, a->rdispls_c, MPI_INT, c, req),
                MPI_Neighbor_allgatherv_init_c(s, a->scount, MPI_INT, r, a->rcounts_c, a->rdispls_c, MPI_INT, c, i,
                                               req));
        return NB_PICK(
            MPI_Neighbor_allgatherv(s, a->scount, MPI_INT, r, a->rcounts, a->rdispls, MPI_INT, c),
            MPI_Ineighbor_allgatherv(s, a->scount, MPI_INT, r, a->rcounts, a->rdispls, MPI_INT, c, req),
            MPI_Neighbor_allgatherv_init(s, a->scount, MPI_INT, r, a->rcounts, a->rdispls, MPI_INT, c, i, req));
    case NB_ALLTOALL:
        if (wide)
            return NB_PICK(MPI_Neighbor_alltoall_c(s, NB_C, MPI_INT, r, NB_C, MPI_INT, c),
                           MPI_Ineighbor_alltoall_c(s, NB_C, MPI_INT, r, NB_C, MPI_INT, c, req),
                           MPI_Neighbor_alltoall_init_c(s, NB_C, MPI_INT, r, NB_C, MPI_INT, c, i, req));
        return NB_PICK(MPI_Neighbor_alltoall(s, NB_C, MPI_INT, r, NB_C, MPI_INT, c),
                       MPI_Ineighbor_alltoall(s, NB_C, MPI_INT, r, NB_C, MPI_INT, c, req),
                       MPI_Neighbor_alltoall_init(s, NB_C, MPI_INT, r, NB_C, MPI_INT, c, i, req));
    case NB_ALLTOALLV:
        if (wide)
            return NB_PICK(MPI_Neighbor_alltoallv_c(s, a->scounts_c, a->sdispls_c, MPI_INT, r, a->rcounts_c,
                                                    a->rdispls_c, MPI_INT, c),
                           MPI_Ineighbor_alltoallv_c(s, a->scounts_c, a->sdispls_c, MPI_INT, r, a->rcounts_c,
                                                     a->rdispls_c, MPI_INT, c, req),
                           MPI_Neighbor_alltoallv_init_c(s, a->scounts_c, a->sdispls_c, MPI_INT, r, a->rcounts_c,
                                                         a->rdispls_c, MPI_INT, c, i, req));
        return NB_PICK(
            MPI_Neighbor_alltoallv(s, a->scounts, a->sdispls, MPI_INT, r, a->rcounts, a->rdispls, MPI_INT, c),
            MPI_Ineighbor_alltoallv(s, a->scounts, a->sdispls, MPI_INT, r, a->rcounts, a->rdispls, MPI_INT, c, req),
            MPI_Neighbor_alltoallv_init(s, a->scounts, a->sdispls, MPI_INT, r, a->rcounts, a->rdispls, MPI_INT, c, i,
                                        req));
    default:
        if (wide)
            return NB_PICK(MPI_Neighbor_alltoallw_c(s, a->scounts_c, a->sbytes, a->stypes, r, a->rcounts_c,
                                                    a->rbytes, a->rtypes, c),
                           MPI_Ineighbor_alltoallw_c(s, a->scounts_c, a->sbytes, a->stypes, r, a->rcounts_c,
                                                     a->rbytes, a->rtypes, c, req),
                           MPI_Neighbor_alltoallw_init_c(s, a->scounts_c, a->sbytes, a->stypes, r, a->rcounts_c,
                                                         a->rbytes, a->rtypes, c, i, req));
        return NB_PICK(
            MPI_Neighbor_alltoallw(s, a->scounts, a->sbytes, a->stypes, r, a->rcounts, a->rbytes, a->rtypes, c),
            MPI_Ineighbor_alltoallw(s, a->scounts, a->sbytes, a->stypes, r, a->rcounts, a->rbytes, a->rtypes, c,
                                    req),
            MPI_Neighbor_alltoallw_init(s, a->scounts, a->sbytes, a->stypes, r, a->rcounts, a->rbytes, a->rtypes, c,
                                        i, req));
    }
#undef NB_PICK
}

static inline void nb_run(const nb_topo *t, int kind, int mode, int wide)
{
    nb_args a;
    MPI_Request req = MPI_REQUEST_NULL;
    nb_setup(t, kind, &a);
    nb_fill(t, kind, &a, 0);
    int rc = nb_call(t, kind, mode, wide, &a, &req);
    CM_CHECK(rc == MPI_SUCCESS, "%s: %s %s%s returned %d", t->name, nb_kind_name[kind], nb_mode_name[mode],
             wide ? " (_c)" : "", rc);
    if (rc == MPI_SUCCESS) {
        int rounds = mode == NB_PERSISTENT ? 2 : 1;
        for (int round = 0; round < rounds; round++) {
            if (round > 0)
                nb_fill(t, kind, &a, round);
            if (mode == NB_PERSISTENT)
                CM_OK(MPI_Start(&req));
            if (mode != NB_BLOCKING)
                CM_OK(MPI_Wait(&req, MPI_STATUS_IGNORE));
            nb_check(t, kind, mode, wide, &a, round);
        }
        if (mode == NB_PERSISTENT)
            CM_OK(MPI_Request_free(&req));
    }
    nb_teardown(t, kind, &a);
}

/* Two nonblocking neighbourhood collectives in flight at once, completed in reverse order. */
static inline void nb_overlap(const nb_topo *t)
{
    nb_args a, b;
    MPI_Request req[2];
    nb_setup(t, NB_ALLTOALLV, &a);
    nb_setup(t, NB_ALLGATHER, &b);
    nb_fill(t, NB_ALLTOALLV, &a, 1);
    nb_fill(t, NB_ALLGATHER, &b, 2);
    CM_OK(nb_call(t, NB_ALLTOALLV, NB_NONBLOCKING, 0, &a, &req[0]));
    CM_OK(nb_call(t, NB_ALLGATHER, NB_NONBLOCKING, 0, &b, &req[1]));
    CM_OK(MPI_Wait(&req[1], MPI_STATUS_IGNORE));
    CM_OK(MPI_Wait(&req[0], MPI_STATUS_IGNORE));
    nb_check(t, NB_ALLTOALLV, NB_NONBLOCKING, 0, &a, 1);
    nb_check(t, NB_ALLGATHER, NB_NONBLOCKING, 0, &b, 2);
    nb_teardown(t, NB_ALLTOALLV, &a);
    nb_teardown(t, NB_ALLGATHER, &b);
}

/* Every collective in every mode and width on `comm` (MPI_COMM_NULL: not a member). */
static inline void nb_run_all(MPI_Comm comm, const char *name)
{
    if (comm == MPI_COMM_NULL)
        return;
    nb_topo t;
    nb_describe(&t, comm, name);
    for (int kind = 0; kind < NB_KINDS; kind++)
        for (int mode = 0; mode < NB_MODES; mode++)
            for (int wide = 0; wide < 2; wide++)
                nb_run(&t, kind, mode, wide);
    nb_overlap(&t);
    nb_forget(&t);
}

#endif
