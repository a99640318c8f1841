/* oxmpi-test: np=1,2,4,8 */
/*
 * Windows as objects: MPI_Win_create, MPI_Win_allocate, MPI_Win_allocate_shared (with
 * MPI_Win_shared_query: what one rank stores through the shared memory the others read),
 * MPI_Win_create_dynamic with attach/detach; group, name, hints, free; and bad input
 * (MPI_WIN_NULL, a freed window, negative size, disp_unit <= 0, wrong flavour) with the
 * error classes MPICH gives.
 */
#include "mtest.h"

static int error_class(int rc)
{
    int cls = rc;
    if (rc != MPI_SUCCESS)
        MPI_Error_class(rc, &cls);
    return cls;
}

/* The window's group must be the communicator's. */
static void check_group(MPI_Win win, MPI_Comm comm)
{
    MPI_Group wg, cg;
    int result = -1;
    MPI_CHECK(MPI_Win_get_group(win, &wg));
    MPI_Comm_group(comm, &cg);
    MPI_Group_compare(wg, cg, &result);
    CHECK(result == MPI_IDENT, "window group compares %d with the communicator's", result);
    MPI_Group_free(&wg);
    MPI_Group_free(&cg);
}

static void check_name(MPI_Win win)
{
    char name[MPI_MAX_OBJECT_NAME];
    int len = -1;
    MPI_CHECK(MPI_Win_get_name(win, name, &len));
    CHECK(len == 0 && name[0] == 0, "default window name \"%s\" (len %d)", name, len);
    MPI_CHECK(MPI_Win_set_name(win, "my window"));
    MPI_CHECK(MPI_Win_get_name(win, name, &len));
    CHECK(len == 9 && strcmp(name, "my window") == 0, "window name \"%s\" (len %d)", name, len);
}

static void check_info(MPI_Win win, const char *key, const char *want)
{
    MPI_Info info;
    char val[MPI_MAX_INFO_VAL + 1];
    int flag = 0;
    MPI_CHECK(MPI_Win_get_info(win, &info));
    MPI_Info_get(info, key, MPI_MAX_INFO_VAL, val, &flag);
    if (want)
        CHECK(flag && strcmp(val, want) == 0, "hint %s: flag %d value \"%s\", want \"%s\"", key, flag,
              flag ? val : "", want);
    else
        CHECK(!flag, "hint %s should not be there (value \"%s\")", key, val);
    MPI_Info_free(&info);
}

int main(int argc, char **argv)
{
    int rank, rc, i, unit, *mine, *other, flag;
    int buf[4];
    MPI_Aint qsize;
    void *base, *qbase;
    MPI_Win win, freed;
    MPI_Info info;

    mt_init(&argc, &argv);
    rank = mt_rank;
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);

    /* MPI_Win_create over the program's memory, with a hint. */
    MPI_Info_create(&info);
    MPI_Info_set(info, "no_locks", "true");
    MPI_Info_set(info, "oxmpi_not_a_hint", "1");
    MPI_CHECK(MPI_Win_create(buf, sizeof buf, sizeof(int), info, MPI_COMM_WORLD, &win));
    MPI_Info_free(&info);
    check_group(win, MPI_COMM_WORLD);
    check_name(win);
    check_info(win, "no_locks", "true");
    check_info(win, "oxmpi_not_a_hint", NULL);
    check_info(win, "accumulate_ordering", "rar,raw,war,waw");
    MPI_Info_create(&info);
    MPI_Info_set(info, "accumulate_ordering", "none");
    MPI_CHECK(MPI_Win_set_info(win, info));
    MPI_Info_free(&info);
    check_info(win, "accumulate_ordering", "none");
    check_info(win, "no_locks", "true");
    /* Shared queries need a shared window. A window's errors are fatal unless its own
     * handler says otherwise (the standard's default, whatever MPI_COMM_WORLD's is). */
    MPI_CHECK(MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN));
    rc = MPI_Win_shared_query(win, 0, &qsize, &unit, &qbase);
    CHECK(error_class(rc) == MPI_ERR_RMA_FLAVOR, "MPI_Win_shared_query on a created window: class %d",
          error_class(rc));
    CHECK(MPI_Win_c2f(win) == (MPI_Fint)win && MPI_Win_f2c(MPI_Win_c2f(win)) == win, "c2f/f2c");
    freed = win;
    MPI_CHECK(MPI_Win_free(&win));
    CHECK(win == MPI_WIN_NULL, "freed window not reset");

    /* Bad input. */
    rc = MPI_Win_set_errhandler(MPI_WIN_NULL, MPI_ERRORS_RETURN);
    CHECK(error_class(rc) == MPI_ERR_WIN, "MPI_Win_set_errhandler(MPI_WIN_NULL): class %d", error_class(rc));
    rc = MPI_Win_get_name(MPI_WIN_NULL, (char[MPI_MAX_OBJECT_NAME]){0}, &i);
    CHECK(error_class(rc) == MPI_ERR_WIN, "MPI_Win_get_name(MPI_WIN_NULL): class %d", error_class(rc));
#if MT_OXMPI
    /* MPICH 4.0.2 does not notice a freed window handle (and crashes in MPI_Win_free). */
    rc = MPI_Win_set_name(freed, "x");
    CHECK(error_class(rc) == MPI_ERR_WIN, "MPI_Win_set_name on a freed window: class %d", error_class(rc));
    win = freed;
    rc = MPI_Win_free(&win);
    CHECK(error_class(rc) == MPI_ERR_WIN, "MPI_Win_free of a freed window: class %d", error_class(rc));
#else
    (void)freed;
#endif
    win = MPI_WIN_NULL;
    rc = MPI_Win_create(buf, -1, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    CHECK(error_class(rc) == MPI_ERR_SIZE, "negative size: class %d", error_class(rc));
    rc = MPI_Win_create(buf, sizeof buf, 0, MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    CHECK(error_class(rc) == MPI_ERR_DISP, "disp_unit 0: class %d", error_class(rc));
    rc = MPI_Win_allocate(16, -4, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
    CHECK(error_class(rc) == MPI_ERR_DISP, "negative disp_unit: class %d", error_class(rc));
    rc = MPI_Win_allocate(-16, 4, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
    CHECK(error_class(rc) == MPI_ERR_SIZE, "MPI_Win_allocate negative size: class %d", error_class(rc));
    rc = MPI_Win_create(buf, sizeof buf, 1, MPI_INFO_NULL, MPI_COMM_NULL, &win);
    CHECK(error_class(rc) == MPI_ERR_COMM, "MPI_COMM_NULL: class %d", error_class(rc));
    CHECK(win == MPI_WIN_NULL, "failed creation wrote a window");

    /* MPI_Win_allocate: the memory is usable and the base is the WIN_BASE. */
    MPI_CHECK(MPI_Win_allocate(100 * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win));
    CHECK(base != NULL, "MPI_Win_allocate gave no memory");
    if (base) {
        for (i = 0; i < 100; i++)
            ((int *)base)[i] = i + rank;
        for (i = 0; i < 100; i++)
            CHECK(((int *)base)[i] == i + rank, "allocated memory does not hold data");
    }
    check_group(win, MPI_COMM_WORLD);
    MPI_CHECK(MPI_Win_free(&win));

    /* MPI_Win_allocate_shared over the ranks of this node (the whole world on one node):
     * node rank r owns r + 1 ints; each writes its part, then reads every other's part
     * through the shared memory. */
    MPI_Comm node;
    int nrank, nsize;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    MPI_Comm_rank(node, &nrank);
    MPI_Comm_size(node, &nsize);
    MPI_CHECK(MPI_Win_allocate_shared((nrank + 1) * sizeof(int), sizeof(int), MPI_INFO_NULL, node, &base,
                                      &win));
    mine = base;
    for (i = 0; i <= nrank; i++)
        mine[i] = 1000 * nrank + i;
    MPI_Barrier(node);
    for (int r = 0; r < nsize; r++) {
        MPI_CHECK(MPI_Win_shared_query(win, r, &qsize, &unit, &qbase));
        CHECK(qsize == (MPI_Aint)((r + 1) * sizeof(int)) && unit == (int)sizeof(int),
              "rank %d: size %ld unit %d", r, (long)qsize, unit);
        other = qbase;
        for (i = 0; i <= r && other; i++)
            CHECK(other[i] == 1000 * r + i, "rank %d's element %d reads %d", r, i, other[i]);
    }
    /* The layout is contiguous (alloc_shared_noncontig is false by default). */
    MPI_CHECK(MPI_Win_shared_query(win, 0, &qsize, &unit, &qbase));
    CHECK((char *)base == (char *)qbase + (size_t)nrank * (nrank + 1) / 2 * sizeof(int), "layout is not contiguous");
    MPI_CHECK(MPI_Win_shared_query(win, MPI_PROC_NULL, &qsize, &unit, &qbase));
    CHECK(qsize == sizeof(int), "MPI_PROC_NULL: size %ld", (long)qsize);
    MPI_CHECK(MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN));
    rc = MPI_Win_shared_query(win, nsize, &qsize, &unit, &qbase);
    CHECK(error_class(rc) == MPI_ERR_RANK, "shared query of rank %d: class %d", nsize, error_class(rc));
    MPI_Barrier(node);
    /* Writes through another rank's address are seen by the owner. */
    MPI_CHECK(MPI_Win_shared_query(win, (nrank + 1) % nsize, &qsize, &unit, &qbase));
    ((int *)qbase)[0] = -nrank - 1;
    MPI_Barrier(node);
    CHECK(mine[0] == -((nrank + nsize - 1) % nsize) - 1, "rank %d's element 0 holds %d", nrank, mine[0]);
    MPI_CHECK(MPI_Win_free(&win));
    MPI_Comm_free(&node);

    /* MPI_Win_create_dynamic, attach and detach. */
    MPI_CHECK(MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    MPI_CHECK(MPI_Win_attach(win, buf, sizeof buf));
    MPI_CHECK(MPI_Win_detach(win, buf));
    MPI_CHECK(MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN));
    rc = MPI_Win_attach(win, buf, -1);
    CHECK(rc != MPI_SUCCESS, "MPI_Win_attach negative size succeeded");
    check_group(win, MPI_COMM_WORLD);
    MPI_CHECK(MPI_Win_free(&win));

    /* A window over a split communicator. */
    {
        MPI_Comm half;
        MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
        MPI_CHECK(MPI_Win_create(buf, sizeof buf, 1, MPI_INFO_NULL, half, &win));
        check_group(win, half);
        MPI_Comm_free(&half); /* the window keeps working without it */
        flag = 0;
        MPI_CHECK(MPI_Win_get_name(win, (char[MPI_MAX_OBJECT_NAME]){0}, &flag));
        MPI_CHECK(MPI_Win_free(&win));
    }
    return mt_finalize();
}
