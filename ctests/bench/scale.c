/* Scale on one node (scripts/scale-bench.sh): the time MPI_Init takes, the node's shared
 * memory once the job is up, and a barrier and an allreduce loop that must give the right sum.
 * Prints one comment line from rank 0: "# scale init_max_ms=... init_median_ms=...
 * shmem_kib=... ok=1". The shared memory is /proc/meminfo's Shmem (every tmpfs file and shared
 * mapping of the machine) after the loop, minus OXMPI_SCALE_SHMEM_BASE_KIB, the value before
 * the launch. Exits non-zero when a sum is wrong. */
#define _POSIX_C_SOURCE 200809L
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static long shmem_kib(void)
{
    FILE *f = fopen("/proc/meminfo", "r");
    char line[256];
    long kib = -1;
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, "Shmem:", 6) == 0)
            kib = atol(line + 6);
    if (f)
        fclose(f);
    return kib;
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    double t0 = now_ms();
    MPI_Init(&argc, &argv);
    double init = now_ms() - t0;
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Barrier(MPI_COMM_WORLD);
    long sum = 0, expect = 0;
    for (int i = 0; i < 20; i++) {
        long v = rank + i, r = 0;
        MPI_Allreduce(&v, &r, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
        sum += r;
        expect += (long)size * (size - 1) / 2 + (long)size * i;
    }
    MPI_Barrier(MPI_COMM_WORLD);
    long shmem = rank == 0 ? shmem_kib() : 0;
    double *inits = rank == 0 ? malloc(size * sizeof *inits) : NULL;
    MPI_Gather(&init, 1, MPI_DOUBLE, inits, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    int ok = sum == expect, all_ok = 0;
    MPI_Reduce(&ok, &all_ok, 1, MPI_INT, MPI_LAND, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        qsort(inits, size, sizeof *inits, by_value);
        const char *base = getenv("OXMPI_SCALE_SHMEM_BASE_KIB");
        printf("# scale init_max_ms=%.1f init_median_ms=%.1f shmem_kib=%ld ok=%d\n", inits[size - 1], inits[size / 2],
               shmem - (base ? atol(base) : 0), all_ok);
        free(inits);
    }
    MPI_Finalize();
    return !(rank != 0 || all_ok);
}
