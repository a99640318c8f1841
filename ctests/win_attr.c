/* oxmpi-test: np=1,2,4 */
/*
 * Window attributes: user keyvals with delete callbacks (run on replacement, on
 * MPI_Win_delete_attr and at MPI_Win_free, in the order of MPICH), a delete callback that
 * frees its own keyval (MPICH's keyval_double_free_win case), the predefined attributes
 * (MPI_WIN_BASE, SIZE, DISP_UNIT, CREATE_FLAVOR, MODEL) for every flavour, and bad input
 * (a communicator keyval, MPI_KEYVAL_INVALID, changing a predefined attribute).
 */
#include "mtest.h"

static int error_class(int rc)
{
    int cls = rc;
    if (rc != MPI_SUCCESS)
        MPI_Error_class(rc, &cls);
    return cls;
}

/* Delete callback log: the values deleted, in order. */
static long deleted[16];
static int ndeleted = 0;
static MPI_Win deleted_on = MPI_WIN_NULL;

static int log_delete(MPI_Win win, int keyval, void *value, void *extra)
{
    (void)keyval;
    CHECK(extra == (void *)deleted, "extra state %p", extra);
    if (ndeleted < 16)
        deleted[ndeleted++] = (long)value;
    deleted_on = win;
    return MPI_SUCCESS;
}

static int free_own_keyval(MPI_Win win, int keyval, void *value, void *extra)
{
    (void)win;
    (void)value;
    (void)extra;
    return MPI_Win_free_keyval(&keyval);
}

static int refusing = 1;

static int refuse_delete(MPI_Win win, int keyval, void *value, void *extra)
{
    (void)win;
    (void)keyval;
    (void)value;
    (void)extra;
    return refusing ? MPI_ERR_OTHER : MPI_SUCCESS;
}

static void check_predefined(MPI_Win win, void *base, MPI_Aint size, int unit, int flavor)
{
    void *v = NULL;
    int flag = 0;
    MPI_CHECK(MPI_Win_get_attr(win, MPI_WIN_BASE, &v, &flag));
    if (flavor == MPI_WIN_FLAVOR_ALLOCATE) /* MPICH 4.0.2 (ucx) gives 8 bytes off on odd ranks */
        CHECK_STRICT(flag && v == base, "MPI_WIN_BASE %p, want %p", v, base);
    else
        CHECK(flag && v == base, "MPI_WIN_BASE %p, want %p", v, base);
    MPI_CHECK(MPI_Win_get_attr(win, MPI_WIN_SIZE, &v, &flag));
    CHECK(flag && v && *(MPI_Aint *)v == size, "MPI_WIN_SIZE %ld, want %ld", v ? (long)*(MPI_Aint *)v : -1L,
          (long)size);
    MPI_CHECK(MPI_Win_get_attr(win, MPI_WIN_DISP_UNIT, &v, &flag));
    CHECK(flag && v && *(int *)v == unit, "MPI_WIN_DISP_UNIT %d, want %d", v ? *(int *)v : -1, unit);
    MPI_CHECK(MPI_Win_get_attr(win, MPI_WIN_CREATE_FLAVOR, &v, &flag));
    CHECK(flag && v && *(int *)v == flavor, "MPI_WIN_CREATE_FLAVOR %d, want %d", v ? *(int *)v : -1, flavor);
    MPI_CHECK(MPI_Win_get_attr(win, MPI_WIN_MODEL, &v, &flag));
    CHECK(flag && v && *(int *)v == MPI_WIN_UNIFIED, "MPI_WIN_MODEL %d", v ? *(int *)v : -1);
}

int main(int argc, char **argv)
{
    int rank, k1, k2, k3, kself, kbad, kcomm, flag, rc, i;
    int buf[8];
    void *v, *base;
    MPI_Win win, w2;

    mt_init(&argc, &argv);
    rank = mt_rank;
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);

    /* Predefined attributes of each flavour. */
    MPI_CHECK(MPI_Win_create(buf, sizeof buf, 4, MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    check_predefined(win, buf, sizeof buf, 4, MPI_WIN_FLAVOR_CREATE);
    MPI_CHECK(MPI_Win_allocate(24, 8, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &w2));
    check_predefined(w2, base, 24, 8, MPI_WIN_FLAVOR_ALLOCATE);
    MPI_CHECK(MPI_Win_free(&w2));
    MPI_Comm node; /* the whole world on one node */
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    MPI_CHECK(MPI_Win_allocate_shared(16 + rank, 1, MPI_INFO_NULL, node, &base, &w2));
    check_predefined(w2, base, 16 + rank, 1, MPI_WIN_FLAVOR_SHARED);
    MPI_CHECK(MPI_Win_free(&w2));
    MPI_Comm_free(&node);
    MPI_CHECK(MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &w2));
    check_predefined(w2, MPI_BOTTOM, 0, 1, MPI_WIN_FLAVOR_DYNAMIC);
    MPI_CHECK(MPI_Win_free(&w2));

    /* User attributes: set, get, replace (deletes the old value), delete. */
    MPI_CHECK(MPI_Win_create_keyval(MPI_WIN_NULL_COPY_FN, log_delete, &k1, deleted));
    MPI_CHECK(MPI_Win_create_keyval(MPI_WIN_DUP_FN, log_delete, &k2, deleted));
    MPI_CHECK(MPI_Win_create_keyval(MPI_WIN_NULL_COPY_FN, log_delete, &k3, deleted));
    MPI_CHECK(MPI_Win_get_attr(win, k1, &v, &flag));
    CHECK(!flag, "attribute set before it was");
    MPI_CHECK(MPI_Win_set_attr(win, k1, (void *)11));
    MPI_CHECK(MPI_Win_set_attr(win, k2, (void *)22));
    MPI_CHECK(MPI_Win_get_attr(win, k1, &v, &flag));
    CHECK(flag && v == (void *)11, "k1: flag %d value %p", flag, v);
    MPI_CHECK(MPI_Win_set_attr(win, k1, (void *)12));
    CHECK(ndeleted == 1 && deleted[0] == 11 && deleted_on == win, "replacing: %d deletions, first %ld", ndeleted,
          deleted[0]);
    MPI_CHECK(MPI_Win_delete_attr(win, k2));
    CHECK(ndeleted == 2 && deleted[1] == 22, "MPI_Win_delete_attr: %d deletions", ndeleted);
    MPI_CHECK(MPI_Win_get_attr(win, k2, &v, &flag));
    CHECK(!flag, "deleted attribute still there");
    MPI_CHECK(MPI_Win_delete_attr(win, k2)); /* not set: nothing to do */

    /* At MPI_Win_free every attribute is deleted; freeing the keyvals first is allowed. */
    MPI_CHECK(MPI_Win_set_attr(win, k3, (void *)33));
    MPI_CHECK(MPI_Win_set_attr(win, k2, (void *)23));
    MPI_CHECK(MPI_Win_free_keyval(&k1));
    CHECK(k1 == MPI_KEYVAL_INVALID, "freed keyval not reset");
    ndeleted = 0;
    w2 = win;
    MPI_CHECK(MPI_Win_free(&win));
    CHECK(ndeleted == 3, "MPI_Win_free ran %d delete callbacks", ndeleted);
    /* MPICH deletes window attributes in the order they were first set. */
    CHECK(deleted[0] == 12 && deleted[1] == 33 && deleted[2] == 23, "deletion order %ld %ld %ld", deleted[0],
          deleted[1], deleted[2]);
    CHECK(deleted_on == w2, "callback got window 0x%x", (unsigned)deleted_on);

    /* A delete callback that frees its keyval, on two windows (keyval_double_free_win). */
    MPI_CHECK(MPI_Win_create(buf, sizeof buf, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    MPI_CHECK(MPI_Win_create(buf, sizeof buf, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &w2));
    MPI_CHECK(MPI_Win_create_keyval(MPI_WIN_NULL_COPY_FN, free_own_keyval, &kself, NULL));
    i = kself;
    MPI_CHECK(MPI_Win_set_attr(win, kself, NULL));
    MPI_CHECK(MPI_Win_set_attr(w2, kself, NULL));
    MPI_CHECK(MPI_Win_free(&win));
    MPI_CHECK(MPI_Win_free_keyval(&kself));
    MPI_CHECK(MPI_Win_free_keyval(&i));
    MPI_CHECK(MPI_Win_free(&w2));

    /* A failing delete callback fails MPI_Win_delete_attr and keeps the attribute. */
    MPI_CHECK(MPI_Win_create(buf, sizeof buf, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
    MPI_CHECK(MPI_Win_create_keyval(MPI_WIN_NULL_COPY_FN, refuse_delete, &kbad, NULL));
    MPI_CHECK(MPI_Win_set_attr(win, kbad, (void *)5));
    rc = MPI_Win_delete_attr(win, kbad);
    CHECK(rc != MPI_SUCCESS, "a failing delete callback did not fail MPI_Win_delete_attr");
    MPI_CHECK(MPI_Win_get_attr(win, kbad, &v, &flag));
    CHECK(flag && v == (void *)5, "attribute lost after a failed delete (flag %d)", flag);

    /* Bad keyvals. */
    MPI_CHECK(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, MPI_COMM_NULL_DELETE_FN, &kcomm, NULL));
    rc = MPI_Win_set_attr(win, kcomm, NULL);
    CHECK(error_class(rc) == MPI_ERR_KEYVAL, "communicator keyval on a window: class %d", error_class(rc));
    rc = MPI_Win_get_attr(win, kcomm, &v, &flag);
    CHECK(error_class(rc) == MPI_ERR_KEYVAL, "MPI_Win_get_attr with a communicator keyval: class %d",
          error_class(rc));
    rc = MPI_Win_set_attr(win, MPI_KEYVAL_INVALID, NULL);
    CHECK(error_class(rc) == MPI_ERR_KEYVAL, "MPI_KEYVAL_INVALID: class %d", error_class(rc));
    rc = MPI_Win_delete_attr(win, MPI_WIN_BASE);
    CHECK(error_class(rc) == MPI_ERR_KEYVAL, "deleting MPI_WIN_BASE: class %d", error_class(rc));
    rc = MPI_Win_get_attr(MPI_WIN_NULL, MPI_WIN_BASE, &v, &flag);
    CHECK(error_class(rc) == MPI_ERR_WIN, "MPI_Win_get_attr(MPI_WIN_NULL): class %d", error_class(rc));
    MPI_CHECK(MPI_Comm_free_keyval(&kcomm));

    /* The failing callback fails MPI_Win_free too, which keeps the window; once the
     * callback agrees, the window goes. */
    MPI_CHECK(MPI_Win_free_keyval(&kbad));
    MPI_CHECK(MPI_Win_free_keyval(&k2));
    MPI_CHECK(MPI_Win_free_keyval(&k3));
    rc = MPI_Win_free(&win);
    CHECK(rc != MPI_SUCCESS && win != MPI_WIN_NULL, "MPI_Win_free with a failing delete callback: rc %d", rc);
    refusing = 0;
    MPI_CHECK(MPI_Win_free(&win));
    CHECK(win == MPI_WIN_NULL, "window not freed");
    return mt_finalize();
}
