/* oxmpi-test: np=1,2,3 env=OXMPI_EAGER_LIMIT=8192 env=OXMPI_CMA=0 env=OXMPI_ALLREDUCE_ALG=ring */
/* The tools information interface (MPI_T):
 *   - before MPI_T_init_thread every call returns MPI_T_ERR_NOT_INITIALIZED; init and
 *     finalize nest;
 *   - every control variable, performance variable and category is listed with its infos:
 *     names unique, get_index round-trips, every cvar and pvar in exactly one category,
 *     subcategories valid; string outputs truncate and report the length needed;
 *   - cvars read the environment (the env= items above) or the default; writes are refused
 *     (MPI_T_ERR_CVAR_SET_NEVER);
 *   - pvars, read before MPI_Init (0), while MPI runs, after MPI_Finalize (the last values):
 *     the shared-memory (or, at np=1, self) counters grow by exactly the messages sent
 *     between start and stop (eager and rendezvous apart), and stop there; the unexpected queue's length and high-water
 *     mark with three messages left unexpected;
 *   - sessions and handles with their errors: MPI_T_ERR_INVALID_INDEX, _INVALID_HANDLE,
 *     _INVALID_SESSION, _INVALID_NAME, _PVAR_NO_STARTSTOP, _PVAR_NO_WRITE, _PVAR_NO_ATOMIC;
 *     no events and no sources.
 * MPI_T errors go to no error handler: MPI_COMM_WORLD keeps MPI_ERRORS_ARE_FATAL, so an
 * error routed through it would abort the run. */
#include "mtest.h"
#include <string.h>

#define EXPECT(call, code)                                                                         \
    do {                                                                                           \
        int rc_ = (call);                                                                          \
        CHECK(rc_ == (code), "%s returned %d, expected %d (%s)", #call, rc_, (code), #code);       \
    } while (0)
#define OK(call) EXPECT(call, MPI_SUCCESS)

static unsigned long long read_pvar(MPI_T_pvar_session s, MPI_T_pvar_handle h)
{
    unsigned long long v = ~0ULL;
    OK(MPI_T_pvar_read(s, h, &v));
    return v;
}

static int pvar(const char *name, int cls)
{
    int i = -1;
    OK(MPI_T_pvar_get_index(name, cls, &i));
    return i;
}

static MPI_T_pvar_handle alloc(MPI_T_pvar_session s, const char *name, int cls)
{
    MPI_T_pvar_handle h = MPI_T_PVAR_HANDLE_NULL;
    int count = -1;
    OK(MPI_T_pvar_handle_alloc(s, pvar(name, cls), NULL, &h, &count));
    CHECK(count == 1, "%s: count %d", name, count);
    return h;
}

static void check_cvars(void)
{
    int n = -1, ncat = -1, i, j, k;
    OK(MPI_T_cvar_get_num(&n));
    CHECK(n > 40, "only %d control variables", n);
    OK(MPI_T_category_get_num(&ncat));
    CHECK(ncat >= 2, "%d categories", ncat);
    int *in_cat = calloc(n, sizeof(int));
    char (*names)[128] = calloc(n, sizeof *names);
    for (i = 0; i < n; i++) {
        char desc[1024];
        int nlen = sizeof names[i], dlen = sizeof desc, verb, bind, scope, idx = -1, full = 0;
        MPI_Datatype dt;
        MPI_T_enum en;
        OK(MPI_T_cvar_get_info(i, names[i], &nlen, &verb, &dt, &en, desc, &dlen, &bind, &scope));
        CHECK(nlen == (int)strlen(names[i]) + 1, "cvar %d: name_len %d for %s", i, nlen, names[i]);
        CHECK(strncmp(names[i], "OXMPI_", 6) == 0, "cvar %d named %s", i, names[i]);
        CHECK(dlen > 10 && strstr(desc, "default") != NULL, "cvar %s: description %s", names[i], desc);
        CHECK(dt == MPI_INT || dt == MPI_UNSIGNED_LONG_LONG || dt == MPI_CHAR, "cvar %s: datatype", names[i]);
        CHECK(bind == MPI_T_BIND_NO_OBJECT && scope == MPI_T_SCOPE_READONLY, "cvar %s: bind/scope", names[i]);
        CHECK(en == MPI_T_ENUM_NULL, "cvar %s: enum", names[i]);
        CHECK(verb >= MPI_T_VERBOSITY_USER_BASIC && verb <= MPI_T_VERBOSITY_MPIDEV_ALL, "verbosity");
        OK(MPI_T_cvar_get_index(names[i], &idx));
        CHECK(idx == i, "cvar_get_index(%s) = %d, expected %d", names[i], idx, i);
        for (j = 0; j < i; j++)
            CHECK(strcmp(names[i], names[j]) != 0, "cvar name %s twice", names[i]);
        /* Lengths: NULL string asks for the length; a short buffer truncates. */
        OK(MPI_T_cvar_get_info(i, NULL, &full, NULL, NULL, NULL, NULL, NULL, NULL, NULL));
        CHECK(full == nlen, "cvar %s: length asked %d, expected %d", names[i], full, nlen);
        char shortname[4] = "xxx";
        int slen = 4;
        OK(MPI_T_cvar_get_info(i, shortname, &slen, NULL, NULL, NULL, NULL, NULL, NULL, NULL));
        CHECK(slen == 4 && strcmp(shortname, "OXM") == 0, "truncated name %s (%d)", shortname, slen);
    }
    /* Categories: every cvar in exactly one; names round-trip; subcategories valid. */
    for (i = 0; i < ncat; i++) {
        char name[128];
        int nlen = sizeof name, nc, np, nsub, idx = -1, ne = -1;
        OK(MPI_T_category_get_info(i, name, &nlen, NULL, NULL, &nc, &np, &nsub));
        OK(MPI_T_category_get_index(name, &idx));
        CHECK(idx == i, "category_get_index(%s) = %d", name, idx);
        int *v = malloc(sizeof(int) * (nc + np + nsub + 1));
        OK(MPI_T_category_get_cvars(i, nc, v));
        for (k = 0; k < nc; k++) {
            CHECK(v[k] >= 0 && v[k] < n, "category %s: cvar %d", name, v[k]);
            if (v[k] >= 0 && v[k] < n)
                in_cat[v[k]]++;
        }
        OK(MPI_T_category_get_categories(i, nsub, v));
        for (k = 0; k < nsub; k++)
            CHECK(v[k] > i && v[k] < ncat, "category %s: subcategory %d", name, v[k]);
        OK(MPI_T_category_get_num_events(i, &ne));
        CHECK(ne == 0, "category %s: %d events", name, ne);
        free(v);
    }
    for (i = 0; i < n; i++)
        CHECK(in_cat[i] == 1, "cvar %s is in %d categories", names[i], in_cat[i]);
    int stamp = -1;
    OK(MPI_T_category_changed(&stamp));
    CHECK(stamp >= 0, "category_changed %d", stamp);
    EXPECT(MPI_T_category_get_info(ncat, NULL, NULL, NULL, NULL, NULL, NULL, NULL), MPI_T_ERR_INVALID_INDEX);
    EXPECT(MPI_T_category_get_index("no_such_category", &i), MPI_T_ERR_INVALID_NAME);
    EXPECT(MPI_T_cvar_get_info(n, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL), MPI_T_ERR_INVALID_INDEX);
    EXPECT(MPI_T_cvar_get_info(-1, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL), MPI_T_ERR_INVALID_INDEX);
    EXPECT(MPI_T_cvar_get_index("OXMPI_NO_SUCH_THING", &i), MPI_T_ERR_INVALID_NAME);
    free(in_cat);
    free(names);
}

static void check_cvar_values(void)
{
    int idx, count = -1, ival = -1;
    unsigned long long u = 0;
    char text[256];
    MPI_T_cvar_handle h;
    OK(MPI_T_cvar_get_index("OXMPI_EAGER_LIMIT", &idx));
    OK(MPI_T_cvar_handle_alloc(idx, NULL, &h, &count));
    CHECK(count == 1, "count %d", count);
    OK(MPI_T_cvar_read(h, &u));
    CHECK(u == 8192, "OXMPI_EAGER_LIMIT reads %llu, expected 8192 (set)", u);
    EXPECT(MPI_T_cvar_write(h, &u), MPI_T_ERR_CVAR_SET_NEVER);
    OK(MPI_T_cvar_handle_free(&h));
    CHECK(h == MPI_T_CVAR_HANDLE_NULL, "handle not nulled");
    EXPECT(MPI_T_cvar_read(h, &u), MPI_T_ERR_INVALID_HANDLE);

    OK(MPI_T_cvar_get_index("OXMPI_EAGER_PIECE", &idx));
    OK(MPI_T_cvar_handle_alloc(idx, NULL, &h, &count));
    OK(MPI_T_cvar_read(h, &u));
    CHECK(u == 2048, "OXMPI_EAGER_PIECE reads %llu, expected the default 2048", u);
    OK(MPI_T_cvar_handle_free(&h));

    OK(MPI_T_cvar_get_index("OXMPI_CMA", &idx));
    OK(MPI_T_cvar_handle_alloc(idx, NULL, &h, &count));
    OK(MPI_T_cvar_read(h, &ival));
    CHECK(ival == 0, "OXMPI_CMA reads %d, expected 0 (set)", ival);
    OK(MPI_T_cvar_handle_free(&h));

    OK(MPI_T_cvar_get_index("OXMPI_ALLREDUCE_ALG", &idx));
    OK(MPI_T_cvar_handle_alloc(idx, NULL, &h, &count));
    CHECK(count == 5, "OXMPI_ALLREDUCE_ALG: count %d, expected 5 (\"ring\")", count);
    OK(MPI_T_cvar_read(h, text));
    CHECK(strcmp(text, "ring") == 0, "OXMPI_ALLREDUCE_ALG reads %s", text);
    OK(MPI_T_cvar_handle_free(&h));
    EXPECT(MPI_T_cvar_handle_alloc(100000, NULL, &h, &count), MPI_T_ERR_INVALID_INDEX);
}

static void check_pvar_infos(void)
{
    int n = -1, ncat = -1, i, j, k;
    OK(MPI_T_pvar_get_num(&n));
    CHECK(n >= 6, "%d performance variables", n);
    OK(MPI_T_category_get_num(&ncat));
    int *in_cat = calloc(n, sizeof(int));
    for (i = 0; i < n; i++) {
        char name[128], other[128];
        int nlen = sizeof name, cls, ro, cont, at, bind, idx = -1;
        MPI_Datatype dt;
        OK(MPI_T_pvar_get_info(i, name, &nlen, NULL, &cls, &dt, NULL, NULL, NULL, &bind, &ro, &cont, &at));
        CHECK(dt == MPI_UNSIGNED_LONG_LONG && bind == MPI_T_BIND_NO_OBJECT, "pvar %s", name);
        OK(MPI_T_pvar_get_index(name, cls, &idx));
        CHECK(idx == i, "pvar_get_index(%s) = %d", name, idx);
        EXPECT(MPI_T_pvar_get_index(name, MPI_T_PVAR_CLASS_PERCENTAGE, &idx), MPI_T_ERR_INVALID_NAME);
        for (j = 0; j < i; j++) {
            int olen = sizeof other, ocls;
            OK(MPI_T_pvar_get_info(j, other, &olen, NULL, &ocls, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL));
            CHECK(strcmp(name, other) != 0 || cls != ocls, "pvar %s twice", name);
        }
    }
    for (i = 0; i < ncat; i++) {
        int np = 0;
        OK(MPI_T_category_get_info(i, NULL, NULL, NULL, NULL, NULL, &np, NULL));
        int *v = malloc(sizeof(int) * (np + 1));
        OK(MPI_T_category_get_pvars(i, np, v));
        for (k = 0; k < np; k++)
            if (v[k] >= 0 && v[k] < n)
                in_cat[v[k]]++;
        free(v);
    }
    for (i = 0; i < n; i++)
        CHECK(in_cat[i] == 1, "pvar %d is in %d categories", i, in_cat[i]);
    free(in_cat);
    EXPECT(MPI_T_pvar_get_info(n, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
           MPI_T_ERR_INVALID_INDEX);
    EXPECT(MPI_T_pvar_get_index("no_such_pvar", MPI_T_PVAR_CLASS_COUNTER, &i), MPI_T_ERR_INVALID_NAME);
    /* No events, no sources. */
    OK(MPI_T_event_get_num(&i));
    CHECK(i == 0, "%d events", i);
    EXPECT(MPI_T_event_get_info(0, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
           MPI_T_ERR_INVALID_INDEX);
    EXPECT(MPI_T_event_get_index("x", &i), MPI_T_ERR_INVALID_NAME);
    OK(MPI_T_source_get_num(&i));
    CHECK(i == 0, "%d sources", i);
    EXPECT(MPI_T_source_get_info(0, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL), MPI_T_ERR_INVALID_INDEX);
}

int main(int argc, char **argv)
{
    int provided = -1, i;
    MPI_T_pvar_session s, s2;

    EXPECT(MPI_T_cvar_get_num(&i), MPI_T_ERR_NOT_INITIALIZED);
    EXPECT(MPI_T_pvar_session_create(&s), MPI_T_ERR_NOT_INITIALIZED);
    EXPECT(MPI_T_finalize(), MPI_T_ERR_NOT_INITIALIZED);
    OK(MPI_T_init_thread(MPI_THREAD_SINGLE, &provided));
    CHECK(provided == MPI_THREAD_SINGLE, "provided %d", provided);
    OK(MPI_T_init_thread(MPI_THREAD_MULTIPLE, &provided)); /* nests */
    OK(MPI_T_finalize());

    /* Before MPI_Init: variables and counters (0) are there already. */
    check_cvars();
    check_cvar_values();
    check_pvar_infos();
    OK(MPI_T_pvar_session_create(&s));
    MPI_T_pvar_handle pre = alloc(s, "shm_messages_sent", MPI_T_PVAR_CLASS_COUNTER);
    OK(MPI_T_pvar_start(s, pre));
    CHECK(read_pvar(s, pre) == 0, "counter before MPI_Init");

    mt_init(&argc, &argv);
    /* Ranks 0 and 1 talk through shared memory when they share a node, else over the
     * network (the tests also run with ranks spread over hosts); a single rank sends to
     * itself. A node is named by its lowest world rank. */
    MPI_Comm node;
    int node_id, node_of_1 = -1;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    MPI_Allreduce(&mt_rank, &node_id, 1, MPI_INT, MPI_MIN, node);
    MPI_Comm_free(&node);
    if (mt_size > 1) {
        int *ids = malloc(sizeof(int) * mt_size);
        MPI_Allgather(&node_id, 1, MPI_INT, ids, 1, MPI_INT, MPI_COMM_WORLD);
        node_of_1 = ids[1];
        free(ids);
    }
    const char *route = mt_size == 1 ? "self" : node_of_1 == 0 ? "shm" : "net";
    char sent_name[64], recv_name[64], sbytes_name[64], rbytes_name[64];
    snprintf(sent_name, sizeof sent_name, "%s_messages_sent", route);
    snprintf(recv_name, sizeof recv_name, "%s_messages_received", route);
    snprintf(sbytes_name, sizeof sbytes_name, "%s_bytes_sent", mt_size == 1 ? "shm" : route);
    snprintf(rbytes_name, sizeof rbytes_name, "%s_bytes_received", mt_size == 1 ? "shm" : route);
    MPI_T_pvar_handle sent = alloc(s, sent_name, MPI_T_PVAR_CLASS_COUNTER);
    MPI_T_pvar_handle recvd = alloc(s, recv_name, MPI_T_PVAR_CLASS_COUNTER);
    MPI_T_pvar_handle sbytes = alloc(s, sbytes_name, MPI_T_PVAR_CLASS_COUNTER);
    MPI_T_pvar_handle rbytes = alloc(s, rbytes_name, MPI_T_PVAR_CLASS_COUNTER);
    MPI_T_pvar_handle eager = alloc(s, "eager_messages_sent", MPI_T_PVAR_CLASS_COUNTER);
    MPI_T_pvar_handle rndv = alloc(s, "rendezvous_messages_sent", MPI_T_PVAR_CLASS_COUNTER);
    MPI_T_pvar_handle qlen = alloc(s, "unexpected_recvq_length", MPI_T_PVAR_CLASS_LEVEL);
    MPI_T_pvar_handle qhigh = alloc(s, "unexpected_recvq_high_water", MPI_T_PVAR_CLASS_HIGHWATERMARK);
    CHECK(read_pvar(s, sent) == 0, "a stopped counter reads 0");

    /* Counters count exactly the messages sent while started. */
    enum { SMALL = 5, BIG = 100000 };
    static int small[SMALL][100], big[BIG / sizeof(int)];
    mt_barrier();
    OK(MPI_T_pvar_start(s, MPI_T_PVAR_ALL_HANDLES));
    if (mt_size == 1) {
        MPI_Request r[SMALL];
        for (i = 0; i < SMALL; i++)
            MPI_Isend(small[i], 100, MPI_INT, 0, i, MPI_COMM_WORLD, &r[i]);
        for (i = 0; i < SMALL; i++)
            MPI_Recv(small[i], 100, MPI_INT, 0, i, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Waitall(SMALL, r, MPI_STATUSES_IGNORE);
    } else if (mt_rank == 0) {
        for (i = 0; i < SMALL; i++)
            MPI_Send(small[i], 100, MPI_INT, 1, i, MPI_COMM_WORLD);
        MPI_Send(big, BIG / sizeof(int), MPI_INT, 1, 99, MPI_COMM_WORLD);
    } else if (mt_rank == 1) {
        for (i = 0; i < SMALL; i++)
            MPI_Recv(small[i], 100, MPI_INT, 0, i, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Recv(big, BIG / sizeof(int), MPI_INT, 0, 99, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    OK(MPI_T_pvar_stop(s, MPI_T_PVAR_ALL_HANDLES));
    unsigned long long want_msgs = mt_size == 1 ? SMALL : SMALL + 1, want_bytes = SMALL * 400 + BIG;
    unsigned long long v_sent = read_pvar(s, sent), v_recvd = read_pvar(s, recvd);
    if (mt_size == 1) {
        CHECK(v_sent == want_msgs && v_recvd == want_msgs, "self: sent %llu received %llu", v_sent, v_recvd);
    } else if (mt_rank == 0) {
        CHECK(v_sent == want_msgs && v_recvd == 0, "rank 0: sent %llu received %llu", v_sent, v_recvd);
        CHECK(read_pvar(s, sbytes) == want_bytes, "rank 0: %llu bytes sent", read_pvar(s, sbytes));
        CHECK(read_pvar(s, eager) == SMALL && read_pvar(s, rndv) == 1, "rank 0: %llu eager, %llu rendezvous",
              read_pvar(s, eager), read_pvar(s, rndv));
    } else if (mt_rank == 1) {
        CHECK(v_sent == 0 && v_recvd == want_msgs, "rank 1: sent %llu received %llu", v_sent, v_recvd);
        CHECK(read_pvar(s, rbytes) == want_bytes, "rank 1: %llu bytes received", read_pvar(s, rbytes));
    } else {
        CHECK(v_sent == 0 && v_recvd == 0, "rank %d: sent %llu received %llu", mt_rank, v_sent, v_recvd);
    }
    /* Stopped: traffic now does not count. */
    mt_barrier();
    CHECK(read_pvar(s, sent) == v_sent && read_pvar(s, recvd) == v_recvd, "stopped counters moved");
    if (mt_size > 1 && strcmp(route, "shm") == 0)
        CHECK(read_pvar(s, pre) >= v_sent, "a handle started before MPI_Init counts everything");

    /* Three messages left in the unexpected queue (a receive for a later one passes them). */
    if (mt_size > 1 && mt_rank < 2) {
        int x = 0;
        if (mt_rank == 0) {
            for (i = 0; i < 3; i++)
                MPI_Send(&x, 1, MPI_INT, 1, 7, MPI_COMM_WORLD);
            MPI_Send(&x, 1, MPI_INT, 1, 8, MPI_COMM_WORLD);
        } else {
            MPI_Recv(&x, 1, MPI_INT, 0, 8, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            unsigned long long len = read_pvar(s, qlen), high = read_pvar(s, qhigh);
            CHECK(len == 3, "unexpected queue length %llu, expected 3", len);
            CHECK(high >= 3, "unexpected queue high-water mark %llu", high);
            for (i = 0; i < 3; i++)
                MPI_Recv(&x, 1, MPI_INT, 0, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            CHECK(read_pvar(s, qlen) == 0, "unexpected queue length %llu after the receives", read_pvar(s, qlen));
            CHECK(read_pvar(s, qhigh) == high, "high-water mark changed");
        }
    }

    /* Errors of pvar handles and sessions. */
    unsigned long long buf = 0;
    EXPECT(MPI_T_pvar_start(s, qlen), MPI_T_ERR_PVAR_NO_STARTSTOP);
    EXPECT(MPI_T_pvar_stop(s, qhigh), MPI_T_ERR_PVAR_NO_STARTSTOP);
    EXPECT(MPI_T_pvar_write(s, sent, &buf), MPI_T_ERR_PVAR_NO_WRITE);
    EXPECT(MPI_T_pvar_reset(s, sent), MPI_T_ERR_PVAR_NO_WRITE);
    EXPECT(MPI_T_pvar_readreset(s, sent, &buf), MPI_T_ERR_PVAR_NO_ATOMIC);
    EXPECT(MPI_T_pvar_handle_alloc(s, 100000, NULL, &pre, &i), MPI_T_ERR_INVALID_INDEX);
    OK(MPI_T_pvar_session_create(&s2));
    CHECK(s2 != s, "two sessions alike");
    EXPECT(MPI_T_pvar_read(s2, sent, &buf), MPI_T_ERR_INVALID_HANDLE);
    EXPECT(MPI_T_pvar_read(s, MPI_T_PVAR_ALL_HANDLES, &buf), MPI_T_ERR_INVALID_HANDLE);
    MPI_T_pvar_handle other = alloc(s2, "shm_bytes_sent", MPI_T_PVAR_CLASS_COUNTER);
    OK(MPI_T_pvar_handle_free(s2, &other));
    CHECK(other == MPI_T_PVAR_HANDLE_NULL, "pvar handle not nulled");
    MPI_T_pvar_session gone = s2;
    OK(MPI_T_pvar_session_free(&s2));
    CHECK(s2 == MPI_T_PVAR_SESSION_NULL, "session not nulled");
    EXPECT(MPI_T_pvar_session_free(&gone), MPI_T_ERR_INVALID_SESSION);
    EXPECT(MPI_T_pvar_handle_alloc(gone, 0, NULL, &other, &i), MPI_T_ERR_INVALID_SESSION);

    /* After MPI_Finalize the counters read their last values. */
    int errs_before = mt_errs;
    mt_errs = 0;
    int total = 0;
    if (mt_rank == 0) {
        for (i = 1; i < mt_size; i++) {
            int e = 0;
            MPI_Recv(&e, 1, MPI_INT, i, MT_TAG_ERRS, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            total += e;
        }
    } else {
        MPI_Send(&errs_before, 1, MPI_INT, 0, MT_TAG_ERRS, MPI_COMM_WORLD);
    }
    total += errs_before;
    OK(MPI_T_pvar_start(s, sent));
    MPI_Finalize();
    unsigned long long after = read_pvar(s, sent);
    CHECK(after >= v_sent, "read after MPI_Finalize: %llu, less than %llu", after, v_sent);
    CHECK(read_pvar(s, sent) == after, "counter moves after MPI_Finalize");
    OK(MPI_T_pvar_stop(s, sent));
    OK(MPI_T_pvar_handle_free(s, &sent));
    EXPECT(MPI_T_pvar_read(s, sent, &buf), MPI_T_ERR_INVALID_HANDLE);
    OK(MPI_T_pvar_session_free(&s));
    OK(MPI_T_finalize());
    EXPECT(MPI_T_pvar_get_num(&i), MPI_T_ERR_NOT_INITIALIZED);
    total += mt_errs;
    if (mt_rank == 0 && total == 0)
        printf("No Errors\n");
    else if (mt_errs || (mt_rank == 0 && total))
        printf(" Found %d errors\n", mt_rank == 0 ? total : mt_errs);
    return mt_errs == 0 && total == 0 ? 0 : 1;
}
