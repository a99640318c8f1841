/* oxmpi-test: np=1 */
/* MPI_Pack/Unpack of derived types (byte-exact packed form, positions, partial buffers),
 * MPI_Pack_size, and MPI_Pack_external/Unpack_external ("external32": big-endian, MPI_LONG
 * in 4 bytes). */
#include "mtest.h"
#include <stddef.h>
#include <stdint.h>

int main(int argc, char **argv)
{
    int i;
    mt_init(&argc, &argv);

    /* A vector of ints with negative stride, packed after a header int. */
    {
        int src[12], dst[12], hdr = 77, hdr2 = 0;
        char buf[256];
        int pos = 0, size = 0;
        MPI_Datatype v;
        for (i = 0; i < 12; i++)
            src[i] = 100 + i;
        MPI_CHECK(MPI_Type_vector(3, 2, -4, MPI_INT, &v));
        MPI_CHECK(MPI_Type_commit(&v));
        MPI_CHECK(MPI_Pack_size(2, v, MPI_COMM_WORLD, &size));
        CHECK(size >= 48, "pack size %d", size);
        MPI_CHECK(MPI_Pack(&hdr, 1, MPI_INT, buf, sizeof buf, &pos, MPI_COMM_WORLD));
        /* One element with its origin at src[8]: blocks src[8..9], src[4..5], src[0..1]. */
        MPI_CHECK(MPI_Pack(&src[8], 1, v, buf, sizeof buf, &pos, MPI_COMM_WORLD));
        CHECK(pos == 4 + 24, "position after pack %d", pos);
        {
            int *p = (int *)(buf + 4);
            int want[] = {108, 109, 104, 105, 100, 101};
            for (i = 0; i < 6; i++)
                CHECK(p[i] == want[i], "packed int %d is %d, want %d", i, p[i], want[i]);
        }
        memset(dst, 0, sizeof dst);
        pos = 0;
        MPI_CHECK(MPI_Unpack(buf, 28, &pos, &hdr2, 1, MPI_INT, MPI_COMM_WORLD));
        MPI_CHECK(MPI_Unpack(buf, 28, &pos, &dst[8], 1, v, MPI_COMM_WORLD));
        CHECK(hdr2 == 77 && pos == 28, "unpack header %d pos %d", hdr2, pos);
        for (i = 0; i < 12; i++) {
            int want = (i % 4 < 2 && i <= 9) ? 100 + i : 0;
            CHECK(dst[i] == want, "unpacked dst[%d] = %d, want %d", i, dst[i], want);
        }
        MPI_CHECK(MPI_Type_free(&v));
    }

    /* A struct with padding: pack skips the holes; 3 elements. */
    {
        struct rec {
            char c;
            double d;
            short s;
        } in[3], out[3];
        int bl[] = {1, 1, 1}, pos = 0;
        MPI_Aint dp[] = {offsetof(struct rec, c), offsetof(struct rec, d), offsetof(struct rec, s)};
        MPI_Datatype ts[] = {MPI_CHAR, MPI_DOUBLE, MPI_SHORT}, st;
        unsigned char buf[64];
        MPI_Aint lb, ext;
        MPI_CHECK(MPI_Type_create_struct(3, bl, dp, ts, &st));
        MPI_CHECK(MPI_Type_commit(&st));
        MPI_CHECK(MPI_Type_get_extent(st, &lb, &ext));
        CHECK(ext == sizeof(struct rec), "struct extent %ld", (long)ext);
        for (i = 0; i < 3; i++) {
            in[i].c = (char)('a' + i);
            in[i].d = 1.5 * i;
            in[i].s = (short)(1000 + i);
        }
        MPI_CHECK(MPI_Pack(in, 3, st, buf, sizeof buf, &pos, MPI_COMM_WORLD));
        CHECK(pos == 33, "packed 3 records into %d bytes", pos);
        for (i = 0; i < 3; i++) {
            double d;
            short s;
            memcpy(&d, buf + 11 * i + 1, 8);
            memcpy(&s, buf + 11 * i + 9, 2);
            CHECK(buf[11 * i] == 'a' + i && d == 1.5 * i && s == 1000 + i, "packed record %d", i);
        }
        memset(out, 0, sizeof out);
        pos = 0;
        MPI_CHECK(MPI_Unpack(buf, 33, &pos, out, 3, st, MPI_COMM_WORLD));
        for (i = 0; i < 3; i++)
            CHECK(out[i].c == in[i].c && out[i].d == in[i].d && out[i].s == in[i].s, "unpacked record %d", i);
        /* Output buffer too small: an error, position unchanged. */
        {
            int rc, cls;
            MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
            pos = 0;
            rc = MPI_Pack(in, 3, st, buf, 20, &pos, MPI_COMM_WORLD);
            MPI_Error_class(rc, &cls);
            /* MPICH 4.0.2 does not check outsize here and returns success. */
            CHECK_STRICT(rc != MPI_SUCCESS && cls == MPI_ERR_ARG, "pack into a small buffer: class %d", cls);
            MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
        }
        MPI_CHECK(MPI_Type_free(&st));
    }

    /* external32 */
    {
        int32_t iv[2] = {0x01020304, -2};
        long lv[2] = {5, -6};
        double dv = 1.0;
        short sv = 0x0a0b;
        unsigned char buf[64];
        MPI_Aint pos = 0, sz = 0;
        MPI_CHECK(MPI_Pack_external_size("external32", 2, MPI_LONG, &sz));
        CHECK(sz == 8, "external32 size of 2 MPI_LONG is %ld", (long)sz);
        MPI_CHECK(MPI_Pack_external_size("external32", 3, MPI_DOUBLE, &sz));
        CHECK(sz == 24, "external32 size of 3 MPI_DOUBLE is %ld", (long)sz);
        MPI_CHECK(MPI_Pack_external("external32", iv, 2, MPI_INT, buf, sizeof buf, &pos));
        MPI_CHECK(MPI_Pack_external("external32", lv, 2, MPI_LONG, buf, sizeof buf, &pos));
        MPI_CHECK(MPI_Pack_external("external32", &dv, 1, MPI_DOUBLE, buf, sizeof buf, &pos));
        MPI_CHECK(MPI_Pack_external("external32", &sv, 1, MPI_SHORT, buf, sizeof buf, &pos));
        CHECK(pos == 8 + 8 + 8 + 2, "external32 position %ld", (long)pos);
        {
            unsigned char want[] = {1,    2,    3,    4,    0xff, 0xff, 0xff, 0xfe, 0, 0, 0, 5, 0xff,
                                    0xff, 0xff, 0xfa, 0x3f, 0xf0, 0,    0,    0,    0, 0, 0, 0x0a, 0x0b};
            for (i = 0; i < (int)sizeof want; i++)
                CHECK(buf[i] == want[i], "external32 byte %d is 0x%02x, want 0x%02x", i, buf[i], want[i]);
        }
        {
            int32_t iv2[2];
            long lv2[2];
            double dv2;
            short sv2;
            MPI_Aint p = 0;
            MPI_CHECK(MPI_Unpack_external("external32", buf, 26, &p, iv2, 2, MPI_INT));
            MPI_CHECK(MPI_Unpack_external("external32", buf, 26, &p, lv2, 2, MPI_LONG));
            MPI_CHECK(MPI_Unpack_external("external32", buf, 26, &p, &dv2, 1, MPI_DOUBLE));
            MPI_CHECK(MPI_Unpack_external("external32", buf, 26, &p, &sv2, 1, MPI_SHORT));
            CHECK(iv2[0] == iv[0] && iv2[1] == iv[1] && lv2[0] == 5 && lv2[1] == -6 && dv2 == 1.0 && sv2 == sv,
                  "external32 round trip");
        }
        /* A vector of floats in external32. */
        {
            float f[6] = {1.0f, -9, 2.0f, -9, -4.0f, -9};
            MPI_Datatype v;
            MPI_Aint p = 0;
            unsigned char want[] = {0x3f, 0x80, 0, 0, 0x40, 0, 0, 0, 0xc0, 0x80, 0, 0};
            MPI_CHECK(MPI_Type_vector(3, 1, 2, MPI_FLOAT, &v));
            MPI_CHECK(MPI_Type_commit(&v));
            MPI_CHECK(MPI_Pack_external("external32", f, 1, v, buf, sizeof buf, &p));
            CHECK(p == 12, "external32 vector position %ld", (long)p);
            for (i = 0; i < 12; i++)
                CHECK(buf[i] == want[i], "external32 vector byte %d is 0x%02x", i, buf[i]);
            MPI_CHECK(MPI_Type_free(&v));
        }
    }
    return mt_finalize();
}
