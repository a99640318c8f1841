/* oxmpi-test: np=1,2,4 */
/* MPI_Get_count / MPI_Get_elements / MPI_Get_elements_x: with other
 * datatypes than the one received, MPI_UNDEFINED when the bytes are not a
 * multiple of the type size, pair types (elements = 2 per item); MPI_PROC_NULL
 * blocking send/receive; MPI_STATUS_IGNORE and MPI_STATUSES_IGNORE. */
#include "mtest.h"

int main(int argc, char **argv)
{
    unsigned char bytes[64];
    MPI_Status st;
    MPI_Request rq[2];
    int count, elems, partner, i;
    MPI_Count ex;

    mt_init(&argc, &argv);
    partner = mt_rank ^ 1;
    if (partner >= mt_size)
        partner = mt_rank;

    /* 7 bytes */
    for (i = 0; i < 64; i++)
        bytes[i] = (unsigned char)i;
    MPI_CHECK(MPI_Irecv(bytes + 32, 32, MPI_BYTE, partner, 1, MPI_COMM_WORLD, &rq[0]));
    MPI_CHECK(MPI_Isend(bytes, 7, MPI_BYTE, partner, 1, MPI_COMM_WORLD, &rq[1]));
    MPI_CHECK(MPI_Wait(&rq[1], MPI_STATUS_IGNORE));
    MPI_CHECK(MPI_Wait(&rq[0], &st));
    MPI_CHECK(MPI_Get_count(&st, MPI_BYTE, &count));
    CHECK(count == 7, "Get_count(BYTE) %d", count);
    MPI_CHECK(MPI_Get_count(&st, MPI_CHAR, &count));
    CHECK(count == 7, "Get_count(CHAR) %d", count);
    MPI_CHECK(MPI_Get_count(&st, MPI_INT, &count));
    CHECK(count == MPI_UNDEFINED, "Get_count(INT) of 7 bytes: %d, want MPI_UNDEFINED", count);
    MPI_CHECK(MPI_Get_count(&st, MPI_SHORT, &count));
    CHECK(count == MPI_UNDEFINED, "Get_count(SHORT) of 7 bytes: %d", count);
    MPI_CHECK(MPI_Get_elements(&st, MPI_BYTE, &elems));
    CHECK(elems == 7, "Get_elements(BYTE) %d", elems);
    MPI_CHECK(MPI_Get_elements(&st, MPI_INT, &elems));
    CHECK(elems == MPI_UNDEFINED, "Get_elements(INT) of 7 bytes: %d", elems);
    ex = -1;
    MPI_CHECK(MPI_Get_elements_x(&st, MPI_BYTE, &ex));
    CHECK(ex == 7, "Get_elements_x(BYTE) %lld", (long long)ex);
    ex = -1;
    MPI_CHECK(MPI_Get_elements_x(&st, MPI_DOUBLE, &ex));
    CHECK(ex == MPI_UNDEFINED, "Get_elements_x(DOUBLE) of 7 bytes: %lld", (long long)ex);
    CHECK(bytes[32 + 6] == 6 && bytes[32 + 7] == 39, "7-byte message data");

    /* 8 bytes: 2 ints, 1 double */
    MPI_CHECK(MPI_Sendrecv(bytes, 8, MPI_BYTE, partner, 2, bytes + 32, 32, MPI_BYTE, partner, 2, MPI_COMM_WORLD,
                           &st));
    MPI_CHECK(MPI_Get_count(&st, MPI_INT, &count));
    CHECK(count == 2, "Get_count(INT) of 8 bytes: %d", count);
    MPI_CHECK(MPI_Get_count(&st, MPI_DOUBLE, &count));
    CHECK(count == 1, "Get_count(DOUBLE) of 8 bytes: %d", count);

    /* Pair types. */
    {
        struct { double d; int i; } di[3], dr[3];
        int ii[8], ir[8];
        for (i = 0; i < 3; i++) {
            di[i].d = i + 0.5;
            di[i].i = -i;
        }
        for (i = 0; i < 8; i++)
            ii[i] = i * i;
        MPI_CHECK(MPI_Sendrecv(di, 3, MPI_DOUBLE_INT, partner, 3, dr, 3, MPI_DOUBLE_INT, partner, 3, MPI_COMM_WORLD,
                               &st));
        MPI_CHECK(MPI_Get_count(&st, MPI_DOUBLE_INT, &count));
        CHECK(count == 3, "Get_count(DOUBLE_INT) %d", count);
        MPI_CHECK(MPI_Get_elements(&st, MPI_DOUBLE_INT, &elems));
        CHECK(elems == 6, "Get_elements(DOUBLE_INT) of 3 items: %d, want 6", elems);
        ex = -1;
        MPI_CHECK(MPI_Get_elements_x(&st, MPI_DOUBLE_INT, &ex));
        CHECK(ex == 6, "Get_elements_x(DOUBLE_INT) %lld", (long long)ex);
        CHECK(dr[2].d == 2.5 && dr[2].i == -2, "DOUBLE_INT data %g %d", dr[2].d, dr[2].i);
        MPI_CHECK(MPI_Sendrecv(ii, 4, MPI_2INT, partner, 4, ir, 4, MPI_2INT, partner, 4, MPI_COMM_WORLD, &st));
        MPI_CHECK(MPI_Get_count(&st, MPI_2INT, &count));
        CHECK(count == 4, "Get_count(2INT) %d", count);
        MPI_CHECK(MPI_Get_elements(&st, MPI_2INT, &elems));
        CHECK(elems == 8, "Get_elements(2INT) %d", elems);
        MPI_CHECK(MPI_Get_count(&st, MPI_INT, &count));
        CHECK(count == 8, "Get_count(INT) of 4 2INT: %d", count);
        CHECK(ir[7] == 49, "2INT data %d", ir[7]);
    }

    /* Zero-byte message. */
    MPI_CHECK(MPI_Sendrecv(bytes, 0, MPI_INT, partner, 5, bytes + 32, 0, MPI_INT, partner, 5, MPI_COMM_WORLD, &st));
    MPI_CHECK(MPI_Get_count(&st, MPI_INT, &count));
    CHECK(count == 0 && st.MPI_SOURCE == partner && st.MPI_TAG == 5, "empty message: count %d source %d tag %d",
          count, st.MPI_SOURCE, st.MPI_TAG);
    MPI_CHECK(MPI_Get_elements(&st, MPI_DOUBLE_INT, &elems));
    CHECK(elems == 0, "empty message: Get_elements %d", elems);

    /* MPI_PROC_NULL. */
    MPI_CHECK(MPI_Send(bytes, 8, MPI_BYTE, MPI_PROC_NULL, 6, MPI_COMM_WORLD));
    memset(bytes, 9, sizeof bytes);
    st.MPI_SOURCE = 1234;
    MPI_CHECK(MPI_Recv(bytes, 8, MPI_BYTE, MPI_PROC_NULL, 6, MPI_COMM_WORLD, &st));
    count = -1;
    MPI_CHECK(MPI_Get_count(&st, MPI_BYTE, &count));
    CHECK(st.MPI_SOURCE == MPI_PROC_NULL && st.MPI_TAG == MPI_ANY_TAG && count == 0,
          "Recv(PROC_NULL): source %d tag %d count %d", st.MPI_SOURCE, st.MPI_TAG, count);
    CHECK(bytes[0] == 9 && bytes[7] == 9, "Recv(PROC_NULL) wrote the buffer");
    MPI_CHECK(MPI_Get_elements(&st, MPI_INT, &elems));
    CHECK(elems == 0, "Recv(PROC_NULL): Get_elements %d", elems);

    /* STATUS_IGNORE / STATUSES_IGNORE everywhere. */
    {
        int v = mt_rank, w = -1, flag = 0, outc, idx[2];
        MPI_CHECK(MPI_Sendrecv(&v, 1, MPI_INT, partner, 7, &w, 1, MPI_INT, partner, 7, MPI_COMM_WORLD,
                               MPI_STATUS_IGNORE));
        CHECK(w == partner, "Sendrecv(STATUS_IGNORE) %d", w);
        MPI_CHECK(MPI_Irecv(&w, 1, MPI_INT, partner, 8, MPI_COMM_WORLD, &rq[0]));
        MPI_CHECK(MPI_Isend(&v, 1, MPI_INT, partner, 8, MPI_COMM_WORLD, &rq[1]));
        while (!flag)
            MPI_CHECK(MPI_Testall(2, rq, &flag, MPI_STATUSES_IGNORE));
        MPI_CHECK(MPI_Irecv(&w, 1, MPI_INT, partner, 9, MPI_COMM_WORLD, &rq[0]));
        MPI_CHECK(MPI_Isend(&v, 1, MPI_INT, partner, 9, MPI_COMM_WORLD, &rq[1]));
        for (i = 0; i < 2;) {
            MPI_CHECK(MPI_Testsome(2, rq, &outc, idx, MPI_STATUSES_IGNORE));
            if (outc != MPI_UNDEFINED)
                i += outc;
        }
        MPI_CHECK(MPI_Recv(&w, 1, MPI_INT, MPI_PROC_NULL, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    }
    return mt_finalize();
}
