/* oxmpi-test: np=1,2,4 */
/* Communicator attributes: keyvals with copy and delete callbacks, MPI_Comm_dup copying
 * (flag semantics, MPI_COMM_DUP_FN, MPI_COMM_NULL_COPY_FN), deletion on overwrite, delete and
 * free, keyvals freed while in use, callbacks that call MPI, the MPI-1 names, predefined
 * attributes, and MPI_COMM_SELF's attributes deleted in reverse order at MPI_Finalize. */
#include "comm_mtest.h"
#include <unistd.h>

static int copies, deletes;
static void *last_deleted;

/* Copies values below 1000 (as value + 1), refuses to copy the others. */
static int copy_fn(MPI_Comm oldcomm, int keyval, void *extra, void *in, void *out, int *flag)
{
    (void)oldcomm;
    (void)keyval;
    copies++;
    CM_CHECK(extra == (void *)&copies, "copy callback got extra_state %p", extra);
    if ((MPI_Aint)in < 1000) {
        *(void **)out = (void *)((MPI_Aint)in + 1);
        *flag = 1;
    } else {
        *flag = 0;
    }
    return MPI_SUCCESS;
}

static int delete_fn(MPI_Comm comm, int keyval, void *value, void *extra)
{
    (void)comm;
    (void)keyval;
    (void)extra;
    deletes++;
    last_deleted = value;
    return MPI_SUCCESS;
}

static int failing_copy(MPI_Comm c, int k, void *e, void *in, void *out, int *flag)
{
    (void)c, (void)k, (void)e, (void)in, (void)out;
    *flag = 0;
    return MPI_ERR_OTHER;
}

static int failing_delete(MPI_Comm c, int k, void *v, void *e)
{
    (void)c, (void)k, (void)v, (void)e;
    return MPI_ERR_OTHER;
}

/* A delete callback that calls MPI on the communicator being freed. */
static int other_keyval;
static int reentrant_delete(MPI_Comm comm, int keyval, void *value, void *extra)
{
    (void)keyval, (void)value, (void)extra;
    void *v;
    int flag, size;
    MPI_Comm_size(comm, &size);
    MPI_Comm_get_attr(comm, other_keyval, &v, &flag);
    deletes++;
    return MPI_SUCCESS;
}

/* At MPI_Finalize, MPI_COMM_SELF's attributes go in reverse order of setting: 3, 2, 1. */
static int finalize_expect = 3;
static int finalize_delete(MPI_Comm comm, int keyval, void *value, void *extra)
{
    (void)comm, (void)keyval, (void)extra;
    int v = (int)(MPI_Aint)value;
    if (v != finalize_expect) {
        fprintf(stderr, "MPI_COMM_SELF attribute %d deleted at MPI_Finalize, expected %d\n", v, finalize_expect);
        exit(1);
    }
    finalize_expect--;
    return MPI_SUCCESS;
}

/* Runs after main returns: every MPI_COMM_SELF attribute was deleted at MPI_Finalize. */
static void check_finalize_deletes(void)
{
    if (finalize_expect != 0) {
        fprintf(stderr, "MPI_Finalize left MPI_COMM_SELF attributes (next expected %d)\n", finalize_expect);
        _exit(1);
    }
}

int main(int argc, char **argv)
{
    cm_init(&argc, &argv);
    int rank, flag;
    void *v;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);

    int kv, kv_dup, kv_null;
    CM_OK(MPI_Comm_create_keyval(copy_fn, delete_fn, &kv, &copies));
    CM_OK(MPI_Comm_create_keyval(MPI_COMM_DUP_FN, MPI_COMM_NULL_DELETE_FN, &kv_dup, NULL));
    CM_OK(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, delete_fn, &kv_null, NULL));

    MPI_Comm a;
    MPI_Comm_dup(MPI_COMM_WORLD, &a);
    CM_OK(MPI_Comm_get_attr(a, kv, &v, &flag));
    CM_CHECK(!flag, "attribute found before it was set");
    CM_OK(MPI_Comm_set_attr(a, kv, (void *)10));
    CM_OK(MPI_Comm_set_attr(a, kv_dup, (void *)20));
    CM_OK(MPI_Comm_set_attr(a, kv_null, (void *)30));
    MPI_Comm_get_attr(a, kv, &v, &flag);
    CM_CHECK(flag && v == (void *)10, "get after set: flag %d value %p", flag, v);

    /* overwrite calls the delete callback on the old value */
    deletes = 0;
    CM_OK(MPI_Comm_set_attr(a, kv, (void *)11));
    CM_CHECK(deletes == 1 && last_deleted == (void *)10, "overwrite: %d deletes, last %p", deletes, last_deleted);

    /* dup: kv copied through copy_fn (11 -> 12), kv_dup copied as is, kv_null not copied */
    copies = 0;
    MPI_Comm b;
    CM_OK(MPI_Comm_dup(a, &b));
    CM_CHECK(copies == 1, "copy callback ran %d times", copies);
    MPI_Comm_get_attr(b, kv, &v, &flag);
    CM_CHECK(flag && v == (void *)12, "copied attribute: flag %d value %p", flag, v);
    MPI_Comm_get_attr(b, kv_dup, &v, &flag);
    CM_CHECK(flag && v == (void *)20, "MPI_COMM_DUP_FN attribute: flag %d value %p", flag, v);
    MPI_Comm_get_attr(b, kv_null, &v, &flag);
    CM_CHECK(!flag, "MPI_COMM_NULL_COPY_FN attribute was copied");
    cm_check_ring(b, 1);

    /* flag = 0 from the copy callback: not copied */
    MPI_Comm_set_attr(b, kv, (void *)5000);
    MPI_Comm c;
    MPI_Comm_dup(b, &c);
    MPI_Comm_get_attr(c, kv, &v, &flag);
    CM_CHECK(!flag, "attribute copied although the callback said not to");
    MPI_Comm_free(&c);

    /* delete_attr runs the delete callback and removes the attribute */
    deletes = 0;
    CM_OK(MPI_Comm_delete_attr(a, kv_null));
    CM_CHECK(deletes == 1 && last_deleted == (void *)30, "delete_attr: %d deletes, last %p", deletes, last_deleted);
    MPI_Comm_get_attr(a, kv_null, &v, &flag);
    CM_CHECK(!flag, "attribute still there after delete_attr");

    /* freeing a keyval in use: the attribute stays, its delete callback still runs */
    int kv_copy = kv;
    CM_OK(MPI_Comm_free_keyval(&kv_copy));
    CM_CHECK(kv_copy == MPI_KEYVAL_INVALID, "freed keyval is not MPI_KEYVAL_INVALID");
    deletes = 0;
    CM_OK(MPI_Comm_free(&a));
    CM_CHECK(deletes == 1 && last_deleted == (void *)11, "free: %d deletes, last %p", deletes, last_deleted);
    deletes = 0;
    CM_OK(MPI_Comm_free(&b));
    CM_CHECK(deletes == 1 && last_deleted == (void *)5000, "free b: %d deletes, last %p", deletes, last_deleted);

    /* a delete callback that calls MPI on the communicator it is called for */
    int kv_re;
    MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, reentrant_delete, &kv_re, NULL);
    MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, MPI_COMM_NULL_DELETE_FN, &other_keyval, NULL);
    MPI_Comm_dup(MPI_COMM_WORLD, &a);
    MPI_Comm_set_attr(a, kv_re, NULL);
    deletes = 0;
    CM_OK(MPI_Comm_free(&a));
    CM_CHECK(deletes == 1, "reentrant delete ran %d times", deletes);
    MPI_Comm_free_keyval(&kv_re);
    MPI_Comm_free_keyval(&other_keyval);

    /* failing callbacks make the call fail */
    int kv_fail_copy, kv_fail_delete;
    MPI_Comm_create_keyval(failing_copy, MPI_COMM_NULL_DELETE_FN, &kv_fail_copy, NULL);
    MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, failing_delete, &kv_fail_delete, NULL);
    MPI_Comm_dup(MPI_COMM_WORLD, &a);
    MPI_Comm_set_attr(a, kv_fail_copy, NULL);
    c = MPI_COMM_NULL;
    CM_EXPECT_ERR(MPI_Comm_dup(a, &c), -1);
    MPI_Comm_set_attr(a, kv_fail_delete, NULL);
    CM_EXPECT_ERR(MPI_Comm_delete_attr(a, kv_fail_delete), -1);
    MPI_Comm_get_attr(a, kv_fail_delete, &v, &flag);
    CM_CHECK(flag, "attribute removed although its delete callback failed");

    /* MPI-1 names */
    int kv1;
    CM_OK(MPI_Keyval_create(MPI_NULL_COPY_FN, MPI_NULL_DELETE_FN, &kv1, NULL));
    CM_OK(MPI_Attr_put(MPI_COMM_WORLD, kv1, (void *)77));
    CM_OK(MPI_Attr_get(MPI_COMM_WORLD, kv1, &v, &flag));
    CM_CHECK(flag && v == (void *)77, "MPI_Attr_get: flag %d value %p", flag, v);
    CM_OK(MPI_Attr_delete(MPI_COMM_WORLD, kv1));
    MPI_Attr_get(MPI_COMM_WORLD, kv1, &v, &flag);
    CM_CHECK(!flag, "MPI_Attr_delete left the attribute");
    CM_OK(MPI_Keyval_free(&kv1));

    /* predefined attributes */
    int *tag_ub;
    CM_OK(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &tag_ub, &flag));
    CM_CHECK(flag && *tag_ub >= 32767, "MPI_TAG_UB: flag %d", flag);
    CM_EXPECT_ERR(MPI_Comm_set_attr(MPI_COMM_WORLD, MPI_TAG_UB, NULL), MPI_ERR_KEYVAL);
    CM_EXPECT_ERR(MPI_Comm_delete_attr(MPI_COMM_WORLD, MPI_TAG_UB), MPI_ERR_KEYVAL);
    int pre = MPI_TAG_UB;
    CM_EXPECT_ERR(MPI_Comm_free_keyval(&pre), MPI_ERR_KEYVAL);

    /* bad input */
    CM_EXPECT_ERR(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_KEYVAL_INVALID, &v, &flag), MPI_ERR_KEYVAL);
    CM_EXPECT_ERR(MPI_Comm_set_attr(MPI_COMM_WORLD, 12345, NULL), MPI_ERR_KEYVAL);
    CM_EXPECT_ERR(MPI_Comm_get_attr(MPI_COMM_NULL, kv_dup, &v, &flag), MPI_ERR_COMM);
    CM_EXPECT_ERR(MPI_Comm_set_attr(MPI_COMM_NULL, kv_dup, NULL), MPI_ERR_COMM);

    MPI_Comm_free_keyval(&kv_dup);
    MPI_Comm_free_keyval(&kv_null);

    /* MPI_COMM_SELF attributes, checked by finalize_delete during MPI_Finalize */
    atexit(check_finalize_deletes);
    int ks[3];
    for (int i = 0; i < 3; i++) {
        MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, finalize_delete, &ks[i], NULL);
        MPI_Comm_set_attr(MPI_COMM_SELF, ks[i], (void *)(MPI_Aint)(i + 1));
        MPI_Comm_free_keyval(&ks[i]);
    }
    return cm_finalize();
}
