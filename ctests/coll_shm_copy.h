/* Single-copy broadcast, reduce and allreduce on one node (coll::shm), around their size
 * thresholds (OXMPI_COLL_SHM_COPY_MIN, _BCAST_COPY_MIN, _REDUCE_COPY_MIN; the including file
 * may lower them, a reference MPI ignores them) and with the reduce combined by the root alone
 * or split among the ranks (OXMPI_COLL_SHM_REDUCE_ROOT_RANKS), plus the sparse single-copy
 * allreduce: every rank's entries read and folded in rank order, at densities on both sides
 * of the limit where all entries together stop fitting (and mixed: some ranks dense).
 * Allgather(v), all-to-all and reduce-scatter by single copy around
 * OXMPI_COLL_SHM_EXCHANGE_COPY_MIN.
 * Roots 0, last and middle, MPI_IN_PLACE, a strided (vector) buffer; every element checked
 * exactly (small integers) along with the bytes after each buffer. Sizes come as multiples
 * of the thresholds: `unit` bytes (the including file's threshold, default 64 KiB), the
 * reduce's `REDUCE_UNIT` and the exchanges' `EXCHANGE_UNIT`. */
#include "coll_mtest.h"
#include <stdint.h>

#ifndef UNIT
#define UNIT 65536
#endif
/* The reduce's threshold (default: 4 units) and the exchanges' (default: one unit). */
#ifndef REDUCE_UNIT
#define REDUCE_UNIT (4L * UNIT)
#endif
#ifndef EXCHANGE_UNIT
#define EXCHANGE_UNIT UNIT
#endif

static int rank, size;

static unsigned hash(unsigned r, unsigned i)
{
    unsigned h = r * 2654435761u ^ (i * 40503u + 0x9e3779b9u);
    h ^= h >> 13;
    h *= 0x5bd1e995u;
    h ^= h >> 15;
    return h;
}

/* Rank r's element i at `density` percent (-1: rank 0 dense, the others 1 %); 0 elsewhere. */
static double value(int r, long i, int density, int salt)
{
    unsigned h = hash((unsigned)(r + 31 * salt), (unsigned)i);
    int d = density >= 0 ? density : (r == 0 ? 100 : 1);
    if ((int)(h % 100) >= d)
        return 0.0;
    return (double)((h >> 8) % 7) - 3.0 + ((h >> 8) % 7 == 3); /* never 0 */
}

static double sum_at(long i, int density, int salt)
{
    double s = 0;
    for (int r = 0; r < size; r++)
        s += value(r, i, density, salt);
    return s;
}

static long max_at(long i, int salt)
{
    long m = (long)(hash((unsigned)(31 * salt), (unsigned)i) % 1000);
    for (int r = 1; r < size; r++) {
        long v = (long)(hash((unsigned)(r + 31 * salt), (unsigned)i) % 1000);
        m = v > m ? v : m;
    }
    return m;
}

static const double GUARD = 12345.0;

/* Allreduce (root < 0) or Reduce of `count` doubles, SUM. */
static void reduce_sum(long count, int density, int root, int in_place, int salt)
{
    double *in = malloc((count + 1) * sizeof(double)), *out = malloc((count + 1) * sizeof(double));
    for (long i = 0; i < count; i++) {
        in[i] = value(rank, i, density, salt);
        out[i] = in_place ? in[i] : -99.0;
    }
    in[count] = out[count] = GUARD;
    int ip = in_place && (root < 0 || rank == root);
    if (root < 0)
        MPI_Allreduce(ip ? MPI_IN_PLACE : in, out, (int)count, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    else
        MPI_Reduce(ip ? MPI_IN_PLACE : in, out, (int)count, MPI_DOUBLE, MPI_SUM, root, MPI_COMM_WORLD);
    int bad = 0;
    if (root < 0 || rank == root)
        for (long i = 0; i < count && bad < 3; i++)
            if (out[i] != sum_at(i, density, salt)) {
                bad++;
                CHECK(0, "%s count %ld density %d root %d%s: [%ld] = %g, expected %g", root < 0 ? "Allreduce" : "Reduce",
                      count, density, root, ip ? " in place" : "", i, out[i], sum_at(i, density, salt));
            }
    CHECK(out[count] == GUARD && in[count] == GUARD, "reduce count %ld: byte after a buffer overwritten", count);
    for (long i = 0; rank != root && root >= 0 && !in_place && i < count && bad < 3; i++)
        if (out[i] != -99.0) {
            bad++;
            CHECK(0, "Reduce count %ld root %d: non-root output [%ld] changed", count, root, i);
        }
    free(in);
    free(out);
}

/* Allreduce (root < 0) or Reduce of `count` longs, MAX (never sparse: no neutral values). */
static void reduce_max(long count, int root, int salt)
{
    long *in = malloc((count + 1) * sizeof(long)), *out = malloc((count + 1) * sizeof(long));
    for (long i = 0; i < count; i++) {
        in[i] = (long)(hash((unsigned)(rank + 31 * salt), (unsigned)i) % 1000);
        out[i] = -1;
    }
    in[count] = out[count] = 777;
    if (root < 0)
        MPI_Allreduce(in, out, (int)count, MPI_LONG, MPI_MAX, MPI_COMM_WORLD);
    else
        MPI_Reduce(in, out, (int)count, MPI_LONG, MPI_MAX, root, MPI_COMM_WORLD);
    int bad = 0;
    if (root < 0 || rank == root)
        for (long i = 0; i < count && bad < 3; i++)
            if (out[i] != max_at(i, salt)) {
                bad++;
                CHECK(0, "%s MAX count %ld root %d: [%ld] = %ld, expected %ld", root < 0 ? "Allreduce" : "Reduce", count,
                      root, i, out[i], max_at(i, salt));
            }
    CHECK(out[count] == 777, "MAX count %ld: element after the buffer overwritten", count);
    free(in);
    free(out);
}

/* Bcast of `bytes` bytes from `root`, contiguous or as every other byte of a strided buffer. */
static void bcast(long bytes, int root, int strided, int salt)
{
    long span = strided ? 2 * bytes : bytes;
    unsigned char *buf = malloc(span + 1);
    for (long i = 0; i < span + 1; i++)
        buf[i] = rank == root ? (unsigned char)hash(salt, i) : 0xa5;
    if (strided) {
        MPI_Datatype v;
        MPI_Type_vector((int)bytes, 1, 2, MPI_BYTE, &v);
        MPI_Type_commit(&v);
        MPI_Bcast(buf, 1, v, root, MPI_COMM_WORLD);
        MPI_Type_free(&v);
    } else {
        MPI_Bcast(buf, (int)bytes, MPI_BYTE, root, MPI_COMM_WORLD);
    }
    int bad = 0;
    for (long i = 0; i < span + 1 && bad < 3; i++) {
        int sent = i < span && (!strided || i % 2 == 0);
        unsigned char want = rank == root || sent ? (unsigned char)hash(salt, i) : 0xa5;
        if (buf[i] != want) {
            bad++;
            CHECK(0, "Bcast %ld bytes root %d%s: byte %ld = %02x, expected %02x", bytes, root, strided ? " strided" : "",
                  i, buf[i], want);
        }
    }
    free(buf);
}

/* Byte i of rank r's block for rank k in exchange `salt`. */
static unsigned char xbyte(int r, int k, long i, int salt)
{
    return (unsigned char)hash((unsigned)(r * 131 + k * 7 + salt), (unsigned)i);
}

/* Allgather of `block` bytes (mode 0: contiguous; 1: in place; 2: received as every other
 * byte of a strided buffer), or Allgatherv (mode 3: rank r sends block * (r % 3) / 2 bytes,
 * at reversed displacements). */
static void allgather(long block, int mode, int salt)
{
    long stride = mode == 2 ? 2 : 1, total = 0;
    int *counts = malloc(size * sizeof(int)), *displs = malloc(size * sizeof(int));
    for (int r = 0; r < size; r++)
        counts[r] = mode == 3 ? (int)(block * (r % 3) / 2) : (int)block;
    for (int r = size - 1; r >= 0; r--) {
        displs[r] = (int)total;
        total += counts[r];
    }
    for (int r = 0; mode != 3 && r < size; r++)
        displs[r] = (int)(r * block);
    unsigned char *in = malloc(block + 1), *out = malloc(stride * total + 1);
    for (long i = 0; i < counts[rank]; i++)
        in[i] = xbyte(rank, 0, i, salt);
    memset(out, 0x5a, stride * total + 1);
    if (mode == 1)
        memcpy(out + displs[rank], in, counts[rank]);
    if (mode == 3) {
        MPI_Allgatherv(in, counts[rank], MPI_BYTE, out, counts, displs, MPI_BYTE, MPI_COMM_WORLD);
    } else if (mode == 2) {
        MPI_Datatype v, rv;
        MPI_Type_vector((int)block, 1, 2, MPI_BYTE, &v);
        MPI_Type_create_resized(v, 0, 2 * block, &rv);
        MPI_Type_commit(&rv);
        MPI_Allgather(in, (int)block, MPI_BYTE, out, 1, rv, MPI_COMM_WORLD);
        MPI_Type_free(&v);
        MPI_Type_free(&rv);
    } else {
        MPI_Allgather(mode == 1 ? MPI_IN_PLACE : in, (int)block, MPI_BYTE, out, (int)block, MPI_BYTE, MPI_COMM_WORLD);
    }
    int bad = 0;
    for (int r = 0; r < size && bad < 3; r++)
        for (long i = 0; i < counts[r] && bad < 3; i++) {
            long at = mode == 2 ? 2 * ((long)r * block + i) : displs[r] + i;
            if (out[at] != xbyte(r, 0, i, salt)) {
                bad++;
                CHECK(0, "Allgather%s block %ld mode %d: rank %d byte %ld = %02x, expected %02x", mode == 3 ? "v" : "",
                      block, mode, r, i, out[at], xbyte(r, 0, i, salt));
            }
            if (mode == 2 && out[at + 1] != 0x5a) {
                bad++;
                CHECK(0, "Allgather block %ld strided: gap byte after rank %d byte %ld written", block, r, i);
            }
        }
    CHECK(out[stride * total] == 0x5a, "Allgather block %ld mode %d: byte after the buffer written", block, mode);
    free(in);
    free(out);
    free(counts);
    free(displs);
}

/* Alltoall of `block` bytes per rank (mode 0: contiguous; 1: in place; 2: sent from every
 * other byte of a strided buffer). */
static void alltoall(long block, int mode, int salt)
{
    long n = size, sspan = mode == 2 ? 2 * n * block : n * block;
    unsigned char *in = malloc(sspan + 1), *out = malloc(n * block + 1);
    for (int k = 0; k < size; k++)
        for (long i = 0; i < block; i++) {
            if (mode == 2) {
                in[2 * (k * block + i)] = xbyte(rank, k, i, salt);
                in[2 * (k * block + i) + 1] = 0;
            } else {
                in[k * block + i] = xbyte(rank, k, i, salt);
            }
        }
    memset(out, 0x5a, n * block + 1);
    if (mode == 1)
        memcpy(out, in, n * block);
    if (mode == 2) {
        MPI_Datatype v, rv;
        MPI_Type_vector((int)block, 1, 2, MPI_BYTE, &v);
        MPI_Type_create_resized(v, 0, 2 * block, &rv);
        MPI_Type_commit(&rv);
        MPI_Alltoall(in, 1, rv, out, (int)block, MPI_BYTE, MPI_COMM_WORLD);
        MPI_Type_free(&v);
        MPI_Type_free(&rv);
    } else {
        MPI_Alltoall(mode == 1 ? MPI_IN_PLACE : in, (int)block, MPI_BYTE, out, (int)block, MPI_BYTE, MPI_COMM_WORLD);
    }
    int bad = 0;
    for (int r = 0; r < size && bad < 3; r++)
        for (long i = 0; i < block && bad < 3; i++)
            if (out[r * block + i] != xbyte(r, rank, i, salt)) {
                bad++;
                CHECK(0, "Alltoall block %ld mode %d: from rank %d byte %ld = %02x, expected %02x", block, mode, r, i,
                      out[r * block + i], xbyte(r, rank, i, salt));
            }
    CHECK(out[n * block] == 0x5a, "Alltoall block %ld mode %d: byte after the buffer written", block, mode);
    free(in);
    free(out);
}

/* Reduce_scatter of doubles (SUM), `count` elements per rank: mode 0 Reduce_scatter_block,
 * 1 the same in place, 2 Reduce_scatter with counts count * (r % 3) / 2 (some zero), 3 the
 * same with counts count - r. (MPICH 4.0 asserts on in-place Reduce_scatter with counts.) */
static void reduce_scatter(long count, int mode, int salt)
{
    int *counts = malloc(size * sizeof(int));
    long total = 0, first = 0;
    for (int r = 0; r < size; r++) {
        counts[r] = mode == 2 ? (int)(count * (r % 3) / 2) : mode == 3 ? (int)(count - r) : (int)count;
        if (r < rank)
            first += counts[r];
        total += counts[r];
    }
    double *in = malloc((total + 1) * sizeof(double)), *out = malloc((total + 1) * sizeof(double));
    for (long i = 0; i < total; i++)
        in[i] = value(rank, i, 100, salt);
    in[total] = GUARD;
    int ip = mode == 1;
    if (ip)
        memcpy(out, in, (total + 1) * sizeof(double));
    else
        for (long i = 0; i <= total; i++)
            out[i] = i < counts[rank] ? -99.0 : GUARD;
    if (mode < 2)
        MPI_Reduce_scatter_block(ip ? MPI_IN_PLACE : in, out, (int)count, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    else
        MPI_Reduce_scatter(ip ? MPI_IN_PLACE : in, out, counts, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    int bad = 0;
    for (long i = 0; i < counts[rank] && bad < 3; i++)
        if (out[i] != sum_at(first + i, 100, salt)) {
            bad++;
            CHECK(0, "Reduce_scatter%s count %ld mode %d: [%ld] = %g, expected %g", mode < 2 ? "_block" : "", count, mode,
                  i, out[i], sum_at(first + i, 100, salt));
        }
    if (!ip)
        CHECK(out[counts[rank]] == GUARD, "Reduce_scatter count %ld mode %d: element after the block written", count,
              mode);
    free(in);
    free(out);
    free(counts);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int roots[3] = {0, size - 1, size / 2}, salt = 1;
    /* Around the threshold (unit) and the reduce's. */
    const long sizes[] = {UNIT - 8, UNIT, UNIT + 8, REDUCE_UNIT - 8, REDUCE_UNIT, REDUCE_UNIT + 8, 3L * REDUCE_UNIT + 136};
    for (int s = 0; s < 7; s++) {
        long bytes = sizes[s], count = bytes / 8;
        for (int k = 0; k < 3; k++, salt++) {
            bcast(bytes + (k == 2), roots[k], 0, salt);
            /* In place at root 0 only (MPICH 4.0 crashes in place at other roots). */
            reduce_sum(count, k == 1 ? 100 : 1, roots[k], k == 0, salt);
            reduce_max(count, roots[k], salt);
        }
        bcast(bytes, roots[s % 3], 1, salt++);
        reduce_sum(count, 100, -1, 0, salt++);
        reduce_sum(count, 1, -1, 1, salt++);
        reduce_max(count, -1, salt++);
    }
    /* The sparse allreduce: densities on both sides of where all ranks' entries together stop
     * fitting a third of the elements (doubles at OXMPI_SPARSE_RATIO 50), mixed, empty. */
    const int densities[] = {0, 1, 4, 8, 9, 12, 17, 30, 34, -1};
    for (int d = 0; d < 10; d++) {
        reduce_sum(4 * UNIT / 8, densities[d], -1, d % 2, salt++);
        reduce_sum(4 * UNIT / 8 + 1, densities[d], -1, 0, salt++);
    }
    /* Exchanges around their single-copy threshold. */
    const long blocks[] = {EXCHANGE_UNIT - 8, EXCHANGE_UNIT - 1, EXCHANGE_UNIT, EXCHANGE_UNIT + 1, 6L * EXCHANGE_UNIT + 8};
    for (int b = 0; b < 5; b++)
        for (int mode = 0; mode < 4; mode++, salt++) {
            allgather(blocks[b], mode, salt);
            if (mode < 3)
                alltoall(blocks[b], mode, salt);
            reduce_scatter(blocks[b] / 8, mode, salt);
        }
    /* Back to back: ranks run ahead into the next call while others still read. */
    for (int k = 0; k < 20; k++, salt++)
        reduce_sum(UNIT / 8 + k, k % 3 ? 1 : 100, k % 4 == 3 ? k % size : -1, 0, salt);
    return coll_finish();
}
