/* oxmpi-test: np=1,2,3,4,8 */
/* MPI_Reduce_local with built-in and user ops (operand order), MPI_Op_commutative,
   MPI_Op_free. */
#include "coll_mtest.h"

static void sub_op(void *invec, void *inoutvec, int *len, MPI_Datatype *dt)
{
    int *a = invec, *b = inoutvec;
    (void)dt;
    for (int i = 0; i < *len; i++)
        b[i] = a[i] - b[i]; /* inout = in - inout: shows which operand is which */
}

struct di { double v; int i; };
static int padded_calls;
static void di_max(void *invec, void *inoutvec, int *len, MPI_Datatype *dt)
{
    struct di *a = invec, *b = inoutvec;
    padded_calls += *dt == MPI_DOUBLE_INT;
    for (int i = 0; i < *len; i++)
        if (a[i].v > b[i].v)
            b[i] = a[i];
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int a[4] = {1, 2, 3, 4}, b[4] = {10, 20, 30, 40};
    MPI_Reduce_local(a, b, 4, MPI_INT, MPI_SUM);
    CHECK(b[0] == 11 && b[3] == 44, "Reduce_local SUM");
    MPI_Reduce_local(a, b, 4, MPI_INT, MPI_MAX);
    CHECK(b[0] == 11 && b[3] == 44, "Reduce_local MAX");
    double x[2] = {1.5, -2}, y[2] = {2, 3};
    MPI_Reduce_local(x, y, 2, MPI_DOUBLE, MPI_PROD);
    CHECK(y[0] == 3 && y[1] == -6, "Reduce_local PROD double");

    MPI_Op sub, dmax;
    int commute = -1;
    MPI_Op_create(sub_op, 0, &sub);
    MPI_Op_commutative(sub, &commute);
    CHECK(commute == 0, "user op should be non-commutative");
    MPI_Op_commutative(MPI_SUM, &commute);
    CHECK(commute == 1, "MPI_SUM should be commutative");
    int c[3] = {5, 5, 5}, d[3] = {1, 2, 3};
    MPI_Reduce_local(c, d, 3, MPI_INT, sub);
    CHECK(d[0] == 4 && d[1] == 3 && d[2] == 2, "user op operand order: %d %d %d", d[0], d[1], d[2]);
    MPI_Op_free(&sub);
    CHECK(sub == MPI_OP_NULL, "Op_free did not reset the handle");

    MPI_Op_create(di_max, 1, &dmax);
    MPI_Op_commutative(dmax, &commute);
    CHECK(commute == 1, "user op should be commutative");
    struct di p[3] = {{1, 1}, {5, 2}, {0, 3}}, q[3] = {{2, 7}, {4, 8}, {0, 9}};
    MPI_Reduce_local(p, q, 3, MPI_DOUBLE_INT, dmax);
    CHECK(q[0].i == 7 && q[1].i == 2 && q[2].i == 9 && padded_calls > 0, "user op on DOUBLE_INT");
    MPI_Reduce_local(p, q, 3, MPI_DOUBLE_INT, MPI_MINLOC);
    CHECK(q[0].v == 1 && q[0].i == 1 && q[1].v == 5 && q[1].i == 2 && q[2].v == 0 && q[2].i == 3, "MINLOC tie -> lower index");
    MPI_Op_free(&dmax);

    /* count 0 with NULL buffers is fine */
    MPI_Reduce_local(NULL, NULL, 0, MPI_INT, MPI_SUM);
    return coll_finish();
}
