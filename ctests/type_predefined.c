/* oxmpi-test: np=1 */
/* MPI_Type_size / MPI_Type_get_extent / MPI_Type_get_true_extent (and the _x
 * forms) of predefined datatypes, against the C types they describe. */
#include "mtest.h"
#include <stddef.h>
#include <stdint.h>
#include <complex.h>
#include <wchar.h>

static void check_type(const char *name, MPI_Datatype t, int size, MPI_Aint extent, MPI_Aint true_extent)
{
    int s = -1;
    MPI_Aint lb = -1, ext = -1, tlb = -1, text = -1;
    MPI_Count sx = -1, lbx = -1, extx = -1;
    MPI_CHECK(MPI_Type_size(t, &s));
    CHECK(s == size, "%s: size %d, want %d", name, s, size);
    MPI_CHECK(MPI_Type_get_extent(t, &lb, &ext));
    CHECK(lb == 0 && ext == extent, "%s: lb %ld extent %ld, want 0 %ld", name, (long)lb, (long)ext, (long)extent);
    MPI_CHECK(MPI_Type_get_true_extent(t, &tlb, &text));
    CHECK(tlb == 0 && text == true_extent, "%s: true lb %ld true extent %ld, want 0 %ld", name, (long)tlb,
          (long)text, (long)true_extent);
    MPI_CHECK(MPI_Type_size_x(t, &sx));
    CHECK(sx == size, "%s: size_x %lld", name, (long long)sx);
    MPI_CHECK(MPI_Type_get_extent_x(t, &lbx, &extx));
    CHECK(lbx == 0 && extx == extent, "%s: extent_x %lld", name, (long long)extx);
}

#define PLAIN(T, CT) check_type(#T, T, (int)sizeof(CT), (MPI_Aint)sizeof(CT), (MPI_Aint)sizeof(CT))

int main(int argc, char **argv)
{
    struct { float v; int i; } fi;
    struct { long v; int i; } li;
    struct short_int { short v; int i; } si;
    struct { long double v; int i; } ldi;
    mt_init(&argc, &argv);

    PLAIN(MPI_CHAR, char);
    PLAIN(MPI_SIGNED_CHAR, signed char);
    PLAIN(MPI_UNSIGNED_CHAR, unsigned char);
    PLAIN(MPI_BYTE, unsigned char);
    PLAIN(MPI_WCHAR, wchar_t);
    PLAIN(MPI_SHORT, short);
    PLAIN(MPI_UNSIGNED_SHORT, unsigned short);
    PLAIN(MPI_INT, int);
    PLAIN(MPI_UNSIGNED, unsigned);
    PLAIN(MPI_LONG, long);
    PLAIN(MPI_UNSIGNED_LONG, unsigned long);
    PLAIN(MPI_LONG_LONG, long long);
    PLAIN(MPI_LONG_LONG_INT, long long);
    PLAIN(MPI_UNSIGNED_LONG_LONG, unsigned long long);
    PLAIN(MPI_FLOAT, float);
    PLAIN(MPI_DOUBLE, double);
    PLAIN(MPI_LONG_DOUBLE, long double);
    PLAIN(MPI_INT8_T, int8_t);
    PLAIN(MPI_INT16_T, int16_t);
    PLAIN(MPI_INT32_T, int32_t);
    PLAIN(MPI_INT64_T, int64_t);
    PLAIN(MPI_UINT8_T, uint8_t);
    PLAIN(MPI_UINT16_T, uint16_t);
    PLAIN(MPI_UINT32_T, uint32_t);
    PLAIN(MPI_UINT64_T, uint64_t);
    PLAIN(MPI_C_BOOL, _Bool);
    PLAIN(MPI_C_FLOAT_COMPLEX, float _Complex);
    PLAIN(MPI_C_DOUBLE_COMPLEX, double _Complex);
    PLAIN(MPI_AINT, MPI_Aint);
    PLAIN(MPI_OFFSET, MPI_Offset);
    PLAIN(MPI_COUNT, MPI_Count);
    check_type("MPI_PACKED", MPI_PACKED, 1, 1, 1);

    /* Pair types: size is the sum of the members, extent includes padding. */
    check_type("MPI_DOUBLE_INT", MPI_DOUBLE_INT, 12, 16, 12);
    check_type("MPI_2INT", MPI_2INT, 8, 8, 8);
    check_type("MPI_FLOAT_INT", MPI_FLOAT_INT, 8, (MPI_Aint)sizeof fi, 8);
    check_type("MPI_LONG_INT", MPI_LONG_INT, (int)(sizeof(long) + sizeof(int)), (MPI_Aint)sizeof li,
               (MPI_Aint)(sizeof(long) + sizeof(int)));
    check_type("MPI_SHORT_INT", MPI_SHORT_INT, (int)(sizeof(short) + sizeof(int)), (MPI_Aint)sizeof si,
               (MPI_Aint)(offsetof(struct short_int, i) + sizeof(int)));
    check_type("MPI_LONG_DOUBLE_INT", MPI_LONG_DOUBLE_INT, (int)(sizeof(long double) + sizeof(int)),
               (MPI_Aint)sizeof ldi, (MPI_Aint)(sizeof(long double) + sizeof(int)));
    return mt_finalize();
}
