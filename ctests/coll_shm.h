/*
 * Body of the coll_shm_*.c tests: barrier, bcast, reduce and allreduce with checked results
 * over many consecutive calls (the shared area is reused without resets), at sizes around
 * the lane (56 payload bytes a line, 2 KiB at most), the shared-memory slot (32 KiB, 32752 payload bytes),
 * the allreduce split (2 KiB) and single copy (64 KiB, reduce 256 KiB), up to 1 MiB; bursts of consecutive
 * bcasts and reduces with changing roots and sizes and no synchronization between them
 * (roots run ahead through the rings: more calls than slots, with a late rank),
 * roots other than 0, MPI_IN_PLACE, a non-contiguous datatype, a non-commutative user
 * operation (order checked), several communicators used interleaved (duplicates, splits,
 * a reversed split whose ranks are not in world order), and communicators freed and
 * recreated many times (no mapping or /dev/shm file left behind). The including file sets
 * the environment (OXMPI_FAKE_NODES) in its metadata.
 */
#include "mtest.h"
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#define SLOT_CAP 32752

#define SMALL_CAP 56 /* payload bytes of a lane line */
#define LANE_CAP 2048
#define SINGLE_COPY_MIN 65536 /* reduce: 262144 */

/* Sizes in bytes: around the small lane, the flat-allreduce limit, the slot, several slots,
   single copy. */
static const int sizes[] = {4,
                            8,
                            SMALL_CAP - 4,
                            SMALL_CAP,
                            SMALL_CAP + 4,
                            64,
                            2 * SMALL_CAP,
                            2 * SMALL_CAP + 4,
                            1024,
                            LANE_CAP - 4,
                            LANE_CAP,
                            LANE_CAP + 4,
                            4096,
                            SLOT_CAP - 4,
                            SLOT_CAP,
                            SLOT_CAP + 4,
                            3 * SLOT_CAP + 12,
                            SINGLE_COPY_MIN - 4,
                            SINGLE_COPY_MIN,
                            SINGLE_COPY_MIN + 4,
                            200000,
                            262140,
                            262144,
                            262148,
                            (1 << 20) + 8};
#define NSIZES ((int)(sizeof(sizes) / sizeof(sizes[0])))

static int val(int rank, int iter, int i)
{
    return (rank + 1) * 1000 + iter * 7 + i % 113;
}

static void test_bcast(MPI_Comm comm, int iters)
{
    int rank, size, it, s, i;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    for (s = 0; s < NSIZES; s++) {
        int n = sizes[s] / 4;
        int *buf = malloc(sizes[s]);
        for (it = 0; it < iters; it++) {
            int root = (it + s) % size;
            for (i = 0; i < n; i++)
                buf[i] = rank == root ? val(root, it, i) : -1;
            MPI_Bcast(buf, n, MPI_INT, root, comm);
            for (i = 0; i < n; i++)
                if (buf[i] != val(root, it, i)) {
                    CHECK(0, "bcast n=%d root=%d iter=%d: buf[%d]=%d, want %d", n, root, it, i, buf[i],
                          val(root, it, i));
                    break;
                }
        }
        free(buf);
    }
    /* Bytes with odd lengths. */
    for (it = 0; it < 20; it++) {
        int len = 1 + it * 37, root = it % size;
        char *b = malloc(len);
        for (i = 0; i < len; i++)
            b[i] = rank == root ? (char)(i * 3 + it) : 0;
        MPI_Bcast(b, len, MPI_CHAR, root, comm);
        for (i = 0; i < len; i++)
            if (b[i] != (char)(i * 3 + it)) {
                CHECK(0, "bcast of %d chars: byte %d wrong", len, i);
                break;
            }
        free(b);
    }
}

static void test_reduce(MPI_Comm comm, int iters)
{
    int rank, size, it, s, i, r;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    for (s = 0; s < NSIZES; s++) {
        int n = sizes[s] / 4;
        int *in = malloc(sizes[s]), *out = malloc(sizes[s]);
        for (it = 0; it < iters; it++) {
            int root = (size - 1 + it * 3 + s) % size, in_place = rank == root && it % 2 == 1;
            for (i = 0; i < n; i++) {
                in[i] = val(rank, it, i);
                out[i] = in_place ? in[i] : -7;
            }
            MPI_Reduce(in_place ? MPI_IN_PLACE : in, out, n, MPI_INT, MPI_SUM, root, comm);
            if (rank == root)
                for (i = 0; i < n; i++) {
                    int want = 0;
                    for (r = 0; r < size; r++)
                        want += val(r, it, i);
                    if (out[i] != want) {
                        CHECK(0, "reduce n=%d root=%d iter=%d in_place=%d: [%d]=%d want %d", n, root, it, in_place,
                              i, out[i], want);
                        break;
                    }
                }
            else
                CHECK(out[0] == -7, "reduce wrote the receive buffer of a non-root");
        }
        free(in);
        free(out);
    }
}

static void test_allreduce(MPI_Comm comm, int iters)
{
    int rank, size, it, s, i, r;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    for (s = 0; s < NSIZES; s++) {
        int n = sizes[s] / 4;
        int *in = malloc(sizes[s]), *out = malloc(sizes[s]);
        double *din = malloc(n * sizeof(double)), *dout = malloc(n * sizeof(double));
        for (it = 0; it < iters; it++) {
            int in_place = it % 2 == 1;
            for (i = 0; i < n; i++) {
                in[i] = val(rank, it, i);
                out[i] = in_place ? in[i] : -7;
                din[i] = (double)((rank * 31 + i + it) % (size + 5));
            }
            MPI_Allreduce(in_place ? MPI_IN_PLACE : in, out, n, MPI_INT, MPI_SUM, comm);
            for (i = 0; i < n; i++) {
                int want = 0;
                for (r = 0; r < size; r++)
                    want += val(r, it, i);
                if (out[i] != want) {
                    CHECK(0, "allreduce n=%d iter=%d in_place=%d: [%d]=%d want %d", n, it, in_place, i, out[i], want);
                    break;
                }
            }
            MPI_Allreduce(din, dout, n, MPI_DOUBLE, MPI_MAX, comm);
            for (i = 0; i < n; i++) {
                double want = 0;
                for (r = 0; r < size; r++) {
                    double v = (double)((r * 31 + i + it) % (size + 5));
                    want = v > want ? v : want;
                }
                if (dout[i] != want) {
                    CHECK(0, "allreduce MAX n=%d iter=%d: [%d]=%g want %g", n, it, i, dout[i], want);
                    break;
                }
            }
        }
        free(in);
        free(out);
        free(din);
        free(dout);
    }
}

/* Bursts of bcasts and reduces with no synchronization between them: roots change every
   call, sizes cycle through the small lane, the slots and single copy, and there are more
   calls than slots (roots and contributors run ahead and wait for slots to free). Every call
   has its own buffer, checked only after the burst. In round 1 the last rank starts late, so
   the others fill the rings first. */
static int burst_bytes(int k)
{
    static const int cycle[] = {4, SMALL_CAP, 8, SMALL_CAP + 8, 1000, 16, LANE_CAP, 40000, 200, LANE_CAP + 4, 120};
    /* Large ones only now and then: the burst stays quick. */
    return k % 50 == 6 ? SINGLE_COPY_MIN + 40 : cycle[k % (int)(sizeof(cycle) / sizeof(cycle[0]))];
}

static void test_bursts(MPI_Comm comm)
{
    enum { NB = 600 };
    int rank, size, round, k, i, r;
    int **bufs = malloc(NB * sizeof(int *)), **outs = malloc(NB * sizeof(int *));
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    for (round = 0; round < 2; round++) {
        for (k = 0; k < NB; k++) {
            int bytes = burst_bytes(k), n = bytes / 4;
            bufs[k] = malloc(bytes);
            outs[k] = malloc(bytes);
            for (i = 0; i < n; i++) {
                bufs[k][i] = val(rank, k + round, i);
                outs[k][i] = -3;
            }
        }
        if (round == 1 && rank == size - 1)
            usleep(20000);
        for (k = 0; k < NB; k++) {
            int bytes = burst_bytes(k), root = (k * 7 + round) % size;
            if (k % 3 == 2)
                MPI_Reduce(bufs[k], outs[k], bytes / 4, MPI_INT, MPI_SUM, root, comm);
            else
                MPI_Bcast(bufs[k], bytes / 4, MPI_INT, root, comm);
        }
        for (k = 0; k < NB; k++) {
            int bytes = burst_bytes(k), n = bytes / 4, root = (k * 7 + round) % size;
            for (i = 0; i < n; i++) {
                int want_b = val(k % 3 == 2 ? rank : root, k + round, i), want_r = 0;
                if (bufs[k][i] != want_b) {
                    CHECK(0, "burst round %d call %d (%s, %d bytes, root %d): buf[%d]=%d want %d", round, k,
                          k % 3 == 2 ? "reduce input" : "bcast", bytes, root, i, bufs[k][i], want_b);
                    break;
                }
                if (k % 3 != 2)
                    continue;
                for (r = 0; r < size; r++)
                    want_r += val(r, k + round, i);
                if (rank == root ? outs[k][i] != want_r : outs[k][i] != -3) {
                    CHECK(0, "burst round %d reduce %d (%d bytes, root %d): out[%d]=%d want %d", round, k, bytes,
                          root, i, outs[k][i], rank == root ? want_r : -3);
                    break;
                }
            }
            free(bufs[k]);
            free(outs[k]);
        }
    }
    free(bufs);
    free(outs);
}

/* 2x2 matrices mod 2^32 under multiplication: associative, not commutative. */
typedef struct {
    unsigned a, b, c, d;
} mat;

static mat mat_mul(mat x, mat y)
{
    mat z = {x.a * y.a + x.b * y.c, x.a * y.b + x.b * y.d, x.c * y.a + x.d * y.c, x.c * y.b + x.d * y.d};
    return z;
}

static mat mat_of(int rank, int i)
{
    mat m = {(unsigned)rank + 2, 1, (unsigned)(i % 5) + 1, (unsigned)rank * 3 + 1};
    return m;
}

/* inout = in x inout: `in` comes from lower ranks. */
static void mat_op(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    mat *x = in, *y = inout;
    int i;
    (void)dt;
    for (i = 0; i < *len; i++)
        y[i] = mat_mul(x[i], y[i]);
}

static void test_noncommutative(MPI_Comm comm)
{
    int rank, size, i, r, k;
    /* 16-byte elements: 5 and 100 straddle lane lines (56 bytes each), LANE_CAP / 16 fills the lane. */
    static const int counts[] = {1, 5, 100, LANE_CAP / 16, SLOT_CAP / 16, SLOT_CAP / 16 + 1, 5000};
    MPI_Datatype mt;
    MPI_Op op;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    MPI_Type_contiguous(4, MPI_UNSIGNED, &mt);
    MPI_Type_commit(&mt);
    MPI_Op_create(mat_op, 0, &op);
    for (k = 0; k < (int)(sizeof(counts) / sizeof(counts[0])); k++) {
        int n = counts[k], root = (k + 1) % size;
        mat *in = malloc(n * sizeof(mat)), *out = malloc(n * sizeof(mat));
        for (i = 0; i < n; i++)
            in[i] = mat_of(rank, i);
        MPI_Allreduce(in, out, n, mt, op, comm);
        for (i = 0; i < n; i++) {
            mat want = mat_of(0, i);
            for (r = 1; r < size; r++)
                want = mat_mul(want, mat_of(r, i));
            if (memcmp(&want, &out[i], sizeof(mat))) {
                CHECK(0, "non-commutative allreduce n=%d: element %d out of rank order", n, i);
                break;
            }
        }
        MPI_Reduce(in, out, n, mt, op, root, comm);
        if (rank == root)
            for (i = 0; i < n; i++) {
                mat want = mat_of(0, i);
                for (r = 1; r < size; r++)
                    want = mat_mul(want, mat_of(r, i));
                if (memcmp(&want, &out[i], sizeof(mat))) {
                    CHECK(0, "non-commutative reduce n=%d root=%d: element %d out of rank order", n, root, i);
                    break;
                }
            }
        free(in);
        free(out);
    }
    MPI_Op_free(&op);
    MPI_Type_free(&mt);
}

/* Every other int of the buffer (a vector type): packed and unpacked around the area. (Reductions
   take predefined datatypes only here.) */
static void test_strided(MPI_Comm comm)
{
    int rank, size, i, it;
    const int n = 20000; /* 80 KB packed: single copy through a packed copy */
    MPI_Datatype vec;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    MPI_Type_vector(n, 1, 2, MPI_INT, &vec);
    MPI_Type_commit(&vec);
    int *buf = malloc(2 * n * sizeof(int)), *out = malloc(2 * n * sizeof(int));
    for (it = 0; it < 3; it++) {
        int root = (it + 1) % size;
        for (i = 0; i < 2 * n; i++)
            buf[i] = rank == root || i % 2 ? i * 5 + it : -1;
        MPI_Bcast(buf, 1, vec, root, comm);
        for (i = 0; i < 2 * n; i++)
            if (buf[i] != i * 5 + it) {
                CHECK(0, "strided bcast: [%d]=%d", i, buf[i]);
                break;
            }
    }
    free(buf);
    free(out);
    MPI_Type_free(&vec);
}

static void test_barrier(MPI_Comm comm, int iters)
{
    int i, rank, size, token;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    /* After a barrier, a message sent by every rank before it has been sent: the last
       rank's message is always already there. */
    for (i = 0; i < iters; i++) {
        int flag = 0;
        if (rank == size - 1 && size > 1)
            MPI_Send(&i, 1, MPI_INT, 0, 5, comm);
        MPI_Barrier(comm);
        if (rank == 0 && size > 1) {
            MPI_Status st;
            /* Probing may need a few progress passes, but the send was started before. */
            while (!flag)
                MPI_Iprobe(size - 1, 5, comm, &flag, &st);
            MPI_Recv(&token, 1, MPI_INT, size - 1, 5, comm, MPI_STATUS_IGNORE);
            CHECK(token == i, "barrier round %d got token %d", i, token);
        }
    }
}

/* Mappings of the library's collective areas (deleted files under /dev/shm named "coll"). */
static int area_mappings(void)
{
    char line[512];
    int n = 0;
    FILE *f = fopen("/proc/self/maps", "r");
    if (!f)
        return 0;
    while (fgets(line, sizeof line, f))
        if (strstr(line, "/dev/shm/") && strstr(line, "coll"))
            n++;
    fclose(f);
    return n;
}

static void test_comm_churn(int rounds)
{
    int i, before = area_mappings(), rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    for (i = 0; i < rounds; i++) {
        MPI_Comm c;
        int v = rank + i, sum = 0, size;
        if (i % 2)
            MPI_Comm_dup(MPI_COMM_WORLD, &c);
        else
            MPI_Comm_split(MPI_COMM_WORLD, 0, -rank, &c);
        MPI_Comm_size(c, &size);
        MPI_Allreduce(&v, &sum, 1, MPI_INT, MPI_SUM, c);
        CHECK(sum == size * (size - 1) / 2 + size * i, "churn round %d: sum %d", i, sum);
        MPI_Barrier(c);
        MPI_Comm_free(&c);
    }
    CHECK(area_mappings() == before, "collective areas still mapped after freeing: %d before, %d after", before,
          area_mappings());
}

static void test_interleaved(void)
{
    int rank, size, i, k;
    MPI_Comm comms[4];
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_dup(MPI_COMM_WORLD, &comms[0]);
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &comms[1]);
    MPI_Comm_split(MPI_COMM_WORLD, 0, size - rank, &comms[2]); /* reversed order */
    MPI_Comm_split(MPI_COMM_WORLD, rank < size / 2, (rank * 5) % size, &comms[3]); /* shuffled */
    for (i = 0; i < 30; i++)
        for (k = 0; k < 4; k++) {
            int r, n, v[3], out[3], want = 0, root;
            MPI_Comm_rank(comms[k], &r);
            MPI_Comm_size(comms[k], &n);
            v[0] = r * 10 + i;
            v[1] = i;
            v[2] = -r;
            MPI_Allreduce(v, out, 3, MPI_INT, MPI_SUM, comms[k]);
            for (root = 0; root < n; root++)
                want += root * 10 + i;
            CHECK(out[0] == want && out[1] == i * n && out[2] == -n * (n - 1) / 2,
                  "interleaved comm %d round %d: %d %d %d", k, i, out[0], out[1], out[2]);
            root = i % n;
            v[0] = r == root ? 1000 + i * k : 0;
            MPI_Bcast(v, 1, MPI_INT, root, comms[k]);
            CHECK(v[0] == 1000 + i * k, "interleaved bcast comm %d round %d: %d", k, i, v[0]);
            MPI_Reduce(&r, &out[0], 1, MPI_INT, MPI_MAX, root, comms[k]);
            CHECK(r != root || out[0] == n - 1, "interleaved reduce comm %d: %d", k, out[0]);
            if (i % 5 == 0)
                MPI_Barrier(comms[k]);
        }
    for (k = 0; k < 4; k++) {
        test_noncommutative(comms[k]);
        test_bursts(comms[k]);
        MPI_Comm_free(&comms[k]);
    }
}

/* MPI_COMM_TYPE_SHARED follows the simulated nodes of OXMPI_FAKE_NODES (k or k:cyclic). */
static void test_split_type(void)
{
    int rank, size, nsize, nrank, k = 1, cyclic = 0, w, want = 0, sum = 0;
    const char *fake = getenv("OXMPI_FAKE_NODES");
    MPI_Comm node;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (MT_OXMPI && fake) {
        k = atoi(fake);
        cyclic = strstr(fake, "cyclic") != NULL;
    }
    if (k > size)
        k = size;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    MPI_Comm_size(node, &nsize);
    MPI_Comm_rank(node, &nrank);
    for (w = 0; w < size; w++) {
        int same = cyclic ? w % k == rank % k : w * k / size == rank * k / size;
        if (same) {
            want++;
            sum += w;
        }
    }
    /* Without simulated nodes (which a job spanning hosts ignores) a node is a host. */
    int *same = mt_malloc(size * sizeof *same), on_host = same_host_ranks(same);
    if (!MT_OXMPI || !fake || on_host < size) {
        want = sum = 0;
        for (w = 0; w < size; w++)
            if (same[w])
                want++, sum += w;
    }
    free(same);
    CHECK(nsize == want, "MPI_COMM_TYPE_SHARED gave %d ranks, want %d (OXMPI_FAKE_NODES=%s)", nsize, want,
          fake ? fake : "unset");
    MPI_Allreduce(&rank, &w, 1, MPI_INT, MPI_SUM, node);
    CHECK(w == sum, "allreduce over the node: %d, want %d", w, sum);
    MPI_Comm_free(&node);
}

/* Barrier semantics through memory: every rank stores the round number in its own line of a
   shared file before each barrier; after it, every rank must see every line at that round or
   later. Ranks take turns arriving late (spinning or sleeping), so every rank is sometimes
   the last to arrive (the one that releases the others). */
static void test_barrier_memory(MPI_Comm comm, int rounds)
{
    int rank, size, it, r, fd, pid = (int)getpid();
    char path[128];
    volatile long *lines;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    MPI_Bcast(&pid, 1, MPI_INT, 0, comm);
    snprintf(path, sizeof path, "/dev/shm/oxmpi-ctest-barrier-%d", pid);
    if (rank == 0) {
        fd = open(path, O_RDWR | O_CREAT | O_EXCL, 0600);
        CHECK(fd >= 0 && ftruncate(fd, 64 * size) == 0, "cannot create %s", path);
        close(fd);
    }
    MPI_Barrier(comm);
    fd = open(path, O_RDWR);
    CHECK(fd >= 0, "cannot open %s", path);
    lines = mmap(NULL, 64 * size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    CHECK(lines != MAP_FAILED, "cannot map %s", path);
    close(fd);
    MPI_Barrier(comm);
    if (rank == 0)
        unlink(path);
    for (it = 1; it <= rounds; it++) {
        if (it % size == rank) {
            if (it % 7 == 0)
                usleep(200);
            else
                for (r = 0; r < 2000; r++)
                    __atomic_load_n(&lines[8 * rank], __ATOMIC_RELAXED);
        }
        __atomic_store_n(&lines[8 * rank], it, __ATOMIC_RELEASE);
        MPI_Barrier(comm);
        for (r = 0; r < size; r++) {
            long got = __atomic_load_n(&lines[8 * r], __ATOMIC_ACQUIRE);
            if (got < it) {
                CHECK(0, "barrier round %d: rank %d left before rank %d arrived (it wrote %ld)", it, rank, r, got);
                it = rounds;
                break;
            }
        }
    }
    munmap((void *)lines, 64 * size);
}

int main(int argc, char **argv)
{
    mt_init(&argc, &argv);
    test_barrier(MPI_COMM_WORLD, 200);
    /* The shared file needs memory its ranks share: across hosts, each host's ranks. */
    int size, first = 0, *same;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    same = mt_malloc(size * sizeof *same);
    MPI_Comm memory = MPI_COMM_WORLD;
    if (same_host_ranks(same) < size) {
        while (!same[first])
            first++;
        MPI_Comm_split(MPI_COMM_WORLD, first, 0, &memory);
    }
    free(same);
    test_barrier_memory(memory, 300);
    if (memory != MPI_COMM_WORLD)
        MPI_Comm_free(&memory);
    test_bcast(MPI_COMM_WORLD, 6);
    test_reduce(MPI_COMM_WORLD, 6);
    test_allreduce(MPI_COMM_WORLD, 6);
    test_noncommutative(MPI_COMM_WORLD);
    test_bursts(MPI_COMM_WORLD);
    test_strided(MPI_COMM_WORLD);
    test_interleaved();
    test_comm_churn(100);
    test_split_type();
    return mt_finalize();
}
