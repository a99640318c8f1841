/*
 * Body of the coll_shm_rooted*.c tests: MPI_Gather and MPI_Scatter (and MPI_Allgather(v),
 * MPI_Alltoall, MPI_Reduce_scatter(_block), further down) with small blocks, which
 * on one node go through the shared-memory lanes (every member's block in its own lane entry
 * for gather; the root's entry holding every other member's block for scatter, up to 2048
 * bytes). Results checked for block sizes around a lane line (56 bytes), blocks straddling
 * lines, totals around the lane's limit (2048 bytes), every root, MPI_IN_PLACE at the root,
 * non-contiguous datatypes on either side, bursts of thousands of calls without
 * synchronisation (the lane ring of 4096 lines wraps many times, with changing roots and
 * sizes), interleaving with bcast/reduce/allreduce/barrier on the same and on a duplicated
 * communicator, a split communicator whose ranks are not in world order, and nonblocking
 * gathers/scatters in flight meanwhile. The including file sets the environment.
 */
#include "mtest.h"
#include <string.h>
#include <unistd.h>

static int val(int rank, int iter, int i)
{
    return (rank + 1) * 100000 + iter * 31 + i;
}

/* Gather and scatter of `count` ints per rank at every root, `iters` times. */
static void check_rooted(MPI_Comm comm, int count, int iters, int in_place)
{
    int rank, size, root, it, i, j;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    int *mine = mt_malloc(sizeof(int) * (count + 1));
    int *all = mt_malloc(sizeof(int) * ((size_t)count * size + 1));
    for (it = 0; it < iters; it++)
        for (root = 0; root < size; root++) {
            /* gather */
            for (i = 0; i < count; i++)
                mine[i] = val(rank, it + root, i);
            for (i = 0; i < count * size; i++)
                all[i] = -1;
            if (in_place && rank == root) {
                for (i = 0; i < count; i++)
                    all[root * count + i] = mine[i];
                MPI_Gather(MPI_IN_PLACE, count, MPI_INT, all, count, MPI_INT, root, comm);
            } else {
                MPI_Gather(mine, count, MPI_INT, all, count, MPI_INT, root, comm);
            }
            if (rank == root)
                for (j = 0; j < size; j++)
                    for (i = 0; i < count; i++)
                        CHECK(all[j * count + i] == val(j, it + root, i),
                              "gather count %d root %d iter %d in_place %d: block %d [%d] = %d, want %d", count,
                              root, it, in_place, j, i, all[j * count + i], val(j, it + root, i));
            /* scatter */
            if (rank == root)
                for (j = 0; j < size; j++)
                    for (i = 0; i < count; i++)
                        all[j * count + i] = val(j, it * 3 + root, i);
            for (i = 0; i < count; i++)
                mine[i] = -1;
            if (in_place && rank == root) {
                MPI_Scatter(all, count, MPI_INT, MPI_IN_PLACE, count, MPI_INT, root, comm);
                for (i = 0; i < count; i++)
                    mine[i] = all[root * count + i];
            } else {
                MPI_Scatter(all, count, MPI_INT, mine, count, MPI_INT, root, comm);
            }
            for (i = 0; i < count; i++)
                CHECK(mine[i] == val(rank, it * 3 + root, i),
                      "scatter count %d root %d iter %d in_place %d: [%d] = %d, want %d", count, root, it,
                      in_place, i, mine[i], val(rank, it * 3 + root, i));
        }
    free(mine);
    free(all);
}

static void test_sizes(MPI_Comm comm)
{
    int size;
    MPI_Comm_size(comm, &size);
    /* ints per rank: 1 int, a line's payload (14 ints), straddling, around the total limit */
    int counts[] = {1, 2, 13, 14, 15, 28, 29, 100, 2048 / 4 / size - 1, 2048 / 4 / size, 2048 / 4 / size + 1,
                    2048 / 4 / (size > 1 ? size - 1 : 1), 1000};
    int k;
    for (k = 0; k < (int)(sizeof(counts) / sizeof(counts[0])); k++) {
        if (counts[k] <= 0)
            continue;
        check_rooted(comm, counts[k], 2, 0);
        check_rooted(comm, counts[k], 1, 1);
    }
}

/* Thousands of gathers and scatters without synchronisation: roots run ahead, the ring wraps
   many times, sizes and roots change from call to call. Results are checked at the end of each
   batch (the root's gather results; every member's scatter results kept per call). */
static void test_bursts(MPI_Comm comm, int calls)
{
    int rank, size, c, i;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    int maxc = 64;
    int *mine = mt_malloc(sizeof(int) * maxc);
    int *all = mt_malloc(sizeof(int) * maxc * size);
    long bad = 0;
    for (c = 0; c < calls; c++) {
        int count = 1 + (c * 7) % 16; /* 4..64 bytes: one or two lines */
        int root = (c / 3) % size;
        for (i = 0; i < count; i++)
            mine[i] = val(rank, c, i);
        MPI_Gather(mine, count, MPI_INT, all, count, MPI_INT, root, comm);
        if (rank == root)
            for (i = 0; i < count * size; i++)
                bad += all[i] != val(i / count, c, i % count);
        if (rank == root)
            for (i = 0; i < count * size; i++)
                all[i] = val(i / count, c + 1, i % count);
        MPI_Scatter(all, count, MPI_INT, mine, count, MPI_INT, root, comm);
        for (i = 0; i < count; i++)
            bad += mine[i] != val(rank, c + 1, i);
        if (c % 1000 == 999) {
            /* a late rank: the others run ahead through the lane */
            if (rank == size - 1)
                usleep(2000);
        }
    }
    CHECK(bad == 0, "bursts: %ld wrong values", bad);
    free(mine);
    free(all);
}

/* Non-contiguous datatypes: a strided receive type at the gather root and a strided send type at
   the scatter root (each block count ints spread with a stride of 2), and a strided send type at
   gather members while the root receives contiguous ints. */
static void test_strided(MPI_Comm comm)
{
    int rank, size, root, i, j, count = 5;
    MPI_Datatype strided, resized;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    MPI_Type_vector(count, 1, 2, MPI_INT, &strided);
    MPI_Type_create_resized(strided, 0, (MPI_Aint)sizeof(int) * 2 * count, &resized);
    MPI_Type_commit(&strided);
    MPI_Type_commit(&resized);
    int *wide = mt_malloc(sizeof(int) * 2 * count * size);
    int mine[10], got[5];
    for (root = 0; root < size; root++) {
        for (i = 0; i < count; i++)
            mine[i] = val(rank, root, i);
        for (i = 0; i < 2 * count * size; i++)
            wide[i] = -7;
        MPI_Gather(mine, count, MPI_INT, wide, 1, resized, root, comm);
        if (rank == root)
            for (j = 0; j < size; j++)
                for (i = 0; i < 2 * count; i++)
                    CHECK(wide[j * 2 * count + i] == (i % 2 ? -7 : val(j, root, i / 2)),
                          "strided gather root %d block %d [%d] = %d", root, j, i, wide[j * 2 * count + i]);
        if (rank == root)
            for (j = 0; j < size; j++)
                for (i = 0; i < 2 * count; i++)
                    wide[j * 2 * count + i] = i % 2 ? -9 : val(j, root + 50, i / 2);
        MPI_Scatter(wide, 1, resized, got, count, MPI_INT, root, comm);
        for (i = 0; i < count; i++)
            CHECK(got[i] == val(rank, root + 50, i), "strided scatter root %d [%d] = %d", root, i, got[i]);
        /* strided at the members, contiguous at the root */
        for (i = 0; i < 2 * count; i++)
            mine[i] = i % 2 ? -3 : val(rank, root + 70, i / 2);
        for (i = 0; i < count * size; i++)
            wide[i] = -1;
        MPI_Gather(mine, 1, strided, wide, count, MPI_INT, root, comm);
        if (rank == root)
            for (j = 0; j < size; j++)
                for (i = 0; i < count; i++)
                    CHECK(wide[j * count + i] == val(j, root + 70, i), "member-strided gather root %d block %d [%d] = %d",
                          root, j, i, wide[j * count + i]);
        for (i = 0; i < 2 * count; i++)
            mine[i] = -5;
        if (rank == root)
            for (i = 0; i < count * size; i++)
                wide[i] = val(i / count, root + 90, i % count);
        MPI_Scatter(wide, count, MPI_INT, mine, 1, strided, root, comm);
        for (i = 0; i < 2 * count; i++)
            CHECK(mine[i] == (i % 2 ? -5 : val(rank, root + 90, i / 2)), "member-strided scatter root %d [%d] = %d",
                  root, i, mine[i]);
    }
    MPI_Type_free(&strided);
    MPI_Type_free(&resized);
    free(wide);
}

/* Gathers and scatters interleaved with the other lane/slot collectives on the same and on a
   duplicated communicator, with nonblocking gathers/scatters in flight on a third. */
static void test_interleaved(MPI_Comm comm)
{
    int rank, size, it, i;
    MPI_Comm dup, nbc;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    MPI_Comm_dup(comm, &dup);
    MPI_Comm_dup(comm, &nbc);
    int *all = mt_malloc(sizeof(int) * 4 * size);
    int *nball = mt_malloc(sizeof(int) * 3 * size);
    int *nbsc = mt_malloc(sizeof(int) * 3 * size);
    for (it = 0; it < 300; it++) {
        int root = it % size, v[4], out[4], nbmine[3], nbgot[3];
        MPI_Request reqs[2];
        MPI_Comm c = it % 2 ? dup : comm;
        for (i = 0; i < 3; i++)
            nbmine[i] = val(rank, it + 1000, i);
        if (rank == (it + 1) % size)
            for (i = 0; i < 3 * size; i++)
                nbsc[i] = val(i / 3, it + 2000, i % 3);
        MPI_Igather(nbmine, 3, MPI_INT, nball, 3, MPI_INT, (it + 1) % size, nbc, &reqs[0]);
        MPI_Iscatter(nbsc, 3, MPI_INT, nbgot, 3, MPI_INT, (it + 1) % size, nbc, &reqs[1]);
        for (i = 0; i < 4; i++)
            v[i] = val(rank, it, i);
        MPI_Gather(v, 4, MPI_INT, all, 4, MPI_INT, root, c);
        if (rank == root)
            for (i = 0; i < 4 * size; i++)
                CHECK(all[i] == val(i / 4, it, i % 4), "interleaved gather it %d [%d] = %d", it, i, all[i]);
        MPI_Bcast(v, 2, MPI_INT, (root + 1) % size, it % 3 ? dup : comm);
        CHECK(v[0] == val((root + 1) % size, it, 0), "interleaved bcast it %d: %d", it, v[0]);
        MPI_Allreduce(&rank, &out[0], 1, MPI_INT, MPI_SUM, c);
        CHECK(out[0] == size * (size - 1) / 2, "interleaved allreduce it %d: %d", it, out[0]);
        if (rank == root)
            for (i = 0; i < 4 * size; i++)
                all[i] = val(i / 4, it + 500, i % 4);
        MPI_Scatter(all, 4, MPI_INT, out, 4, MPI_INT, root, it % 3 ? comm : dup);
        for (i = 0; i < 4; i++)
            CHECK(out[i] == val(rank, it + 500, i), "interleaved scatter it %d [%d] = %d", it, i, out[i]);
        MPI_Reduce(&rank, &out[0], 1, MPI_INT, MPI_MAX, root, dup);
        CHECK(rank != root || out[0] == size - 1, "interleaved reduce it %d: %d", it, out[0]);
        if (it % 7 == 0)
            MPI_Barrier(c);
        MPI_Allgather(&it, 1, MPI_INT, all, 1, MPI_INT, it % 2 ? comm : dup);
        for (i = 0; i < size; i++)
            CHECK(all[i] == it, "interleaved allgather it %d [%d] = %d", it, i, all[i]);
        for (i = 0; i < size; i++)
            all[size + i] = rank * 1000 + i + it;
        MPI_Alltoall(all + size, 1, MPI_INT, all, 1, MPI_INT, it % 3 ? dup : comm);
        for (i = 0; i < size; i++)
            CHECK(all[i] == i * 1000 + rank + it, "interleaved alltoall it %d [%d] = %d", it, i, all[i]);
        MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE);
        if (rank == (it + 1) % size)
            for (i = 0; i < 3 * size; i++)
                CHECK(nball[i] == val(i / 3, it + 1000, i % 3), "igather it %d [%d] = %d", it, i, nball[i]);
        for (i = 0; i < 3; i++)
            CHECK(nbgot[i] == val(rank, it + 2000, i), "iscatter it %d [%d] = %d", it, i, nbgot[i]);
    }
    free(all);
    free(nball);
    free(nbsc);
    MPI_Comm_free(&dup);
    MPI_Comm_free(&nbc);
}

/* Allgather, allgatherv (varying counts, some zero) and alltoall of `count` ints per block,
   `iters` times, with and without MPI_IN_PLACE. */
static void check_exchange(MPI_Comm comm, int count, int iters)
{
    int rank, size, it, i, j, ip;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    int *mine = mt_malloc(sizeof(int) * (count * size + 1));
    int *all = mt_malloc(sizeof(int) * ((size_t)(count + 2) * size + 1));
    int *counts = mt_malloc(sizeof(int) * size), *displs = mt_malloc(sizeof(int) * size);
    for (it = 0; it < iters; it++)
        for (ip = 0; ip < 2; ip++) {
            /* allgather */
            for (i = 0; i < count; i++)
                mine[i] = val(rank, it, i);
            for (i = 0; i < count * size; i++)
                all[i] = ip && i / count == rank ? mine[i % count] : -1;
            MPI_Allgather(ip ? MPI_IN_PLACE : mine, count, MPI_INT, all, count, MPI_INT, comm);
            for (i = 0; i < count * size; i++)
                CHECK(all[i] == val(i / count, it, i % count), "allgather count %d it %d in_place %d [%d] = %d",
                      count, it, ip, i, all[i]);
            /* allgatherv: rank j contributes (count + j) % (count + 2) ints, displaced by one gap */
            int at = 0;
            for (j = 0; j < size; j++) {
                counts[j] = (count + j) % (count + 2);
                displs[j] = at + 1;
                at += counts[j] + 1;
            }
            for (i = 0; i < at + 1; i++)
                all[i] = -2;
            for (i = 0; i < counts[rank]; i++) {
                mine[i] = val(rank, it + 7, i);
                if (ip)
                    all[displs[rank] + i] = mine[i];
            }
            MPI_Allgatherv(ip ? MPI_IN_PLACE : mine, counts[rank], MPI_INT, all, counts, displs, MPI_INT, comm);
            for (j = 0; j < size; j++) {
                CHECK(all[displs[j] - 1] == -2, "allgatherv count %d gap before %d overwritten", count, j);
                for (i = 0; i < counts[j]; i++)
                    CHECK(all[displs[j] + i] == val(j, it + 7, i), "allgatherv count %d it %d in_place %d block %d [%d] = %d",
                          count, it, ip, j, i, all[displs[j] + i]);
            }
            /* alltoall: block j of rank r holds val(r * size + j, ...) */
            int *buf = ip ? all : mine;
            for (j = 0; j < size; j++)
                for (i = 0; i < count; i++)
                    buf[j * count + i] = val(rank * size + j, it, i);
            if (!ip)
                for (i = 0; i < count * size; i++)
                    all[i] = -3;
            MPI_Alltoall(ip ? MPI_IN_PLACE : mine, count, MPI_INT, all, count, MPI_INT, comm);
            for (j = 0; j < size; j++)
                for (i = 0; i < count; i++)
                    CHECK(all[j * count + i] == val(j * size + rank, it, i), "alltoall count %d it %d in_place %d block %d [%d] = %d",
                          count, it, ip, j, i, all[j * count + i]);
        }
    free(mine);
    free(all);
    free(counts);
    free(displs);
}

static void test_exchange(MPI_Comm comm, int iters)
{
    int size, k;
    MPI_Comm_size(comm, &size);
    /* ... and around one lane entry (2048 bytes): an allgather block, the n - 1 blocks of an
       all-to-all */
    int others = size > 1 ? size - 1 : 1;
    int counts[] = {1, 2, 13, 14, 15, 29, 2048 / 4 / size / size, 2048 / 4 / size / size + 1, 2048 / 4 / size - 1,
                    2048 / 4 / size, 2048 / 4 / size + 1, 2048 / 4 / others, 2048 / 4 / others + 1, 512, 513, 600,
                    /* ... and around the entry limit when ranks outnumber cores (16384 bytes) */
                    16384 / 4 / others, 16384 / 4 / others + 1, 4096, 4097};
    for (k = 0; k < (int)(sizeof(counts) / sizeof(counts[0])); k++)
        if (counts[k] > 0)
            check_exchange(comm, counts[k], iters);
}

/* Strided datatypes in allgather and alltoall (receive side strided, send contiguous, and the
   other way round). */
static void test_exchange_strided(MPI_Comm comm)
{
    int rank, size, i, j, count = 3;
    MPI_Datatype strided, resized;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    MPI_Type_vector(count, 1, 2, MPI_INT, &strided);
    MPI_Type_create_resized(strided, 0, (MPI_Aint)sizeof(int) * 2 * count, &resized);
    MPI_Type_commit(&resized);
    int *wide = mt_malloc(sizeof(int) * 2 * count * size), *flat = mt_malloc(sizeof(int) * count * size);
    int mine[3];
    for (i = 0; i < count; i++)
        mine[i] = val(rank, 3, i);
    for (i = 0; i < 2 * count * size; i++)
        wide[i] = -4;
    MPI_Allgather(mine, count, MPI_INT, wide, 1, resized, comm);
    for (j = 0; j < size; j++)
        for (i = 0; i < 2 * count; i++)
            CHECK(wide[j * 2 * count + i] == (i % 2 ? -4 : val(j, 3, i / 2)), "strided allgather block %d [%d] = %d", j,
                  i, wide[j * 2 * count + i]);
    for (j = 0; j < size; j++)
        for (i = 0; i < 2 * count; i++)
            wide[j * 2 * count + i] = i % 2 ? -6 : val(rank * size + j, 4, i / 2);
    MPI_Alltoall(wide, 1, resized, flat, count, MPI_INT, comm);
    for (j = 0; j < size; j++)
        for (i = 0; i < count; i++)
            CHECK(flat[j * count + i] == val(j * size + rank, 4, i), "strided alltoall block %d [%d] = %d", j, i,
                  flat[j * count + i]);
    MPI_Type_free(&strided);
    MPI_Type_free(&resized);
    free(wide);
    free(flat);
}

/* A non-commutative operation on pairs of ints: (a, b) o (c, d) = (a * c, a * d + b) (affine
   maps composed), so rank order shows in the result. */
static void affine(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    int *x = in, *y = inout, k;
    (void)dt;
    for (k = 0; k < *len; k++) {
        int a = x[2 * k], b = x[2 * k + 1], c = y[2 * k], d = y[2 * k + 1];
        y[2 * k] = a * c;
        y[2 * k + 1] = a * d + b;
    }
}

/* Reduce_scatter_block and reduce_scatter (MPI_SUM on ints; a non-commutative user operation on
   pairs, order checked), with and without MPI_IN_PLACE, `count` elements per rank. */
static void check_reduce_scatter(MPI_Comm comm, int count, int iters)
{
    int rank, size, it, i, j, ip;
    MPI_Op op;
    MPI_Datatype pair;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    MPI_Op_create(affine, 0, &op);
    MPI_Type_contiguous(2, MPI_INT, &pair);
    MPI_Type_commit(&pair);
    int *in = mt_malloc(sizeof(int) * 2 * (count + 2) * size), *out = mt_malloc(sizeof(int) * 2 * (count + 2) * size);
    int *counts = mt_malloc(sizeof(int) * size);
    for (it = 0; it < iters; it++)
        for (ip = 0; ip < 2; ip++) {
            for (i = 0; i < count * size; i++)
                in[i] = val(rank, it, i);
            if (ip)
                memcpy(out, in, sizeof(int) * count * size);
            MPI_Reduce_scatter_block(ip ? MPI_IN_PLACE : in, out, count, MPI_INT, MPI_SUM, comm);
            for (i = 0; i < count; i++) {
                int want = 0;
                for (j = 0; j < size; j++)
                    want += val(j, it, rank * count + i);
                CHECK(out[i] == want, "reduce_scatter_block count %d it %d in_place %d [%d] = %d, want %d", count, it,
                      ip, i, out[i], want);
            }
            /* varying counts, some zero; pairs under the affine operation */
            int total = 0, start = 0;
            for (j = 0; j < size; j++) {
                counts[j] = (count + j) % (count + 2);
                if (j < rank)
                    start += counts[j];
                total += counts[j];
            }
            for (i = 0; i < total; i++) {
                in[2 * i] = (rank + i + it) % 3 + 1;
                in[2 * i + 1] = rank - i;
            }
            if (ip)
                memcpy(out, in, sizeof(int) * 2 * total);
            MPI_Reduce_scatter(ip ? MPI_IN_PLACE : in, out, counts, pair, op, comm);
            for (i = 0; i < counts[rank]; i++) {
                int e = start + i, a = 1, b = 0;
                /* a0 o (a1 o (... o a(n-1))): compose from the last rank down */
                for (j = size - 1; j >= 0; j--) {
                    int ja = (j + e + it) % 3 + 1, jb = j - e;
                    b = ja * b + jb;
                    a = ja * a;
                }
                CHECK(out[2 * i] == a && out[2 * i + 1] == b,
                      "reduce_scatter affine count %d it %d in_place %d [%d] = (%d, %d), want (%d, %d)", count, it, ip, i,
                      out[2 * i], out[2 * i + 1], a, b);
            }
        }
    MPI_Op_free(&op);
    MPI_Type_free(&pair);
    free(in);
    free(out);
    free(counts);
}

static void test_reduce_scatter(MPI_Comm comm, int iters)
{
    int size, k;
    MPI_Comm_size(comm, &size);
    int counts[] = {1, 2, 13, 14, 15, 2048 / 4 / size - 1, 2048 / 4 / size, 2048 / 4 / size + 1, 300,
                    16384 / 4 / size, 16384 / 4 / size + 1};
    for (k = 0; k < (int)(sizeof(counts) / sizeof(counts[0])); k++)
        if (counts[k] > 0)
            check_reduce_scatter(comm, counts[k], iters);
}

/* Error checks stay in place on the fast path: a bad root is MPI_ERR_ROOT. */
static void test_errors(MPI_Comm comm)
{
    int size, x[1] = {0}, y[64];
    MPI_Comm_size(comm, &size);
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    int rc = MPI_Gather(x, 1, MPI_INT, y, 1, MPI_INT, size, comm);
    int cls = -1;
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_ROOT, "gather with root=size: class %d", cls);
    rc = MPI_Scatter(y, 1, MPI_INT, x, 1, MPI_INT, -1, comm);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_ROOT, "scatter with root=-1: class %d", cls);
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_ARE_FATAL);
}

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Comm rev;
    mt_init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    test_sizes(MPI_COMM_WORLD);
    test_strided(MPI_COMM_WORLD);
    test_bursts(MPI_COMM_WORLD, 6000);
    test_interleaved(MPI_COMM_WORLD);
    test_exchange(MPI_COMM_WORLD, 2);
    test_exchange_strided(MPI_COMM_WORLD);
    test_reduce_scatter(MPI_COMM_WORLD, 2);
    MPI_Comm_split(MPI_COMM_WORLD, 0, size - rank, &rev); /* reversed order */
    test_sizes(rev);
    test_bursts(rev, 1000);
    test_exchange(rev, 1);
    test_reduce_scatter(rev, 1);
    MPI_Comm_free(&rev);
    test_errors(MPI_COMM_WORLD);
    return mt_finalize();
}
