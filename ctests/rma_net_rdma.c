/* oxmpi-test: np=2,3,4,8 timeout=180 env=OXMPI_NET_RDMA_RMA=1 */
/* Put and Get toward window members on other nodes by RDMA of their window memory
 * (OXMPI_NET_RDMA_RMA=1; the test sets it, rma_net_messages.c sets 0): on windows of MPI_Win_allocate and of
 * MPI_Win_create over malloc'ed memory, each rank writes to and reads from the next rank
 * messages from 8 bytes to 2 MiB (striped over the rails two hosts share), with contiguous
 * and strided origins, under lock_all/flush, exclusive locks, fence, post/start/complete/
 * wait and request-based operations; the data must be in the target's memory when the epoch
 * ends (the target checks it after a barrier), and a strided target (done by the target's
 * agent) and a displacement past the window's end (MPI_ERR_RMA_RANGE, nothing written) must
 * behave as without RDMA. With a next rank on another host the performance variable
 * net_rdma_rma must count the accesses; on one host, or with RDMA off, it stays 0. */
#include "mtest.h"
#include "pvar_counter.h"
#include "same_host.h"

#define WORDS (1 << 18) /* 2 MiB of doubles per rank */

static const int sizes[] = {1, 16, 512, 8192, 65536, WORDS};
#define NSIZES ((int)(sizeof sizes / sizeof sizes[0]))

static int next_rank, prev_rank;

static double value(int owner, int round, int i)
{
    return owner * 1e7 + round * 1e5 + (i % 99991);
}

static MPI_Win make(int create, double **base)
{
    MPI_Win win;
    if (create) {
        *base = mt_malloc(WORDS * sizeof(double));
        MPI_CHECK(MPI_Win_create(*base, WORDS * sizeof(double), sizeof(double), MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    } else {
        MPI_CHECK(MPI_Win_allocate(WORDS * sizeof(double), sizeof(double), MPI_INFO_NULL, MPI_COMM_WORLD, base, &win));
    }
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
    return win;
}

static void fill(MPI_Win win, double *mem, double v)
{
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, mt_rank, 0, win);
    for (int i = 0; i < WORDS; i++)
        mem[i] = v;
    MPI_Win_unlock(mt_rank, win);
    MPI_Barrier(MPI_COMM_WORLD);
}

/* My window after the previous rank wrote `n` words of round `round` at displacement `disp`:
   those words are its values, the rest still `old`. */
static void check_written(MPI_Win win, double *mem, int n, int disp, int round, double old, const char *how)
{
    MPI_Win_lock(MPI_LOCK_SHARED, mt_rank, 0, win);
    int bad = 0;
    for (int i = 0; i < WORDS && bad < 3; i++) {
        double want = i >= disp && i < disp + n ? value(prev_rank, round, i - disp) : old;
        if (mem[i] != want) {
            CHECK(0, "%s, %d words: my window word %d is %g, expected %g", how, n, i, mem[i], want);
            bad++;
        }
    }
    MPI_Win_unlock(mt_rank, win);
}

/* Passive target: lock_all, a Put of each size to the next rank, a flush, a Get back into a
   fresh buffer, compared; the next rank checks its memory after unlock_all and a barrier. */
static void lock_all_put_get(MPI_Win win, double *mem)
{
    double *out = mt_malloc(WORDS * sizeof(double)), *in = mt_malloc(WORDS * sizeof(double));
    for (int k = 0; k < NSIZES; k++) {
        int n = sizes[k], disp = k % 2 ? 3 : 0, round = 10 + k;
        if (disp + n > WORDS)
            disp = 0;
        fill(win, mem, -1.0);
        for (int i = 0; i < n; i++) {
            out[i] = value(mt_rank, round, i);
            in[i] = -2.0;
        }
        MPI_CHECK(MPI_Win_lock_all(0, win));
        MPI_CHECK(MPI_Put(out, n, MPI_DOUBLE, next_rank, disp, n, MPI_DOUBLE, win));
        MPI_CHECK(MPI_Win_flush(next_rank, win));
        MPI_CHECK(MPI_Get(in, n, MPI_DOUBLE, next_rank, disp, n, MPI_DOUBLE, win));
        MPI_CHECK(MPI_Win_flush_local(next_rank, win));
        for (int i = 0; i < n; i++)
            if (in[i] != out[i]) {
                CHECK(0, "lock_all, %d words: word %d read back is %g, wrote %g", n, i, in[i], out[i]);
                break;
            }
        MPI_CHECK(MPI_Win_unlock_all(win));
        MPI_Barrier(MPI_COMM_WORLD);
        check_written(win, mem, n, disp, round, -1.0, "lock_all");
    }
    free(out);
    free(in);
}

/* Exclusive lock, a Put, unlock: the data is in the target's memory once unlock returns. */
static void exclusive_put(MPI_Win win, double *mem)
{
    int n = 65536, round = 30;
    double *out = mt_malloc(n * sizeof(double));
    fill(win, mem, -3.0);
    for (int i = 0; i < n; i++)
        out[i] = value(mt_rank, round, i);
    MPI_CHECK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, next_rank, 0, win));
    MPI_CHECK(MPI_Put(out, n, MPI_DOUBLE, next_rank, 100, n, MPI_DOUBLE, win));
    MPI_CHECK(MPI_Win_unlock(next_rank, win));
    MPI_Barrier(MPI_COMM_WORLD);
    check_written(win, mem, n, 100, round, -3.0, "exclusive lock");
    free(out);
}

/* Fence: a strided origin (16 blocks of 256 words, a gap as long after each) put into
   contiguous target words, and contiguous target words read into a strided origin. */
#define RUN 256
static int packed_at(int i) /* where packed word i lies in the strided buffer */
{
    return i / RUN * 2 * RUN + i % RUN;
}

static void fence_strided_origin(MPI_Win win, double *mem)
{
    int n = 16 * RUN, round = 40;
    double *out = mt_malloc(2 * n * sizeof(double)), *in = mt_malloc(2 * n * sizeof(double));
    MPI_Datatype runs;
    MPI_Type_vector(n / RUN, RUN, 2 * RUN, MPI_DOUBLE, &runs);
    MPI_Type_commit(&runs);
    fill(win, mem, -4.0);
    for (int i = 0; i < 2 * n; i++) {
        out[i] = -99.0;
        in[i] = -5.0;
    }
    for (int i = 0; i < n; i++)
        out[packed_at(i)] = value(mt_rank, round, i);
    MPI_CHECK(MPI_Win_fence(0, win));
    MPI_CHECK(MPI_Put(out, 1, runs, next_rank, 7, n, MPI_DOUBLE, win));
    MPI_CHECK(MPI_Win_fence(0, win));
    check_written(win, mem, n, 7, round, -4.0, "fence, strided origin");
    MPI_CHECK(MPI_Win_fence(0, win));
    /* The previous rank's words 3.. hold what its own previous rank put there. */
    MPI_CHECK(MPI_Get(in, 1, runs, prev_rank, 3, n, MPI_DOUBLE, win));
    MPI_CHECK(MPI_Win_fence(0, win));
    int prev_prev = (prev_rank + mt_size - 1) % mt_size;
    for (int i = 0; i < 2 * n; i++) {
        int data = i % (2 * RUN) < RUN, k = i / (2 * RUN) * RUN + i % (2 * RUN) + 3;
        double want = !data ? -5.0 : k >= 7 && k < 7 + n ? value(prev_prev, round, k - 7) : -4.0;
        if (in[i] != want) {
            CHECK(0, "fence, strided get: word %d is %g, expected %g", i, in[i], want);
            break;
        }
    }
    MPI_Type_free(&runs);
    free(out);
    free(in);
}

/* Post/start/complete/wait: the origin puts, the target checks after its wait. */
static void pscw_put(MPI_Win win, double *mem)
{
    int n = 300000 > WORDS ? WORDS : 300000, round = 50;
    double *out = mt_malloc(n * sizeof(double));
    MPI_Group world, to, from;
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    MPI_Group_incl(world, 1, &next_rank, &to);
    MPI_Group_incl(world, 1, &prev_rank, &from);
    fill(win, mem, -6.0);
    for (int i = 0; i < n; i++)
        out[i] = value(mt_rank, round, i);
    MPI_CHECK(MPI_Win_post(from, 0, win));
    MPI_CHECK(MPI_Win_start(to, 0, win));
    MPI_CHECK(MPI_Put(out, n, MPI_DOUBLE, next_rank, 0, n, MPI_DOUBLE, win));
    MPI_CHECK(MPI_Win_complete(win));
    MPI_CHECK(MPI_Win_wait(win));
    int bad = 0;
    for (int i = 0; i < WORDS && !bad; i++) {
        double want = i < n ? value(prev_rank, round, i) : -6.0;
        if (mem[i] != want) {
            CHECK(0, "post/start: my window word %d is %g after wait, expected %g", i, mem[i], want);
            bad = 1;
        }
    }
    MPI_Group_free(&world);
    MPI_Group_free(&to);
    MPI_Group_free(&from);
    free(out);
}

/* Request-based operations: Rput then Rget of the same words, each waited on. */
static void request_based(MPI_Win win, double *mem)
{
    int n = 1000, round = 60;
    double *out = mt_malloc(n * sizeof(double)), *in = mt_malloc(n * sizeof(double));
    MPI_Request req;
    fill(win, mem, -7.0);
    for (int i = 0; i < n; i++) {
        out[i] = value(mt_rank, round, i);
        in[i] = 0.0;
    }
    MPI_CHECK(MPI_Win_lock(MPI_LOCK_SHARED, next_rank, 0, win));
    MPI_CHECK(MPI_Rput(out, n, MPI_DOUBLE, next_rank, 5, n, MPI_DOUBLE, win, &req));
    MPI_CHECK(MPI_Wait(&req, MPI_STATUS_IGNORE));
    MPI_CHECK(MPI_Win_flush(next_rank, win));
    MPI_CHECK(MPI_Rget(in, n, MPI_DOUBLE, next_rank, 5, n, MPI_DOUBLE, win, &req));
    MPI_CHECK(MPI_Wait(&req, MPI_STATUS_IGNORE));
    for (int i = 0; i < n; i++)
        if (in[i] != out[i]) {
            CHECK(0, "Rget after Rput: word %d is %g, wrote %g", i, in[i], out[i]);
            break;
        }
    MPI_CHECK(MPI_Win_unlock(next_rank, win));
    MPI_Barrier(MPI_COMM_WORLD);
    check_written(win, mem, n, 5, round, -7.0, "Rput");
    free(out);
    free(in);
}

/* A strided target (every third word) and a displacement past the end. */
static void strided_target_and_range(MPI_Win win, double *mem)
{
    int n = 2000, round = 70;
    double *out = mt_malloc(n * sizeof(double));
    MPI_Datatype every_third;
    MPI_Type_vector(n, 1, 3, MPI_DOUBLE, &every_third);
    MPI_Type_commit(&every_third);
    fill(win, mem, -8.0);
    for (int i = 0; i < n; i++)
        out[i] = value(mt_rank, round, i);
    MPI_CHECK(MPI_Win_lock_all(0, win));
    MPI_CHECK(MPI_Put(out, n, MPI_DOUBLE, next_rank, 1, 1, every_third, win));
    /* MPICH does not check the range: it writes past the window's end. */
    if (MT_OXMPI) {
        int rc = MPI_Put(out, 2, MPI_DOUBLE, next_rank, WORDS - 1, 2, MPI_DOUBLE, win);
        int cls;
        MPI_Error_class(rc, &cls);
        CHECK(cls == MPI_ERR_RMA_RANGE, "a Put past the window's end returned class %d, expected MPI_ERR_RMA_RANGE",
              cls);
    }
    MPI_CHECK(MPI_Win_unlock_all(win));
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_lock(MPI_LOCK_SHARED, mt_rank, 0, win);
    for (int i = 0; i < WORDS; i++) {
        double want = i >= 1 && (i - 1) % 3 == 0 && (i - 1) / 3 < n ? value(prev_rank, round, (i - 1) / 3) : -8.0;
        if (mem[i] != want) {
            CHECK(0, "strided target: my window word %d is %g, expected %g", i, mem[i], want);
            break;
        }
    }
    MPI_Win_unlock(mt_rank, win);
    MPI_Type_free(&every_third);
    free(out);
}

int main(int argc, char **argv)
{
    mt_init(&argc, &argv);
    mt_counter accesses;
    if (MT_OXMPI)
        mt_counter_start(&accesses, "net_rdma_rma");
    next_rank = (mt_rank + 1) % mt_size;
    prev_rank = (mt_rank + mt_size - 1) % mt_size;

    for (int create = 0; create < 2; create++) {
        double *mem;
        MPI_Win win = make(create, &mem);
        lock_all_put_get(win, mem);
        exclusive_put(win, mem);
        fence_strided_origin(win, mem);
        pscw_put(win, mem);
        request_based(win, mem);
        strided_target_and_range(win, mem);
        MPI_CHECK(MPI_Win_free(&win));
        if (create)
            free(mem);
    }

    if (MT_OXMPI) {
        unsigned long long n = mt_counter_read(&accesses);
        int *same = mt_malloc((size_t)mt_size * sizeof *same);
        same_host_ranks(same);
        int next_remote = !same[next_rank], prev_remote = !same[prev_rank];
        free(same);
        const char *env = getenv("OXMPI_NET_RDMA_RMA");
        int on = env && strcmp(env, "1") == 0, off = env && strcmp(env, "0") == 0;
        CHECK(on || off, "OXMPI_NET_RDMA_RMA is %s; the test sets it", env ? env : "unset");
        /* Toward the next rank: 16 contiguous accesses per window; from the previous one:
           the fence's Get. */
        if (off)
            CHECK(n == 0, "%llu Puts and Gets by RDMA with OXMPI_NET_RDMA_RMA=0", n);
        else if (next_remote)
            CHECK(n >= 20, "%llu Puts and Gets by RDMA with the next rank on another host, expected at least 20", n);
        else if (prev_remote)
            CHECK(n >= 2, "%llu Gets by RDMA with the previous rank on another host, expected at least 2", n);
        else
            CHECK(n == 0, "%llu Puts and Gets by RDMA with both neighbours on this host", n);
        mt_counter_end(&accesses);
    }
    return mt_finalize();
}
