/* oxmpi-test: np=1,2,3,4,8 */
/* MPI_Isendrecv and MPI_Isendrecv_replace (MPI-4): a ring shift completed by MPI_Wait, by a
 * MPI_Test loop and by MPI_Waitall over several pairs in flight; the status is the receive's;
 * MPI_PROC_NULL peers; the blocking MPI_Sendrecv(_replace) still agree.
 * Debian's MPICH 4.0.2 fails this test (its MPI_Isendrecv leaves the status empty, and it hangs
 * at np=1 and crashes at np=2), so it is checked against the standard only. */
#include "mtest.h"

#define N 5000 /* ints: above the eager limit, so rendezvous is exercised too */

int main(int argc, char **argv)
{
    static int sbuf[N], rbuf[N], rep[N];
    int i, k, right, left, flag;
    MPI_Request rq[3];
    MPI_Status st, sts[3];

    mt_init(&argc, &argv);
    right = (mt_rank + 1) % mt_size;
    left = (mt_rank + mt_size - 1) % mt_size;

    for (i = 0; i < N; i++)
        sbuf[i] = mt_rank * 100000 + i;
    MPI_CHECK(MPI_Isendrecv(sbuf, N, MPI_INT, right, 7, rbuf, N, MPI_INT, left, 7, MPI_COMM_WORLD, &rq[0]));
    MPI_CHECK(MPI_Wait(&rq[0], &st));
    CHECK(rq[0] == MPI_REQUEST_NULL, "request not freed by Wait");
    CHECK(st.MPI_SOURCE == left && st.MPI_TAG == 7, "status source %d tag %d", st.MPI_SOURCE, st.MPI_TAG);
    MPI_CHECK(MPI_Get_count(&st, MPI_INT, &k));
    CHECK(k == N, "count %d", k);
    for (i = 0; i < N; i++)
        if (rbuf[i] != left * 100000 + i) {
            CHECK(0, "Isendrecv element %d = %d", i, rbuf[i]);
            break;
        }

    /* Replace, completed by a Test loop, small message. */
    for (i = 0; i < 10; i++)
        rep[i] = mt_rank + i;
    MPI_CHECK(MPI_Isendrecv_replace(rep, 10, MPI_INT, right, 8, left, 8, MPI_COMM_WORLD, &rq[0]));
    flag = 0;
    while (!flag)
        MPI_CHECK(MPI_Test(&rq[0], &flag, &st));
    for (i = 0; i < 10; i++)
        CHECK(rep[i] == left + i, "replace element %d = %d", i, rep[i]);

    /* Three pairs in flight (two directions, large replace), then Waitall. */
    for (i = 0; i < N; i++)
        rep[i] = -mt_rank - i;
    MPI_CHECK(MPI_Isendrecv(sbuf, 1, MPI_INT, right, 9, &k, 1, MPI_INT, left, 9, MPI_COMM_WORLD, &rq[0]));
    MPI_CHECK(MPI_Isendrecv(sbuf, N, MPI_INT, left, 10, rbuf, N, MPI_INT, right, 10, MPI_COMM_WORLD, &rq[1]));
    MPI_CHECK(MPI_Isendrecv_replace(rep, N, MPI_INT, right, 11, left, 11, MPI_COMM_WORLD, &rq[2]));
    MPI_CHECK(MPI_Waitall(3, rq, sts));
    CHECK(k == left * 100000, "first pair got %d", k);
    CHECK(sts[1].MPI_SOURCE == right && sts[1].MPI_TAG == 10, "second pair status %d/%d", sts[1].MPI_SOURCE,
          sts[1].MPI_TAG);
    CHECK(rbuf[N - 1] == right * 100000 + N - 1, "second pair last element %d", rbuf[N - 1]);
    CHECK(rep[0] == -left && rep[N - 1] == -left - (N - 1), "large replace got %d..%d", rep[0], rep[N - 1]);

    /* MPI_PROC_NULL on both sides: completes at once with the PROC_NULL status. */
    MPI_CHECK(MPI_Isendrecv(sbuf, 3, MPI_INT, MPI_PROC_NULL, 1, rbuf, 3, MPI_INT, MPI_PROC_NULL, 1, MPI_COMM_WORLD,
                            &rq[0]));
    MPI_CHECK(MPI_Wait(&rq[0], &st));
    CHECK(st.MPI_SOURCE == MPI_PROC_NULL, "PROC_NULL status source %d", st.MPI_SOURCE);

    /* The blocking forms agree. */
    MPI_CHECK(MPI_Sendrecv(sbuf, 2, MPI_INT, right, 12, rbuf, 2, MPI_INT, left, 12, MPI_COMM_WORLD, &st));
    CHECK(rbuf[1] == left * 100000 + 1, "Sendrecv got %d", rbuf[1]);
    rep[0] = mt_rank;
    MPI_CHECK(MPI_Sendrecv_replace(rep, 1, MPI_INT, right, 13, left, 13, MPI_COMM_WORLD, &st));
    CHECK(rep[0] == left, "Sendrecv_replace got %d", rep[0]);
    return mt_finalize();
}
