/* oxmpi-test: np=1 */
/* Every datatype constructor: size, extent, true extent, and the envelope and contents
 * (combiner and exact arguments, nested and dup'ed types), names, match_size, f90 types. */
#include "mtest.h"
#include <stddef.h>

static void check_bounds(MPI_Datatype t, int size, MPI_Aint lb, MPI_Aint ext, MPI_Aint tlb, MPI_Aint text,
                         const char *what)
{
    int s = -1;
    MPI_Aint l = -1, e = -1, tl = -1, te = -1;
    MPI_Count sx = -1, lx = -1, ex = -1;
    MPI_CHECK(MPI_Type_size(t, &s));
    MPI_CHECK(MPI_Type_get_extent(t, &l, &e));
    MPI_CHECK(MPI_Type_get_true_extent(t, &tl, &te));
    MPI_CHECK(MPI_Type_size_x(t, &sx));
    MPI_CHECK(MPI_Type_get_extent_x(t, &lx, &ex));
    CHECK(s == size && sx == size, "%s: size %d (x %lld), want %d", what, s, (long long)sx, size);
    CHECK(l == lb && e == ext && lx == lb && ex == ext, "%s: lb/extent %ld/%ld, want %ld/%ld", what, (long)l,
          (long)e, (long)lb, (long)ext);
    CHECK(tl == tlb && te == text, "%s: true lb/extent %ld/%ld, want %ld/%ld", what, (long)tl, (long)te, (long)tlb,
          (long)text);
}

/* Checks the envelope, then the contents against the expected arrays. */
static void check_contents(MPI_Datatype t, int combiner, int ni, const int *ints, int na, const MPI_Aint *aints,
                           int nd, const MPI_Datatype *types, const char *what)
{
    int n_i = -1, n_a = -1, n_d = -1, c = -1, i;
    int gi[64];
    MPI_Aint ga[64];
    MPI_Datatype gd[16];
    MPI_CHECK(MPI_Type_get_envelope(t, &n_i, &n_a, &n_d, &c));
    CHECK(c == combiner && n_i == ni && n_a == na && n_d == nd, "%s: envelope comb %d ni %d na %d nd %d", what, c,
          n_i, n_a, n_d);
    if (c != combiner || n_i != ni || n_a != na || n_d != nd)
        return;
    MPI_CHECK(MPI_Type_get_contents(t, 64, 64, 16, gi, ga, gd));
    for (i = 0; i < ni; i++)
        CHECK(gi[i] == ints[i], "%s: int %d is %d, want %d", what, i, gi[i], ints[i]);
    for (i = 0; i < na; i++)
        CHECK(ga[i] == aints[i], "%s: aint %d is %ld, want %ld", what, i, (long)ga[i], (long)aints[i]);
    for (i = 0; i < nd; i++) {
        int ci, ca, cd, cc;
        MPI_Type_get_envelope(gd[i], &ci, &ca, &cd, &cc);
        if (cc == MPI_COMBINER_NAMED) {
            CHECK(gd[i] == types[i], "%s: type %d is 0x%x, want 0x%x", what, i, gd[i], types[i]);
        } else {
            int s1, s2;
            MPI_Type_size(gd[i], &s1);
            MPI_Type_size(types[i], &s2);
            CHECK(s1 == s2, "%s: derived type %d has size %d, want %d", what, i, s1, s2);
            MPI_CHECK(MPI_Type_free(&gd[i]));
        }
    }
}

int main(int argc, char **argv)
{
    MPI_Datatype t, v, s, r, d, sub;
    mt_init(&argc, &argv);

    /* contiguous */
    MPI_CHECK(MPI_Type_contiguous(5, MPI_INT, &t));
    check_bounds(t, 20, 0, 20, 0, 20, "contiguous");
    {
        int ints[] = {5};
        MPI_Datatype ts[] = {MPI_INT};
        check_contents(t, MPI_COMBINER_CONTIGUOUS, 1, ints, 0, NULL, 1, ts, "contiguous");
    }
    MPI_CHECK(MPI_Type_free(&t));
    CHECK(t == MPI_DATATYPE_NULL, "free sets MPI_DATATYPE_NULL");

    /* vector, positive and negative stride */
    MPI_CHECK(MPI_Type_vector(3, 2, 5, MPI_DOUBLE, &v));
    check_bounds(v, 48, 0, 96, 0, 96, "vector");
    {
        int ints[] = {3, 2, 5};
        MPI_Datatype ts[] = {MPI_DOUBLE};
        check_contents(v, MPI_COMBINER_VECTOR, 3, ints, 0, NULL, 1, ts, "vector");
    }
    MPI_CHECK(MPI_Type_vector(3, 1, -2, MPI_INT, &t));
    check_bounds(t, 12, -16, 20, -16, 20, "vector negative stride");
    MPI_CHECK(MPI_Type_free(&t));

    /* hvector of the vector (nested) */
    MPI_CHECK(MPI_Type_create_hvector(2, 1, 1000, v, &t));
    check_bounds(t, 96, 0, 1096, 0, 1096, "hvector");
    {
        int ints[] = {2, 1};
        MPI_Aint aints[] = {1000};
        MPI_Datatype ts[] = {v};
        check_contents(t, MPI_COMBINER_HVECTOR, 2, ints, 1, aints, 1, ts, "hvector");
    }
    MPI_CHECK(MPI_Type_free(&t));

    /* indexed, hindexed, indexed_block, hindexed_block */
    {
        int bl[] = {2, 1, 3}, dp[] = {4, 0, 10};
        int ints[] = {3, 2, 1, 3, 4, 0, 10};
        MPI_Datatype ts[] = {MPI_INT};
        MPI_CHECK(MPI_Type_indexed(3, bl, dp, MPI_INT, &t));
        check_bounds(t, 24, 0, 52, 0, 52, "indexed");
        check_contents(t, MPI_COMBINER_INDEXED, 7, ints, 0, NULL, 1, ts, "indexed");
        MPI_CHECK(MPI_Type_free(&t));
    }
    {
        int bl[] = {1, 2};
        MPI_Aint dp[] = {-8, 100};
        int ints[] = {2, 1, 2};
        MPI_Datatype ts[] = {MPI_SHORT};
        MPI_CHECK(MPI_Type_create_hindexed(2, bl, dp, MPI_SHORT, &t));
        check_bounds(t, 6, -8, 112, -8, 112, "hindexed");
        check_contents(t, MPI_COMBINER_HINDEXED, 3, ints, 2, dp, 1, ts, "hindexed");
        MPI_CHECK(MPI_Type_free(&t));
    }
    {
        int dp[] = {7, 1, 3};
        int ints[] = {3, 2, 7, 1, 3};
        MPI_Datatype ts[] = {MPI_FLOAT};
        MPI_CHECK(MPI_Type_create_indexed_block(3, 2, dp, MPI_FLOAT, &t));
        check_bounds(t, 24, 4, 32, 4, 32, "indexed_block");
        check_contents(t, MPI_COMBINER_INDEXED_BLOCK, 5, ints, 0, NULL, 1, ts, "indexed_block");
        MPI_CHECK(MPI_Type_free(&t));
    }
    {
        MPI_Aint dp[] = {16, 0};
        int ints[] = {2, 3};
        MPI_Datatype ts[] = {MPI_CHAR};
        MPI_CHECK(MPI_Type_create_hindexed_block(2, 3, dp, MPI_CHAR, &t));
        check_bounds(t, 6, 0, 19, 0, 19, "hindexed_block");
        check_contents(t, MPI_COMBINER_HINDEXED_BLOCK, 2, ints, 2, dp, 1, ts, "hindexed_block");
        MPI_CHECK(MPI_Type_free(&t));
    }

    /* struct: padding to the alignment, unsorted and overlapping displacements */
    {
        struct {
            double d;
            char c;
        } x;
        int bl[] = {1, 1};
        MPI_Aint dp[] = {offsetof(__typeof__(x), c), 0};
        MPI_Datatype ts[] = {MPI_CHAR, MPI_DOUBLE};
        int ints[] = {2, 1, 1};
        MPI_CHECK(MPI_Type_create_struct(2, bl, dp, ts, &s));
        check_bounds(s, 9, 0, (MPI_Aint)sizeof(x), 0, 9, "struct padded");
        check_contents(s, MPI_COMBINER_STRUCT, 3, ints, 2, dp, 2, ts, "struct");
    }
    {
        int bl[] = {2, 1};
        MPI_Aint dp[] = {0, 4};
        MPI_Datatype ts[] = {MPI_INT, MPI_INT};
        MPI_CHECK(MPI_Type_create_struct(2, bl, dp, ts, &t));
        check_bounds(t, 12, 0, 8, 0, 8, "struct overlapping");
        MPI_CHECK(MPI_Type_free(&t));
    }
    /* MPI_LB / MPI_UB markers */
    {
        int bl[] = {1, 1, 1};
        MPI_Aint dp[] = {-4, 8, 32};
        MPI_Datatype ts[] = {MPI_LB, MPI_INT, MPI_UB};
        MPI_CHECK(MPI_Type_struct(3, bl, dp, ts, &t));
        check_bounds(t, 4, -4, 36, 8, 4, "struct LB/UB");
        MPI_CHECK(MPI_Type_contiguous(2, t, &r));
        check_bounds(r, 8, -4, 72, 8, 40, "contiguous of LB/UB struct");
        MPI_CHECK(MPI_Type_free(&r));
        MPI_CHECK(MPI_Type_free(&t));
    }

    /* resized, negative lb; dup keeps everything and nests */
    MPI_CHECK(MPI_Type_create_resized(MPI_INT, -4, 12, &r));
    check_bounds(r, 4, -4, 12, 0, 4, "resized");
    {
        MPI_Aint aints[] = {-4, 12};
        MPI_Datatype ts[] = {MPI_INT};
        check_contents(r, MPI_COMBINER_RESIZED, 0, NULL, 2, aints, 1, ts, "resized");
    }
    MPI_CHECK(MPI_Type_contiguous(3, r, &t));
    check_bounds(t, 12, -4, 36, 0, 28, "contiguous of resized");
    MPI_CHECK(MPI_Type_free(&t));
    MPI_CHECK(MPI_Type_dup(s, &d));
    check_bounds(d, 9, 0, 16, 0, 9, "dup");
    {
        MPI_Datatype ts[] = {s};
        check_contents(d, MPI_COMBINER_DUP, 0, NULL, 0, NULL, 1, ts, "dup");
    }
    /* The child outlives its handle: free s, then decode d. */
    MPI_CHECK(MPI_Type_free(&s));
    {
        int ni, na, nd, c;
        MPI_Datatype inner;
        MPI_CHECK(MPI_Type_get_envelope(d, &ni, &na, &nd, &c));
        MPI_CHECK(MPI_Type_get_contents(d, 0, 0, 1, NULL, NULL, &inner));
        MPI_CHECK(MPI_Type_get_envelope(inner, &ni, &na, &nd, &c));
        CHECK(c == MPI_COMBINER_STRUCT && ni == 3 && nd == 2, "freed child decodes as struct (%d)", c);
        MPI_CHECK(MPI_Type_free(&inner));
    }
    MPI_CHECK(MPI_Type_free(&d));
    MPI_CHECK(MPI_Type_free(&r));

    /* subarray, C and Fortran order */
    {
        int sizes[] = {4, 6}, subs[] = {2, 3}, starts[] = {1, 2};
        int ints[] = {2, 4, 6, 2, 3, 1, 2, MPI_ORDER_C};
        MPI_Datatype ts[] = {MPI_INT};
        MPI_CHECK(MPI_Type_create_subarray(2, sizes, subs, starts, MPI_ORDER_C, MPI_INT, &sub));
        /* C: last dim fastest; first element (1,2) at 8, last (2,4) at 16. */
        check_bounds(sub, 24, 0, 96, 8 * 4, (16 - 8 + 1) * 4, "subarray C");
        check_contents(sub, MPI_COMBINER_SUBARRAY, 8, ints, 0, NULL, 1, ts, "subarray");
        MPI_CHECK(MPI_Type_free(&sub));
        MPI_CHECK(MPI_Type_create_subarray(2, sizes, subs, starts, MPI_ORDER_FORTRAN, MPI_INT, &sub));
        /* Fortran: dim 0 fastest; first element (1,2) at 1 + 2*4, last (2,4) at 2 + 4*4. */
        check_bounds(sub, 24, 0, 96, 9 * 4, (18 - 9 + 1) * 4, "subarray Fortran");
        MPI_CHECK(MPI_Type_free(&sub));
    }

    /* darray: 2 processes, block distribution of 10 ints */
    {
        int gs[] = {10}, di[] = {MPI_DISTRIBUTE_BLOCK}, da[] = {MPI_DISTRIBUTE_DFLT_DARG}, ps[] = {2};
        int ints[] = {2, 1, 1, 10, MPI_DISTRIBUTE_BLOCK, MPI_DISTRIBUTE_DFLT_DARG, 2, MPI_ORDER_C};
        MPI_Datatype ts[] = {MPI_INT};
        MPI_CHECK(MPI_Type_create_darray(2, 1, 1, gs, di, da, ps, MPI_ORDER_C, MPI_INT, &t));
        check_bounds(t, 20, 0, 40, 20, 20, "darray block");
        check_contents(t, MPI_COMBINER_DARRAY, 8, ints, 0, NULL, 1, ts, "darray");
        MPI_CHECK(MPI_Type_free(&t));
    }

    /* names */
    {
        char name[MPI_MAX_OBJECT_NAME];
        int len;
        MPI_CHECK(MPI_Type_get_name(MPI_DOUBLE, name, &len));
        CHECK(strcmp(name, "MPI_DOUBLE") == 0 && len == 10, "name of MPI_DOUBLE: %s", name);
        MPI_CHECK(MPI_Type_get_name(MPI_FLOAT_INT, name, &len));
        CHECK(strcmp(name, "MPI_FLOAT_INT") == 0, "name of MPI_FLOAT_INT: %s", name);
        MPI_CHECK(MPI_Type_get_name(v, name, &len));
        CHECK(len == 0 && name[0] == 0, "derived types start unnamed: %s", name);
        MPI_CHECK(MPI_Type_set_name(v, "my vector"));
        MPI_CHECK(MPI_Type_get_name(v, name, &len));
        CHECK(strcmp(name, "my vector") == 0 && len == 9, "set name: %s", name);
    }
    MPI_CHECK(MPI_Type_free(&v));

    /* envelope of predefined types; match_size; f90 */
    {
        int ni, na, nd, c, sz;
        MPI_CHECK(MPI_Type_get_envelope(MPI_INT, &ni, &na, &nd, &c));
        CHECK(c == MPI_COMBINER_NAMED && ni == 0 && na == 0 && nd == 0, "MPI_INT is named");
        MPI_CHECK(MPI_Type_match_size(MPI_TYPECLASS_REAL, 8, &t));
        CHECK(t == MPI_REAL8, "match_size real 8");
        MPI_CHECK(MPI_Type_match_size(MPI_TYPECLASS_INTEGER, 4, &t));
        CHECK(t == MPI_INTEGER4, "match_size integer 4");
        MPI_CHECK(MPI_Type_match_size(MPI_TYPECLASS_COMPLEX, 16, &t));
        CHECK(t == MPI_COMPLEX16, "match_size complex 16");
        MPI_CHECK(MPI_Type_create_f90_integer(5, &t));
        MPI_CHECK(MPI_Type_size(t, &sz));
        CHECK(sz == 4, "f90 integer r=5 has size %d", sz);
        {
            int ints[] = {5};
            check_contents(t, MPI_COMBINER_F90_INTEGER, 1, ints, 0, NULL, 0, NULL, "f90 integer");
        }
        MPI_CHECK(MPI_Type_create_f90_real(6, MPI_UNDEFINED, &t));
        MPI_CHECK(MPI_Type_size(t, &sz));
        CHECK(sz == 4, "f90 real p=6 has size %d", sz);
        {
            int ints[] = {6, MPI_UNDEFINED};
            check_contents(t, MPI_COMBINER_F90_REAL, 2, ints, 0, NULL, 0, NULL, "f90 real");
        }
    }

    /* zero-size types */
    MPI_CHECK(MPI_Type_contiguous(0, MPI_INT, &t));
    check_bounds(t, 0, 0, 0, 0, 0, "empty contiguous");
    MPI_CHECK(MPI_Type_free(&t));

    /* large-count constructor: contents in the large counts */
    {
        MPI_Count ni, na, nl, nd, cnts[3];
        int c;
        MPI_CHECK(MPI_Type_vector_c(4, 1, 3, MPI_INT, &t));
        check_bounds(t, 16, 0, 40, 0, 40, "vector_c");
        MPI_CHECK(MPI_Type_get_envelope_c(t, &ni, &na, &nl, &nd, &c));
        CHECK(c == MPI_COMBINER_VECTOR && ni == 0 && na == 0 && nl == 3 && nd == 1, "vector_c envelope");
        MPI_CHECK(MPI_Type_get_contents_c(t, 0, 0, 3, 1, NULL, NULL, cnts, &v));
        CHECK(cnts[0] == 4 && cnts[1] == 1 && cnts[2] == 3 && v == MPI_INT, "vector_c contents");
        MPI_CHECK(MPI_Type_free(&t));
    }

    /* MPI-1's MPI_Address: the address MPI_Get_address gives */
    {
        double cells[3];
        MPI_Aint a = 0, g = 0;
        MPI_CHECK(MPI_Address(&cells[2], &a));
        MPI_CHECK(MPI_Get_address(&cells[2], &g));
        CHECK(a == g && a == (MPI_Aint)&cells[2], "MPI_Address gives %ld, MPI_Get_address %ld", (long)a, (long)g);
        MPI_CHECK(MPI_Address(&cells[0], &g));
        CHECK(a - g == 2 * (MPI_Aint)sizeof(double), "MPI_Address difference %ld", (long)(a - g));
    }

    return mt_finalize();
}
