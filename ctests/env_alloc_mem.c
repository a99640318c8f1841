/* oxmpi-test: np=1,2,4,8 */
/* MPI_Alloc_mem / MPI_Free_mem: sizes 0 to 1 MiB give distinct, writable, aligned memory;
 * the memory serves as a buffered-send buffer and as send/receive buffers between ranks;
 * info hints are accepted; a negative size and a freed info handle are errors of the right
 * class; MPI_Free_mem(NULL) is harmless. */
#include "mtest.h"
#include <stdint.h>

static void expect_class(const char *what, int rc, int want)
{
    int cls = -1;
    CHECK(rc != MPI_SUCCESS, "%s: returned MPI_SUCCESS", what);
    if (rc == MPI_SUCCESS)
        return;
    MPI_CHECK(MPI_Error_class(rc, &cls));
    CHECK(cls == want, "%s: error class %d, want %d (%s)", what, cls, want, mt_errstr(rc));
}

int main(int argc, char **argv)
{
    static const MPI_Aint sizes[] = {0, 1, 7, 64, 4096, 100000, 1 << 20};
    enum { NSIZES = sizeof sizes / sizeof sizes[0] };
    void *mem[NSIZES];
    MPI_Info info;
    int i, partner;

    mt_init(&argc, &argv);
    MPI_CHECK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    MPI_CHECK(MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN));

    /* All sizes live at once: distinct blocks, each fully writable, aligned for any type. */
    for (i = 0; i < NSIZES; i++) {
        mem[i] = NULL;
        MPI_CHECK(MPI_Alloc_mem(sizes[i], MPI_INFO_NULL, &mem[i]));
        CHECK(sizes[i] == 0 || mem[i] != NULL, "Alloc_mem(%ld) gave NULL", (long)sizes[i]);
        CHECK(((uintptr_t)mem[i] % 8) == 0, "Alloc_mem(%ld) gave %p, not 8-byte aligned", (long)sizes[i], mem[i]);
        if (mem[i])
            memset(mem[i], i + 1, (size_t)sizes[i]);
    }
    for (i = 0; i < NSIZES; i++) {
        MPI_Aint k;
        for (k = 0; k < sizes[i]; k++)
            if (((unsigned char *)mem[i])[k] != (unsigned char)(i + 1)) {
                CHECK(0, "block %d (size %ld) byte %ld overwritten", i, (long)sizes[i], (long)k);
                break;
            }
        MPI_CHECK(MPI_Free_mem(mem[i]));
    }

    /* With hints (MPICH knows "mpich_buf_type"; unknown keys are ignored). */
    MPI_CHECK(MPI_Info_create(&info));
    MPI_CHECK(MPI_Info_set(info, "alloc_shared_noncontig", "true"));
    mem[0] = NULL;
    MPI_CHECK(MPI_Alloc_mem(256, info, &mem[0]));
    CHECK(mem[0] != NULL, "Alloc_mem with info gave NULL");
    MPI_CHECK(MPI_Free_mem(mem[0]));

    /* Alloc_mem'ed memory as the attached buffer of buffered sends and as message buffers. */
    partner = mt_rank ^ 1;
    if (partner >= mt_size)
        partner = mt_rank;
    {
        int n = 1000, bsize = MPI_BSEND_OVERHEAD + n * (int)sizeof(int), dsize = 0;
        int *sbuf, *rbuf;
        void *bbuf, *dbuf = NULL;
        MPI_CHECK(MPI_Alloc_mem(bsize, MPI_INFO_NULL, &bbuf));
        MPI_CHECK(MPI_Alloc_mem(n * (MPI_Aint)sizeof(int), MPI_INFO_NULL, &sbuf));
        MPI_CHECK(MPI_Alloc_mem(n * (MPI_Aint)sizeof(int), MPI_INFO_NULL, &rbuf));
        for (i = 0; i < n; i++) {
            sbuf[i] = mt_rank * 100000 + i;
            rbuf[i] = -1;
        }
        MPI_CHECK(MPI_Buffer_attach(bbuf, bsize));
        MPI_CHECK(MPI_Bsend(sbuf, n, MPI_INT, partner, 5, MPI_COMM_WORLD));
        MPI_CHECK(MPI_Recv(rbuf, n, MPI_INT, partner, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        MPI_CHECK(MPI_Buffer_detach(&dbuf, &dsize));
        CHECK(dbuf == bbuf && dsize == bsize, "Buffer_detach gave %p/%d, attached %p/%d", dbuf, dsize, bbuf, bsize);
        for (i = 0; i < n; i++)
            if (rbuf[i] != partner * 100000 + i) {
                CHECK(0, "rbuf[%d] = %d, want %d", i, rbuf[i], partner * 100000 + i);
                break;
            }
        MPI_CHECK(MPI_Free_mem(rbuf));
        MPI_CHECK(MPI_Free_mem(sbuf));
        MPI_CHECK(MPI_Free_mem(bbuf));
    }

    MPI_CHECK(MPI_Free_mem(NULL));

    /* Bad input. */
    mem[0] = NULL;
    expect_class("Alloc_mem size -1", MPI_Alloc_mem(-1, MPI_INFO_NULL, &mem[0]), MPI_ERR_ARG);
    CHECK(mem[0] == NULL, "Alloc_mem size -1 wrote a pointer");
    MPI_CHECK(MPI_Info_free(&info));
    CHECK(info == MPI_INFO_NULL, "Info_free did not reset the handle");

    return mt_finalize();
}
