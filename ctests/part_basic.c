/* oxmpi-test: np=1,2,3,5,8 timeout=120 */
/* Partitioned communication (MPI-4.1 chapter 4) around a ring: each rank sends to the next
 * and receives from the previous one (a lone rank is its own partner), over several
 * Start/Wait cycles with new data each time:
 *   1. different partition counts on the two sides (48 ints as 8x6 against 6x8, and 3x16
 *      against 16x3 where partitions do not line up), partitions marked ready in reverse
 *      order, by MPI_Pready_range and by MPI_Pready_list;
 *   2. derived datatypes (a strided vector on the sender, a contiguous type on the receiver);
 *   3. large partitions (rendezvous-sized messages), also of strided datatypes on both
 *      sides, landing in place or unpacked;
 *   4. two partitioned pairs with the same peer and tag, matched in the order of their
 *      initialization although started in the other order, completed by MPI_Testall,
 *      MPI_Request_get_status and MPI_Waitany;
 *   5. MPI_PROC_NULL peers, zero-byte partitions, MPI_Parrived on an inactive request, and
 *      requests freed without ever being started. */
#include "mtest.h"

#define CYCLES 4

static int next, prev;

static int value(int who, int cycle, int i)
{
    return who * 100000 + cycle * 10000 + i;
}

/* Sends `sparts` x `scount` ints and receives `rparts` x `rcount` ints (the same total). */
static void ring_ints(int sparts, int scount, int rparts, int rcount, int how)
{
    int total = sparts * scount, c, i;
    int *sbuf = mt_malloc(sizeof(int) * total), *rbuf = mt_malloc(sizeof(int) * total);
    MPI_Request req[2];
    MPI_CHECK(MPI_Psend_init(sbuf, sparts, scount, MPI_INT, next, 7, MPI_COMM_WORLD, MPI_INFO_NULL, &req[0]));
    MPI_CHECK(MPI_Precv_init(rbuf, rparts, rcount, MPI_INT, prev, 7, MPI_COMM_WORLD, MPI_INFO_NULL, &req[1]));
    for (c = 0; c < CYCLES; c++) {
        for (i = 0; i < total; i++) {
            sbuf[i] = value(mt_rank, c, i);
            rbuf[i] = -1;
        }
        MPI_CHECK(MPI_Startall(2, req));
        if (how == 0) {
            for (i = sparts - 1; i >= 0; i--)
                MPI_CHECK(MPI_Pready(i, req[0]));
        } else if (how == 1) {
            MPI_CHECK(MPI_Pready_range(sparts / 2, sparts - 1, req[0]));
            if (sparts / 2 > 0)
                MPI_CHECK(MPI_Pready_range(0, sparts / 2 - 1, req[0]));
        } else {
            int *list = mt_malloc(sizeof(int) * sparts), n = 0;
            for (i = 1; i < sparts; i += 2)
                list[n++] = i;
            for (i = 0; i < sparts; i += 2)
                list[n++] = i;
            MPI_CHECK(MPI_Pready_list(n, list, req[0]));
            free(list);
        }
        MPI_Status st[2];
        MPI_CHECK(MPI_Waitall(2, req, st));
        CHECK(req[0] != MPI_REQUEST_NULL && req[1] != MPI_REQUEST_NULL, "partitioned requests stay allocated");
        for (i = 0; i < total; i++)
            if (rbuf[i] != value(prev, c, i)) {
                CHECK(0, "%dx%d -> %dx%d cycle %d: element %d is %d, expected %d", sparts, scount, rparts, rcount,
                      c, i, rbuf[i], value(prev, c, i));
                break;
            }
        for (i = 0; i < rparts; i++) {
            int flag = 0;
            MPI_CHECK(MPI_Parrived(req[1], i, &flag));
            CHECK(flag, "MPI_Parrived on an inactive request sets flag");
        }
    }
    MPI_CHECK(MPI_Request_free(&req[0]));
    MPI_CHECK(MPI_Request_free(&req[1]));
    CHECK(req[0] == MPI_REQUEST_NULL, "MPI_Request_free sets MPI_REQUEST_NULL");
    free(sbuf);
    free(rbuf);
}

/* A vector of every other int on the sender, a two-int contiguous type on the receiver. */
static void ring_derived(void)
{
    enum { PARTS = 4, ELEMS = 5 };  /* sender: 4 partitions of 5 vectors of 3 ints */
    MPI_Datatype vec, pair;
    MPI_CHECK(MPI_Type_vector(3, 1, 2, MPI_INT, &vec));
    MPI_CHECK(MPI_Type_commit(&vec));
    MPI_CHECK(MPI_Type_contiguous(2, MPI_INT, &pair));
    MPI_CHECK(MPI_Type_commit(&pair));
    MPI_Aint lb, extent;
    MPI_Type_get_extent(vec, &lb, &extent);
    int n = PARTS * ELEMS * 3; /* ints of data: 60 */
    int slen = (int)(extent / sizeof(int)) * PARTS * ELEMS, c, i;
    int *sbuf = mt_malloc(sizeof(int) * slen), *rbuf = mt_malloc(sizeof(int) * n);
    MPI_Request s, r;
    MPI_CHECK(MPI_Psend_init(sbuf, PARTS, ELEMS, vec, next, 8, MPI_COMM_WORLD, MPI_INFO_NULL, &s));
    /* 60 ints = 30 pairs = 6 partitions of 5 pairs */
    MPI_CHECK(MPI_Precv_init(rbuf, 6, 5, pair, prev, 8, MPI_COMM_WORLD, MPI_INFO_NULL, &r));
    for (c = 0; c < CYCLES; c++) {
        /* data element k of the sender is at int (k / 3) * (extent/int) + (k % 3) * 2 */
        for (i = 0; i < slen; i++)
            sbuf[i] = -7;
        for (i = 0; i < n; i++)
            sbuf[(i / 3) * (int)(extent / sizeof(int)) + (i % 3) * 2] = value(mt_rank, c, i);
        for (i = 0; i < n; i++)
            rbuf[i] = -1;
        MPI_CHECK(MPI_Start(&r));
        MPI_CHECK(MPI_Start(&s));
        for (i = 0; i < PARTS; i++)
            MPI_CHECK(MPI_Pready(i, s));
        MPI_CHECK(MPI_Wait(&s, MPI_STATUS_IGNORE));
        MPI_CHECK(MPI_Wait(&r, MPI_STATUS_IGNORE));
        for (i = 0; i < n; i++)
            if (rbuf[i] != value(prev, c, i)) {
                CHECK(0, "derived cycle %d: int %d is %d, expected %d", c, i, rbuf[i], value(prev, c, i));
                break;
            }
    }
    MPI_Request_free(&s);
    MPI_Request_free(&r);
    MPI_Type_free(&vec);
    MPI_Type_free(&pair);
    free(sbuf);
    free(rbuf);
}

/* Large partitions: 4 x 64 Ki doubles sent, 2 x 128 Ki received. */
static void ring_large(void)
{
    enum { PARTS = 4, COUNT = 65536 };
    int total = PARTS * COUNT, c, i;
    double *sbuf = mt_malloc(sizeof(double) * total), *rbuf = mt_malloc(sizeof(double) * total);
    MPI_Request req[2];
    MPI_CHECK(MPI_Psend_init(sbuf, PARTS, COUNT, MPI_DOUBLE, next, 9, MPI_COMM_WORLD, MPI_INFO_NULL, &req[0]));
    MPI_CHECK(MPI_Precv_init(rbuf, 2, total / 2, MPI_DOUBLE, prev, 9, MPI_COMM_WORLD, MPI_INFO_NULL, &req[1]));
    for (c = 0; c < 2; c++) {
        for (i = 0; i < total; i++) {
            sbuf[i] = value(mt_rank, c, i);
            rbuf[i] = -1;
        }
        MPI_CHECK(MPI_Startall(2, req));
        MPI_CHECK(MPI_Pready_range(0, PARTS - 1, req[0]));
        MPI_CHECK(MPI_Waitall(2, req, MPI_STATUSES_IGNORE));
        for (i = 0; i < total; i++)
            if (rbuf[i] != (double)value(prev, c, i)) {
                CHECK(0, "large cycle %d: element %d is %g", c, i, rbuf[i]);
                break;
            }
    }
    MPI_Request_free(&req[0]);
    MPI_Request_free(&req[1]);
    free(sbuf);
    free(rbuf);
}

/* Strided data on both sides (vectors of every other int, `sb` ints per sender element and
 * `rb` per receiver element), with partitions large enough to travel apart from their
 * headers: sender partitions that start and end on receiver elements land in place, others
 * are unpacked. */
static void ring_strided(int sb, int sparts, int scount, int rb, int rparts, int rcount)
{
    MPI_Datatype st, rt;
    MPI_CHECK(MPI_Type_vector(sb, 1, 2, MPI_INT, &st));
    MPI_CHECK(MPI_Type_commit(&st));
    MPI_CHECK(MPI_Type_vector(rb, 1, 2, MPI_INT, &rt));
    MPI_CHECK(MPI_Type_commit(&rt));
    long n = (long)sparts * scount * sb, i; /* ints of data */
    CHECK(n == (long)rparts * rcount * rb, "test sizes");
    /* element k of a vector of b ints (extent 2b-1 ints) is at (k / b) * (2b - 1) + (k % b) * 2 */
    long slen = (long)sparts * scount * (2 * sb - 1), rlen = (long)rparts * rcount * (2 * rb - 1);
    int *sbuf = mt_malloc(sizeof(int) * slen), *rbuf = mt_malloc(sizeof(int) * rlen), c;
    MPI_Request req[2];
    MPI_CHECK(MPI_Psend_init(sbuf, sparts, scount, st, next, 14, MPI_COMM_WORLD, MPI_INFO_NULL, &req[0]));
    MPI_CHECK(MPI_Precv_init(rbuf, rparts, rcount, rt, prev, 14, MPI_COMM_WORLD, MPI_INFO_NULL, &req[1]));
    for (c = 0; c < 2; c++) {
        for (i = 0; i < slen; i++)
            sbuf[i] = -7;
        for (i = 0; i < n; i++)
            sbuf[(i / sb) * (2 * sb - 1) + (i % sb) * 2] = value(mt_rank, c, (int)i);
        for (i = 0; i < rlen; i++)
            rbuf[i] = -1;
        MPI_CHECK(MPI_Startall(2, req));
        for (i = sparts - 1; i >= 0; i--)
            MPI_CHECK(MPI_Pready((int)i, req[0]));
        MPI_CHECK(MPI_Waitall(2, req, MPI_STATUSES_IGNORE));
        for (i = 0; i < n; i++) {
            int got = rbuf[(i / rb) * (2 * rb - 1) + (i % rb) * 2];
            if (got != value(prev, c, (int)i)) {
                CHECK(0, "strided %d/%d cycle %d: int %ld is %d, expected %d", sb, rb, c, i, got, value(prev, c, (int)i));
                break;
            }
        }
        for (i = 0; i < rlen; i++)
            if (i % (2 * rb - 1) % 2 == 1 && rbuf[i] != -1) {
                CHECK(0, "strided %d/%d: the hole at int %ld was written", sb, rb, i);
                break;
            }
    }
    MPI_Request_free(&req[0]);
    MPI_Request_free(&req[1]);
    MPI_Type_free(&st);
    MPI_Type_free(&rt);
    free(sbuf);
    free(rbuf);
}

/* Two pairs with the same peer and tag: the first initialized send meets the first
 * initialized receive, whatever the order of the starts. */
static void ring_two_pairs(void)
{
    int a[6], b[6], ra[6], rb[6], c, i;
    MPI_Request sa, sb, rqa, rqb;
    MPI_CHECK(MPI_Psend_init(a, 2, 3, MPI_INT, next, 11, MPI_COMM_WORLD, MPI_INFO_NULL, &sa));
    MPI_CHECK(MPI_Psend_init(b, 3, 2, MPI_INT, next, 11, MPI_COMM_WORLD, MPI_INFO_NULL, &sb));
    MPI_CHECK(MPI_Precv_init(ra, 1, 6, MPI_INT, prev, 11, MPI_COMM_WORLD, MPI_INFO_NULL, &rqa));
    MPI_CHECK(MPI_Precv_init(rb, 6, 1, MPI_INT, prev, 11, MPI_COMM_WORLD, MPI_INFO_NULL, &rqb));
    for (c = 0; c < CYCLES; c++) {
        for (i = 0; i < 6; i++) {
            a[i] = value(mt_rank, c, i);
            b[i] = -value(mt_rank, c, i);
            ra[i] = rb[i] = 0;
        }
        MPI_CHECK(MPI_Start(&rqb));
        MPI_CHECK(MPI_Start(&sb));
        MPI_CHECK(MPI_Pready_range(0, 2, sb));
        MPI_CHECK(MPI_Start(&rqa));
        MPI_CHECK(MPI_Start(&sa));
        MPI_CHECK(MPI_Pready_range(0, 1, sa));
        /* Completion by MPI_Testall, MPI_Request_get_status and MPI_Waitany. */
        int flag = 0, index = -1, guard = 0;
        MPI_Request sends[2] = {sa, sb};
        while (!flag && guard++ < 10000000)
            MPI_CHECK(MPI_Testall(2, sends, &flag, MPI_STATUSES_IGNORE));
        CHECK(flag, "MPI_Testall completes the partitioned sends");
        flag = 0;
        while (!flag)
            MPI_CHECK(MPI_Request_get_status(rqa, &flag, MPI_STATUS_IGNORE));
        MPI_Request recvs[2] = {rqa, rqb};
        MPI_Status st;
        MPI_CHECK(MPI_Waitany(2, recvs, &index, &st));
        MPI_CHECK(MPI_Waitany(2, recvs, &index, &st));
        MPI_CHECK(MPI_Waitany(2, recvs, &index, &st));
        CHECK(index == MPI_UNDEFINED, "both receives inactive after two MPI_Waitany (index %d)", index);
        for (i = 0; i < 6; i++) {
            CHECK(ra[i] == value(prev, c, i), "pair A cycle %d [%d] = %d", c, i, ra[i]);
            CHECK(rb[i] == -value(prev, c, i), "pair B cycle %d [%d] = %d", c, i, rb[i]);
        }
    }
    MPI_Request_free(&sa);
    MPI_Request_free(&sb);
    MPI_Request_free(&rqa);
    MPI_Request_free(&rqb);
}

static void edge_cases(void)
{
    int x[4] = {1, 2, 3, 4}, y[4] = {0, 0, 0, 0}, flag = 0, i;
    MPI_Request s, r;
    MPI_Status st;
    /* MPI_PROC_NULL on both sides. */
    MPI_CHECK(MPI_Psend_init(x, 4, 1, MPI_INT, MPI_PROC_NULL, 0, MPI_COMM_WORLD, MPI_INFO_NULL, &s));
    MPI_CHECK(MPI_Precv_init(y, 2, 2, MPI_INT, MPI_PROC_NULL, 0, MPI_COMM_WORLD, MPI_INFO_NULL, &r));
    for (i = 0; i < 2; i++) {
        MPI_CHECK(MPI_Start(&s));
        MPI_CHECK(MPI_Start(&r));
        MPI_CHECK(MPI_Pready_range(0, 3, s));
        MPI_CHECK(MPI_Parrived(r, 1, &flag));
        CHECK(flag, "a receive from MPI_PROC_NULL has arrived");
        MPI_CHECK(MPI_Wait(&s, MPI_STATUS_IGNORE));
        MPI_CHECK(MPI_Wait(&r, &st));
        CHECK(st.MPI_SOURCE == MPI_PROC_NULL, "status source of MPI_PROC_NULL receive is %d", st.MPI_SOURCE);
    }
    CHECK(y[0] == 0, "nothing written from MPI_PROC_NULL");
    MPI_Request_free(&s);
    MPI_Request_free(&r);
    /* Zero-byte partitions. */
    MPI_CHECK(MPI_Psend_init(x, 3, 0, MPI_INT, next, 12, MPI_COMM_WORLD, MPI_INFO_NULL, &s));
    MPI_CHECK(MPI_Precv_init(y, 2, 0, MPI_INT, prev, 12, MPI_COMM_WORLD, MPI_INFO_NULL, &r));
    for (i = 0; i < 2; i++) {
        MPI_CHECK(MPI_Start(&r));
        MPI_CHECK(MPI_Start(&s));
        MPI_CHECK(MPI_Pready_range(0, 2, s));
        MPI_CHECK(MPI_Wait(&s, MPI_STATUS_IGNORE));
        MPI_CHECK(MPI_Wait(&r, MPI_STATUS_IGNORE));
    }
    MPI_Request_free(&s);
    MPI_Request_free(&r);
    /* Never started: freed at once (both sides). */
    MPI_CHECK(MPI_Psend_init(x, 1, 4, MPI_INT, next, 13, MPI_COMM_WORLD, MPI_INFO_NULL, &s));
    MPI_CHECK(MPI_Precv_init(y, 1, 4, MPI_INT, prev, 13, MPI_COMM_WORLD, MPI_INFO_NULL, &r));
    MPI_CHECK(MPI_Request_free(&s));
    MPI_CHECK(MPI_Request_free(&r));
}

int main(int argc, char **argv)
{
    mt_init(&argc, &argv);
    next = (mt_rank + 1) % mt_size;
    prev = (mt_rank + mt_size - 1) % mt_size;
    ring_ints(8, 6, 6, 8, 0);
    ring_ints(3, 16, 16, 3, 1);
    ring_ints(16, 3, 3, 16, 2);
    ring_ints(1, 64, 64, 1, 0);
    ring_derived();
    ring_large();
    ring_strided(5, 3, 1001, 3, 5, 1001); /* 20020-byte partitions, 12-byte elements: unpacked */
    ring_strided(5, 3, 1000, 4, 5, 750);  /* 20000-byte partitions, 16-byte elements: in place */
    ring_two_pairs();
    edge_cases();
    return mt_finalize();
}
