/* oxmpi-test: np=1,2 */
/* Info objects: set/get/get_string/get_valuelen/nkeys/nthkey (in order of first setting),
 * overwrite, delete, dup independence, free, MPI_INFO_ENV, and the error classes for keys
 * and values that are too long, missing keys, bad indices and MPI_INFO_NULL. */
#include "comm_mtest.h"
#include <string.h>

int main(int argc, char **argv)
{
    cm_init(&argc, &argv);
    MPI_Info info, dup;
    int flag, n, len;
    char key[MPI_MAX_INFO_KEY + 1], value[MPI_MAX_INFO_VAL + 1];

    CM_OK(MPI_Info_create(&info));
    MPI_Info_get_nkeys(info, &n);
    CM_CHECK(n == 0, "new info has %d keys", n);
    CM_OK(MPI_Info_set(info, "alpha", "1"));
    CM_OK(MPI_Info_set(info, "beta", "twenty-two"));
    CM_OK(MPI_Info_set(info, "gamma", ""));
    CM_OK(MPI_Info_set(info, "alpha", "one")); /* overwrite keeps the key's place */
    MPI_Info_get_nkeys(info, &n);
    CM_CHECK(n == 3, "nkeys %d", n);
    const char *order[] = {"alpha", "beta", "gamma"};
    for (int i = 0; i < 3; i++) {
        CM_OK(MPI_Info_get_nthkey(info, i, key));
        CM_CHECK(strcmp(key, order[i]) == 0, "key %d is %s, expected %s", i, key, order[i]);
    }
    CM_OK(MPI_Info_get(info, "alpha", MPI_MAX_INFO_VAL, value, &flag));
    CM_CHECK(flag && strcmp(value, "one") == 0, "alpha: flag %d value %s", flag, value);
    CM_OK(MPI_Info_get_valuelen(info, "beta", &len, &flag));
    CM_CHECK(flag && len == 10, "beta valuelen %d flag %d", len, flag);
    CM_OK(MPI_Info_get(info, "missing", MPI_MAX_INFO_VAL, value, &flag));
    CM_CHECK(!flag, "missing key found");
    CM_OK(MPI_Info_get_valuelen(info, "missing", &len, &flag));
    CM_CHECK(!flag, "missing key has a length");

    /* get_string: truncates to buflen - 1 and reports the full length + 1 */
    char small[5];
    int buflen = sizeof small;
    CM_OK(MPI_Info_get_string(info, "beta", &buflen, small, &flag));
    CM_CHECK(flag && buflen == 11 && strcmp(small, "twen") == 0, "get_string: flag %d buflen %d value %s", flag,
             buflen, small);
    buflen = 0;
    CM_OK(MPI_Info_get_string(info, "beta", &buflen, small, &flag));
    CM_CHECK(flag && buflen == 11, "get_string length query: buflen %d", buflen);
    buflen = sizeof value;
    CM_OK(MPI_Info_get_string(info, "gamma", &buflen, value, &flag));
    CM_CHECK(flag && buflen == 1 && value[0] == 0, "empty value: buflen %d", buflen);

    /* dup is independent */
    CM_OK(MPI_Info_dup(info, &dup));
    CM_OK(MPI_Info_delete(info, "beta"));
    MPI_Info_get_nkeys(info, &n);
    CM_CHECK(n == 2, "nkeys after delete %d", n);
    MPI_Info_get_nthkey(info, 1, key);
    CM_CHECK(strcmp(key, "gamma") == 0, "key 1 after delete is %s", key);
    MPI_Info_get_nkeys(dup, &n);
    CM_CHECK(n == 3, "dup nkeys %d", n);
    MPI_Info_get(dup, "beta", MPI_MAX_INFO_VAL, value, &flag);
    CM_CHECK(flag && strcmp(value, "twenty-two") == 0, "dup lost beta");

    /* limits */
    char longkey[MPI_MAX_INFO_KEY + 2];
    memset(longkey, 'k', sizeof longkey - 1);
    longkey[sizeof longkey - 1] = 0;
    CM_EXPECT_ERR(MPI_Info_set(info, longkey, "v"), MPI_ERR_INFO_KEY);
    longkey[MPI_MAX_INFO_KEY] = 0; /* exactly MPI_MAX_INFO_KEY characters: allowed */
    CM_OK(MPI_Info_set(info, longkey, "v"));
    CM_OK(MPI_Info_delete(info, longkey));
    static char longval[MPI_MAX_INFO_VAL + 2];
    memset(longval, 'v', sizeof longval - 1);
    CM_EXPECT_ERR(MPI_Info_set(info, "k", longval), MPI_ERR_INFO_VALUE);
    CM_EXPECT_ERR(MPI_Info_set(info, "", "v"), MPI_ERR_INFO_KEY);
    CM_EXPECT_ERR(MPI_Info_delete(info, "beta"), MPI_ERR_INFO_NOKEY);
    CM_EXPECT_ERR(MPI_Info_get_nthkey(info, 2, key), MPI_ERR_ARG);
    CM_EXPECT_ERR(MPI_Info_get_nthkey(info, -1, key), MPI_ERR_ARG);
    CM_EXPECT_ERR(MPI_Info_get(info, "alpha", -1, value, &flag), MPI_ERR_ARG);
    CM_EXPECT_ERR(MPI_Info_get_nkeys(MPI_INFO_NULL, &n), -1);
    CM_EXPECT_ERR(MPI_Info_set(MPI_INFO_NULL, "a", "b"), -1);

    /* MPI_INFO_ENV can be read */
    CM_OK(MPI_Info_get_nkeys(MPI_INFO_ENV, &n));
    for (int i = 0; i < n; i++) {
        CM_OK(MPI_Info_get_nthkey(MPI_INFO_ENV, i, key));
        CM_OK(MPI_Info_get_valuelen(MPI_INFO_ENV, key, &len, &flag));
        CM_CHECK(flag, "MPI_INFO_ENV key %s has no value", key);
    }

    CM_OK(MPI_Info_free(&info));
    CM_CHECK(info == MPI_INFO_NULL, "freed info is not MPI_INFO_NULL");
    CM_OK(MPI_Info_free(&dup));
    return cm_finalize();
}
