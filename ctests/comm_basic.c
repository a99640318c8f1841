/* oxmpi-test: np=1,2,4,8 */
/* Predefined communicators: rank/size on WORLD and SELF, MPI_Comm_dup isolation,
 * MPI_Comm_free, MPI_Comm_compare, MPI_Comm_set_name/get_name. */
#include "mtest.h"

int main(int argc, char **argv)
{
    int rank = -1, size = -1, r2 = -1, s2 = -1, res = -1, len = -1, i;
    char name[MPI_MAX_OBJECT_NAME];
    MPI_Comm dup = MPI_COMM_NULL, dup2 = MPI_COMM_NULL;

    mt_init(&argc, &argv);
    MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &size));
    CHECK(size >= 1 && rank >= 0 && rank < size, "world rank %d size %d", rank, size);
    MPI_CHECK(MPI_Comm_rank(MPI_COMM_SELF, &r2));
    MPI_CHECK(MPI_Comm_size(MPI_COMM_SELF, &s2));
    CHECK(r2 == 0 && s2 == 1, "self rank %d size %d", r2, s2);

    /* Default names. */
    memset(name, 'x', sizeof name);
    MPI_CHECK(MPI_Comm_get_name(MPI_COMM_WORLD, name, &len));
    CHECK(strcmp(name, "MPI_COMM_WORLD") == 0 && len == 14, "world name \"%.*s\" len %d", 40, name, len);
    memset(name, 'x', sizeof name);
    MPI_CHECK(MPI_Comm_get_name(MPI_COMM_SELF, name, &len));
    CHECK(strcmp(name, "MPI_COMM_SELF") == 0 && len == 13, "self name \"%.*s\" len %d", 40, name, len);

    /* Compare. */
    MPI_CHECK(MPI_Comm_compare(MPI_COMM_WORLD, MPI_COMM_WORLD, &res));
    CHECK(res == MPI_IDENT, "WORLD vs WORLD: %d", res);
    MPI_CHECK(MPI_Comm_compare(MPI_COMM_SELF, MPI_COMM_SELF, &res));
    CHECK(res == MPI_IDENT, "SELF vs SELF: %d", res);
    MPI_CHECK(MPI_Comm_compare(MPI_COMM_WORLD, MPI_COMM_SELF, &res));
    if (size == 1)
        CHECK(res == MPI_CONGRUENT, "WORLD vs SELF at size 1: %d", res);
    else
        CHECK(res == MPI_UNEQUAL, "WORLD vs SELF at size %d: %d", size, res);

    MPI_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
    CHECK(dup != MPI_COMM_NULL && dup != MPI_COMM_WORLD, "dup handle %d", (int)dup);
    MPI_CHECK(MPI_Comm_compare(MPI_COMM_WORLD, dup, &res));
    CHECK(res == MPI_CONGRUENT, "WORLD vs dup: %d", res);
    MPI_CHECK(MPI_Comm_compare(dup, dup, &res));
    CHECK(res == MPI_IDENT, "dup vs dup: %d", res);
    MPI_CHECK(MPI_Comm_rank(dup, &r2));
    MPI_CHECK(MPI_Comm_size(dup, &s2));
    CHECK(r2 == rank && s2 == size, "dup rank %d size %d", r2, s2);
    /* A dup does not inherit the name of WORLD (names are not copied by dup). */
    MPI_CHECK(MPI_Comm_set_name(dup, "my dup comm"));
    memset(name, 0, sizeof name);
    MPI_CHECK(MPI_Comm_get_name(dup, name, &len));
    CHECK(strcmp(name, "my dup comm") == 0 && len == 11, "dup name \"%s\" len %d", name, len);
    memset(name, 0, sizeof name);
    MPI_CHECK(MPI_Comm_get_name(MPI_COMM_WORLD, name, &len));
    CHECK(strcmp(name, "MPI_COMM_WORLD") == 0, "naming the dup renamed WORLD: \"%s\"", name);

    /* Traffic isolation: the same (source, tag) on WORLD and on the dup.
     * Each rank sends to its right neighbour first on dup, then on WORLD,
     * and receives first on WORLD: the WORLD receive must get the WORLD
     * message even though the dup message was sent earlier. */
    {
        int right = (rank + 1) % size, left = (rank + size - 1) % size;
        int vw = -1, vd = -1, sw = 1000 + rank, sd = 2000 + rank;
        MPI_Request rq[2];
        MPI_Status st;
        MPI_CHECK(MPI_Isend(&sd, 1, MPI_INT, right, 7, dup, &rq[0]));
        MPI_CHECK(MPI_Isend(&sw, 1, MPI_INT, right, 7, MPI_COMM_WORLD, &rq[1]));
        MPI_CHECK(MPI_Recv(&vw, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st));
        CHECK(vw == 1000 + left, "WORLD receive got %d, want %d", vw, 1000 + left);
        CHECK(st.MPI_SOURCE == left && st.MPI_TAG == 7, "WORLD status source %d tag %d", st.MPI_SOURCE,
              st.MPI_TAG);
        MPI_CHECK(MPI_Recv(&vd, 1, MPI_INT, left, 7, dup, &st));
        CHECK(vd == 2000 + left, "dup receive got %d, want %d", vd, 2000 + left);
        MPI_CHECK(MPI_Waitall(2, rq, MPI_STATUSES_IGNORE));
    }

    /* A dup of a dup is congruent to WORLD and distinct from the first dup. */
    MPI_CHECK(MPI_Comm_dup(dup, &dup2));
    MPI_CHECK(MPI_Comm_compare(dup, dup2, &res));
    CHECK(res == MPI_CONGRUENT, "dup vs dup2: %d", res);
    {
        /* Same (src,tag) on dup and dup2, received in reverse order. */
        int right = (rank + 1) % size, left = (rank + size - 1) % size, a = 10 + rank, b = 20 + rank, x = -1,
            y = -1;
        MPI_Request rq[2];
        MPI_CHECK(MPI_Isend(&a, 1, MPI_INT, right, 3, dup, &rq[0]));
        MPI_CHECK(MPI_Isend(&b, 1, MPI_INT, right, 3, dup2, &rq[1]));
        MPI_CHECK(MPI_Recv(&y, 1, MPI_INT, left, 3, dup2, MPI_STATUS_IGNORE));
        MPI_CHECK(MPI_Recv(&x, 1, MPI_INT, left, 3, dup, MPI_STATUS_IGNORE));
        CHECK(x == 10 + left && y == 20 + left, "dup/dup2 got %d/%d", x, y);
        MPI_CHECK(MPI_Waitall(2, rq, MPI_STATUSES_IGNORE));
    }

    /* SELF dup. */
    {
        MPI_Comm sd = MPI_COMM_NULL;
        MPI_CHECK(MPI_Comm_dup(MPI_COMM_SELF, &sd));
        MPI_CHECK(MPI_Comm_compare(MPI_COMM_SELF, sd, &res));
        CHECK(res == MPI_CONGRUENT, "SELF vs dup(SELF): %d", res);
        MPI_CHECK(MPI_Comm_size(sd, &s2));
        CHECK(s2 == 1, "dup(SELF) size %d", s2);
        MPI_CHECK(MPI_Comm_free(&sd));
        CHECK(sd == MPI_COMM_NULL, "MPI_Comm_free left handle %d", (int)sd);
    }

    MPI_CHECK(MPI_Comm_free(&dup2));
    CHECK(dup2 == MPI_COMM_NULL, "MPI_Comm_free left handle %d", (int)dup2);
    MPI_CHECK(MPI_Comm_free(&dup));
    CHECK(dup == MPI_COMM_NULL, "MPI_Comm_free left handle %d", (int)dup);

    /* Renaming WORLD works and is visible; restore afterwards. */
    MPI_CHECK(MPI_Comm_set_name(MPI_COMM_WORLD, "renamed world"));
    MPI_CHECK(MPI_Comm_get_name(MPI_COMM_WORLD, name, &len));
    CHECK(strcmp(name, "renamed world") == 0 && len == 13, "renamed world: \"%s\"", name);
    MPI_CHECK(MPI_Comm_set_name(MPI_COMM_WORLD, "MPI_COMM_WORLD"));
    (void)i;
    mt_barrier();
    return mt_finalize();
}
