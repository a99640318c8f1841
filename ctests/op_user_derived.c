/* oxmpi-test: np=1,2,3,4,8 */
/* User operations on datatypes whose lowest byte is not their origin: an indexed type whose
 * first block starts past 0 (blocks not in memory order), a vector with a negative stride, a
 * struct starting at 8. C user functions add the datatype's displacements to the pointers
 * they get, so the library must hand them each element's origin; it once handed them the
 * lowest byte instead, and the function combined the wrong bytes (Reduce, Allreduce, Scan,
 * Reduce_scatter_block, Reduce_local). Holes between the elements must stay untouched. */
#include "mtest.h"
#include <stdint.h>

#define COUNT 5
#define MEM 512
#define ORIGIN 192 /* ints before a buffer's origin */

/* a o b = (a+1)(b+1) - 1 mod 2^32 on every int the datatype holds */
static const int *cur_offs;
static int cur_nper, cur_ext;
static void op_fn(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    for (int i = 0; i < *len; i++)
        for (int j = 0; j < cur_nper; j++) {
            uint32_t *a = (uint32_t *)in + i * cur_ext + cur_offs[j];
            uint32_t *b = (uint32_t *)inout + i * cur_ext + cur_offs[j];
            *b = *a * *b + *a + *b;
        }
}

static uint32_t value(int rank, int i) { return (uint32_t)(rank * 7 + i * 3 + 1); }

static uint32_t combined(int upto, int i)
{
    uint32_t acc = value(0, i);
    for (int r = 1; r < upto; r++)
        acc = acc * value(r, i) + acc + value(r, i);
    return acc;
}

static void fill(int *mem, int rank, int n_inst, const int *offs, int nper, int ext)
{
    for (int i = 0; i < MEM; i++)
        mem[i] = -1;
    for (int e = 0; e < n_inst * nper; e++)
        mem[ORIGIN + (e / nper) * ext + offs[e % nper]] = rank < 0 ? -1 : (int)value(rank, e);
}

static void check(const int *mem, int upto, int n_inst, int first_inst, const int *offs, int nper,
                  int ext, const char *what, const char *tname)
{
    char used[MEM] = {0};
    for (int e = 0; e < n_inst * nper; e++) {
        int at = ORIGIN + (e / nper) * ext + offs[e % nper];
        used[at] = 1;
        uint32_t want = combined(upto, first_inst * nper + e);
        CHECK((uint32_t)mem[at] == want, "%s on %s: element %d is %u, expected %u", what, tname, e,
              (unsigned)mem[at], (unsigned)want);
    }
    for (int i = 0; i < MEM; i++)
        if (!used[i])
            CHECK(mem[i] == -1, "%s on %s: int %d outside the elements was written", what, tname,
                  i - ORIGIN);
}

int main(int argc, char **argv)
{
    mt_init(&argc, &argv);
    int rank = mt_rank, size = mt_size;
    MPI_Op op;
    MPI_Op_create(op_fn, 1, &op);

    /* indexed: blocks {3,4} then {1}: lowest int at 1 */
    int ibl[2] = {2, 1}, idisp[2] = {3, 1}, ioffs[3] = {3, 4, 1};
    /* vector(3, 1, -2): ints at 0, -2, -4 */
    int voffs[3] = {0, -2, -4};
    /* struct of two ints at 8 and 12 bytes... one int at 20 bytes */
    int sbl[2] = {2, 1};
    MPI_Aint sdisp[2] = {8, 20};
    MPI_Datatype sts[2] = {MPI_INT, MPI_INT};
    int soffs[3] = {2, 3, 5};
    MPI_Datatype types[3];
    MPI_Type_indexed(2, ibl, idisp, MPI_INT, &types[0]);
    MPI_Type_vector(3, 1, -2, MPI_INT, &types[1]);
    MPI_Type_create_struct(2, sbl, sdisp, sts, &types[2]);
    const int *offs[3] = {ioffs, voffs, soffs};
    const char *names[3] = {"indexed from 1", "vector with stride -2", "struct from 8"};
    int *in = mt_malloc(MEM * sizeof(int)), *out = mt_malloc(MEM * sizeof(int));
    int *big = mt_malloc(MEM * 8 * sizeof(int));
    for (int t = 0; t < 3; t++) {
        MPI_Datatype dt = types[t];
        MPI_Type_commit(&dt);
        MPI_Aint lb, extent;
        MPI_Type_get_extent(dt, &lb, &extent);
        int ext = (int)(extent / (MPI_Aint)sizeof(int));
        cur_offs = offs[t], cur_nper = 3, cur_ext = ext;

        fill(in, rank, COUNT, offs[t], 3, ext);
        fill(out, -1, COUNT, offs[t], 3, ext);
        MPI_CHECK(MPI_Reduce(in + ORIGIN, out + ORIGIN, COUNT, dt, op, 0, MPI_COMM_WORLD));
        if (rank == 0)
            check(out, size, COUNT, 0, offs[t], 3, ext, "MPI_Reduce", names[t]);

        fill(out, -1, COUNT, offs[t], 3, ext);
        MPI_CHECK(MPI_Allreduce(in + ORIGIN, out + ORIGIN, COUNT, dt, op, MPI_COMM_WORLD));
        check(out, size, COUNT, 0, offs[t], 3, ext, "MPI_Allreduce", names[t]);

        fill(out, -1, COUNT, offs[t], 3, ext);
        MPI_CHECK(MPI_Scan(in + ORIGIN, out + ORIGIN, COUNT, dt, op, MPI_COMM_WORLD));
        check(out, rank + 1, COUNT, 0, offs[t], 3, ext, "MPI_Scan", names[t]);

        /* Reduce_local: in holds rank 0's values, out rank 1's: out = in o out */
        fill(in, 0, COUNT, offs[t], 3, ext);
        fill(out, 1, COUNT, offs[t], 3, ext);
        MPI_CHECK(MPI_Reduce_local(in + ORIGIN, out + ORIGIN, COUNT, dt, op));
        check(out, 2, COUNT, 0, offs[t], 3, ext, "MPI_Reduce_local", names[t]);

        /* Reduce_scatter_block in place: one instance per rank */
        if (size * ext + ORIGIN + 8 < MEM * 8) {
            for (int i = 0; i < MEM * 8; i++)
                big[i] = -1;
            for (int e = 0; e < size * 3; e++)
                big[ORIGIN + (e / 3) * ext + offs[t][e % 3]] = (int)value(rank, e);
            MPI_CHECK(MPI_Reduce_scatter_block(MPI_IN_PLACE, big + ORIGIN, 1, dt, op, MPI_COMM_WORLD));
            for (int j = 0; j < 3; j++) {
                uint32_t want = combined(size, rank * 3 + j);
                CHECK((uint32_t)big[ORIGIN + offs[t][j]] == want,
                      "MPI_Reduce_scatter_block on %s: element %d is %u, expected %u", names[t], j,
                      (unsigned)big[ORIGIN + offs[t][j]], (unsigned)want);
            }
        }
        MPI_Type_free(&dt);
    }
    free(in), free(out), free(big);
    MPI_Op_free(&op);
    return mt_finalize();
}
