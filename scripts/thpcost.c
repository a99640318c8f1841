/* What the kernel's page pinning costs single-copy transfers: a ping-pong of one 1 MiB message
 * of doubles between ranks 0 and 1, as MPI_Type_vector blocks of BL doubles every STRIDE
 * doubles (BL == STRIDE: one contiguous type), from buffers on ordinary 4 KiB pages or, with
 * HUGE=1 in the environment, on transparent huge pages (madvise MADV_HUGEPAGE before the
 * first touch). process_vm_readv/writev pin every remote page they copy, once per remote
 * iovec; on huge pages the pinning walks fewer entries. See docs/performance.md, "Twelfth
 * session".
 *   mpicc -O2 -o thpcost scripts/thpcost.c
 *   mpiexec -n 2 ./thpcost [BL [STRIDE]]          (defaults 512 1024: 4 KiB blocks)
 *   HUGE=1 mpiexec -n 2 ./thpcost [BL [STRIDE]]   (oxmpi's mpiexec passes the environment) */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define HUGE_PAGE ((size_t)2 << 20)

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* A buffer of `bytes` starting 16 bytes into a huge-page-aligned area (as malloc's large
 * blocks start 16 bytes into a page), on huge pages when `huge`. */
static char *buffer(size_t bytes, int huge)
{
    void *p = NULL;
    if (posix_memalign(&p, HUGE_PAGE, bytes + HUGE_PAGE) != 0) {
        fprintf(stderr, "thpcost: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    if (huge && madvise(p, bytes + HUGE_PAGE, MADV_HUGEPAGE) != 0)
        perror("thpcost: madvise(MADV_HUGEPAGE)");
    return (char *)p + 16;
}

int main(int argc, char **argv)
{
    const int iters = 400, warmup = 40;
    int rank, size, bl, stride, huge, i;
    const char *h = getenv("HUGE");
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    bl = argc > 1 ? atoi(argv[1]) : 512;
    stride = argc > 2 ? atoi(argv[2]) : 1024;
    huge = h && atoi(h) != 0;
    if (size < 2 || bl <= 0 || stride < bl || (1 << 17) % bl != 0) {
        if (rank == 0)
            fprintf(stderr, "usage: mpiexec -n 2 thpcost [BL [STRIDE]] (BL divides 131072, STRIDE >= BL)\n");
        MPI_Finalize();
        return 1;
    }
    int count = (1 << 17) / bl; /* 1 MiB of doubles */
    size_t span = (size_t)count * stride * sizeof(double);
    char *sbuf = buffer(span, huge), *rbuf = buffer(span, huge);
    memset(sbuf, 1, span);
    memset(rbuf, 2, span);
    MPI_Datatype type;
    if (bl == stride)
        MPI_Type_contiguous(1 << 17, MPI_DOUBLE, &type);
    else
        MPI_Type_vector(count, bl, stride, MPI_DOUBLE, &type);
    MPI_Type_commit(&type);
    double *lat = malloc(sizeof(double) * iters);
    for (i = -warmup; i < iters && rank < 2; i++) {
        double t0 = MPI_Wtime();
        if (rank == 0) {
            MPI_Send(sbuf, 1, type, 1, 0, MPI_COMM_WORLD);
            MPI_Recv(rbuf, 1, type, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(rbuf, 1, type, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(sbuf, 1, type, 0, 0, MPI_COMM_WORLD);
        }
        if (i >= 0)
            lat[i] = (MPI_Wtime() - t0) / 2 * 1e6;
    }
    if (rank == 0) {
        qsort(lat, iters, sizeof(double), by_value);
        printf("blocks of %d doubles every %d, %s pages: median %.1f us per 1 MiB message\n", bl, stride,
               huge ? "huge" : "4 KiB", lat[iters / 2]);
    }
    MPI_Type_free(&type);
    free(lat);
    MPI_Finalize();
    return 0;
}
