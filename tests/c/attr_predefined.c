/* gridmpi-test: ranks=1,4 timeout=30 */
/*
 * Predefined attributes of MPI_COMM_WORLD: MPI_TAG_UB (present, >= 32767,
 * and usable as a tag), MPI_HOST (MPI_PROC_NULL or a rank), MPI_IO
 * (MPI_ANY_SOURCE, MPI_PROC_NULL or a rank), MPI_WTIME_IS_GLOBAL (0 or 1),
 * MPI_UNIVERSE_SIZE (if present, positive), MPI_APPNUM (if
 * present, 0 for a single-program launch), MPI_LASTUSEDCODE (>=
 * MPI_ERR_LASTCODE); through MPI_Comm_get_attr and the deprecated
 * MPI_Attr_get; they cannot be set or deleted by the user.
 */
#include "testutil.h"

static int get_int_attr(int key, int *present)
{
    int *p = NULL, flag = 0;
    CHECK_MPI(MPI_Comm_get_attr(MPI_COMM_WORLD, key, &p, &flag));
    *present = flag;
    return flag && p ? *p : -99999;
}

int main(int argc, char **argv)
{
    int size;
    test_init(&argc, &argv, &size);
    int present, v;

    v = get_int_attr(MPI_TAG_UB, &present);
    CHECK(present, "MPI_TAG_UB is not set");
    CHECK(v >= 32767, "MPI_TAG_UB = %d < 32767", v);
    int *p2, f2;
    MPI_Attr_get(MPI_COMM_WORLD, MPI_TAG_UB, &p2, &f2);
    CHECK(f2 && *p2 == v, "MPI_Attr_get(MPI_TAG_UB) disagrees");

    v = get_int_attr(MPI_HOST, &present);
    CHECK(present, "MPI_HOST is not set");
    CHECK(v == MPI_PROC_NULL || (v >= 0 && v < size), "MPI_HOST = %d", v);

    v = get_int_attr(MPI_IO, &present);
    CHECK(present, "MPI_IO is not set");
    CHECK(v == MPI_ANY_SOURCE || v == MPI_PROC_NULL || (v >= 0 && v < size), "MPI_IO = %d", v);

    v = get_int_attr(MPI_WTIME_IS_GLOBAL, &present);
    CHECK(present, "MPI_WTIME_IS_GLOBAL is not set");
    CHECK(v == 0 || v == 1, "MPI_WTIME_IS_GLOBAL = %d", v);

    v = get_int_attr(MPI_UNIVERSE_SIZE, &present);
    /* Not required to be >= the world size (Open MPI reports the slot
     * count, smaller when oversubscribed). */
    if (present)
        CHECK(v >= 1, "MPI_UNIVERSE_SIZE = %d", v);

    v = get_int_attr(MPI_APPNUM, &present);
    if (present)
        CHECK(v == 0, "MPI_APPNUM = %d for a single-program launch", v);

    v = get_int_attr(MPI_LASTUSEDCODE, &present);
    CHECK(present, "MPI_LASTUSEDCODE is not set");
    CHECK(v >= MPI_ERR_LASTCODE, "MPI_LASTUSEDCODE = %d < MPI_ERR_LASTCODE %d", v, MPI_ERR_LASTCODE);

    /* The user may not set or delete predefined attributes. */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    static int fake = 5;
    int rc = MPI_Comm_set_attr(MPI_COMM_WORLD, MPI_TAG_UB, &fake);
    CHECK(rc != MPI_SUCCESS, "setting MPI_TAG_UB succeeded");
    rc = MPI_Comm_delete_attr(MPI_COMM_WORLD, MPI_TAG_UB);
    CHECK(rc != MPI_SUCCESS, "deleting MPI_TAG_UB succeeded");
    v = get_int_attr(MPI_TAG_UB, &present);
    CHECK(present && v >= 32767, "MPI_TAG_UB changed after a rejected set/delete: %d", v);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);

    MPI_Finalize();
    return test_finish();
}
