/* oxmpi-test: np=1,2 */
/* Completion functions on MPI_REQUEST_NULL, inactive persistent requests,
 * empty arrays and MPI_PROC_NULL requests: the empty-status and
 * MPI_UNDEFINED rules of the standard. */
#include "mtest.h"

static void check_empty(const char *how, MPI_Status *st)
{
    int count = -1, cancelled = -1;
    CHECK(st->MPI_SOURCE == MPI_ANY_SOURCE, "%s: source %d, want MPI_ANY_SOURCE", how, st->MPI_SOURCE);
    CHECK(st->MPI_TAG == MPI_ANY_TAG, "%s: tag %d, want MPI_ANY_TAG", how, st->MPI_TAG);
    MPI_Get_count(st, MPI_INT, &count);
    CHECK(count == 0, "%s: count %d, want 0", how, count);
    MPI_Test_cancelled(st, &cancelled);
    CHECK(cancelled == 0, "%s: cancelled %d", how, cancelled);
}

static void poison(MPI_Status *st, int n)
{
    int i;
    for (i = 0; i < n; i++) {
        st[i].MPI_SOURCE = 12345;
        st[i].MPI_TAG = 12345;
    }
}

int main(int argc, char **argv)
{
    MPI_Request rq[3], pr;
    MPI_Status st, sts[3];
    int flag, idx, outcount, idxs[3], buf[4] = {1, 2, 3, 4}, i, count;

    mt_init(&argc, &argv);
    rq[0] = rq[1] = rq[2] = MPI_REQUEST_NULL;

    poison(&st, 1);
    MPI_CHECK(MPI_Wait(&rq[0], &st));
    check_empty("Wait(null)", &st);

    poison(&st, 1);
    flag = -1;
    MPI_CHECK(MPI_Test(&rq[0], &flag, &st));
    CHECK(flag == 1, "Test(null): flag %d", flag);
    check_empty("Test(null)", &st);

    poison(&st, 1);
    flag = -1;
    MPI_CHECK(MPI_Request_get_status(MPI_REQUEST_NULL, &flag, &st));
    CHECK(flag == 1, "Request_get_status(null): flag %d", flag);
    check_empty("Request_get_status(null)", &st);

    poison(&st, 1);
    idx = -5;
    MPI_CHECK(MPI_Waitany(3, rq, &idx, &st));
    CHECK(idx == MPI_UNDEFINED, "Waitany(all null): index %d", idx);
    check_empty("Waitany(all null)", &st);

    poison(&st, 1);
    idx = -5;
    flag = -1;
    MPI_CHECK(MPI_Testany(3, rq, &idx, &flag, &st));
    CHECK(flag == 1 && idx == MPI_UNDEFINED, "Testany(all null): flag %d index %d", flag, idx);
    check_empty("Testany(all null)", &st);

    outcount = -5;
    MPI_CHECK(MPI_Waitsome(3, rq, &outcount, idxs, sts));
    CHECK(outcount == MPI_UNDEFINED, "Waitsome(all null): outcount %d", outcount);
    outcount = -5;
    MPI_CHECK(MPI_Testsome(3, rq, &outcount, idxs, sts));
    CHECK(outcount == MPI_UNDEFINED, "Testsome(all null): outcount %d", outcount);

    poison(sts, 3);
    MPI_CHECK(MPI_Waitall(3, rq, sts));
    for (i = 0; i < 3; i++)
        check_empty("Waitall(all null)", &sts[i]);
    poison(sts, 3);
    flag = -1;
    MPI_CHECK(MPI_Testall(3, rq, &flag, sts));
    CHECK(flag == 1, "Testall(all null): flag %d", flag);
    for (i = 0; i < 3; i++)
        check_empty("Testall(all null)", &sts[i]);

    /* Empty arrays. */
    MPI_CHECK(MPI_Waitall(0, rq, sts));
    flag = -1;
    MPI_CHECK(MPI_Testall(0, rq, &flag, sts));
    CHECK(flag == 1, "Testall(0): flag %d", flag);
    idx = -5;
    MPI_CHECK(MPI_Waitany(0, rq, &idx, &st));
    CHECK(idx == MPI_UNDEFINED, "Waitany(0): index %d", idx);
    idx = -5;
    flag = -1;
    MPI_CHECK(MPI_Testany(0, rq, &idx, &flag, &st));
    CHECK(flag == 1 && idx == MPI_UNDEFINED, "Testany(0): flag %d index %d", flag, idx);
    outcount = -5;
    MPI_CHECK(MPI_Waitsome(0, rq, &outcount, idxs, sts));
    CHECK(outcount == MPI_UNDEFINED, "Waitsome(0): outcount %d", outcount);
    outcount = -5;
    MPI_CHECK(MPI_Testsome(0, rq, &outcount, idxs, sts));
    CHECK(outcount == MPI_UNDEFINED, "Testsome(0): outcount %d", outcount);

    /* Inactive persistent request: behaves like a null request, stays valid. */
    MPI_CHECK(MPI_Recv_init(buf, 4, MPI_INT, 0, 9, MPI_COMM_SELF, &pr));
    CHECK(pr != MPI_REQUEST_NULL, "Recv_init gave MPI_REQUEST_NULL");
    poison(&st, 1);
    MPI_CHECK(MPI_Wait(&pr, &st));
    check_empty("Wait(inactive persistent)", &st);
    CHECK(pr != MPI_REQUEST_NULL, "Wait freed an inactive persistent request");
    poison(&st, 1);
    flag = -1;
    MPI_CHECK(MPI_Test(&pr, &flag, &st));
    CHECK(flag == 1, "Test(inactive persistent): flag %d", flag);
    check_empty("Test(inactive persistent)", &st);
    rq[1] = pr;
    idx = -5;
    MPI_CHECK(MPI_Waitany(3, rq, &idx, &st));
    CHECK(idx == MPI_UNDEFINED, "Waitany(inactive persistent): index %d", idx);
    outcount = -5;
    MPI_CHECK(MPI_Waitsome(3, rq, &outcount, idxs, sts));
    CHECK(outcount == MPI_UNDEFINED, "Waitsome(inactive persistent): outcount %d", outcount);
    CHECK(rq[1] == pr, "Waitsome changed an inactive persistent request");
    MPI_CHECK(MPI_Request_free(&pr));
    CHECK(pr == MPI_REQUEST_NULL, "Request_free left %d", (int)pr);

    /* MPI_PROC_NULL with non-blocking calls: complete at once, PROC_NULL status. */
    MPI_CHECK(MPI_Isend(buf, 4, MPI_INT, MPI_PROC_NULL, 3, MPI_COMM_WORLD, &rq[0]));
    MPI_CHECK(MPI_Irecv(buf, 4, MPI_INT, MPI_PROC_NULL, 3, MPI_COMM_WORLD, &rq[1]));
    poison(sts, 3);
    MPI_CHECK(MPI_Waitall(2, rq, sts));
    /* MPICH 4.0.2 reports source 0, tag 0 here (fixed in later MPICH). */
    CHECK_STRICT(sts[1].MPI_SOURCE == MPI_PROC_NULL && sts[1].MPI_TAG == MPI_ANY_TAG,
          "Irecv(PROC_NULL): source %d tag %d", sts[1].MPI_SOURCE, sts[1].MPI_TAG);
    count = -1;
    MPI_Get_count(&sts[1], MPI_INT, &count);
    CHECK(count == 0, "Irecv(PROC_NULL): count %d", count);
    CHECK(buf[0] == 1 && buf[3] == 4, "Irecv(PROC_NULL) modified the buffer");
    CHECK(rq[0] == MPI_REQUEST_NULL && rq[1] == MPI_REQUEST_NULL, "PROC_NULL requests not freed");

    return mt_finalize();
}
