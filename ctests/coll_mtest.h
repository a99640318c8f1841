/* Helpers shared by the collective tests (coll_*.c): error counting and the final report. */
#ifndef COLL_MTEST_H
#define COLL_MTEST_H
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int coll_errs = 0;

static int coll_rank(void)
{
    int r;
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    return r;
}

/* Counts a failed check and prints the first few with their location. */
#define CHECK(cond, ...)                                                     \
    do {                                                                     \
        if (!(cond)) {                                                       \
            if (coll_errs++ < 10) {                                          \
                fprintf(stderr, "[%d] %s:%d: ", coll_rank(), __FILE__, __LINE__); \
                fprintf(stderr, __VA_ARGS__);                                \
                fprintf(stderr, "\n");                                       \
            }                                                                \
        }                                                                    \
    } while (0)

/* Sums the error counts, prints "No Errors" from rank 0 on success, finalizes. */
static int coll_finish(void)
{
    int total = 0;
    MPI_Allreduce(&coll_errs, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (coll_rank() == 0) {
        if (total == 0)
            printf("No Errors\n");
        else
            printf("Found %d errors\n", total);
    }
    MPI_Finalize();
    return total != 0;
}
#endif
