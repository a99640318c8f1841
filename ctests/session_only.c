/* oxmpi-test: np=1,2,4,8 */
/*
 * The MPI-4 session model alone (no MPI_Init): several sessions at once, process-set
 * queries, communicators made with MPI_Comm_create_from_group from mpi://WORLD, mpi://SELF
 * and subgroups (point-to-point and a collective on each), creations with different string
 * tags running at the same time on disjoint groups, and sessions finalized independently.
 * The error counts are summed over a session-derived communicator.
 */
#include "mtest.h"

static int rank, size;

/* The name of process set n of session s. */
static void nth_pset(MPI_Session s, int n, char *name, int cap)
{
    int len = 0;
    MPI_CHECK(MPI_Session_get_nth_pset(s, MPI_INFO_NULL, n, &len, NULL));
    CHECK(len > 1 && len <= cap, "pset %d: needed length %d", n, len);
    len = cap;
    MPI_CHECK(MPI_Session_get_nth_pset(s, MPI_INFO_NULL, n, &len, name));
}

static int pset_size(MPI_Session s, const char *name)
{
    MPI_Info info = MPI_INFO_NULL;
    char value[64] = "";
    int flag = 0;
    MPI_CHECK(MPI_Session_get_pset_info(s, name, &info));
    MPI_CHECK(MPI_Info_get(info, "mpi_size", sizeof value - 1, value, &flag));
    CHECK(flag, "%s: no mpi_size key", name);
    MPI_Info_free(&info);
    return atoi(value);
}

/* Ring exchange and an allreduce on comm, whose members are world ranks `members`. */
static void exercise(MPI_Comm comm, const int *members, int n)
{
    int r, sz, me = -1, i, right, left, got = -1, sum = 0, expect = 0;
    MPI_CHECK(MPI_Comm_size(comm, &sz));
    MPI_CHECK(MPI_Comm_rank(comm, &r));
    CHECK(sz == n, "size %d, expected %d", sz, n);
    for (i = 0; i < n; i++) {
        if (members[i] == rank)
            me = i;
        expect += members[i];
    }
    CHECK(r == me, "rank %d, expected %d", r, me);
    right = (r + 1) % sz;
    left = (r + sz - 1) % sz;
    MPI_CHECK(MPI_Sendrecv(&rank, 1, MPI_INT, right, 5, &got, 1, MPI_INT, left, 5, comm, MPI_STATUS_IGNORE));
    CHECK(got == members[left], "ring: got %d from rank %d, expected %d", got, left, members[left]);
    MPI_CHECK(MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, comm));
    CHECK(sum == expect, "allreduce: %d, expected %d", sum, expect);
}

int main(void)
{
    MPI_Session s1 = MPI_SESSION_NULL, s2 = MPI_SESSION_NULL;
    MPI_Group world_group, self_group, half_group;
    MPI_Comm world_comm, self_comm, half_comm, again;
    MPI_Info info;
    char name[MPI_MAX_PSET_NAME_LEN], value[MPI_MAX_INFO_VAL];
    int flag = -1, n = 0, i, got_world = 0, got_self = 0, total = 0;
    int *members, *half, nhalf = 0;

    MPI_Initialized(&flag);
    CHECK(flag == 0, "MPI_Initialized %d before anything", flag);

    MPI_CHECK(MPI_Session_init(MPI_INFO_NULL, MPI_ERRORS_RETURN, &s1));
    CHECK(s1 != MPI_SESSION_NULL, "session is MPI_SESSION_NULL");
    MPI_Info_create(&info);
    MPI_Info_set(info, "thread_level", "MPI_THREAD_SINGLE");
    MPI_CHECK(MPI_Session_init(info, MPI_ERRORS_RETURN, &s2));
    MPI_Info_free(&info);
    CHECK(s2 != s1, "two sessions share handle 0x%x", s1);
    MPI_Initialized(&flag);
    CHECK(flag == 0, "MPI_Initialized %d with sessions only", flag);
    MPI_Finalized(&flag);
    CHECK(flag == 0, "MPI_Finalized %d with sessions only", flag);

    MPI_CHECK(MPI_Session_get_info(s2, &info));
    flag = 0;
    MPI_CHECK(MPI_Info_get(info, "thread_level", sizeof value - 1, value, &flag));
    /* The level provided: at least what was asked for (MPICH gives MPI_THREAD_MULTIPLE). */
    CHECK(flag && strncmp(value, "MPI_THREAD_", 11) == 0, "thread_level \"%s\" (flag %d)", value, flag);
    MPI_Info_free(&info);

    /* Process sets. */
    MPI_CHECK(MPI_Session_get_num_psets(s1, MPI_INFO_NULL, &n));
    CHECK(n >= 2, "%d process sets", n);
    for (i = 0; i < n; i++) {
        nth_pset(s1, i, name, sizeof name);
        if (strcmp(name, "mpi://WORLD") == 0)
            got_world = 1;
        if (strcmp(name, "mpi://SELF") == 0)
            got_self = 1;
    }
    CHECK(got_world && got_self, "process sets: WORLD %d, SELF %d", got_world, got_self);
    size = pset_size(s1, "mpi://WORLD");
    CHECK(pset_size(s2, "mpi://SELF") == 1, "mpi://SELF is not of size 1");

    /* A communicator over mpi://WORLD: ranks follow world order. */
    MPI_CHECK(MPI_Group_from_session_pset(s1, "mpi://WORLD", &world_group));
    MPI_CHECK(MPI_Group_size(world_group, &n));
    CHECK(n == size, "world group of size %d, mpi_size %d", n, size);
    MPI_CHECK(MPI_Group_rank(world_group, &rank));
    mt_rank = rank;
    MPI_CHECK(MPI_Comm_create_from_group(world_group, "org.oxmpi.session_only.world", MPI_INFO_NULL,
                                         MPI_ERRORS_RETURN, &world_comm));
    members = malloc(size * sizeof(int));
    half = malloc(size * sizeof(int));
    for (i = 0; i < size; i++)
        members[i] = i;
    exercise(world_comm, members, size);

    /* mpi://SELF, named in lower case (MPICH accepts any case). */
    MPI_CHECK(MPI_Group_from_session_pset(s2, "mpi://self", &self_group));
    MPI_CHECK(MPI_Comm_create_from_group(self_group, "org.oxmpi.session_only.self", MPI_INFO_NULL,
                                         MPI_ERRORS_RETURN, &self_comm));
    exercise(self_comm, &rank, 1);

    /* Disjoint halves (even / odd world ranks), each with its own tag, at the same time;
     * the members are listed in reverse so ranks are not world order. */
    for (i = size - 1; i >= 0; i--)
        if (i % 2 == rank % 2)
            half[nhalf++] = i;
    for (i = 0; i < nhalf; i++)
        members[i] = half[i];
    MPI_CHECK(MPI_Group_incl(world_group, nhalf, half, &half_group));
    MPI_CHECK(MPI_Comm_create_from_group(half_group, rank % 2 ? "odd" : "even", MPI_INFO_NULL,
                                         MPI_ERRORS_RETURN, &half_comm));
    exercise(half_comm, members, nhalf);

    /* The same tag and group again (a library initialised twice). */
    MPI_CHECK(MPI_Comm_create_from_group(half_group, rank % 2 ? "odd" : "even", MPI_INFO_NULL,
                                         MPI_ERRORS_RETURN, &again));
    exercise(again, members, nhalf);
    MPI_CHECK(MPI_Comm_free(&again));

    /* s2 goes; s1 and the communicators keep working. */
    MPI_CHECK(MPI_Comm_free(&self_comm));
    MPI_CHECK(MPI_Group_free(&self_group));
    MPI_CHECK(MPI_Session_finalize(&s2));
    CHECK(s2 == MPI_SESSION_NULL, "MPI_Session_finalize left 0x%x", s2);
    for (i = 0; i < size; i++)
        members[i] = i;
    exercise(world_comm, members, size);

    /* Bad input: MPICH 4.0.2 ignores the session's MPI_ERRORS_RETURN (it aborts), so these
     * run on oxmpi only. */
    if (MT_OXMPI) {
        MPI_Group g = MPI_GROUP_NULL;
        int rc = MPI_Group_from_session_pset(s1, "mpi://nowhere", &g);
        CHECK(rc != MPI_SUCCESS, "unknown process set accepted");
        MPI_Error_class(rc, &rc);
        CHECK(rc == MPI_ERR_ARG, "unknown process set: class %d", rc);
        rc = MPI_Session_get_pset_info(s1, "mpi://nowhere", &info);
        MPI_Error_class(rc, &rc);
        CHECK(rc == MPI_ERR_ARG, "pset info of an unknown set: class %d", rc);
    }

    MPI_CHECK(MPI_Group_free(&half_group));
    MPI_CHECK(MPI_Comm_free(&half_comm));
    MPI_CHECK(MPI_Group_free(&world_group));
    MPI_CHECK(MPI_Allreduce(&mt_errs, &total, 1, MPI_INT, MPI_SUM, world_comm));
    MPI_CHECK(MPI_Comm_free(&world_comm));
    MPI_CHECK(MPI_Session_finalize(&s1));
    MPI_Initialized(&flag);
    CHECK(flag == 0, "MPI_Initialized %d after the sessions", flag);
    if (rank == 0) {
        if (total == 0 && mt_errs == 0)
            printf("No Errors\n");
        else
            printf(" Found %d errors\n", total + mt_errs);
    }
    free(members);
    free(half);
    return total || mt_errs;
}
