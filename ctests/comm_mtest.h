/* Helpers for the communicator, group, attribute and info tests: error counting and a
 * final report that uses point-to-point only (no collectives), so these tests do not depend
 * on the collective algorithms. */
#ifndef COMM_MTEST_H
#define COMM_MTEST_H

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static int cm_errs = 0;

/* Counts a failed check and says where it failed. */
#define CM_CHECK(cond, ...)                                                   \
    do {                                                                      \
        if (!(cond)) {                                                        \
            int cm_r_;                                                        \
            MPI_Comm_rank(MPI_COMM_WORLD, &cm_r_);                            \
            cm_errs++;                                                        \
            fprintf(stderr, "[%d] %s:%d: check failed: %s: ", cm_r_, __FILE__, \
                    __LINE__, #cond);                                         \
            fprintf(stderr, __VA_ARGS__);                                     \
            fprintf(stderr, "\n");                                            \
        }                                                                     \
    } while (0)

/* Expects `call` to fail with error class `cls` (-1: any error). Needs MPI_ERRORS_RETURN. */
#define CM_EXPECT_ERR(call, cls)                                                    \
    do {                                                                            \
        int cm_rc_ = (call), cm_cls_ = MPI_SUCCESS;                                 \
        if (cm_rc_ != MPI_SUCCESS)                                                  \
            MPI_Error_class(cm_rc_, &cm_cls_);                                      \
        CM_CHECK(cm_rc_ != MPI_SUCCESS && ((cls) < 0 || cm_cls_ == (cls)),          \
                 "%s returned %d (class %d), expected class %d", #call, cm_rc_,     \
                 cm_cls_, (int)(cls));                                              \
    } while (0)

/* Expects `call` to succeed. */
#define CM_OK(call)                                                          \
    do {                                                                     \
        int cm_rc_ = (call);                                                 \
        CM_CHECK(cm_rc_ == MPI_SUCCESS, "%s returned %d", #call, cm_rc_);    \
    } while (0)

/* MPI_Init, and errors returned rather than fatal on the predefined communicators. */
/* Unused by tests that initialize at a thread level of their own. */
__attribute__((unused)) static void cm_init(int *argc, char ***argv)
{
    MPI_Init(argc, argv);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
}

/* Sums the error counts at rank 0 (point-to-point), prints the verdict there, finalizes.
 * Returns the process exit status. */
static int cm_finalize(void)
{
    int rank, size, total = cm_errs;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (rank == 0) {
        for (int src = 1; src < size; src++) {
            int e = 0;
            MPI_Recv(&e, 1, MPI_INT, src, 999, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            total += e;
        }
        if (total == 0)
            printf("No Errors\n");
        else
            printf("Found %d errors\n", total);
        fflush(stdout);
    } else {
        MPI_Send(&cm_errs, 1, MPI_INT, 0, 999, MPI_COMM_WORLD);
    }
    MPI_Finalize();
    return rank == 0 ? total != 0 : cm_errs != 0;
}

/* Checks that `comm` carries messages between all its members: each rank sends its world
 * rank to the next and receives from the previous, on tag `tag`. */
static inline void cm_check_ring(MPI_Comm comm, int tag)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    MPI_Group g, wg;
    MPI_Comm_group(comm, &g);
    MPI_Comm_group(MPI_COMM_WORLD, &wg);
    int prev = (rank + size - 1) % size, prev_world;
    MPI_Group_translate_ranks(g, 1, &prev, wg, &prev_world);
    int me_world, got = -1;
    MPI_Comm_rank(MPI_COMM_WORLD, &me_world);
    MPI_Status st;
    MPI_Sendrecv(&me_world, 1, MPI_INT, (rank + 1) % size, tag, &got, 1, MPI_INT, prev, tag, comm, &st);
    CM_CHECK(got == prev_world, "ring on a communicator: got %d from rank %d, expected world rank %d", got, prev,
             prev_world);
    CM_CHECK(st.MPI_SOURCE == prev, "ring status source %d, expected %d", st.MPI_SOURCE, prev);
    MPI_Group_free(&g);
    MPI_Group_free(&wg);
}

#endif
