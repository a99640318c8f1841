/* oxmpi-test: np=1,2,4,8 */
/* MPI_Isend/MPI_Irecv completed with each of MPI_Wait, Waitall, Waitany,
 * Waitsome, Test, Testall, Testany and Testsome. Request arrays contain an
 * MPI_REQUEST_NULL entry; each completed request must become
 * MPI_REQUEST_NULL, each completion must be reported exactly once, and the
 * MPI_UNDEFINED rules hold once every entry is null. Ranks work in pairs; a
 * rank without a partner talks to itself. */
#include "mtest.h"

#define K 6            /* receives (and sends) per round */
#define N (2 * K + 1)  /* requests: K receives, K sends, one MPI_REQUEST_NULL */

static int partner;
static int *sbuf[K], *rbuf[K];

static int len_of(int round, int k)
{
    /* mix small and large (rendezvous-sized) messages */
    return (k % 3 == 2) ? 40000 + round : 1 + k * 10 + round;
}

static void post(int round, MPI_Request *rq)
{
    int k, i;
    for (k = 0; k < K; k++) {
        int n = len_of(round, k);
        for (i = 0; i < n; i++) {
            sbuf[k][i] = mt_rank * 1000000 + round * 10000 + k * 1000 + i;
            rbuf[k][i] = -1;
        }
        MPI_CHECK(MPI_Irecv(rbuf[k], n, MPI_INT, partner, round * 10 + k, MPI_COMM_WORLD, &rq[k]));
    }
    for (k = 0; k < K; k++)
        MPI_CHECK(MPI_Isend(sbuf[k], len_of(round, k), MPI_INT, partner, round * 10 + k, MPI_COMM_WORLD, &rq[K + k]));
    rq[N - 1] = MPI_REQUEST_NULL;
}

/* Checks the data and, for receives, the status of request index idx. */
static void check_done(const char *how, int round, int idx, MPI_Status *st)
{
    if (idx < K) {
        int n = len_of(round, idx), count = -1, i;
        if (st) {
            CHECK(st->MPI_SOURCE == partner && st->MPI_TAG == round * 10 + idx, "%s: recv %d: source %d tag %d",
                  how, idx, st->MPI_SOURCE, st->MPI_TAG);
            MPI_Get_count(st, MPI_INT, &count);
            CHECK(count == n, "%s: recv %d: count %d want %d", how, idx, count, n);
        }
        for (i = 0; i < n; i++)
            if (rbuf[idx][i] != partner * 1000000 + round * 10000 + idx * 1000 + i) {
                CHECK(0, "%s: recv %d: element %d is %d", how, idx, i, rbuf[idx][i]);
                break;
            }
    } else {
        CHECK(idx < N - 1, "%s: the MPI_REQUEST_NULL entry %d was reported complete", how, idx);
    }
}

static void all_null(const char *how, MPI_Request *rq)
{
    int i;
    for (i = 0; i < N; i++)
        CHECK(rq[i] == MPI_REQUEST_NULL, "%s: request %d not MPI_REQUEST_NULL after completion", how, i);
}

int main(int argc, char **argv)
{
    MPI_Request rq[N];
    MPI_Status st, sts[N];
    int k, i, round = 0, done[N], ndone, flag, idx, outcount, idxs[N];

    mt_init(&argc, &argv);
    partner = mt_rank ^ 1;
    if (partner >= mt_size)
        partner = mt_rank;
    for (k = 0; k < K; k++) {
        sbuf[k] = mt_malloc(sizeof(int) * 41000);
        rbuf[k] = mt_malloc(sizeof(int) * 41000);
    }

    /* MPI_Wait, one by one, receives in reverse order. */
    post(++round, rq);
    for (i = N - 1; i >= 0; i--) {
        st.MPI_SOURCE = -77;
        MPI_CHECK(MPI_Wait(&rq[i], &st));
        if (i < K)
            check_done("Wait", round, i, &st);
        else if (i == N - 1)
            CHECK(st.MPI_SOURCE == MPI_ANY_SOURCE && st.MPI_TAG == MPI_ANY_TAG,
                  "Wait(MPI_REQUEST_NULL): source %d tag %d", st.MPI_SOURCE, st.MPI_TAG);
    }
    all_null("Wait", rq);

    /* MPI_Waitall with statuses. */
    post(++round, rq);
    MPI_CHECK(MPI_Waitall(N, rq, sts));
    for (i = 0; i < K; i++)
        check_done("Waitall", round, i, &sts[i]);
    CHECK(sts[N - 1].MPI_SOURCE == MPI_ANY_SOURCE && sts[N - 1].MPI_TAG == MPI_ANY_TAG,
          "Waitall: status of the null entry: source %d tag %d", sts[N - 1].MPI_SOURCE, sts[N - 1].MPI_TAG);
    all_null("Waitall", rq);

    /* MPI_Waitany until MPI_UNDEFINED. */
    post(++round, rq);
    memset(done, 0, sizeof done);
    for (ndone = 0;; ndone++) {
        idx = -5;
        MPI_CHECK(MPI_Waitany(N, rq, &idx, &st));
        if (idx == MPI_UNDEFINED)
            break;
        CHECK(idx >= 0 && idx < N, "Waitany: index %d", idx);
        if (idx < 0 || idx >= N || ndone > N)
            break;
        CHECK(!done[idx], "Waitany: index %d reported twice", idx);
        CHECK(rq[idx] == MPI_REQUEST_NULL, "Waitany: request %d not freed", idx);
        done[idx] = 1;
        check_done("Waitany", round, idx, &st);
    }
    CHECK(ndone == 2 * K, "Waitany: %d completions, want %d", ndone, 2 * K);
    CHECK(st.MPI_SOURCE == MPI_ANY_SOURCE && st.MPI_TAG == MPI_ANY_TAG,
          "Waitany on all-null: status source %d tag %d", st.MPI_SOURCE, st.MPI_TAG);
    all_null("Waitany", rq);

    /* MPI_Waitsome until MPI_UNDEFINED. */
    post(++round, rq);
    memset(done, 0, sizeof done);
    ndone = 0;
    for (;;) {
        outcount = -5;
        MPI_CHECK(MPI_Waitsome(N, rq, &outcount, idxs, sts));
        if (outcount == MPI_UNDEFINED)
            break;
        CHECK(outcount >= 1 && outcount <= N, "Waitsome: outcount %d", outcount);
        if (outcount < 1 || outcount > N || ndone > N)
            break;
        for (i = 0; i < outcount; i++) {
            idx = idxs[i];
            CHECK(idx >= 0 && idx < N && !done[idx], "Waitsome: bad or repeated index %d", idx);
            if (idx < 0 || idx >= N)
                continue;
            done[idx] = 1;
            ndone++;
            check_done("Waitsome", round, idx, &sts[i]);
        }
    }
    CHECK(ndone == 2 * K, "Waitsome: %d completions, want %d", ndone, 2 * K);
    all_null("Waitsome", rq);

    /* MPI_Test, polling each request in turn. */
    post(++round, rq);
    memset(done, 0, sizeof done);
    for (ndone = 0; ndone < N;) {
        for (i = 0; i < N; i++) {
            if (done[i])
                continue;
            flag = -1;
            MPI_CHECK(MPI_Test(&rq[i], &flag, &st));
            CHECK(flag == 0 || flag == 1, "Test: flag %d", flag);
            if (flag) {
                done[i] = 1;
                ndone++;
                CHECK(rq[i] == MPI_REQUEST_NULL, "Test: request %d not freed", i);
                if (i < N - 1)
                    check_done("Test", round, i, &st);
                else
                    CHECK(st.MPI_SOURCE == MPI_ANY_SOURCE && st.MPI_TAG == MPI_ANY_TAG,
                          "Test(MPI_REQUEST_NULL): source %d tag %d", st.MPI_SOURCE, st.MPI_TAG);
            }
        }
    }
    all_null("Test", rq);

    /* MPI_Testall until true. */
    post(++round, rq);
    flag = 0;
    for (i = 0; !flag; i++) {
        MPI_CHECK(MPI_Testall(N, rq, &flag, sts));
        if (!flag)
            for (k = 0; k < K; k++)
                CHECK(rq[k] != MPI_REQUEST_NULL, "Testall false but request %d freed", k);
    }
    for (i = 0; i < K; i++)
        check_done("Testall", round, i, &sts[i]);
    all_null("Testall", rq);

    /* MPI_Testany until (flag, MPI_UNDEFINED). */
    post(++round, rq);
    memset(done, 0, sizeof done);
    ndone = 0;
    for (;;) {
        flag = -1;
        idx = -5;
        MPI_CHECK(MPI_Testany(N, rq, &idx, &flag, &st));
        if (!flag) {
            CHECK(idx == MPI_UNDEFINED, "Testany: flag false with index %d", idx);
            continue;
        }
        if (idx == MPI_UNDEFINED)
            break;
        CHECK(idx >= 0 && idx < N && !done[idx], "Testany: bad or repeated index %d", idx);
        if (idx < 0 || idx >= N || ndone > N)
            break;
        done[idx] = 1;
        ndone++;
        check_done("Testany", round, idx, &st);
    }
    CHECK(ndone == 2 * K, "Testany: %d completions, want %d", ndone, 2 * K);
    all_null("Testany", rq);

    /* MPI_Testsome until MPI_UNDEFINED. */
    post(++round, rq);
    memset(done, 0, sizeof done);
    ndone = 0;
    for (;;) {
        outcount = -5;
        MPI_CHECK(MPI_Testsome(N, rq, &outcount, idxs, sts));
        if (outcount == MPI_UNDEFINED)
            break;
        CHECK(outcount >= 0 && outcount <= N, "Testsome: outcount %d", outcount);
        if (outcount < 0 || outcount > N)
            break;
        for (i = 0; i < outcount; i++) {
            idx = idxs[i];
            CHECK(idx >= 0 && idx < N && !done[idx], "Testsome: bad or repeated index %d", idx);
            if (idx < 0 || idx >= N)
                continue;
            done[idx] = 1;
            ndone++;
            check_done("Testsome", round, idx, &sts[i]);
        }
    }
    CHECK(ndone == 2 * K, "Testsome: %d completions, want %d", ndone, 2 * K);
    all_null("Testsome", rq);

    /* MPI_STATUSES_IGNORE / MPI_STATUS_IGNORE variants. */
    post(++round, rq);
    MPI_CHECK(MPI_Waitany(N, rq, &idx, MPI_STATUS_IGNORE));
    CHECK(idx >= 0 && idx < N - 1, "Waitany(STATUS_IGNORE): index %d", idx);
    MPI_CHECK(MPI_Waitsome(N, rq, &outcount, idxs, MPI_STATUSES_IGNORE));
    CHECK(outcount >= 1, "Waitsome(STATUSES_IGNORE): outcount %d", outcount);
    MPI_CHECK(MPI_Waitall(N, rq, MPI_STATUSES_IGNORE));
    for (i = 0; i < K; i++)
        check_done("Waitall(STATUSES_IGNORE)", round, i, NULL);
    all_null("ignore", rq);

    for (k = 0; k < K; k++) {
        free(sbuf[k]);
        free(rbuf[k]);
    }
    return mt_finalize();
}
