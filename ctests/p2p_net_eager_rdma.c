/* oxmpi-test: np=2,3,4,8 timeout=180 env=OXMPI_NET_EAGER_RDMA=1 */
/* The RDMA eager channel, forced on (over TCP it is off by default): once a rank has taken
 * 16 packets from a peer on another node it offers the peer a ring in its memory, and the
 * peer writes every later packet (eager messages and the protocols' control packets) there.
 * Around a ring of ranks (across hosts: local and remote peers), bursts of messages of 0 to
 * 40000 bytes (eager and rendezvous) must arrive whole and in order, across the point where
 * the ring opens and with more in flight than the ring has slots; also MPI_ANY_SOURCE,
 * probes of messages that arrived before their receive, and synchronous sends back and
 * forth. With oxmpi the performance variable net_ring_packets must count packets where the
 * previous rank is remote and rings are on, and none where no peer is remote or rings are
 * off (p2p_net_eager_rdma_off.c). */
#include "mtest.h"
#include "pvar_counter.h"
#include "same_host.h"

#define TAG 41
#define BURST 200

static int next_rank, prev_rank;
static const size_t sizes[] = {0, 1, 100, 4000, 32768, 40000, 8, 65536};
#define NSIZES (sizeof sizes / sizeof sizes[0])

static size_t size_of(int i)
{
    return sizes[(unsigned)i % NSIZES];
}

/* BURST messages to next_rank while receiving BURST from prev_rank (`any`: as
 * MPI_ANY_SOURCE), each checked against its number: non-overtaking keeps them in order. */
static void burst(unsigned seed, int any)
{
    unsigned char **out = mt_malloc(BURST * sizeof *out), **in = mt_malloc(BURST * sizeof *in);
    MPI_Request *r = mt_malloc(2 * BURST * sizeof *r);
    MPI_Status *st = mt_malloc(2 * BURST * sizeof *st);
    int i;
    for (i = 0; i < BURST; i++) {
        out[i] = mt_malloc(size_of(i) + 1);
        in[i] = mt_malloc(size_of(i) + 1);
        mt_fill_bytes(out[i], size_of(i), seed + (unsigned)(i * 8 + mt_rank));
        MPI_CHECK(MPI_Irecv(in[i], (int)size_of(i), MPI_BYTE, any ? MPI_ANY_SOURCE : prev_rank, TAG,
                            MPI_COMM_WORLD, &r[i]));
    }
    for (i = 0; i < BURST; i++)
        MPI_CHECK(MPI_Isend(out[i], (int)size_of(i), MPI_BYTE, next_rank, TAG, MPI_COMM_WORLD, &r[BURST + i]));
    MPI_CHECK(MPI_Waitall(2 * BURST, r, st));
    for (i = 0; i < BURST; i++) {
        int n = -1;
        MPI_Get_count(&st[i], MPI_BYTE, &n);
        CHECK(st[i].MPI_SOURCE == prev_rank, "message %d from %d, expected %d", i, st[i].MPI_SOURCE, prev_rank);
        CHECK(n == (int)size_of(i), "message %d: %d bytes, expected %zu (out of order?)", i, n, size_of(i));
        size_t bad = mt_check_bytes(in[i], size_of(i), seed + (unsigned)(i * 8 + prev_rank));
        CHECK(bad == (size_t)-1, "message %d of %zu bytes: wrong from byte %zu", i, size_of(i), bad);
        free(out[i]);
        free(in[i]);
    }
    free(out);
    free(in);
    free(r);
    free(st);
}

/* Messages that arrive before their receives: each probed, then received, in order. */
static void probed_after_arrival(void)
{
    MPI_Request r[50];
    unsigned char *out[50];
    int i;
    for (i = 0; i < 50; i++) {
        out[i] = mt_malloc(size_of(i) + 1);
        mt_fill_bytes(out[i], size_of(i), 900u + (unsigned)(i * 8 + mt_rank));
        MPI_CHECK(MPI_Isend(out[i], (int)size_of(i), MPI_BYTE, next_rank, TAG + 1 + i % 3, MPI_COMM_WORLD, &r[i]));
    }
    mt_barrier();
    for (i = 0; i < 50; i++) {
        MPI_Status st;
        int n = -1;
        MPI_CHECK(MPI_Probe(prev_rank, MPI_ANY_TAG, MPI_COMM_WORLD, &st));
        MPI_Get_count(&st, MPI_BYTE, &n);
        CHECK(st.MPI_TAG == TAG + 1 + i % 3 && n == (int)size_of(i), "probe %d: tag %d, %d bytes", i, st.MPI_TAG, n);
        unsigned char *in = mt_malloc(size_of(i) + 1);
        MPI_CHECK(MPI_Recv(in, n, MPI_BYTE, prev_rank, st.MPI_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        size_t bad = mt_check_bytes(in, size_of(i), 900u + (unsigned)(i * 8 + prev_rank));
        CHECK(bad == (size_t)-1, "probed message %d: wrong from byte %zu", i, bad);
        free(in);
    }
    MPI_CHECK(MPI_Waitall(50, r, MPI_STATUSES_IGNORE));
    for (i = 0; i < 50; i++)
        free(out[i]);
}

/* Synchronous sends back and forth between ranks 0 and 1 (acknowledgements both ways). */
static void sync_ping_pong(void)
{
    int i, v;
    if (mt_rank > 1)
        return;
    for (i = 0; i < 100; i++) {
        if (mt_rank == 0) {
            MPI_CHECK(MPI_Ssend(&i, 1, MPI_INT, 1, TAG, MPI_COMM_WORLD));
            MPI_CHECK(MPI_Recv(&v, 1, MPI_INT, 1, TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            CHECK(v == i + 1000, "pong %d: %d", i, v);
        } else {
            MPI_CHECK(MPI_Recv(&v, 1, MPI_INT, 0, TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            CHECK(v == i, "ping %d: %d", i, v);
            v = i + 1000;
            MPI_CHECK(MPI_Ssend(&v, 1, MPI_INT, 0, TAG, MPI_COMM_WORLD));
        }
    }
}

int main(int argc, char **argv)
{
    mt_counter packets;
    mt_init(&argc, &argv);
    next_rank = (mt_rank + 1) % mt_size;
    prev_rank = (mt_rank + mt_size - 1) % mt_size;
    if (MT_OXMPI)
        mt_counter_start(&packets, "net_ring_packets");

    if (mt_size > 1) {
        burst(1, 0);
        burst(2, 1);
        probed_after_arrival();
        sync_ping_pong();
        burst(3, 0);
    }

    if (MT_OXMPI) {
        unsigned long long n = mt_counter_read(&packets);
        int *same = mt_malloc((size_t)mt_size * sizeof *same);
        int any_remote = same_host_ranks(same) < mt_size, remote = !same[prev_rank];
        free(same);
        const char *env = getenv("OXMPI_NET_EAGER_RDMA");
        int on = env && strcmp(env, "1") == 0, off = env && strcmp(env, "0") == 0;
        CHECK(on || off, "OXMPI_NET_EAGER_RDMA is %s; the test sets it", env ? env : "unset");
        /* Rings carry packets from every remote peer (barriers, the ping-pong), not only
         * from the previous rank. */
        if (remote && on)
            CHECK(n >= BURST, "%llu packets from remote rank %d taken from a ring, expected at least %d", n,
                  prev_rank, BURST);
        if (off || !any_remote)
            CHECK(n == 0, "%llu packets taken from rings (a remote peer: %d, OXMPI_NET_EAGER_RDMA %s)", n,
                  any_remote, env ? env : "unset");
        mt_counter_end(&packets);
    }
    return mt_finalize();
}
