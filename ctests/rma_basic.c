/* oxmpi-test: np=1,2,3,4,8 timeout=120 */
/* One-sided communication on windows of MPI_Win_allocate, MPI_Win_allocate_shared, and
 * MPI_Win_create over malloc'ed memory and over MPI_Alloc_mem memory (which other ranks map): Put, Get, Accumulate, Get_accumulate,
 * Fetch_and_op, Compare_and_swap, Rput/Rget, with derived datatypes on both sides, under
 * fence, lock/unlock, lock_all/flush and post/start/complete/wait. Across hosts, targets on
 * other nodes are reached by RDMA of their window memory (Put and Get of contiguous target
 * data) and by messages their agents apply (the rest), and MPI_Win_allocate_shared over
 * several nodes is MPI_ERR_RMA_SHARED; rma_nocma.c runs it with single copy disabled, where
 * windows over the program's memory reach the other ranks of the node by messages too. */
#include "mtest.h"

#define N 16 /* ints per rank's window */

enum { ALLOCATE, SHARED, CREATE, CREATE_ALLOC_MEM };
static const char *flavor_name[] = {"Win_allocate", "Win_allocate_shared", "Win_create",
                                    "Win_create over MPI_Alloc_mem"};

static MPI_Win make(int flavor, int **base)
{
    MPI_Win win;
    if (flavor == ALLOCATE)
        MPI_Win_allocate(N * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, base, &win);
    else if (flavor == SHARED)
        MPI_Win_allocate_shared(N * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, base, &win);
    else {
        if (flavor == CREATE)
            *base = malloc(N * sizeof(int));
        else /* a page or more: memory other ranks can map; the window starts inside it */
            MPI_Alloc_mem(8192, MPI_INFO_NULL, base);
        MPI_Win_create(*base, N * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    }
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
    return win;
}

static void drop(int flavor, MPI_Win *win, int *base)
{
    MPI_Win_free(win);
    if (flavor == CREATE)
        free(base);
    if (flavor == CREATE_ALLOC_MEM)
        MPI_Free_mem(base);
}

/* Between phases: nobody still reads the old values, everybody sees the new ones. */
static void reset(MPI_Win win, int *mem, int value)
{
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, mt_rank, 0, win);
    for (int i = 0; i < N; i++)
        mem[i] = value;
    MPI_Win_unlock(mt_rank, win);
    MPI_Barrier(MPI_COMM_WORLD);
}

static int class_of(int rc)
{
    int c;
    MPI_Error_class(rc, &c);
    return c;
}

/* Whether all ranks share one node (else MPI_Win_allocate_shared over MPI_COMM_WORLD is
 * MPI_ERR_RMA_SHARED). */
static int one_node(void)
{
    MPI_Comm node;
    int n;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    MPI_Comm_size(node, &n);
    MPI_Comm_free(&node);
    return n == mt_size;
}

static void test_flavor(int flavor)
{
    int rank = mt_rank, size = mt_size;
    const char *fn = flavor_name[flavor];
    int *mem;
    if (flavor == SHARED && !one_node()) {
        MPI_Win w;
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
        int rc = MPI_Win_allocate_shared(N * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &w);
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
        CHECK(class_of(rc) == MPI_ERR_RMA_SHARED, "%s over several nodes: class %d", fn, class_of(rc));
        return;
    }
    MPI_Win win = make(flavor, &mem);
    int right = (rank + 1) % size, left = (rank + size - 1) % size;

    /* fence: put my rank into slot 0 of my right neighbour, get slot 0 of my left */
    reset(win, mem, -1);
    MPI_Win_fence(0, win);
    int rc = MPI_Put(&rank, 1, MPI_INT, right, 0, 1, MPI_INT, win);
    CHECK(rc == MPI_SUCCESS, "%s: MPI_Put failed (%d)", fn, rc);
    MPI_Win_fence(0, win);
    CHECK(mem[0] == left, "%s: after fence slot 0 is %d, expected %d", fn, mem[0], left);
    int got = -2;
    MPI_Get(&got, 1, MPI_INT, left, 0, 1, MPI_INT, win);
    MPI_Win_fence(MPI_MODE_NOSUCCEED, win);
    CHECK(got == (left + size - 1) % size, "%s: MPI_Get gave %d", fn, got);

    /* accumulate: every rank adds rank+1 to slot 1 of every rank */
    reset(win, mem, 0);
    MPI_Win_fence(MPI_MODE_NOPRECEDE, win);
    for (int t = 0; t < size; t++) {
        int v = rank + 1;
        MPI_Accumulate(&v, 1, MPI_INT, t, 1, 1, MPI_INT, MPI_SUM, win);
    }
    MPI_Win_fence(MPI_MODE_NOSUCCEED, win);
    CHECK(mem[1] == size * (size + 1) / 2, "%s: accumulated %d, expected %d", fn, mem[1], size * (size + 1) / 2);

    /* derived types: a vector of 4 ints with stride 3 on the target from a contiguous origin,
     * under an exclusive lock on the right neighbour */
    reset(win, mem, -1);
    MPI_Datatype vec;
    MPI_Type_vector(4, 1, 3, MPI_INT, &vec);
    MPI_Type_commit(&vec);
    int src[4] = {rank * 10, rank * 10 + 1, rank * 10 + 2, rank * 10 + 3};
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, right, 0, win);
    MPI_Put(src, 4, MPI_INT, right, 2, 1, vec, win);
    MPI_Win_unlock(right, win);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, win);
    for (int i = 0; i < 4; i++)
        CHECK(mem[2 + 3 * i] == left * 10 + i, "%s: vector put: int %d is %d", fn, 2 + 3 * i, mem[2 + 3 * i]);
    CHECK(mem[3] == -1 && mem[4] == -1, "%s: vector put wrote into its holes", fn);
    MPI_Win_unlock(rank, win);
    /* and back with a vector origin: Get the strided ints into every other int */
    int back[8];
    for (int i = 0; i < 8; i++)
        back[i] = -5;
    MPI_Datatype every_other;
    MPI_Type_vector(4, 1, 2, MPI_INT, &every_other);
    MPI_Type_commit(&every_other);
    MPI_Win_lock(MPI_LOCK_SHARED, right, 0, win);
    MPI_Get(back, 1, every_other, right, 2, 1, vec, win);
    MPI_Win_unlock(right, win);
    for (int i = 0; i < 4; i++) {
        CHECK(back[2 * i] == rank * 10 + i, "%s: vector get: %d is %d", fn, 2 * i, back[2 * i]);
        CHECK(back[2 * i + 1] == -5, "%s: vector get wrote into a hole", fn);
    }
    /* a strided origin into contiguous target ints */
    int strided[8];
    for (int i = 0; i < 8; i++)
        strided[i] = i % 2 ? -9 : rank * 7 + i / 2;
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, right, 0, win);
    MPI_Put(strided, 1, every_other, right, 12, 4, MPI_INT, win);
    MPI_Win_unlock(right, win);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, win);
    for (int i = 0; i < 4; i++)
        CHECK(mem[12 + i] == left * 7 + i, "%s: strided put: int %d is %d", fn, 12 + i, mem[12 + i]);
    MPI_Win_unlock(rank, win);
    MPI_Type_free(&every_other);
    MPI_Type_free(&vec);

    /* lock_all: a counter on rank 0 taken 20 times by every rank with Fetch_and_op; every
     * ticket seen once; then Compare_and_swap from -1: one winner */
    reset(win, mem, 0);
    if (rank == 0)
        mem[5] = -1;
    MPI_Barrier(MPI_COMM_WORLD);
    const int K = 20;
    int tickets[20];
    MPI_Win_lock_all(0, win);
    for (int k = 0; k < K; k++) {
        int one = 1;
        MPI_Fetch_and_op(&one, &tickets[k], MPI_INT, 0, 4, MPI_SUM, win);
        MPI_Win_flush(0, win);
    }
    int mine = rank, cmp = -1, old = -7;
    MPI_Compare_and_swap(&mine, &cmp, &old, MPI_INT, 0, 5, win);
    MPI_Win_unlock_all(win);
    for (int k = 1; k < K; k++)
        CHECK(tickets[k] > tickets[k - 1], "%s: tickets not increasing", fn);
    int *all = malloc(sizeof(int) * K * size);
    MPI_Allgather(tickets, K, MPI_INT, all, K, MPI_INT, MPI_COMM_WORLD);
    char *seen = calloc((size_t)(K * size), 1);
    for (int i = 0; i < K * size; i++) {
        CHECK(all[i] >= 0 && all[i] < K * size && !seen[all[i]], "%s: ticket %d twice or out of range", fn, all[i]);
        if (all[i] >= 0 && all[i] < K * size)
            seen[all[i]] = 1;
    }
    free(seen);
    free(all);
    int winners = 0, won = old == -1;
    MPI_Allreduce(&won, &winners, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    CHECK(winners == 1, "%s: %d ranks won the compare-and-swap", fn, winners);
    if (rank == 0) {
        CHECK(mem[4] == K * size, "%s: counter %d, expected %d", fn, mem[4], K * size);
        CHECK(mem[5] >= 0 && mem[5] < size, "%s: swapped value %d", fn, mem[5]);
    }

    /* Get_accumulate with MPI_NO_OP reads atomically; with MPI_REPLACE swaps */
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, right, 0, win);
    int fetched = -3, newv = 1000 + rank;
    MPI_Get_accumulate(NULL, 0, MPI_INT, &fetched, 1, MPI_INT, right, 1, 1, MPI_INT, MPI_NO_OP, win);
    MPI_Get_accumulate(&newv, 1, MPI_INT, &got, 1, MPI_INT, right, 1, 1, MPI_INT, MPI_REPLACE, win);
    MPI_Win_unlock(right, win);
    CHECK(fetched == got, "%s: NO_OP fetched %d, REPLACE fetched %d", fn, fetched, got);
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK(mem[1] == 1000 + left, "%s: REPLACE left %d", fn, mem[1]);

    /* request-based in a passive epoch */
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Request reqs[2];
    int val = 77 + rank, rd = 0;
    MPI_Win_lock_all(0, win);
    MPI_Rput(&val, 1, MPI_INT, right, 6, 1, MPI_INT, win, &reqs[0]);
    MPI_Wait(&reqs[0], MPI_STATUS_IGNORE);
    MPI_Win_flush(right, win);
    MPI_Rget(&rd, 1, MPI_INT, right, 6, 1, MPI_INT, win, &reqs[1]);
    MPI_Wait(&reqs[1], MPI_STATUS_IGNORE);
    MPI_Win_unlock_all(win);
    CHECK(rd == 77 + rank, "%s: Rget after Rput read %d", fn, rd);

    /* MPI_MODE_NOCHECK takes no lock and so releases none: exclusive locks still work after */
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_lock(MPI_LOCK_SHARED, right, MPI_MODE_NOCHECK, win);
    MPI_Get(&rd, 1, MPI_INT, right, 6, 1, MPI_INT, win);
    MPI_Win_unlock(right, win);
    MPI_Win_lock_all(MPI_MODE_NOCHECK, win);
    MPI_Win_unlock_all(win);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, right, 0, win);
    MPI_Put(&val, 1, MPI_INT, right, 6, 1, MPI_INT, win);
    MPI_Win_unlock(right, win);

    /* post/start/complete/wait on a ring: expose to the left neighbour, access the right */
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Group world, gl, gr;
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    MPI_Group_incl(world, 1, &left, &gl);
    MPI_Group_incl(world, 1, &right, &gr);
    for (int round = 0; round < 3; round++) {
        MPI_Win_post(gl, 0, win);
        MPI_Win_start(gr, 0, win);
        int v = rank * 100 + round;
        MPI_Put(&v, 1, MPI_INT, right, 7, 1, MPI_INT, win);
        MPI_Win_complete(win);
        if (round == 2) {
            int flag = 0;
            while (!flag)
                MPI_Win_test(win, &flag);
        } else
            MPI_Win_wait(win);
        CHECK(mem[7] == left * 100 + round, "%s: PSCW round %d: %d", fn, round, mem[7]);
    }
    MPI_Group_free(&gl);
    MPI_Group_free(&gr);
    MPI_Group_free(&world);

    /* errors: checked on oxmpi only; MPICH 4.0.2 checks few of them (it writes past the
     * window, asserts on mismatched types and answers MPI_ERR_ARG for a bad lock type) */
    if (MT_OXMPI) {
        int x = 0;
        rc = MPI_Put(&x, 1, MPI_INT, right, 0, 1, MPI_INT, win);
        CHECK(class_of(rc) == MPI_ERR_RMA_SYNC, "%s: put outside an epoch: class %d", fn, class_of(rc));
        rc = MPI_Win_unlock(right, win);
        CHECK(class_of(rc) == MPI_ERR_RMA_SYNC, "%s: unlock without lock: class %d", fn, class_of(rc));
        rc = MPI_Win_lock(12345, right, 0, win);
        CHECK(class_of(rc) == MPI_ERR_LOCKTYPE, "%s: bad lock type: class %d", fn, class_of(rc));
        rc = MPI_Win_lock(MPI_LOCK_SHARED, right, 3, win);
        CHECK(class_of(rc) == MPI_ERR_ASSERT, "%s: bad assert: class %d", fn, class_of(rc));
        rc = MPI_Win_flush(right, win);
        CHECK(class_of(rc) == MPI_ERR_RMA_SYNC, "%s: flush without lock: class %d", fn, class_of(rc));
        MPI_Win_lock(MPI_LOCK_SHARED, right, 0, win);
        rc = MPI_Put(&x, 1, MPI_INT, right, N, 1, MPI_INT, win);
        CHECK(class_of(rc) == MPI_ERR_RMA_RANGE, "%s: put past the window: class %d", fn, class_of(rc));
        rc = MPI_Put(&x, 1, MPI_INT, right, -1, 1, MPI_INT, win);
        CHECK(class_of(rc) == MPI_ERR_RMA_RANGE, "%s: put before the window: class %d", fn, class_of(rc));
        rc = MPI_Get(&x, 2, MPI_INT, right, N - 1, 2, MPI_INT, win);
        CHECK(class_of(rc) == MPI_ERR_RMA_RANGE, "%s: get across the end: class %d", fn, class_of(rc));
        rc = MPI_Put(&x, 1, MPI_INT, size, 0, 1, MPI_INT, win);
        CHECK(class_of(rc) == MPI_ERR_RANK, "%s: bad target rank: class %d", fn, class_of(rc));
        rc = MPI_Put(&x, 1, MPI_INT, MPI_PROC_NULL, 0, 1, MPI_INT, win);
        CHECK(rc == MPI_SUCCESS, "%s: put to MPI_PROC_NULL failed", fn);
        rc = MPI_Put(&x, 1, MPI_INT, right, 0, 2, MPI_INT, win);
        CHECK(class_of(rc) == MPI_ERR_TYPE, "%s: put of 1 int into 2: class %d", fn, class_of(rc));
        rc = MPI_Put(&x, -1, MPI_INT, right, 0, 1, MPI_INT, win);
        CHECK(class_of(rc) == MPI_ERR_COUNT, "%s: negative count: class %d", fn, class_of(rc));
        double d = 1;
        rc = MPI_Accumulate(&d, 1, MPI_DOUBLE, right, 0, 2, MPI_INT, MPI_SUM, win);
        CHECK(class_of(rc) == MPI_ERR_TYPE, "%s: double onto int accumulate: class %d", fn, class_of(rc));
        /* Compare_and_swap takes integers, logicals and bytes only. */
        double dc = 0, dr = 0;
        rc = MPI_Compare_and_swap(&d, &dc, &dr, MPI_DOUBLE, right, 0, win);
        CHECK(class_of(rc) == MPI_ERR_TYPE, "%s: compare-and-swap of a double: class %d", fn, class_of(rc));
        float fo = 1, fc = 0, fr = 0;
        rc = MPI_Compare_and_swap(&fo, &fc, &fr, MPI_FLOAT, right, 0, win);
        CHECK(class_of(rc) == MPI_ERR_TYPE, "%s: compare-and-swap of a float: class %d", fn, class_of(rc));
        rc = MPI_Win_lock(MPI_LOCK_SHARED, right, 0, win);
        CHECK(class_of(rc) == MPI_ERR_RMA_SYNC, "%s: second lock on a target: class %d", fn, class_of(rc));
        rc = MPI_Win_fence(0, win);
        CHECK(class_of(rc) == MPI_ERR_RMA_SYNC, "%s: fence inside a lock: class %d", fn, class_of(rc));
        MPI_Win_unlock(right, win);
        int cmp_ok = MPI_Win_post(MPI_GROUP_EMPTY, 0, win) == MPI_SUCCESS;
        rc = MPI_Win_post(MPI_GROUP_EMPTY, 0, win);
        CHECK(cmp_ok && class_of(rc) == MPI_ERR_RMA_SYNC, "%s: second post: class %d", fn, class_of(rc));
        MPI_Win_wait(win);
        rc = MPI_Win_complete(win);
        CHECK(class_of(rc) == MPI_ERR_RMA_SYNC, "%s: complete without start: class %d", fn, class_of(rc));
        rc = MPI_Win_unlock_all(win);
        CHECK(class_of(rc) == MPI_ERR_RMA_SYNC, "%s: unlock_all without lock_all: class %d", fn, class_of(rc));
        MPI_Request rq;
        rc = MPI_Rput(&x, 1, MPI_INT, right, 0, 1, MPI_INT, win, &rq);
        CHECK(class_of(rc) == MPI_ERR_RMA_SYNC, "%s: Rput outside a passive epoch: class %d", fn, class_of(rc));
    }

    drop(flavor, &win, mem);
}

/* A user operation in an accumulate is MPI_ERR_OP. */
static void user_fn(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)in, (void)inout, (void)len, (void)dt;
}

int main(int argc, char **argv)
{
    mt_init(&argc, &argv);
    for (int f = ALLOCATE; f <= CREATE_ALLOC_MEM; f++)
        test_flavor(f);

    int *mem;
    MPI_Win win = make(ALLOCATE, &mem);
    MPI_Op op;
    MPI_Op_create(user_fn, 1, &op);
    int x = 1;
    MPI_Win_lock_all(0, win);
    if (MT_OXMPI) {
        int rc = MPI_Accumulate(&x, 1, MPI_INT, 0, 0, 1, MPI_INT, op, win);
        CHECK(class_of(rc) == MPI_ERR_OP, "accumulate with a user operation: class %d", class_of(rc));
        rc = MPI_Win_free(&win);
        CHECK(class_of(rc) == MPI_ERR_RMA_SYNC, "free inside lock_all: class %d", class_of(rc));
    }
    MPI_Win_unlock_all(win);
    MPI_Op_free(&op);
    MPI_Win_free(&win);
    return mt_finalize();
}
