/* gridmpi-test: ranks=1 timeout=30 */
/*
 * Info objects: create/set/get/get_valuelen/get_nkeys/get_nthkey/delete/dup/
 * free, overwriting a key, truncated MPI_Info_get, MPI_Info_get_string
 * (buflen in and out, flag, query of the needed length), MPI_INFO_ENV,
 * MPI_Info_create_env, and errors (raised on MPI_COMM_SELF since MPI 4.0):
 * deleting a missing key (MPI_ERR_INFO_NOKEY), a key longer than
 * MPI_MAX_INFO_KEY or empty (MPI_ERR_INFO_KEY), a value longer than
 * MPI_MAX_INFO_VAL (MPI_ERR_INFO_VALUE).
 */
#include "testutil.h"

static int has_key(MPI_Info info, const char *key)
{
    int n;
    MPI_Info_get_nkeys(info, &n);
    for (int i = 0; i < n; i++) {
        char k[MPI_MAX_INFO_KEY + 1];
        MPI_Info_get_nthkey(info, i, k);
        if (strcmp(k, key) == 0)
            return 1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    test_init(&argc, &argv, NULL);
    MPI_Info info, dup;
    char value[MPI_MAX_INFO_VAL + 1];
    int flag, len, n;

    CHECK_MPI(MPI_Info_create(&info));
    CHECK_MPI(MPI_Info_get_nkeys(info, &n));
    CHECK_INT_EQ(n, 0);
    CHECK_MPI(MPI_Info_set(info, "alpha", "1"));
    CHECK_MPI(MPI_Info_set(info, "beta", "two words"));
    CHECK_MPI(MPI_Info_set(info, "gamma", "a longer value string"));
    CHECK_MPI(MPI_Info_get_nkeys(info, &n));
    CHECK_INT_EQ(n, 3);
    CHECK(has_key(info, "alpha") && has_key(info, "beta") && has_key(info, "gamma"), "get_nthkey misses a key");

    CHECK_MPI(MPI_Info_get(info, "beta", MPI_MAX_INFO_VAL, value, &flag));
    CHECK(flag == 1, "Info_get(beta) flag %d", flag);
    CHECK_STR_EQ(value, "two words");
    CHECK_MPI(MPI_Info_get(info, "missing", MPI_MAX_INFO_VAL, value, &flag));
    CHECK(flag == 0, "Info_get of a missing key gave flag 1");
    CHECK_MPI(MPI_Info_get_valuelen(info, "gamma", &len, &flag));
    CHECK(flag == 1 && len == 21, "get_valuelen(gamma): flag %d len %d", flag, len);
    CHECK_MPI(MPI_Info_get_valuelen(info, "missing", &len, &flag));
    CHECK(flag == 0, "get_valuelen of a missing key: flag 1");

    /* Truncation: valuelen 5 gives the first 5 characters. MPICH 5.0.2
     * raises MPI_ERR_INFO_VALUE ("Value is too long") instead of truncating
     * as the standard says. */
    if (!TU_PEER_MPICH) {
        memset(value, 'Z', sizeof value);
        CHECK_MPI(MPI_Info_get(info, "gamma", 5, value, &flag));
        CHECK(flag == 1 && strncmp(value, "a lon", 5) == 0 && value[5] == '\0', "truncated Info_get gave \"%.8s\"", value);
    }

    /* Overwrite. */
    CHECK_MPI(MPI_Info_set(info, "alpha", "uno"));
    CHECK_MPI(MPI_Info_get_nkeys(info, &n));
    CHECK_INT_EQ(n, 3);
    CHECK_MPI(MPI_Info_get(info, "alpha", MPI_MAX_INFO_VAL, value, &flag));
    CHECK_STR_EQ(value, "uno");

    /* Info_get_string. */
    {
        char small[4];
        int buflen = 0;
        CHECK_MPI(MPI_Info_get_string(info, "gamma", &buflen, NULL, &flag));
        CHECK(flag == 1 && buflen == 22, "get_string length query: flag %d buflen %d (expected 22)", flag, buflen);
        buflen = sizeof small;
        CHECK_MPI(MPI_Info_get_string(info, "gamma", &buflen, small, &flag));
        CHECK(flag == 1 && buflen == 22, "get_string into 4 bytes: buflen %d", buflen);
        CHECK(strncmp(small, "a l", 3) == 0 && small[3] == '\0', "get_string truncated to \"%s\"", small);
        char big[64];
        buflen = sizeof big;
        CHECK_MPI(MPI_Info_get_string(info, "beta", &buflen, big, &flag));
        CHECK(flag == 1 && buflen == 10 && strcmp(big, "two words") == 0, "get_string(beta): \"%s\" buflen %d", big, buflen);
        buflen = sizeof big;
        CHECK_MPI(MPI_Info_get_string(info, "missing", &buflen, big, &flag));
        CHECK(flag == 0, "get_string of a missing key: flag 1");
    }

    /* Dup is independent. */
    CHECK_MPI(MPI_Info_dup(info, &dup));
    CHECK_MPI(MPI_Info_delete(dup, "alpha"));
    CHECK_MPI(MPI_Info_set(dup, "delta", "4"));
    CHECK(has_key(info, "alpha") && !has_key(info, "delta"), "changing a dup changed the original");
    CHECK(!has_key(dup, "alpha") && has_key(dup, "delta") && has_key(dup, "beta"), "dup content wrong");
    CHECK_MPI(MPI_Info_get_nkeys(dup, &n));
    CHECK_INT_EQ(n, 3);
    CHECK_MPI(MPI_Info_free(&dup));
    CHECK(dup == MPI_INFO_NULL, "Info_free did not set MPI_INFO_NULL");

    /* Keys of maximum length are accepted. */
    {
        char key[MPI_MAX_INFO_KEY];
        memset(key, 'k', sizeof key - 1);
        key[sizeof key - 1] = '\0';
        CHECK_MPI(MPI_Info_set(info, key, "max"));
        CHECK_MPI(MPI_Info_get(info, key, MPI_MAX_INFO_VAL, value, &flag));
        CHECK(flag && strcmp(value, "max") == 0, "key of MPI_MAX_INFO_KEY-1 characters not stored");
        CHECK_MPI(MPI_Info_delete(info, key));
    }

    /* Errors, raised on MPI_COMM_SELF. Open MPI 5.0.11 raises them on
     * MPI_COMM_WORLD. */
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    if (TU_PEER_OPENMPI)
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    {
        int rc = MPI_Info_delete(info, "missing");
        CHECK_ERR_CLASS(rc, MPI_ERR_INFO_NOKEY);
        char *longkey = tu_malloc(2 * MPI_MAX_INFO_KEY + 2);
        memset(longkey, 'x', 2 * MPI_MAX_INFO_KEY + 1);
        longkey[2 * MPI_MAX_INFO_KEY + 1] = '\0';
        rc = MPI_Info_set(info, longkey, "v");
        CHECK_ERR_CLASS(rc, MPI_ERR_INFO_KEY);
        rc = MPI_Info_get(info, longkey, MPI_MAX_INFO_VAL, value, &flag);
        CHECK_ERR_CLASS(rc, MPI_ERR_INFO_KEY);
        rc = MPI_Info_set(info, "", "v");
        CHECK_ERR_CLASS(rc, MPI_ERR_INFO_KEY);
        char *longval = tu_malloc(2 * MPI_MAX_INFO_VAL + 2);
        memset(longval, 'v', 2 * MPI_MAX_INFO_VAL + 1);
        longval[2 * MPI_MAX_INFO_VAL + 1] = '\0';
        rc = MPI_Info_set(info, "k", longval);
        CHECK_ERR_CLASS(rc, MPI_ERR_INFO_VALUE);
        CHECK_MPI(MPI_Info_get_nkeys(info, &n));
        CHECK(n == 3, "failed Info_set calls changed the number of keys to %d", n);
        free(longkey);
        free(longval);
    }
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_ARE_FATAL);
    CHECK_MPI(MPI_Info_free(&info));

    /* MPI_INFO_ENV exists and its keys have values. */
    CHECK_MPI(MPI_Info_get_nkeys(MPI_INFO_ENV, &n));
    CHECK(n >= 0, "MPI_INFO_ENV nkeys %d", n);
    for (int i = 0; i < n; i++) {
        char key[MPI_MAX_INFO_KEY + 1];
        CHECK_MPI(MPI_Info_get_nthkey(MPI_INFO_ENV, i, key));
        CHECK_MPI(MPI_Info_get_valuelen(MPI_INFO_ENV, key, &len, &flag));
        CHECK(flag == 1, "MPI_INFO_ENV key \"%s\" has no value", key);
    }
    /* Info_create_env (MPI 4.0). */
    MPI_Info env;
    CHECK_MPI(MPI_Info_create_env(argc, argv, &env));
    CHECK_MPI(MPI_Info_get_nkeys(env, &n));
    CHECK(n >= 0, "Info_create_env nkeys %d", n);
    MPI_Info_free(&env);

    MPI_Finalize();
    return test_finish();
}
