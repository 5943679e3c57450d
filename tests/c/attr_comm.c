/* gridmpi-test: ranks=1,2 timeout=30 */
/*
 * Communicator attributes: keyvals with copy and delete callbacks receive
 * the right communicator, keyval, value and extra_state; the copy callback
 * runs on Comm_dup (its output value and flag decide what the duplicate
 * gets); the delete callback runs on Comm_free, on Comm_delete_attr and when
 * an attribute is replaced by Comm_set_attr; MPI_COMM_NULL_COPY_FN does not
 * copy, MPI_COMM_DUP_FN copies the value; freeing a keyval keeps existing
 * attributes working until they are deleted (a copy of its handle still
 * gets and deletes them); attributes on MPI_COMM_SELF are
 * deleted at MPI_Finalize in reverse order of setting; the deprecated
 * MPI_Keyval_create / MPI_Attr_put / MPI_Attr_get still work; a copy
 * callback's error fails MPI_Comm_dup, which then gives MPI_COMM_NULL.
 */
#include "testutil.h"

struct state {
    int magic;
    int copies, deletes;
    MPI_Comm last_comm;
    int last_keyval;
    intptr_t last_value;
};

static struct state st_a = {0xA, 0, 0, MPI_COMM_NULL, 0, 0};
static int copy_flag_out = 1;

static int copy_fn(MPI_Comm oldcomm, int keyval, void *extra, void *in, void *out, int *flag)
{
    struct state *s = extra;
    s->copies++;
    s->last_comm = oldcomm;
    s->last_keyval = keyval;
    s->last_value = (intptr_t)in;
    *(void **)out = (void *)((intptr_t)in + 1);
    *flag = copy_flag_out;
    return MPI_SUCCESS;
}

static int delete_fn(MPI_Comm comm, int keyval, void *value, void *extra)
{
    struct state *s = extra;
    s->deletes++;
    s->last_comm = comm;
    s->last_keyval = keyval;
    s->last_value = (intptr_t)value;
    return MPI_SUCCESS;
}

/* Finalize-time deletion order on MPI_COMM_SELF. */
static int final_order[4], final_count = 0;
static int final_delete(MPI_Comm comm, int keyval, void *value, void *extra)
{
    (void)keyval;
    (void)extra;
    if (comm == MPI_COMM_SELF && final_count < 4)
        final_order[final_count] = (int)(intptr_t)value;
    final_count++;
    return MPI_SUCCESS;
}

static int refuse_copy(MPI_Comm c, int k, void *extra, void *in, void *out, int *flag)
{
    (void)c, (void)k, (void)extra, (void)in, (void)out, (void)flag;
    return MPI_ERR_OTHER;
}

static int old_copy(MPI_Comm c, int k, void *extra, void *in, void *out, int *flag)
{
    (void)c; (void)k; (void)extra;
    *(void **)out = in;
    *flag = 1;
    return MPI_SUCCESS;
}

static int allow_delete = 0;
static int refuse_delete(MPI_Comm c, int k, void *value, void *extra)
{
    (void)c, (void)k, (void)value, (void)extra;
    return allow_delete ? MPI_SUCCESS : MPI_ERR_OTHER;
}

int main(int argc, char **argv)
{
    test_init(&argc, &argv, NULL);
    int key, flag;
    void *val;
    MPI_Comm base, dup;
    MPI_Comm_dup(MPI_COMM_WORLD, &base);

    CHECK_MPI(MPI_Comm_create_keyval(copy_fn, delete_fn, &key, &st_a));
    CHECK(key != MPI_KEYVAL_INVALID, "Comm_create_keyval returned MPI_KEYVAL_INVALID");
    flag = 1;
    CHECK_MPI(MPI_Comm_get_attr(base, key, &val, &flag));
    CHECK(flag == 0, "attribute present before it was set");
    CHECK_MPI(MPI_Comm_set_attr(base, key, (void *)(intptr_t)100));
    CHECK_MPI(MPI_Comm_get_attr(base, key, &val, &flag));
    CHECK(flag == 1 && (intptr_t)val == 100, "get_attr: flag %d value %ld", flag, (long)(intptr_t)val);
    CHECK(st_a.deletes == 0, "delete called on first set");

    /* Replacement calls delete with the old value. */
    CHECK_MPI(MPI_Comm_set_attr(base, key, (void *)(intptr_t)200));
    CHECK(st_a.deletes == 1 && st_a.last_value == 100 && st_a.last_comm == base && st_a.last_keyval == key,
          "replacing an attribute: deletes %d last value %ld", st_a.deletes, (long)st_a.last_value);

    /* Dup calls copy with the old communicator; the duplicate has value+1. */
    CHECK_MPI(MPI_Comm_dup(base, &dup));
    CHECK(st_a.copies == 1 && st_a.last_comm == base && st_a.last_value == 200 && st_a.last_keyval == key,
          "copy callback: copies %d value %ld", st_a.copies, (long)st_a.last_value);
    CHECK_MPI(MPI_Comm_get_attr(dup, key, &val, &flag));
    CHECK(flag == 1 && (intptr_t)val == 201, "duplicate's attribute: flag %d value %ld", flag, (long)(intptr_t)val);
    /* The original keeps its value. */
    CHECK_MPI(MPI_Comm_get_attr(base, key, &val, &flag));
    CHECK(flag == 1 && (intptr_t)val == 200, "original's attribute after dup: %ld", (long)(intptr_t)val);

    /* Free of the duplicate calls delete with its value. */
    int d0 = st_a.deletes;
    CHECK_MPI(MPI_Comm_free(&dup));
    CHECK(st_a.deletes == d0 + 1 && st_a.last_value == 201, "delete on Comm_free: deletes %d value %ld",
          st_a.deletes - d0, (long)st_a.last_value);

    /* Copy callback that declines (flag 0): the duplicate has no attribute. */
    copy_flag_out = 0;
    CHECK_MPI(MPI_Comm_dup(base, &dup));
    CHECK_MPI(MPI_Comm_get_attr(dup, key, &val, &flag));
    CHECK(flag == 0, "attribute copied although the copy callback set flag = 0");
    d0 = st_a.deletes;
    MPI_Comm_free(&dup);
    CHECK(st_a.deletes == d0, "delete called for an attribute that was not copied");
    copy_flag_out = 1;

    /* Comm_delete_attr calls delete; the attribute is gone. */
    d0 = st_a.deletes;
    CHECK_MPI(MPI_Comm_delete_attr(base, key));
    CHECK(st_a.deletes == d0 + 1 && st_a.last_value == 200, "Comm_delete_attr: deletes %d", st_a.deletes - d0);
    CHECK_MPI(MPI_Comm_get_attr(base, key, &val, &flag));
    CHECK(flag == 0, "attribute present after Comm_delete_attr");

    /* Freeing the keyval: existing attributes stay until deleted. */
    CHECK_MPI(MPI_Comm_set_attr(base, key, (void *)(intptr_t)300));
    int key_copy = key;
    CHECK_MPI(MPI_Comm_free_keyval(&key));
    CHECK(key == MPI_KEYVAL_INVALID, "Comm_free_keyval did not set MPI_KEYVAL_INVALID");
    d0 = st_a.deletes;
    CHECK_MPI(MPI_Comm_dup(base, &dup)); /* still copied */
    /* A copy of the freed handle still reaches the attributes that use it. */
    CHECK_MPI(MPI_Comm_get_attr(base, key_copy, &val, &flag));
    CHECK(flag == 1 && (intptr_t)val == 300, "get through the freed keyval: flag %d value %ld", flag, (long)(intptr_t)val);
    CHECK_MPI(MPI_Comm_delete_attr(dup, key_copy));
    CHECK(st_a.deletes == d0 + 1, "delete_attr through the freed keyval ran %d delete callbacks", st_a.deletes - d0);
    MPI_Comm_free(&dup);
    MPI_Comm_free(&base);
    CHECK(st_a.deletes == d0 + 2, "after freeing the keyval, delete callbacks ran %d times (expected 2)", st_a.deletes - d0);
    CHECK(st_a.last_keyval == key_copy, "delete callback got keyval %d, expected %d", st_a.last_keyval, key_copy);

    /* Predefined copy functions. */
    {
        int knull, kdup;
        MPI_Comm c, d;
        MPI_Comm_dup(MPI_COMM_WORLD, &c);
        CHECK_MPI(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, MPI_COMM_NULL_DELETE_FN, &knull, NULL));
        CHECK_MPI(MPI_Comm_create_keyval(MPI_COMM_DUP_FN, MPI_COMM_NULL_DELETE_FN, &kdup, NULL));
        int x = 5, y = 6;
        MPI_Comm_set_attr(c, knull, &x);
        MPI_Comm_set_attr(c, kdup, &y);
        MPI_Comm_dup(c, &d);
        CHECK_MPI(MPI_Comm_get_attr(d, knull, &val, &flag));
        CHECK(flag == 0, "MPI_COMM_NULL_COPY_FN copied the attribute");
        CHECK_MPI(MPI_Comm_get_attr(d, kdup, &val, &flag));
        CHECK(flag == 1 && val == &y, "MPI_COMM_DUP_FN: flag %d, value %p (expected %p)", flag, val, (void *)&y);
        MPI_Comm_free(&d);
        MPI_Comm_free(&c);
        MPI_Comm_free_keyval(&knull);
        MPI_Comm_free_keyval(&kdup);
    }

    /* A copy callback that fails: MPI_Comm_dup fails and gives
     * MPI_COMM_NULL (Open MPI 5.0.11 leaves the variable as it was). */
    {
        int k;
        MPI_Comm c, d = MPI_COMM_WORLD;
        CHECK_MPI(MPI_Comm_create_keyval(refuse_copy, MPI_COMM_NULL_DELETE_FN, &k, NULL));
        MPI_Comm_dup(MPI_COMM_WORLD, &c);
        MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
        CHECK_MPI(MPI_Comm_set_attr(c, k, (void *)(intptr_t)5));
        int rc = MPI_Comm_dup(c, &d);
        CHECK(rc != MPI_SUCCESS, "MPI_Comm_dup succeeded although a copy callback failed");
        if (!TU_PEER_OPENMPI)
            CHECK(d == MPI_COMM_NULL, "a failed MPI_Comm_dup did not give MPI_COMM_NULL");
        MPI_Comm_free(&c);
        MPI_Comm_free_keyval(&k);
    }

    /* Deprecated interface. */
    {
        int k;
        MPI_Comm c, d;
        CHECK_MPI(MPI_Keyval_create(old_copy, MPI_NULL_DELETE_FN, &k, NULL));
        MPI_Comm_dup(MPI_COMM_WORLD, &c);
        static int z = 77;
        CHECK_MPI(MPI_Attr_put(c, k, &z));
        MPI_Comm_dup(c, &d);
        CHECK_MPI(MPI_Attr_get(d, k, &val, &flag));
        CHECK(flag == 1 && val == &z, "MPI_Attr_get on a duplicate: flag %d", flag);
        CHECK_MPI(MPI_Attr_delete(d, k));
        CHECK_MPI(MPI_Attr_get(d, k, &val, &flag));
        CHECK(flag == 0, "MPI_Attr_delete left the attribute");
        MPI_Comm_free(&d);
        MPI_Comm_free(&c);
        MPI_Keyval_free(&k);
    }

    /* A delete callback that fails makes MPI_Comm_delete_attr (and a set
     * over the value) fail, and the attribute stays: a dup still copies
     * it (MPICH's attr/attrerr; it was removed all the same). */
    {
        MPI_Comm c, d = MPI_COMM_WORLD;
        int k, flag = 0, z = 5;
        void *val = NULL;
        MPI_Comm_dup(MPI_COMM_WORLD, &c);
        MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
        MPI_Comm_create_keyval(refuse_copy, refuse_delete, &k, NULL);
        CHECK_MPI(MPI_Comm_set_attr(c, k, &z));
        CHECK(MPI_Comm_set_attr(c, k, NULL) != MPI_SUCCESS, "a set over a value whose delete callback fails succeeded");
        CHECK(MPI_Comm_delete_attr(c, k) != MPI_SUCCESS, "a delete whose callback fails succeeded");
        CHECK_MPI(MPI_Comm_get_attr(c, k, &val, &flag));
        CHECK(flag == 1 && val == &z, "the attribute is gone after its failed delete (flag %d)", flag);
        CHECK(MPI_Comm_dup(c, &d) != MPI_SUCCESS && d == MPI_COMM_NULL, "MPI_Comm_dup ran no copy callback: the attribute was gone");
        allow_delete = 1;
        CHECK_MPI(MPI_Comm_delete_attr(c, k));
        CHECK_MPI(MPI_Comm_get_attr(c, k, &val, &flag));
        CHECK(flag == 0, "the attribute is still there after its delete");
        MPI_Comm_free(&c);
        MPI_Comm_free_keyval(&k);
    }

    /* Attributes on MPI_COMM_SELF: deleted first thing in MPI_Finalize, in
     * the reverse order of setting. */
    int kf1, kf2, kf3;
    MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, final_delete, &kf1, NULL);
    MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, final_delete, &kf2, NULL);
    MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, final_delete, &kf3, NULL);
    MPI_Comm_set_attr(MPI_COMM_SELF, kf2, (void *)(intptr_t)1);
    MPI_Comm_set_attr(MPI_COMM_SELF, kf1, (void *)(intptr_t)2);
    MPI_Comm_set_attr(MPI_COMM_SELF, kf3, (void *)(intptr_t)3);

    MPI_Finalize();
    CHECK(final_count == 3, "MPI_Finalize ran %d delete callbacks on MPI_COMM_SELF, expected 3", final_count);
    CHECK(final_order[0] == 3 && final_order[1] == 2 && final_order[2] == 1,
          "MPI_COMM_SELF attributes deleted in order %d %d %d, expected 3 2 1", final_order[0], final_order[1],
          final_order[2]);
    return test_finish();
}
