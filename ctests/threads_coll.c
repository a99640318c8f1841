/* oxmpi-test: np=1,2,4,8 timeout=180 */
/* MPI_THREAD_MULTIPLE collectives: 4 threads per rank, each with its own duplicate of
 * MPI_COMM_WORLD, run blocking collectives and communicator constructors on it; threads
 * start in a different order on each rank (rank-dependent delays), so a rank may be inside
 * one communicator's collective while its peers are inside another's. Results checked. */
#include "mtest.h"
#include <pthread.h>
#include <unistd.h>

#define NT 4
#define ITERS 10

static MPI_Comm comms[NT];
static int errs[NT];

#define TCHECK(t, cond)                                                                            \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            errs[t]++;                                                                             \
            fprintf(stderr, "[rank %d thread %d] line %d: %s\n", mt_rank, t, __LINE__, #cond);     \
        }                                                                                          \
    } while (0)

static void *run(void *arg)
{
    int t = (int) (long) arg, i, k, n = mt_size;
    MPI_Comm comm = comms[t], sub, dup;
    int *all = malloc(n * sizeof(int)), *a2a_in = malloc(n * sizeof(int)), *a2a_out = malloc(n * sizeof(int));
    usleep(((mt_rank + t) % NT) * 3000);
    for (i = 0; i < ITERS; i++) {
        int v = mt_rank + i * 100 + t, sum = -1, b = (mt_rank == i % n) ? 1000 + i * 10 + t : -1, scan = -1;
        int subsize, subrank, r2 = -1;
        MPI_Bcast(&b, 1, MPI_INT, i % n, comm);
        TCHECK(t, b == 1000 + i * 10 + t);
        MPI_Allreduce(&v, &sum, 1, MPI_INT, MPI_SUM, comm);
        TCHECK(t, sum == n * (n - 1) / 2 + n * (i * 100 + t));
        MPI_Allgather(&v, 1, MPI_INT, all, 1, MPI_INT, comm);
        for (k = 0; k < n; k++)
            TCHECK(t, all[k] == k + i * 100 + t);
        for (k = 0; k < n; k++)
            a2a_out[k] = mt_rank * 100 + k + t;
        MPI_Alltoall(a2a_out, 1, MPI_INT, a2a_in, 1, MPI_INT, comm);
        for (k = 0; k < n; k++)
            TCHECK(t, a2a_in[k] == k * 100 + mt_rank + t);
        MPI_Scan(&v, &scan, 1, MPI_INT, MPI_SUM, comm);
        TCHECK(t, scan == mt_rank * (mt_rank + 1) / 2 + (mt_rank + 1) * (i * 100 + t));
        sum = -1;
        MPI_Reduce(&v, &sum, 1, MPI_INT, MPI_MAX, 0, comm);
        if (mt_rank == 0)
            TCHECK(t, sum == n - 1 + i * 100 + t);
        MPI_Barrier(comm);
        if (i % 3 == 0) {
            /* Constructors: split in two halves, then a duplicate. */
            MPI_Comm_split(comm, mt_rank % 2, -mt_rank, &sub);
            MPI_Comm_size(sub, &subsize);
            MPI_Comm_rank(sub, &subrank);
            TCHECK(t, subsize == (n + 1 - mt_rank % 2) / 2);
            TCHECK(t, subrank == subsize - 1 - mt_rank / 2);
            MPI_Comm_dup(sub, &dup);
            MPI_Allreduce(&mt_rank, &r2, 1, MPI_INT, MPI_MIN, dup);
            TCHECK(t, r2 == mt_rank % 2);
            MPI_Comm_free(&dup);
            MPI_Comm_free(&sub);
        }
    }
    free(all);
    free(a2a_in);
    free(a2a_out);
    return NULL;
}

int main(int argc, char **argv)
{
    int provided, t;
    pthread_t th[NT];

    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &mt_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &mt_size);
    CHECK(provided == MPI_THREAD_MULTIPLE, "provided %d", provided);
    for (t = 0; t < NT; t++)
        MPI_Comm_dup(MPI_COMM_WORLD, &comms[t]);
    for (t = 0; t < NT; t++) {
        /* Different creation orders on different ranks too. */
        int tt = (t + mt_rank) % NT;
        pthread_create(&th[tt], NULL, run, (void *) (long) tt);
    }
    for (t = 0; t < NT; t++) {
        pthread_join(th[t], NULL);
        CHECK(errs[t] == 0, "thread %d: %d errors", t, errs[t]);
    }
    for (t = 0; t < NT; t++)
        MPI_Comm_free(&comms[t]);
    return mt_finalize();
}
