/* gridmpi-test: ranks=1 timeout=30 */
/*
 * Datatype attributes: Type_create_keyval with copy/delete callbacks (copy
 * on Type_dup with the right old type and extra_state, delete on Type_free,
 * Type_delete_attr and replacement), MPI_TYPE_NULL_COPY_FN and
 * MPI_TYPE_DUP_FN, attributes on a predefined type, Type_free_keyval.
 */
#include "testutil.h"

static int copies, deletes;
static MPI_Datatype last_type;
static intptr_t last_value;
static void *last_extra;

static int tcopy(MPI_Datatype old, int key, void *extra, void *in, void *out, int *flag)
{
    (void)key;
    copies++;
    last_type = old;
    last_extra = extra;
    *(void **)out = (void *)((intptr_t)in * 10);
    *flag = 1;
    return MPI_SUCCESS;
}

static int tdelete(MPI_Datatype t, int key, void *value, void *extra)
{
    (void)key;
    deletes++;
    last_type = t;
    last_value = (intptr_t)value;
    last_extra = extra;
    return MPI_SUCCESS;
}

int main(int argc, char **argv)
{
    test_init(&argc, &argv, NULL);
    int key, flag;
    void *val;
    static int extra_token;
    MPI_Datatype t, d;
    MPI_Type_contiguous(3, MPI_INT, &t);
    MPI_Type_commit(&t);

    CHECK_MPI(MPI_Type_create_keyval(tcopy, tdelete, &key, &extra_token));
    CHECK_MPI(MPI_Type_get_attr(t, key, &val, &flag));
    CHECK(flag == 0, "type attribute present before set");
    CHECK_MPI(MPI_Type_set_attr(t, key, (void *)(intptr_t)4));
    CHECK_MPI(MPI_Type_get_attr(t, key, &val, &flag));
    CHECK(flag && (intptr_t)val == 4, "Type_get_attr: flag %d value %ld", flag, (long)(intptr_t)val);
    CHECK_MPI(MPI_Type_set_attr(t, key, (void *)(intptr_t)5));
    CHECK(deletes == 1 && last_value == 4 && last_type == t && last_extra == &extra_token,
          "replacement: deletes %d value %ld", deletes, (long)last_value);

    CHECK_MPI(MPI_Type_dup(t, &d));
    CHECK(copies == 1 && last_type == t && last_extra == &extra_token, "Type_dup copy callback: copies %d", copies);
    CHECK_MPI(MPI_Type_get_attr(d, key, &val, &flag));
    CHECK(flag && (intptr_t)val == 50, "duplicate type's attribute: flag %d value %ld", flag, (long)(intptr_t)val);

    CHECK_MPI(MPI_Type_free(&d));
    CHECK(deletes == 2 && last_value == 50, "Type_free delete callback: deletes %d value %ld", deletes, (long)last_value);
    CHECK_MPI(MPI_Type_delete_attr(t, key));
    CHECK(deletes == 3 && last_value == 5, "Type_delete_attr: deletes %d value %ld", deletes, (long)last_value);
    CHECK_MPI(MPI_Type_get_attr(t, key, &val, &flag));
    CHECK(flag == 0, "attribute present after Type_delete_attr");

    /* Attribute on a predefined type. */
    CHECK_MPI(MPI_Type_set_attr(MPI_INT, key, (void *)(intptr_t)9));
    CHECK_MPI(MPI_Type_get_attr(MPI_INT, key, &val, &flag));
    CHECK(flag && (intptr_t)val == 9, "attribute on MPI_INT: flag %d", flag);
    CHECK_MPI(MPI_Type_delete_attr(MPI_INT, key));
    CHECK(last_type == MPI_INT && last_value == 9, "delete callback on MPI_INT");

    /* Predefined copy functions. */
    int knull, kdup;
    CHECK_MPI(MPI_Type_create_keyval(MPI_TYPE_NULL_COPY_FN, MPI_TYPE_NULL_DELETE_FN, &knull, NULL));
    CHECK_MPI(MPI_Type_create_keyval(MPI_TYPE_DUP_FN, MPI_TYPE_NULL_DELETE_FN, &kdup, NULL));
    int a = 1, b = 2;
    MPI_Type_set_attr(t, knull, &a);
    MPI_Type_set_attr(t, kdup, &b);
    MPI_Type_dup(t, &d);
    CHECK_MPI(MPI_Type_get_attr(d, knull, &val, &flag));
    CHECK(flag == 0, "MPI_TYPE_NULL_COPY_FN copied");
    CHECK_MPI(MPI_Type_get_attr(d, kdup, &val, &flag));
    CHECK(flag && val == &b, "MPI_TYPE_DUP_FN did not copy the value");
    MPI_Type_free(&d);

    /* Freed keyval: attribute on t survives, its delete runs on Type_free. */
    CHECK_MPI(MPI_Type_set_attr(t, key, (void *)(intptr_t)6));
    CHECK_MPI(MPI_Type_free_keyval(&key));
    CHECK(key == MPI_KEYVAL_INVALID, "Type_free_keyval did not set MPI_KEYVAL_INVALID");
    int d0 = deletes;
    MPI_Type_free(&t);
    CHECK(deletes == d0 + 1 && last_value == 6, "delete after keyval free: %d calls", deletes - d0);
    MPI_Type_free_keyval(&knull);
    MPI_Type_free_keyval(&kdup);
    MPI_Finalize();
    return test_finish();
}
