/* oxmpi-test: np=1,2 */
/*
 * Datatype attributes: keyvals with copy and delete callbacks (user functions,
 * MPI_TYPE_DUP_FN, MPI_TYPE_NULL_COPY_FN, MPI_TYPE_NULL_DELETE_FN), the callbacks run by
 * MPI_Type_dup and MPI_Type_free and their order, replacing and deleting values, attributes
 * on a predefined type, a failing copy callback, keyvals freed while attached, and keyvals
 * of another object kind (MPI_ERR_KEYVAL).
 */
#include "mtest.h"

#define NLOG 64
static int copy_log[NLOG], ncopy = 0, delete_log[NLOG], ndelete = 0;
static int copy_fails = 0;

static int copy_fn(MPI_Datatype t, int keyval, void *extra, void *in, void *out, int *flag)
{
    (void)t;
    (void)keyval;
    if (ncopy < NLOG)
        copy_log[ncopy] = *(int *)extra;
    ncopy++;
    if (copy_fails)
        return MPI_ERR_OTHER;
    *(void **)out = (char *)in + 1;
    *flag = 1;
    return MPI_SUCCESS;
}

static int delete_fn(MPI_Datatype t, int keyval, void *value, void *extra)
{
    (void)t;
    (void)keyval;
    (void)value;
    if (ndelete < NLOG)
        delete_log[ndelete] = *(int *)extra;
    ndelete++;
    return MPI_SUCCESS;
}

static void *get(MPI_Datatype t, int keyval, int *flag)
{
    void *v = NULL;
    *flag = -1;
    MPI_CHECK(MPI_Type_get_attr(t, keyval, &v, flag));
    return v;
}

static int error_class(int rc)
{
    int cls = rc;
    if (rc != MPI_SUCCESS)
        MPI_Error_class(rc, &cls);
    return cls;
}

int main(int argc, char **argv)
{
    static int ids[3] = {0, 1, 2};
    static char base[16];
    int k[3], kdup, knull, kcomm, kwin, flag, rc, i;
    MPI_Datatype t, d, d2;
    void *v;

    mt_init(&argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    for (i = 0; i < 3; i++)
        MPI_CHECK(MPI_Type_create_keyval(copy_fn, delete_fn, &k[i], &ids[i]));
    MPI_CHECK(MPI_Type_create_keyval(MPI_TYPE_DUP_FN, MPI_TYPE_NULL_DELETE_FN, &kdup, NULL));
    MPI_CHECK(MPI_Type_create_keyval(MPI_TYPE_NULL_COPY_FN, MPI_TYPE_NULL_DELETE_FN, &knull, NULL));

    MPI_CHECK(MPI_Type_contiguous(4, MPI_INT, &t));
    /* Set in the order 1, 0, 2. */
    MPI_CHECK(MPI_Type_set_attr(t, k[1], base + 1));
    MPI_CHECK(MPI_Type_set_attr(t, k[0], base + 3));
    MPI_CHECK(MPI_Type_set_attr(t, k[2], base + 2));
    MPI_CHECK(MPI_Type_set_attr(t, kdup, base + 10));
    MPI_CHECK(MPI_Type_set_attr(t, knull, base + 11));
    v = get(t, k[0], &flag);
    CHECK(flag == 1 && v == base + 3, "k0: flag %d value %p", flag, v);

    /* Replacing a value deletes the old one (MPI-4 7.7.4). MPICH 4.0.2 keeps both values
     * on a datatype instead, so the counts are checked on oxmpi only; a separate type keeps
     * the counts below the same on both. */
    MPI_CHECK(MPI_Type_dup(MPI_INT, &d));
    MPI_CHECK(MPI_Type_set_attr(d, k[0], base + 3));
    MPI_CHECK(MPI_Type_set_attr(d, k[0], base + 4));
    CHECK_STRICT(ndelete == 1 && delete_log[0] == 0, "replace: %d deletes", ndelete);
    v = get(d, k[0], &flag);
    CHECK(flag == 1 && v == base + 4, "k0 after replace: %p", v);
    MPI_CHECK(MPI_Type_free(&d));
    CHECK_STRICT(ndelete == 2, "replace then free: %d deletes", ndelete);
    ndelete = 0;

    /* Dup: each user keyval's copy callback once, MPI_TYPE_DUP_FN copies the value,
     * MPI_TYPE_NULL_COPY_FN does not. */
    MPI_CHECK(MPI_Type_dup(t, &d));
    CHECK(ncopy == 3, "dup ran %d copy callbacks", ncopy);
    /* In the order the attributes were set, as MPICH does. */
    CHECK(copy_log[0] == 1 && copy_log[1] == 0 && copy_log[2] == 2, "copy order %d %d %d", copy_log[0],
          copy_log[1], copy_log[2]);
    v = get(d, k[1], &flag);
    CHECK(flag == 1 && v == base + 2, "dup k1: flag %d %p", flag, v);
    v = get(d, k[0], &flag);
    CHECK(flag == 1 && v == base + 4, "dup k0: flag %d %p", flag, v);
    v = get(d, kdup, &flag);
    CHECK(flag == 1 && v == base + 10, "dup kdup: flag %d %p", flag, v);
    v = get(d, knull, &flag);
    CHECK(flag == 0, "dup knull: flag %d", flag);

    /* Free: a delete callback per attribute of the type. */
    MPI_CHECK(MPI_Type_free(&d));
    CHECK(ndelete == 3, "free ran %d delete callbacks", ndelete);
    CHECK(delete_log[0] == 1 && delete_log[1] == 0 && delete_log[2] == 2, "delete order %d %d %d", delete_log[0],
          delete_log[1], delete_log[2]);

    /* Delete one attribute, then the keyval freed while still attached keeps working. */
    ndelete = 0;
    MPI_CHECK(MPI_Type_delete_attr(t, k[2]));
    CHECK(ndelete == 1 && delete_log[0] == 2, "delete_attr: %d deletes", ndelete);
    v = get(t, k[2], &flag);
    CHECK(flag == 0, "k2 still set after delete");
    MPI_CHECK(MPI_Type_free_keyval(&k[1]));
    CHECK(k[1] == MPI_KEYVAL_INVALID, "freed keyval not reset");

    /* A failing copy callback fails the dup, which gives MPI_DATATYPE_NULL. */
    copy_fails = 1;
    d2 = MPI_INT;
    rc = MPI_Type_dup(t, &d2);
    CHECK(rc != MPI_SUCCESS, "dup with a failing copy callback succeeded");
    CHECK(d2 == MPI_DATATYPE_NULL, "failed dup left 0x%x", d2);
    copy_fails = 0;

    ndelete = 0;
    MPI_CHECK(MPI_Type_free(&t));
    CHECK(ndelete == 2, "free ran %d delete callbacks (k0 and the freed k1)", ndelete);

    /* Attributes on a predefined type. */
    MPI_CHECK(MPI_Type_set_attr(MPI_INT, k[0], base + 5));
    v = get(MPI_INT, k[0], &flag);
    CHECK(flag == 1 && v == base + 5, "MPI_INT attribute: flag %d %p", flag, v);
    v = get(MPI_DOUBLE, k[0], &flag);
    CHECK(flag == 0, "MPI_DOUBLE has MPI_INT's attribute");
    ndelete = 0;
    MPI_CHECK(MPI_Type_delete_attr(MPI_INT, k[0]));
    CHECK(ndelete == 1, "delete on MPI_INT: %d deletes", ndelete);

    /* Keyvals of other kinds, invalid keyvals, freed keyvals. */
    MPI_CHECK(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, MPI_COMM_NULL_DELETE_FN, &kcomm, NULL));
    rc = MPI_Type_set_attr(MPI_INT, kcomm, base);
    CHECK(error_class(rc) == MPI_ERR_KEYVAL, "communicator keyval on a type: class %d", error_class(rc));
    rc = MPI_Comm_set_attr(MPI_COMM_WORLD, k[0], base);
    CHECK(error_class(rc) == MPI_ERR_KEYVAL, "type keyval on a communicator: class %d", error_class(rc));
    MPI_CHECK(MPI_Win_create_keyval(MPI_WIN_NULL_COPY_FN, MPI_WIN_NULL_DELETE_FN, &kwin, NULL));
    rc = MPI_Type_get_attr(MPI_INT, kwin, &v, &flag);
    CHECK(error_class(rc) == MPI_ERR_KEYVAL, "window keyval on a type: class %d", error_class(rc));
    rc = MPI_Type_free_keyval(&kwin);
    CHECK(error_class(rc) == MPI_ERR_KEYVAL, "MPI_Type_free_keyval of a window keyval: class %d", error_class(rc));
    rc = MPI_Type_get_attr(MPI_INT, MPI_KEYVAL_INVALID, &v, &flag);
    CHECK(error_class(rc) == MPI_ERR_KEYVAL, "MPI_KEYVAL_INVALID: class %d", error_class(rc));
    rc = MPI_Type_set_attr(MPI_DATATYPE_NULL, k[0], base);
    CHECK(error_class(rc) == MPI_ERR_TYPE, "MPI_DATATYPE_NULL: class %d", error_class(rc));
    MPI_CHECK(MPI_Comm_free_keyval(&kcomm));
    MPI_CHECK(MPI_Win_free_keyval(&kwin));
    i = k[0];
    MPI_CHECK(MPI_Type_free_keyval(&k[0]));
    rc = MPI_Type_set_attr(MPI_INT, i, base);
    /* MPICH 4.0.2 does not notice the stale keyval. */
    CHECK_STRICT(error_class(rc) == MPI_ERR_KEYVAL, "freed keyval: class %d", error_class(rc));
    MPI_CHECK(MPI_Type_free_keyval(&k[2]));
    MPI_CHECK(MPI_Type_free_keyval(&kdup));
    MPI_CHECK(MPI_Type_free_keyval(&knull));
    return mt_finalize();
}
