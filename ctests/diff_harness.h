/*
 * diff_harness.h - differential test of collectives, reductions and point-to-point.
 *
 * Each iteration draws, from a seed shared by all ranks, one operation on a random
 * communicator: a collective of any kind (in place or not; blocking, nonblocking or
 * persistent), or a burst of point-to-point messages. It also draws a datatype (a basic type,
 * or a vector with a positive or negative stride, an unsorted indexed type, a struct or a
 * resized type built on it), a count (0, 1, odd, or one element around a size threshold of
 * oxmpi-info), an operation (every predefined operation on every basic type it allows, a
 * commutative and a non-commutative user operation) and data (dense, sparse at several
 * densities, negative zeros, infinities and NaN, extreme values, fractions).
 *
 * Every rank's input is a pure function of (seed, iteration, rank), so every rank computes
 * the expected result of every other rank itself, with plain C, independent of the library
 * under test (no MPI reduction, packing or datatype code is used to compute references). A
 * result is compared bit for bit where it does not depend on the order of combination:
 * integers (with wrap-around), floating-point data made of small integers, zeros of both
 * signs, infinities and powers of two; NaN matches any NaN. Fractions are compared with a
 * relative tolerance, and every rank's Allreduce result must be bit-identical to rank 0's
 * (exchanged with MPI_Send/MPI_Recv). Bytes of a buffer that are not part of the datatype
 * (holes, padding, guards) must be left alone, and send buffers must be unchanged.
 *
 * Environment: OXMPI_DIFF_SEED=S[,S...] (the seeds to run; default DIFF_SEEDS),
 * OXMPI_DIFF_ITERS=N (iterations per seed; default DIFF_ITERS), OXMPI_DIFF_ONLY=I (run only
 * iteration I, to replay a failure), OXMPI_DIFF_VERBOSE=1 (rank 0 prints each iteration).
 * A failure prints the seed, the iteration and what it was.
 */
#ifndef OXMPI_DIFF_HARNESS_H
#define OXMPI_DIFF_HARNESS_H

#include "mtest.h"
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>

#ifndef DIFF_SEEDS
#define DIFF_SEEDS "1"
#endif
#ifndef DIFF_ITERS
#define DIFF_ITERS 150
#endif

/* ------------------------------------------------------------------------------------------ */
static void fail(const char *fmt, ...);

/* Random numbers: splitmix64, one stream for choices every rank shares, one per input.       */

typedef struct {
    uint64_t s;
} rng_t;

static uint64_t rnext(rng_t *r)
{
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static int rbelow(rng_t *r, int n) { return n <= 1 ? 0 : (int)(rnext(r) % (uint64_t)n); }

static rng_t rseed(uint64_t a, uint64_t b, uint64_t c, uint64_t d)
{
    rng_t r = {a * 0x100000001b3ull ^ (b << 40) ^ (c << 20) ^ d};
    rnext(&r);
    return r;
}

/* ------------------------------------------------------------------------------------------ */
/* Basic types                                                                               */

enum bkind { BK_I8, BK_I16, BK_I32, BK_I64, BK_U32, BK_U64, BK_F32, BK_F64, BK_BOOL, BK_BYTE,
             BK_2INT, BK_DBLINT, BK_FLTINT, BK_AFFINE, BK_COUNT };

typedef struct {
    const char *name;
    MPI_Datatype dt;
    int size;   /* significant bytes (the data MPI moves) */
    int extent; /* bytes from one element to the next */
} base_info;

static base_info bases[BK_COUNT];
static MPI_Datatype affine_type; /* two uint32: x -> a*x + b, for the non-commutative op */

typedef struct { double v; int i; } dbl_int;
typedef struct { float v; int i; } flt_int;

static void bases_init(void)
{
    MPI_Type_contiguous(2, MPI_UINT32_T, &affine_type);
    MPI_Type_commit(&affine_type);
    base_info b[BK_COUNT] = {
        {"int8", MPI_SIGNED_CHAR, 1, 1},     {"short", MPI_SHORT, 2, 2},
        {"int", MPI_INT, 4, 4},              {"long long", MPI_LONG_LONG, 8, 8},
        {"unsigned", MPI_UNSIGNED, 4, 4},    {"uint64", MPI_UINT64_T, 8, 8},
        {"float", MPI_FLOAT, 4, 4},          {"double", MPI_DOUBLE, 8, 8},
        {"C bool", MPI_C_BOOL, 1, 1},        {"byte", MPI_BYTE, 1, 1},
        {"2int", MPI_2INT, 8, 8},            {"double_int", MPI_DOUBLE_INT, 12, sizeof(dbl_int)},
        {"float_int", MPI_FLOAT_INT, 8, sizeof(flt_int)}, {"affine", affine_type, 8, 8},
    };
    memcpy(bases, b, sizeof b);
}

static int is_int(int k) { return k <= BK_U64; }
static int is_float(int k) { return k == BK_F32 || k == BK_F64; }
static int is_pair(int k) { return k == BK_2INT || k == BK_DBLINT || k == BK_FLTINT; }

/* ------------------------------------------------------------------------------------------ */
/* Operations and the reference combination                                                  */

enum { OP_SUM, OP_PROD, OP_MIN, OP_MAX, OP_LAND, OP_LOR, OP_LXOR, OP_BAND, OP_BOR, OP_BXOR,
       OP_MINLOC, OP_MAXLOC, OP_USER_COMM, OP_USER_NONCOMM, OP_COUNT };
static const char *op_names[OP_COUNT] = {"SUM", "PROD", "MIN", "MAX", "LAND", "LOR", "LXOR",
                                         "BAND", "BOR", "BXOR", "MINLOC", "MAXLOC",
                                         "user commutative", "user non-commutative"};
static MPI_Op user_comm_op, user_noncomm_op;

static int op_allowed(int op, int k)
{
    switch (op) {
    case OP_SUM: case OP_PROD: case OP_MIN: case OP_MAX: return is_int(k) || is_float(k);
    case OP_LAND: case OP_LOR: case OP_LXOR: return is_int(k) || k == BK_BOOL;
    case OP_BAND: case OP_BOR: case OP_BXOR: return is_int(k) || k == BK_BYTE;
    case OP_MINLOC: case OP_MAXLOC: return is_pair(k);
    case OP_USER_COMM: return k == BK_I32;
    case OP_USER_NONCOMM: return k == BK_AFFINE;
    }
    return 0;
}

static MPI_Op op_handle(int op)
{
    static const MPI_Op h[] = {MPI_SUM, MPI_PROD, MPI_MIN,  MPI_MAX, MPI_LAND, MPI_LOR,
                               MPI_LXOR, MPI_BAND, MPI_BOR, MPI_BXOR, MPI_MINLOC, MPI_MAXLOC};
    return op == OP_USER_COMM ? user_comm_op : op == OP_USER_NONCOMM ? user_noncomm_op : h[op];
}

/* a o b = a*b + a + b = (a+1)(b+1) - 1 (mod 2^32): commutative and associative. */
static uint32_t ucomm(uint32_t a, uint32_t b) { return a * b + a + b; }
/* Affine maps composed: (f o g)(x) = f(g(x)); associative, not commutative. */
static void uaffine(const uint32_t *f, const uint32_t *g, uint32_t *out)
{
    uint32_t a = f[0] * g[0], b = f[0] * g[1] + f[1];
    out[0] = a;
    out[1] = b;
}

/* The layout of the reduction in progress: user functions receive its datatype and must
 * find the elements where it puts them. */
static struct layout *user_layout;
static void user_apply(void *in, void *inout, int len, MPI_Datatype dt, int noncomm);

static void user_comm_fn(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    user_apply(in, inout, *len, *dt, 0);
}

/* MPI passes earlier ranks in `in`: inout = in o inout. */
static void user_noncomm_fn(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    user_apply(in, inout, *len, *dt, 1);
}

#define ARITH(T)                                                                                  \
    do {                                                                                          \
        T x = *(const T *)acc, y = *(const T *)in, r = x;                                          \
        switch (op) {                                                                             \
        case OP_SUM: r = (T)(x + y); break;                                                       \
        case OP_PROD: r = (T)(x * y); break;                                                      \
        case OP_MIN: r = y < x ? y : x; break;                                                    \
        case OP_MAX: r = y > x ? y : x; break;                                                    \
        case OP_LAND: r = (T)(x && y); break;                                                     \
        case OP_LOR: r = (T)(x || y); break;                                                      \
        case OP_LXOR: r = (T)(!x != !y); break;                                                   \
        }                                                                                         \
        *(T *)acc = r;                                                                            \
    } while (0)

/* Integer arithmetic in the unsigned type of the same width: wrap-around, no overflow. */
#define IARITH(T, U)                                                                              \
    do {                                                                                          \
        T x = *(const T *)acc, y = *(const T *)in, r = x;                                          \
        switch (op) {                                                                             \
        case OP_SUM: r = (T)((U)x + (U)y); break;                                                 \
        case OP_PROD: r = (T)((U)x * (U)y); break;                                                \
        case OP_MIN: r = y < x ? y : x; break;                                                    \
        case OP_MAX: r = y > x ? y : x; break;                                                    \
        case OP_LAND: r = (T)(x && y); break;                                                     \
        case OP_LOR: r = (T)(x || y); break;                                                      \
        case OP_LXOR: r = (T)(!x != !y); break;                                                   \
        case OP_BAND: r = (T)(x & y); break;                                                      \
        case OP_BOR: r = (T)(x | y); break;                                                       \
        case OP_BXOR: r = (T)(x ^ y); break;                                                      \
        case OP_USER_COMM: r = (T)ucomm((uint32_t)x, (uint32_t)y); break;                         \
        }                                                                                         \
        *(T *)acc = r;                                                                            \
    } while (0)

#define LOC(T)                                                                                    \
    do {                                                                                          \
        T *x = (T *)acc;                                                                          \
        const T *y = (const T *)in;                                                               \
        int better = op == OP_MINLOC ? y->v < x->v : y->v > x->v;                                 \
        if (better || (y->v == x->v && y->i < x->i))                                              \
            *x = *y;                                                                              \
    } while (0)

typedef struct { int v, i; } int_int;

/* acc = acc op in, where acc holds the combination of the lower ranks. */
static void combine(int k, int op, void *acc, const void *in)
{
    switch (k) {
    case BK_I8: IARITH(int8_t, uint8_t); break;
    case BK_I16: IARITH(int16_t, uint16_t); break;
    case BK_I32: IARITH(int32_t, uint32_t); break;
    case BK_I64: IARITH(int64_t, uint64_t); break;
    case BK_U32: IARITH(uint32_t, uint32_t); break;
    case BK_U64: IARITH(uint64_t, uint64_t); break;
    case BK_F32: ARITH(float); break;
    case BK_F64: ARITH(double); break;
    case BK_BOOL: {
        _Bool x = *(_Bool *)acc, y = *(const _Bool *)in;
        *(_Bool *)acc = op == OP_LAND ? x && y : op == OP_LOR ? x || y : x != y;
        break;
    }
    case BK_BYTE: {
        unsigned char x = *(unsigned char *)acc, y = *(const unsigned char *)in;
        *(unsigned char *)acc = op == OP_BAND ? x & y : op == OP_BOR ? x | y : x ^ y;
        break;
    }
    case BK_2INT: LOC(int_int); break;
    case BK_DBLINT: LOC(dbl_int); break;
    case BK_FLTINT: LOC(flt_int); break;
    case BK_AFFINE: uaffine(acc, in, acc); break;
    }
}

/* ------------------------------------------------------------------------------------------ */
/* Input data                                                                                */

enum { DM_DENSE, DM_SPARSE, DM_NEGZERO, DM_SPECIAL, DM_EXTREME, DM_FRACTION, DM_COUNT };
static const char *dm_names[DM_COUNT] = {"dense", "sparse", "negative zeros", "inf/nan",
                                         "extremes", "fractions"};

typedef struct {
    int mode;
    double density; /* share of non-zero elements (sparse, negative zeros) */
    int op;         /* the reduction, or -1 for data movement */
} datagen;

/* Which data a reduction may get so that its result is exact whatever the order. */
static int data_allowed(int dm, int k, int op)
{
    if (op < 0)
        return dm != DM_FRACTION || is_float(k);
    switch (dm) {
    case DM_DENSE: case DM_SPARSE: return 1;
    case DM_NEGZERO: return is_float(k) && (op == OP_SUM || op == OP_PROD);
    case DM_SPECIAL: return is_float(k) && (op == OP_SUM || op == OP_PROD);
    case DM_EXTREME: return (is_int(k) && op <= OP_BXOR) || (is_float(k) && (op == OP_MIN || op == OP_MAX));
    case DM_FRACTION: return is_float(k) && (op == OP_SUM || op == OP_PROD);
    }
    return 0;
}

static double gen_double(rng_t *r, const datagen *g, int single)
{
    int zero_neg = rbelow(r, 2);
    int nonzero = 1;
    if (g->mode == DM_SPARSE || g->mode == DM_NEGZERO)
        nonzero = (double)(rnext(r) >> 11) / 9007199254740992.0 < g->density;
    if (!nonzero)
        return g->mode == DM_NEGZERO && zero_neg ? -0.0 : 0.0;
    int op = g->op;
    if (g->mode == DM_FRACTION)
        return op == OP_PROD ? 0.5 + (double)(rnext(r) >> 11) / 6004799503160661.0
                             : ((double)(rnext(r) >> 11) / 4503599627370496.0 - 1.0) * 1e3;
    if (g->mode == DM_SPECIAL && rbelow(r, 4) == 0) {
        int s = rbelow(r, 3);
        return s == 0 ? INFINITY : s == 1 ? -INFINITY : NAN;
    }
    if (g->mode == DM_EXTREME) {
        static const double ex[] = {DBL_MAX, -DBL_MAX, DBL_MIN, -DBL_MIN, 4.9e-324, 1e300, -1e-300, 0.0};
        static const float exf[] = {FLT_MAX, -FLT_MAX, FLT_MIN, -FLT_MIN, 1.4e-45f, 1e30f, -1e-30f, 0.0f};
        return single ? exf[rbelow(r, 8)] : ex[rbelow(r, 8)];
    }
    if (op == OP_PROD) {
        static const double p[] = {1, -1, 2, -2, 0.5, -0.5, 1, 0};
        return p[rbelow(r, 8)];
    }
    return (double)(rbelow(r, 2001) - 1000);
}

static int64_t gen_int(rng_t *r, const datagen *g, int bits)
{
    if (g->mode == DM_SPARSE && (double)(rnext(r) >> 11) / 9007199254740992.0 >= g->density)
        return 0;
    if (g->mode == DM_EXTREME) {
        int64_t mx = bits == 64 ? INT64_MAX : ((int64_t)1 << (bits - 1)) - 1;
        int64_t v[] = {mx, -mx - 1, -1, 1, mx - 1, 0};
        return v[rbelow(r, 6)];
    }
    if (g->op == OP_PROD)
        return rbelow(r, 7) - 3;
    if (g->op == OP_LAND || g->op == OP_LOR || g->op == OP_LXOR)
        return rbelow(r, 3) == 0 ? 0 : (int64_t)rbelow(r, 5) - 2;
    if (g->op < 0 || g->op >= OP_BAND)
        return (int64_t)rnext(r);
    return rbelow(r, 201) - 100;
}

/* One element of basic kind k at dst (its significant bytes only). */
static void gen_elem(int k, rng_t *r, const datagen *g, void *dst)
{
    switch (k) {
    case BK_I8: *(int8_t *)dst = (int8_t)gen_int(r, g, 8); break;
    case BK_I16: *(int16_t *)dst = (int16_t)gen_int(r, g, 16); break;
    case BK_I32: *(int32_t *)dst = (int32_t)gen_int(r, g, 32); break;
    case BK_I64: *(int64_t *)dst = gen_int(r, g, 64); break;
    case BK_U32: *(uint32_t *)dst = (uint32_t)gen_int(r, g, 32); break;
    case BK_U64: *(uint64_t *)dst = (uint64_t)gen_int(r, g, 64); break;
    case BK_F32: {
        float f = (float)gen_double(r, g, 1);
        memcpy(dst, &f, 4);
        break;
    }
    case BK_F64: {
        double d = gen_double(r, g, 0);
        memcpy(dst, &d, 8);
        break;
    }
    case BK_BOOL: *(_Bool *)dst = g->mode == DM_SPARSE ? gen_int(r, g, 8) != 0 : rbelow(r, 2); break;
    case BK_BYTE: *(unsigned char *)dst = (unsigned char)rnext(r); break;
    case BK_2INT: { int_int v = {rbelow(r, 9) - 4, rbelow(r, 1000)}; memcpy(dst, &v, 8); break; }
    case BK_DBLINT: {
        dbl_int v = {(double)(rbelow(r, 9) - 4), rbelow(r, 1000)};
        memcpy(dst, &v.v, 8);
        memcpy((char *)dst + offsetof(dbl_int, i), &v.i, 4);
        break;
    }
    case BK_FLTINT: { flt_int v = {(float)(rbelow(r, 9) - 4), rbelow(r, 1000)}; memcpy(dst, &v, 8); break; }
    case BK_AFFINE: {
        uint32_t v[2] = {(uint32_t)rnext(r) | 1u, (uint32_t)rnext(r)};
        memcpy(dst, v, 8);
        break;
    }
    }
}

/* n elements (significant bytes, packed back to back) of rank `who`'s input `purpose`. */
static void gen_input(uint64_t seed, int iter, int who, int purpose, int k, const datagen *g,
                      size_t n, unsigned char *out)
{
    rng_t r = rseed(seed, (uint64_t)iter, (uint64_t)who + 1, (uint64_t)purpose + 7);
    unsigned char tmp[16];
    for (size_t i = 0; i < n; i++) {
        gen_elem(k, &r, g, tmp);
        memcpy(out + i * bases[k].size, tmp, bases[k].size);
    }
}

/* ------------------------------------------------------------------------------------------ */
/* Layouts: a datatype and where its basic elements lie                                      */

typedef struct layout {
    MPI_Datatype dt;
    int owned;
    int k;
    int n_per;       /* basic elements per instance */
    MPI_Aint *offs;  /* byte offset of each element, in typemap order */
    MPI_Aint extent; /* instance to instance */
    MPI_Aint lo, hi; /* bytes one instance touches: [lo, hi) */
    char desc[96];
} layout;

static void user_apply(void *in, void *inout, int len, MPI_Datatype dt, int noncomm)
{
    const layout *L = user_layout;
    int k = noncomm ? BK_AFFINE : BK_I32;
    MPI_Aint ext = bases[k].extent;
    int n_per = 1;
    const MPI_Aint zero = 0, *offs = &zero;
    if (L && dt == L->dt)
        ext = L->extent, n_per = L->n_per, offs = L->offs;
    else if (dt != bases[k].dt)
        fail("user operation called with an unexpected datatype");
    for (int i = 0; i < len; i++)
        for (int j = 0; j < n_per; j++) {
            MPI_Aint o = i * ext + offs[j];
            uint32_t *a = (uint32_t *)((char *)in + o), *b = (uint32_t *)((char *)inout + o);
            if (noncomm)
                uaffine(a, b, b);
            else
                *b = ucomm(*a, *b);
        }
}

static void layout_free(layout *L)
{
    if (L->owned)
        MPI_Type_free(&L->dt);
    free(L->offs);
    L->offs = NULL;
}

static void layout_bounds(layout *L)
{
    L->lo = L->offs[0];
    L->hi = L->offs[0] + bases[L->k].size;
    for (int i = 1; i < L->n_per; i++) {
        if (L->offs[i] < L->lo)
            L->lo = L->offs[i];
        if (L->offs[i] + bases[L->k].size > L->hi)
            L->hi = L->offs[i] + bases[L->k].size;
    }
}

static void layout_flat(layout *L, int k)
{
    memset(L, 0, sizeof *L);
    L->k = k;
    L->dt = bases[k].dt;
    L->n_per = 1;
    L->offs = mt_malloc(sizeof(MPI_Aint));
    L->offs[0] = 0;
    L->extent = bases[k].extent;
    L->lo = 0;
    L->hi = bases[k].size;
    snprintf(L->desc, sizeof L->desc, "%s", bases[k].name);
}

/* A derived layout of basic kind k drawn from r (the basic type itself when derived is 0). */
static void layout_make(layout *L, int k, rng_t *r, int derived)
{
    layout_flat(L, k);
    if (!derived)
        return;
    MPI_Datatype B = bases[k].dt;
    MPI_Aint e = bases[k].extent;
    int shape = rbelow(r, 5), resize = shape == 4 || rbelow(r, 4) == 0;
    MPI_Datatype t = B;
    int n = 0;
    MPI_Aint *offs = mt_malloc(sizeof(MPI_Aint) * 16);
    char what[64];
    if (shape == 0 || shape == 4) { /* vector, stride possibly negative */
        int cnt = 1 + rbelow(r, 4), bl = 1 + rbelow(r, 3), stride = bl + rbelow(r, 3);
        if (rbelow(r, 3) == 0)
            stride = -stride;
        MPI_Type_vector(cnt, bl, stride, B, &t);
        for (int j = 0; j < cnt; j++)
            for (int b = 0; b < bl; b++)
                offs[n++] = ((MPI_Aint)j * stride + b) * e;
        snprintf(what, sizeof what, "vector(%d,%d,%d)", cnt, bl, stride);
    } else if (shape == 1) { /* indexed, blocks not in memory order */
        int nb = 1 + rbelow(r, 4), bl[4], disp[4], at = rbelow(r, 3);
        for (int b = 0; b < nb; b++) {
            bl[b] = 1 + rbelow(r, 3);
            disp[b] = at;
            at += bl[b] + rbelow(r, 3);
        }
        for (int b = nb - 1; b > 0; b--) { /* shuffle the blocks' order in the typemap */
            int j = rbelow(r, b + 1), tb = bl[b], td = disp[b];
            bl[b] = bl[j], disp[b] = disp[j], bl[j] = tb, disp[j] = td;
        }
        MPI_Type_indexed(nb, bl, disp, B, &t);
        for (int b = 0; b < nb; b++)
            for (int i = 0; i < bl[b]; i++)
                offs[n++] = ((MPI_Aint)disp[b] + i) * e;
        snprintf(what, sizeof what, "indexed(%d blocks, first at %d)", nb, disp[0]);
    } else if (shape == 2) { /* struct of blocks of the same basic type */
        int nb = 1 + rbelow(r, 3), bl[3];
        MPI_Aint disp[3];
        MPI_Datatype ts[3] = {B, B, B};
        MPI_Aint at = e * rbelow(r, 2);
        for (int b = 0; b < nb; b++) {
            bl[b] = 1 + rbelow(r, 3);
            disp[b] = at;
            at += e * (bl[b] + rbelow(r, 2));
        }
        MPI_Type_create_struct(nb, bl, disp, ts, &t);
        for (int b = 0; b < nb; b++)
            for (int i = 0; i < bl[b]; i++)
                offs[n++] = disp[b] + i * e;
        snprintf(what, sizeof what, "struct(%d blocks)", nb);
    } else { /* contiguous */
        int c = 1 + rbelow(r, 3);
        MPI_Type_contiguous(c, B, &t);
        for (int i = 0; i < c; i++)
            offs[n++] = i * e;
        snprintf(what, sizeof what, "contiguous(%d)", c);
    }
    free(L->offs);
    L->offs = offs;
    L->n_per = n;
    L->dt = t;
    L->owned = 1;
    layout_bounds(L);
    /* The extent of these types: from the lowest to the highest element (whole elements). */
    MPI_Aint lo = L->offs[0], hi = L->offs[0] + e;
    for (int i = 1; i < n; i++) {
        if (L->offs[i] < lo)
            lo = L->offs[i];
        if (L->offs[i] + e > hi)
            hi = L->offs[i] + e;
    }
    L->extent = hi - lo;
    if (resize) {
        MPI_Aint nlb = lo - e * rbelow(r, 3), next = hi - nlb + e * rbelow(r, 3);
        MPI_Datatype rt;
        MPI_Type_create_resized(t, nlb, next, &rt);
        MPI_Type_free(&t);
        L->dt = rt;
        L->extent = next;
        snprintf(L->desc, sizeof L->desc, "resized(%s of %s, lb %ld, extent %ld)", what,
                 bases[k].name, (long)nlb, (long)next);
    } else {
        snprintf(L->desc, sizeof L->desc, "%s of %s", what, bases[k].name);
    }
    MPI_Type_commit(&L->dt);
    MPI_Aint mlb, mext;
    int msize;
    MPI_Type_get_extent(L->dt, &mlb, &mext);
    MPI_Type_size(L->dt, &msize);
    CHECK(mext == L->extent, "%s: extent %ld, expected %ld", L->desc, (long)mext, (long)L->extent);
    CHECK(msize == n * bases[k].size, "%s: size %d, expected %d", L->desc, msize, n * bases[k].size);
}

/* ------------------------------------------------------------------------------------------ */
/* Typed buffers with guards: elements where the layout puts them, a pattern everywhere else  */

#define GUARD 64

typedef struct {
    const layout *L;
    int count;
    char *mem, *base;
    size_t len;
    unsigned char *mask; /* 1 where an element's significant byte lies */
} tbuf;

static unsigned char fill_byte(size_t i) { return (unsigned char)(i * 37u + 0x5a); }

static char *elem_at(const tbuf *b, size_t i)
{
    const layout *L = b->L;
    return b->base + (MPI_Aint)(i / L->n_per) * L->extent + L->offs[i % L->n_per];
}

static void tbuf_init(tbuf *b, const layout *L, int count)
{
    b->L = L;
    b->count = count;
    MPI_Aint lo = L->lo, hi = count > 0 ? (MPI_Aint)(count - 1) * L->extent + L->hi : L->lo;
    if (count > 0 && L->extent < 0)
        lo += (MPI_Aint)(count - 1) * L->extent, hi = L->hi;
    b->len = (size_t)(hi - lo) + 2 * GUARD;
    b->mem = mt_malloc(b->len);
    b->base = b->mem + GUARD - lo;
    b->mask = calloc(b->len, 1);
    for (size_t i = 0; i < b->len; i++)
        b->mem[i] = (char)fill_byte(i);
    size_t n = (size_t)count * L->n_per;
    for (size_t i = 0; i < n; i++)
        memset(b->mask + (elem_at(b, i) - b->mem), 1, bases[L->k].size);
}

static void tbuf_free(tbuf *b)
{
    free(b->mem);
    free(b->mask);
}

static size_t tbuf_elems(const tbuf *b) { return (size_t)b->count * b->L->n_per; }

/* Store packed elements from index `first`. */
static void tbuf_put(tbuf *b, size_t first, const unsigned char *src, size_t n)
{
    int s = bases[b->L->k].size;
    for (size_t i = 0; i < n; i++)
        memcpy(elem_at(b, first + i), src + i * s, s);
}

/* ------------------------------------------------------------------------------------------ */
/* Comparison                                                                                */

static const char *iter_desc; /* what the current iteration does, for messages */
static uint64_t cur_seed;
static int cur_iter;
static int iter_errs;

static void fail(const char *fmt, ...)
{
    va_list ap;
    char msg[512];
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    mt_errs++;
    iter_errs++;
    if (iter_errs <= 3)
        fprintf(stderr, "[rank %d] seed %llu iteration %d (%s): %s\n", mt_rank,
                (unsigned long long)cur_seed, cur_iter, iter_desc, msg);
}

static int same_elem(int k, const unsigned char *a, const unsigned char *b, int tolerant)
{
    if (k == BK_F32 || k == BK_F64) {
        double x, y;
        if (k == BK_F32) {
            float fx, fy;
            memcpy(&fx, a, 4), memcpy(&fy, b, 4);
            x = fx, y = fy;
        } else {
            memcpy(&x, a, 8), memcpy(&y, b, 8);
        }
        if (isnan(x) || isnan(y))
            return isnan(x) && isnan(y);
        if (tolerant)
            return fabs(x - y) <= (k == BK_F32 ? 1e-4 : 1e-10) * (fabs(y) + 1e3);
        return memcmp(a, b, bases[k].size) == 0;
    }
    if (k == BK_BOOL)
        return !*a == !*b;
    return memcmp(a, b, bases[k].size) == 0;
}

static void show_elem(int k, const unsigned char *p, char *out, size_t n)
{
    double d;
    float f;
    switch (k) {
    case BK_F32: memcpy(&f, p, 4); snprintf(out, n, "%.9g", f); return;
    case BK_F64: memcpy(&d, p, 8); snprintf(out, n, "%.17g", d); return;
    default: {
        size_t o = 0;
        for (int i = 0; i < bases[k].size && o + 3 < n; i++)
            o += snprintf(out + o, n - o, "%02x", p[i]);
    }
    }
}

/* Elements [first, first+n) of b must equal `want`; with check_rest, every byte that is not
 * an element must still hold the fill pattern. */
static void tbuf_check(const tbuf *b, size_t first, const unsigned char *want, size_t n,
                       int tolerant, int check_rest, const char *what)
{
    int k = b->L->k, s = bases[k].size, shown = 0;
    for (size_t i = 0; i < n; i++) {
        const unsigned char *got = (const unsigned char *)elem_at(b, first + i);
        if (!same_elem(k, got, want + i * s, tolerant)) {
            char g[64], w[64];
            show_elem(k, got, g, sizeof g);
            show_elem(k, want + i * s, w, sizeof w);
            if (shown++ < 2)
                fail("%s: element %zu of %zu is %s, expected %s (%s, count %d)", what, first + i,
                     tbuf_elems(b), g, w, b->L->desc, b->count);
        }
    }
    if (!check_rest)
        return;
    for (size_t i = 0; i < b->len; i++)
        if (!b->mask[i] && (unsigned char)b->mem[i] != fill_byte(i)) {
            fail("%s: byte %ld outside the datatype's elements was written (%s, count %d)", what,
                 (long)(b->mem + i - b->base), b->L->desc, b->count);
            break;
        }
}

/* ------------------------------------------------------------------------------------------ */
/* Communicators                                                                             */

static MPI_Comm make_comm(rng_t *sr, char *desc, size_t dn)
{
    int wsize = mt_size, wrank = mt_rank;
    MPI_Comm c = MPI_COMM_NULL;
    int kind = rbelow(sr, 6);
    int perm[64];
    for (int i = 0; i < wsize; i++)
        perm[i] = i;
    for (int i = wsize - 1; i > 0; i--) {
        int j = rbelow(sr, i + 1), t = perm[i];
        perm[i] = perm[j], perm[j] = t;
    }
    int colors = 1 + rbelow(sr, 3), dropped = rbelow(sr, wsize + 1);
    switch (kind) {
    case 0:
        snprintf(desc, dn, "world");
        return MPI_COMM_WORLD;
    case 1:
        MPI_Comm_dup(MPI_COMM_WORLD, &c);
        snprintf(desc, dn, "dup of world");
        break;
    case 2: /* colours by rank modulo, keys permuted */
        MPI_Comm_split(MPI_COMM_WORLD, wrank % colors, perm[wrank], &c);
        snprintf(desc, dn, "split into %d by rank, keys permuted", colors);
        break;
    case 3: /* one rank left out, the others reordered */
        MPI_Comm_split(MPI_COMM_WORLD, wsize > 1 && wrank == dropped ? MPI_UNDEFINED : 0,
                       wsize - wrank, &c);
        snprintf(desc, dn, "world without rank %d, reversed", wsize > 1 ? dropped : -1);
        break;
    case 4:
        MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, perm[wrank], MPI_INFO_NULL, &c);
        snprintf(desc, dn, "shared-memory split, keys permuted");
        break;
    default: { /* a group of a permuted prefix */
        int n = 1 + rbelow(sr, wsize);
        MPI_Group wg, g;
        MPI_Comm_group(MPI_COMM_WORLD, &wg);
        MPI_Group_incl(wg, n, perm, &g);
        MPI_Comm_create(MPI_COMM_WORLD, g, &c);
        MPI_Group_free(&g);
        MPI_Group_free(&wg);
        snprintf(desc, dn, "group of %d permuted ranks", n);
    }
    }
    return c;
}

/* ------------------------------------------------------------------------------------------ */
/* One iteration                                                                             */

enum { C_BCAST, C_REDUCE, C_ALLREDUCE, C_REDSCAT_BLOCK, C_REDSCAT, C_SCAN, C_EXSCAN, C_GATHER,
       C_GATHERV, C_SCATTER, C_SCATTERV, C_ALLGATHER, C_ALLGATHERV, C_ALLTOALL, C_ALLTOALLV,
       C_BARRIER, C_P2P, C_COUNT };
static const char *coll_names[C_COUNT] = {
    "Bcast", "Reduce", "Allreduce", "Reduce_scatter_block", "Reduce_scatter", "Scan", "Exscan",
    "Gather", "Gatherv", "Scatter", "Scatterv", "Allgather", "Allgatherv", "Alltoall",
    "Alltoallv", "Barrier", "point-to-point"};
static const char *mode_names[3] = {"blocking", "nonblocking", "persistent"};

/* Element counts that sit on the size thresholds of oxmpi-info, in bytes. */
static const int thresholds[] = {1024, 2048, 4096, 12288, 16384, 65536};

static int draw_count(rng_t *sr, size_t inst_bytes, int big_ok)
{
    int c = rbelow(sr, 10);
    if (c < 2)
        return c; /* 0 or 1 */
    if (c < 4)
        return 2 + 2 * rbelow(sr, 4) + 1; /* small odd */
    if (c < 6)
        return 1 + rbelow(sr, 300);
    int nt = big_ok ? 6 : 4;
    long t = thresholds[rbelow(sr, nt)];
    long n = t / (long)inst_bytes + rbelow(sr, 3) - 1;
    return n < 0 ? 0 : (int)n;
}

/* Run `call` as a blocking, nonblocking (I-prefixed) or persistent (_init) collective. */
#define RUN_COLL(mode, Name, name, ...)                                                           \
    do {                                                                                          \
        MPI_Request rq_ = MPI_REQUEST_NULL;                                                       \
        int rc_;                                                                                  \
        if ((mode) == 0)                                                                          \
            rc_ = MPI_##Name(__VA_ARGS__);                                                        \
        else if ((mode) == 1) {                                                                   \
            rc_ = MPI_I##name(__VA_ARGS__, &rq_);                                                 \
            if (rc_ == MPI_SUCCESS)                                                               \
                rc_ = MPI_Wait(&rq_, MPI_STATUS_IGNORE);                                          \
        } else {                                                                                  \
            rc_ = MPI_##Name##_init(__VA_ARGS__, MPI_INFO_NULL, &rq_);                            \
            if (rc_ == MPI_SUCCESS)                                                               \
                rc_ = MPI_Start(&rq_);                                                            \
            if (rc_ == MPI_SUCCESS)                                                               \
                rc_ = MPI_Wait(&rq_, MPI_STATUS_IGNORE);                                          \
            if (rq_ != MPI_REQUEST_NULL)                                                          \
                MPI_Request_free(&rq_);                                                           \
        }                                                                                         \
        if (rc_ != MPI_SUCCESS)                                                                   \
            fail("MPI_%s (%s) returned %s", #Name, mode_names[mode], mt_errstr(rc_));              \
    } while (0)

typedef struct {
    uint64_t seed;
    int iter;
    MPI_Comm comm;
    int rank, size;
    int kind, mode, inplace, root, op;
    layout L;      /* the shared layout */
    datagen g;
    rng_t mine;    /* choices of this rank alone */
} ctx;

/* Rank r's input of `n` elements for purpose p (elements packed). */
static unsigned char *input_of(const ctx *x, int r, int p, size_t n)
{
    unsigned char *v = mt_malloc(n * bases[x->L.k].size + 1);
    gen_input(x->seed, x->iter, r, p, x->L.k, &x->g, n, v);
    return v;
}

/* The combination, in rank order, of ranks [0, upto) of elements [first, first+n). */
static unsigned char *reference(const ctx *x, int upto, size_t total, size_t first, size_t n)
{
    int s = bases[x->L.k].size;
    unsigned char *acc = mt_malloc(n * s + 1), *in;
    for (int r = 0; r < upto; r++) {
        in = input_of(x, r, 0, total);
        if (r == 0)
            memcpy(acc, in + first * s, n * s);
        else
            for (size_t i = 0; i < n; i++)
                combine(x->L.k, x->op, acc + i * s, in + (first + i) * s);
        free(in);
    }
    return acc;
}

/* A layout of this rank's own choosing with the same type signature: the shared one, or its
 * basic type with n_per times the count. */
static const layout *own_layout(ctx *x, const layout *flat, int *count)
{
    if (rbelow(&x->mine, 2) == 0)
        return &x->L;
    *count *= x->L.n_per;
    return flat;
}

/* Compare this rank's Allreduce result with rank 0's, bit for bit. */
static void same_everywhere(const ctx *x, const tbuf *b)
{
    int s = bases[x->L.k].size;
    size_t n = tbuf_elems(b);
    uint64_t h = 1469598103934665603ull, h0 = h;
    for (size_t i = 0; i < n; i++) {
        const unsigned char *p = (const unsigned char *)elem_at(b, i);
        for (int j = 0; j < s; j++)
            h = (h ^ p[j]) * 1099511628211ull;
    }
    if (x->rank == 0) {
        for (int r = 1; r < x->size; r++) {
            uint64_t hr;
            MPI_Recv(&hr, 1, MPI_UINT64_T, r, 29999, x->comm, MPI_STATUS_IGNORE);
            if (hr != h)
                fail("Allreduce result of rank %d differs from rank 0's", r);
        }
    } else {
        MPI_Send(&h, 1, MPI_UINT64_T, 0, 29999, x->comm);
    }
    (void)h0;
}

static void do_reduction(ctx *x, int count)
{
    const layout *L = &x->L;
    int s = bases[L->k].size, n = x->size, me = x->rank;
    int tol = x->g.mode == DM_FRACTION;
    size_t per = (size_t)count * L->n_per; /* elements per block */
    tbuf sb, rb;
    int kind = x->kind;
    /* Input: one block (reduce, allreduce, scans) or one per rank (reduce_scatter*). */
    int *rcounts = mt_malloc(sizeof(int) * n);
    int total_inst = count;
    if (kind == C_REDSCAT_BLOCK)
        total_inst = count * n;
    if (kind == C_REDSCAT) {
        rng_t sr = rseed(x->seed, x->iter, 999, 5);
        total_inst = 0;
        for (int r = 0; r < n; r++)
            total_inst += rcounts[r] = rbelow(&sr, 3) == 0 ? 0 : rbelow(&sr, count + 1);
    }
    size_t total = (size_t)total_inst * L->n_per;
    unsigned char *mine = input_of(x, me, 0, total);
    int result_inst = kind == C_REDSCAT_BLOCK ? count : kind == C_REDSCAT ? rcounts[me] : count;
    int inplace = x->inplace && !(kind == C_REDUCE && me != x->root);
    tbuf_init(&sb, L, total_inst);
    tbuf_init(&rb, L, inplace ? total_inst : result_inst);
    if (inplace)
        tbuf_put(&rb, 0, mine, total);
    else
        tbuf_put(&sb, 0, mine, total);
    char *snap = mt_malloc(sb.len);
    memcpy(snap, sb.mem, sb.len);
    const void *sp = inplace ? MPI_IN_PLACE : sb.base;
    MPI_Op op = op_handle(x->op);
    user_layout = &x->L;
    switch (kind) {
    case C_REDUCE: RUN_COLL(x->mode, Reduce, reduce, sp, rb.base, count, L->dt, op, x->root, x->comm); break;
    case C_ALLREDUCE: RUN_COLL(x->mode, Allreduce, allreduce, sp, rb.base, count, L->dt, op, x->comm); break;
    case C_REDSCAT_BLOCK: RUN_COLL(x->mode, Reduce_scatter_block, reduce_scatter_block, sp, rb.base, count, L->dt, op, x->comm); break;
    case C_REDSCAT: RUN_COLL(x->mode, Reduce_scatter, reduce_scatter, sp, rb.base, rcounts, L->dt, op, x->comm); break;
    case C_SCAN: RUN_COLL(x->mode, Scan, scan, sp, rb.base, count, L->dt, op, x->comm); break;
    case C_EXSCAN: RUN_COLL(x->mode, Exscan, exscan, sp, rb.base, count, L->dt, op, x->comm); break;
    }
    if (memcmp(snap, sb.mem, sb.len) != 0)
        fail("the send buffer changed");
    size_t first = 0, nres = (size_t)result_inst * L->n_per;
    if (kind == C_REDSCAT_BLOCK)
        first = (size_t)me * per;
    if (kind == C_REDSCAT)
        for (int r = 0; r < me; r++)
            first += (size_t)rcounts[r] * L->n_per;
    int upto = kind == C_SCAN ? me + 1 : kind == C_EXSCAN ? me : n;
    int check = !(kind == C_REDUCE && me != x->root) && upto > 0;
    if (check) {
        unsigned char *want = reference(x, upto, total, first, nres);
        /* In place, the rest of the receive buffer is undefined after a reduce_scatter. */
        tbuf_check(&rb, 0, want, nres, tol, !inplace, "result");
        free(want);
    } else if (kind == C_REDUCE) {
        tbuf_check(&rb, 0, NULL, 0, 0, 1, "receive buffer of a non-root");
    }
    if (kind == C_ALLREDUCE) {
        same_everywhere(x, &rb);
        /* The same call on the same data gives the same bits (MPI-4.1 6.9.1 advice): the
         * same form again (blocking, nonblocking and persistent forms may group differently;
         * NaNs may differ in payload). */
        tbuf again;
        tbuf_init(&again, L, count);
        tbuf_put(&sb, 0, mine, (size_t)count * L->n_per);
        RUN_COLL(x->mode, Allreduce, allreduce, sb.base, again.base, count, L->dt, op, x->comm);
        for (size_t i = 0; i < (size_t)count * L->n_per; i++)
            if (!same_elem(L->k, (const unsigned char *)elem_at(&again, i),
                           (const unsigned char *)elem_at(&rb, i), 0)) {
                fail("a repeated Allreduce on the same data gave other bits at element %zu", i);
                break;
            }
        tbuf_free(&again);
    }
    (void)s;
    free(snap);
    free(mine);
    free(rcounts);
    tbuf_free(&sb);
    tbuf_free(&rb);
}

static int inplace_sym(const ctx *x) { return x->inplace; }

/* Counts and displacements (in units of the layout used: f of them per shared-layout
 * instance) of one block per rank of a gather or scatter: vc[r] instances
 * (v-forms, placed in `order` with random gaps) or `count` each at r * count * f. Returns the
 * buffer's length in the same units. */
static int place_blocks(int n, const int *order, const int *vc, int count, int f, rng_t *sr,
                        int *counts, int *displs)
{
    int at = 0;
    for (int i = 0; i < n; i++) {
        int r = order[i];
        counts[r] = (vc ? vc[r] : count) * f;
        displs[r] = vc ? at : r * count * f;
        at += counts[r] + (vc ? rbelow(sr, 2) * f : 0);
    }
    return at;
}

/* Bcast, gathers, scatters, allgathers, alltoalls: pure data movement. */
static void do_movement(ctx *x, int count)
{
    int n = x->size, me = x->rank, root = x->root, s = bases[x->L.k].size;
    layout flat;
    layout_flat(&flat, x->L.k);
    size_t per = (size_t)count * x->L.n_per; /* elements of one block */
    int kind = x->kind;
    rng_t sr = rseed(x->seed, x->iter, 998, 3);
    int *vc = mt_malloc(sizeof(int) * n * n), *order = mt_malloc(sizeof(int) * n);
    /* v-variants: block counts (in shared-layout instances) and a permuted placement. */
    for (int i = 0; i < n * n; i++)
        vc[i] = rbelow(&sr, 4) == 0 ? 0 : rbelow(&sr, count + 1);
    if (kind == C_ALLTOALLV && inplace_sym(x)) /* in place: as much each way */
        for (int i = 0; i < n; i++)
            for (int j = 0; j < i; j++)
                vc[i * n + j] = vc[j * n + i];
    for (int i = 0; i < n; i++)
        order[i] = i;
    for (int i = n - 1; i > 0; i--) {
        int j = rbelow(&sr, i + 1), t = order[i];
        order[i] = order[j], order[j] = t;
    }
    int scount = count, rcount = count;
    const layout *SL = own_layout(x, &flat, &scount), *RL = own_layout(x, &flat, &rcount);
    int sf = scount / (count ? count : 1), rf = rcount / (count ? count : 1); /* 1 or n_per */
    if (count == 0)
        sf = SL == &flat ? x->L.n_per : 1, rf = RL == &flat ? x->L.n_per : 1;
    tbuf sb, rb;
    unsigned char *in, *want;
    int *scounts = mt_malloc(sizeof(int) * n), *sdispls = mt_malloc(sizeof(int) * n);
    int *rcounts = mt_malloc(sizeof(int) * n), *rdispls = mt_malloc(sizeof(int) * n);
    int inplace = x->inplace;
    switch (kind) {
    case C_BCAST: {
        tbuf_init(&rb, RL, rcount);
        in = input_of(x, root, 0, per);
        if (me == root)
            tbuf_put(&rb, 0, in, per);
        char *snap = mt_malloc(rb.len);
        memcpy(snap, rb.mem, rb.len);
        RUN_COLL(x->mode, Bcast, bcast, rb.base, rcount, RL->dt, root, x->comm);
        if (me == root && memcmp(snap, rb.mem, rb.len))
            fail("the root's buffer changed");
        tbuf_check(&rb, 0, in, per, 0, 1, "broadcast data");
        free(snap);
        free(in);
        tbuf_free(&rb);
        break;
    }
    case C_GATHER: case C_ALLGATHER: case C_GATHERV: case C_ALLGATHERV: {
        int v = kind == C_GATHERV || kind == C_ALLGATHERV, all = kind == C_ALLGATHER || kind == C_ALLGATHERV;
        /* rank r contributes blk[r] shared-layout instances at displacement disp[r] */
        int rtotal = place_blocks(n, order, v ? vc : NULL, count, rf, &sr, rcounts, rdispls);
        int mycnt = (v ? vc[me] : count) * sf;
        int receiver = all || me == root;
        inplace = inplace && receiver;
        tbuf_init(&sb, SL, mycnt);
        tbuf_init(&rb, RL, receiver ? rtotal : 0);
        size_t myel = (size_t)mycnt * SL->n_per;
        in = input_of(x, me, 0, myel);
        tbuf_put(inplace ? &rb : &sb, inplace ? (size_t)rdispls[me] * RL->n_per : 0, in, myel);
        free(in);
        char *snap = mt_malloc(sb.len);
        memcpy(snap, sb.mem, sb.len);
        const void *sp = inplace ? MPI_IN_PLACE : sb.base;
        if (kind == C_GATHER)
            RUN_COLL(x->mode, Gather, gather, sp, mycnt, SL->dt, rb.base, rcount, RL->dt, root, x->comm);
        else if (kind == C_ALLGATHER)
            RUN_COLL(x->mode, Allgather, allgather, sp, mycnt, SL->dt, rb.base, rcount, RL->dt, x->comm);
        else if (kind == C_GATHERV)
            RUN_COLL(x->mode, Gatherv, gatherv, sp, mycnt, SL->dt, rb.base, rcounts, rdispls, RL->dt, root, x->comm);
        else
            RUN_COLL(x->mode, Allgatherv, allgatherv, sp, mycnt, SL->dt, rb.base, rcounts, rdispls, RL->dt, x->comm);
        if (memcmp(snap, sb.mem, sb.len))
            fail("the send buffer changed");
        if (receiver) {
            for (int r = 0; r < n; r++) {
                size_t el = (size_t)rcounts[r] * RL->n_per;
                want = input_of(x, r, 0, el);
                tbuf_check(&rb, (size_t)rdispls[r] * RL->n_per, want, el, 0, r == n - 1,
                           "gathered block");
                free(want);
            }
        }
        free(snap);
        tbuf_free(&sb);
        tbuf_free(&rb);
        break;
    }
    case C_SCATTER: case C_SCATTERV: {
        int v = kind == C_SCATTERV;
        int stotal = place_blocks(n, order, v ? vc : NULL, count, sf, &sr, scounts, sdispls);
        int mycnt = (v ? vc[me] : count) * rf;
        inplace = inplace && me == root;
        tbuf_init(&sb, SL, me == root ? stotal : 0);
        tbuf_init(&rb, RL, mycnt);
        if (me == root)
            for (int r = 0; r < n; r++) {
                size_t el = (size_t)scounts[r] * SL->n_per;
                in = input_of(x, r, 1, el);
                tbuf_put(&sb, (size_t)sdispls[r] * SL->n_per, in, el);
                free(in);
            }
        char *snap = mt_malloc(sb.len);
        memcpy(snap, sb.mem, sb.len);
        void *rp = inplace ? MPI_IN_PLACE : rb.base;
        if (kind == C_SCATTER)
            RUN_COLL(x->mode, Scatter, scatter, sb.base, scount, SL->dt, rp, mycnt, RL->dt, root, x->comm);
        else
            RUN_COLL(x->mode, Scatterv, scatterv, sb.base, scounts, sdispls, SL->dt, rp, mycnt, RL->dt, root, x->comm);
        if (memcmp(snap, sb.mem, sb.len))
            fail("the send buffer changed");
        if (!inplace) {
            size_t el = (size_t)mycnt * RL->n_per;
            want = input_of(x, me, 1, el);
            tbuf_check(&rb, 0, want, el, 0, 1, "scattered block");
            free(want);
        }
        free(snap);
        tbuf_free(&sb);
        tbuf_free(&rb);
        break;
    }
    case C_ALLTOALL: case C_ALLTOALLV: {
        int v = kind == C_ALLTOALLV;
        /* block from i to j: vc[i*n+j] instances (v) or count; purpose 2 + i*n + j */
        int at = 0;
        for (int q = 0; q < n; q++) {
            int r = order[q];
            scounts[r] = (v ? vc[me * n + r] : count) * sf;
            sdispls[r] = at;
            at += scounts[r] + (v ? sf : 0);
        }
        int stotal = v ? at : n * scount;
        if (!v)
            for (int r = 0; r < n; r++)
                sdispls[r] = r * scount;
        at = 0;
        for (int q = 0; q < n; q++) {
            int r = order[(q + 1) % n];
            rcounts[r] = (v ? vc[r * n + me] : count) * rf;
            rdispls[r] = at;
            at += rcounts[r] + (v ? rf : 0);
        }
        int rtotal = v ? at : n * rcount;
        if (!v)
            for (int r = 0; r < n; r++)
                rdispls[r] = r * rcount;
        /* In place, the receive counts, displacements and type describe both directions. */
        if (inplace) {
            RL = &x->L, rf = 1, rcount = count;
            at = 0;
            for (int q = 0; q < n; q++) {
                int r = order[(q + 1) % n];
                rcounts[r] = v ? vc[r * n + me] : count;
                rdispls[r] = v ? at : r * count;
                at += rcounts[r] + (v ? 1 : 0);
            }
            rtotal = v ? at : n * count;
        }
        tbuf_init(&sb, SL, inplace ? 0 : stotal);
        tbuf_init(&rb, RL, rtotal);
        for (int r = 0; r < n; r++) {
            size_t el = inplace ? (size_t)rcounts[r] * RL->n_per : (size_t)scounts[r] * SL->n_per;
            in = input_of(x, me, 2 + r, el);
            if (inplace)
                tbuf_put(&rb, (size_t)rdispls[r] * RL->n_per, in, el);
            else
                tbuf_put(&sb, (size_t)sdispls[r] * SL->n_per, in, el);
            free(in);
        }
        char *snap = mt_malloc(sb.len);
        memcpy(snap, sb.mem, sb.len);
        const void *sp = inplace ? MPI_IN_PLACE : sb.base;
        if (kind == C_ALLTOALL)
            RUN_COLL(x->mode, Alltoall, alltoall, sp, scount, SL->dt, rb.base, rcount, RL->dt, x->comm);
        else
            RUN_COLL(x->mode, Alltoallv, alltoallv, sp, scounts, sdispls, SL->dt, rb.base, rcounts, rdispls, RL->dt, x->comm);
        if (memcmp(snap, sb.mem, sb.len))
            fail("the send buffer changed");
        for (int r = 0; r < n; r++) {
            size_t el = (size_t)rcounts[r] * RL->n_per;
            want = input_of(x, r, 2 + me, el);
            tbuf_check(&rb, (size_t)rdispls[r] * RL->n_per, want, el, 0, r == n - 1, "alltoall block");
            free(want);
        }
        free(snap);
        tbuf_free(&sb);
        tbuf_free(&rb);
        break;
    }
    }
    (void)s;
    free(vc), free(order), free(scounts), free(sdispls), free(rcounts), free(rdispls);
    layout_free(&flat);
}

/* A burst of messages from every rank to rank+k, received in order, some by wildcard. */
static void do_p2p(ctx *x, rng_t *sr)
{
    int n = x->size, me = x->rank;
    int k = n > 1 ? 1 + rbelow(sr, n - 1) : 0, m = 1 + rbelow(sr, 4), tag = 1 + rbelow(sr, 1000);
    int to = (me + k) % n, from = (me - k + n) % n;
    size_t inst = (size_t)x->L.n_per * bases[x->L.k].extent;
    int counts[4], modes[4];
    for (int j = 0; j < m; j++)
        counts[j] = draw_count(sr, inst, 1), modes[j] = rbelow(sr, 4);
    layout flat;
    layout_flat(&flat, x->L.k);
    tbuf sb[4], rb[4];
    MPI_Request rq[8];
    int any_src = rbelow(&x->mine, 3) == 0, any_tag = rbelow(&x->mine, 3) == 0;
    /* The sender's counts decide; the receiver's buffers are the same size (any layout). */
    for (int j = 0; j < m; j++) {
        int rc = counts[j];
        const layout *RL = own_layout(x, &flat, &rc);
        tbuf_init(&rb[j], RL, rc);
        MPI_Irecv(rb[j].base, rc, RL->dt, any_src ? MPI_ANY_SOURCE : from,
                  any_tag ? MPI_ANY_TAG : tag, x->comm, &rq[j]);
    }
    MPI_Barrier(x->comm); /* every receive is posted: ready sends are allowed */
    for (int j = 0; j < m; j++) {
        int sc = counts[j];
        const layout *SL = own_layout(x, &flat, &sc);
        size_t el = (size_t)sc * SL->n_per;
        tbuf_init(&sb[j], SL, sc);
        unsigned char *in = input_of(x, me, 100 + j, el);
        tbuf_put(&sb[j], 0, in, el);
        free(in);
        int rc;
        rq[m + j] = MPI_REQUEST_NULL;
        switch (modes[j]) {
        case 0: rc = MPI_Send(sb[j].base, sc, SL->dt, to, tag, x->comm); break;
        case 1: rc = MPI_Ssend(sb[j].base, sc, SL->dt, to, tag, x->comm); break;
        case 2: rc = MPI_Rsend(sb[j].base, sc, SL->dt, to, tag, x->comm); break;
        default: rc = MPI_Isend(sb[j].base, sc, SL->dt, to, tag, x->comm, &rq[m + j]); break;
        }
        if (rc != MPI_SUCCESS)
            fail("send %d returned %s", j, mt_errstr(rc));
    }
    MPI_Status st[8];
    int rc = MPI_Waitall(2 * m, rq, st);
    if (rc != MPI_SUCCESS)
        fail("MPI_Waitall returned %s", mt_errstr(rc));
    for (int j = 0; j < m; j++) {
        size_t el = (size_t)counts[j] * x->L.n_per;
        unsigned char *want = input_of(x, from, 100 + j, el);
        int got = -1;
        MPI_Get_count(&st[j], bases[x->L.k].dt, &got);
        if (st[j].MPI_SOURCE != from || st[j].MPI_TAG != tag || got != (int)el)
            fail("message %d: source %d tag %d elements %d, expected %d, %d, %zu", j,
                 st[j].MPI_SOURCE, st[j].MPI_TAG, got, from, tag, el);
        tbuf_check(&rb[j], 0, want, el, 0, 1, "received message");
        free(want);
        tbuf_free(&sb[j]);
        tbuf_free(&rb[j]);
    }
    layout_free(&flat);
}

static void run_iteration(uint64_t seed, int iter, int verbose)
{
    rng_t sr = rseed(seed, (uint64_t)iter, 0, 1);
    char cdesc[96], desc[512];
    MPI_Comm comm = make_comm(&sr, cdesc, sizeof cdesc);
    ctx x;
    memset(&x, 0, sizeof x);
    x.seed = seed, x.iter = iter, x.comm = comm;
    x.kind = rbelow(&sr, C_COUNT);
    x.mode = rbelow(&sr, 3);
    x.inplace = rbelow(&sr, 3) == 0;
    int reduction = x.kind >= C_REDUCE && x.kind <= C_EXSCAN;
    /* a basic type and an operation it allows */
    int k, op = -1;
    if (reduction) {
        do {
            op = rbelow(&sr, OP_COUNT);
            k = rbelow(&sr, BK_COUNT);
        } while (!op_allowed(op, k));
    } else {
        k = rbelow(&sr, BK_COUNT);
    }
    x.op = op;
    /* Predefined operations take basic types only (MPI-4.1 6.9.2); user operations any. */
    int derived = rbelow(&sr, 2) && !is_pair(k) &&
                  (reduction ? x.op >= OP_USER_COMM : k != BK_AFFINE);
    layout_make(&x.L, k, &sr, derived);
    do {
        x.g.mode = rbelow(&sr, DM_COUNT);
    } while (!data_allowed(x.g.mode, k, op));
    static const double densities[] = {0.0, 0.003, 0.05, 0.3, 0.9};
    x.g.density = densities[rbelow(&sr, 5)];
    x.g.op = op;
    int count = draw_count(&sr, (size_t)x.L.n_per * bases[k].size,
                           x.kind != C_ALLTOALL && x.kind != C_ALLTOALLV && x.kind != C_ALLGATHER && x.kind != C_ALLGATHERV);
    if (x.kind == C_REDSCAT_BLOCK || x.kind == C_ALLTOALL || x.kind == C_ALLTOALLV ||
        x.kind == C_ALLGATHER || x.kind == C_ALLGATHERV || x.kind == C_GATHER ||
        x.kind == C_GATHERV || x.kind == C_SCATTER || x.kind == C_SCATTERV)
        count = count / (mt_size > 2 ? mt_size / 2 : 1);
    int rootdraw = rbelow(&sr, 64);
    snprintf(desc, sizeof desc, "%s %s%s on %s, %s, count %d, %s%s%s data%s", mode_names[x.mode],
             coll_names[x.kind], x.inplace ? " in place" : "", cdesc, x.L.desc, count,
             reduction ? op_names[op] : "", reduction ? ", " : "", dm_names[x.g.mode],
             x.g.mode == DM_SPARSE || x.g.mode == DM_NEGZERO ? " (density)" : "");
    iter_desc = desc;
    cur_seed = seed, cur_iter = iter, iter_errs = 0;
    if (verbose && mt_rank == 0)
        printf("seed %llu iteration %d: %s\n", (unsigned long long)seed, iter, desc);
    if (comm != MPI_COMM_NULL) {
        MPI_Comm_rank(comm, &x.rank);
        MPI_Comm_size(comm, &x.size);
        x.root = rootdraw % x.size;
        x.mine = rseed(seed, (uint64_t)iter, (uint64_t)x.rank + 1, 3);
        if (x.mode == 2 && x.kind == C_P2P)
            x.mode = 0;
        if (x.kind == C_BARRIER)
            RUN_COLL(x.mode, Barrier, barrier, comm);
        else if (x.kind == C_P2P)
            do_p2p(&x, &sr);
        else if (reduction)
            do_reduction(&x, count);
        else
            do_movement(&x, count);
        if (comm != MPI_COMM_WORLD)
            MPI_Comm_free(&comm);
    }
    layout_free(&x.L);
}

static int diff_main(int argc, char **argv)
{
    mt_init(&argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    bases_init();
    MPI_Op_create(user_comm_fn, 1, &user_comm_op);
    MPI_Op_create(user_noncomm_fn, 0, &user_noncomm_op);
    const char *seeds = getenv("OXMPI_DIFF_SEED");
    const char *iters_s = getenv("OXMPI_DIFF_ITERS");
    const char *only_s = getenv("OXMPI_DIFF_ONLY");
    const char *verbose_s = getenv("OXMPI_DIFF_VERBOSE");
    if (!seeds || !*seeds)
        seeds = DIFF_SEEDS;
    int iters = iters_s && *iters_s ? atoi(iters_s) : DIFF_ITERS;
    int only = only_s && *only_s ? atoi(only_s) : -1;
    int verbose = verbose_s && *verbose_s && strcmp(verbose_s, "0");
    char *list = strdup(seeds), *save = NULL;
    int ran = 0;
    for (char *t = strtok_r(list, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        uint64_t seed = strtoull(t, NULL, 0);
        for (int i = 0; i < iters; i++) {
            if (only >= 0 && i != only)
                continue;
            run_iteration(seed, i, verbose);
            ran++;
        }
    }
    free(list);
    if (mt_rank == 0 && verbose)
        printf("%d iterations\n", ran);
    MPI_Op_free(&user_comm_op);
    MPI_Op_free(&user_noncomm_op);
    MPI_Type_free(&affine_type);
    return mt_finalize();
}

#endif
