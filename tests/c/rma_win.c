/* gridmpi-test: ranks=1,2,3 timeout=60 */
/*
 * Windows as objects: the predefined attributes (MPI_WIN_BASE, _SIZE,
 * _DISP_UNIT, _CREATE_FLAVOR, MPI_WIN_MODEL = MPI_WIN_UNIFIED) of every
 * flavor; keyvals with a delete callback run at MPI_Win_free; the group,
 * name, info; error handlers (the default is fatal: set MPI_ERRORS_RETURN
 * or a handler of our own) and the errors of misuse: RMA outside an epoch
 * (MPI_ERR_RMA_SYNC), a target rank out of range (MPI_ERR_RANK), data
 * beyond the target's window (MPI_ERR_RMA_RANGE), a bad lock type, a
 * user-defined op in an accumulate; MPI_Win_call_errhandler,
 * MPI_Win_c2f/f2c; a dynamic window with attach/detach, its address sent
 * to the neighbour by a message.
 */
#include "testutil.h"

static int deleted = 0;
static int handler_calls = 0, handler_class = 0;

static int del_fn(MPI_Win win, int keyval, void *val, void *extra)
{
    (void)win;
    (void)keyval;
    (void)extra;
    deleted += *(int *)val;
    return MPI_SUCCESS;
}

static void handler(MPI_Win *win, int *code, ...)
{
    (void)win;
    handler_calls++;
    MPI_Error_class(*code, &handler_class);
}

static void user_op(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)in;
    (void)inout;
    (void)len;
    (void)dt;
}

int main(int argc, char **argv)
{
    int n;
    int rank = test_init(&argc, &argv, &n);
    int buf[16];
    MPI_Win win;
    CHECK_MPI(MPI_Win_create(buf, sizeof(buf), 4, MPI_INFO_NULL, MPI_COMM_WORLD, &win));

    void *base;
    MPI_Aint *size;
    int *du, *flavor, *model, flag;
    CHECK_MPI(MPI_Win_get_attr(win, MPI_WIN_BASE, &base, &flag));
    CHECK(flag && base == buf, "MPI_WIN_BASE");
    CHECK_MPI(MPI_Win_get_attr(win, MPI_WIN_SIZE, &size, &flag));
    CHECK(flag && *size == sizeof(buf), "MPI_WIN_SIZE %ld", (long)*size);
    CHECK_MPI(MPI_Win_get_attr(win, MPI_WIN_DISP_UNIT, &du, &flag));
    CHECK(flag && *du == 4, "MPI_WIN_DISP_UNIT");
    CHECK_MPI(MPI_Win_get_attr(win, MPI_WIN_CREATE_FLAVOR, &flavor, &flag));
    CHECK(flag && *flavor == MPI_WIN_FLAVOR_CREATE, "MPI_WIN_CREATE_FLAVOR");
    CHECK_MPI(MPI_Win_get_attr(win, MPI_WIN_MODEL, &model, &flag));
    CHECK(flag && *model == MPI_WIN_UNIFIED, "MPI_WIN_MODEL");

    /* Keyvals. */
    int key, val = 5, *got;
    CHECK_MPI(MPI_Win_create_keyval(MPI_WIN_NULL_COPY_FN, del_fn, &key, NULL));
    CHECK_MPI(MPI_Win_set_attr(win, key, &val));
    CHECK_MPI(MPI_Win_get_attr(win, key, &got, &flag));
    CHECK(flag && got == &val, "user attribute");
    CHECK_MPI(MPI_Win_delete_attr(win, key));
    CHECK(deleted == 5, "delete callback on MPI_Win_delete_attr");
    CHECK_MPI(MPI_Win_get_attr(win, key, &got, &flag));
    CHECK(!flag, "deleted attribute still there");
    CHECK_MPI(MPI_Win_set_attr(win, key, &val));

    /* Group, name, info. */
    MPI_Group g, wg;
    int cmp;
    CHECK_MPI(MPI_Win_get_group(win, &g));
    MPI_Comm_group(MPI_COMM_WORLD, &wg);
    MPI_Group_compare(g, wg, &cmp);
    CHECK(cmp == MPI_IDENT, "window group");
    MPI_Group_free(&g);
    MPI_Group_free(&wg);
    char name[MPI_MAX_OBJECT_NAME];
    int len;
    CHECK_MPI(MPI_Win_set_name(win, "my window"));
    CHECK_MPI(MPI_Win_get_name(win, name, &len));
    CHECK_STR_EQ(name, "my window");
    MPI_Info info;
    CHECK_MPI(MPI_Win_get_info(win, &info));
    CHECK(info != MPI_INFO_NULL, "info");
    MPI_Info_free(&info);
    MPI_Info_create(&info);
    MPI_Info_set(info, "no_locks", "true");
    CHECK_MPI(MPI_Win_set_info(win, info));
    MPI_Info_free(&info);

    /* Errors go to the window's handler. */
    MPI_Errhandler eh;
    CHECK_MPI(MPI_Win_get_errhandler(win, &eh));
    CHECK(eh == MPI_ERRORS_ARE_FATAL, "default window error handler");
    CHECK_MPI(MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN));
    int one = 1;
    CHECK_ERR_CLASS(MPI_Put(&one, 1, MPI_INT, 0, 0, 1, MPI_INT, win), MPI_ERR_RMA_SYNC);
    CHECK_ERR_CLASS(MPI_Win_unlock(0, win), MPI_ERR_RMA_SYNC);
    CHECK_ERR_CLASS(MPI_Win_complete(win), MPI_ERR_RMA_SYNC);
    if (!TU_PEER_MPICH) /* MPICH 5.0.2: MPI_ERR_ARG */
        CHECK_ERR_CLASS(MPI_Win_lock(12345, 0, 0, win), MPI_ERR_LOCKTYPE);
    CHECK_MPI(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win));
    CHECK_ERR_CLASS(MPI_Put(&one, 1, MPI_INT, n, 0, 1, MPI_INT, win), MPI_ERR_RANK);
    if (!TU_PEER_MPICH) { /* MPICH 5.0.2 does not check, and writes past the window */
        CHECK_ERR_CLASS(MPI_Put(&one, 1, MPI_INT, 0, 16, 1, MPI_INT, win), MPI_ERR_RMA_RANGE);
        CHECK_ERR_CLASS(MPI_Put(&one, 1, MPI_INT, 0, 15, 2, MPI_INT, win), MPI_ERR_RMA_RANGE);
    }
    MPI_Op uop;
    MPI_Op_create(user_op, 1, &uop);
    CHECK_ERR_CLASS(MPI_Accumulate(&one, 1, MPI_INT, 0, 0, 1, MPI_INT, uop, win), MPI_ERR_OP);
    MPI_Op_free(&uop);
    CHECK_ERR_CLASS(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win), MPI_ERR_RMA_SYNC);
    CHECK_MPI(MPI_Win_unlock(0, win));
    MPI_Errhandler mine;
    CHECK_MPI(MPI_Win_create_errhandler(handler, &mine));
    CHECK_MPI(MPI_Win_set_errhandler(win, mine));
    MPI_Errhandler_free(&mine);
    int rc = MPI_Get(&one, 1, MPI_INT, 0, 0, 1, MPI_INT, win);
    CHECK(handler_calls == 1 && handler_class == MPI_ERR_RMA_SYNC, "user handler: calls %d class %d", handler_calls, handler_class);
    if (!TU_PEER_MPICH) /* MPICH returns MPI_SUCCESS after a user handler (see err_handler) */
        CHECK(rc != MPI_SUCCESS, "the failing call returns the error");
    CHECK_MPI(MPI_Win_call_errhandler(win, MPI_ERR_OTHER));
    CHECK(handler_calls == 2 && handler_class == MPI_ERR_OTHER, "MPI_Win_call_errhandler");
    CHECK(MPI_Win_f2c(MPI_Win_c2f(win)) == win, "c2f/f2c");

    CHECK_MPI(MPI_Win_free(&win));
    CHECK(deleted == 10, "delete callback at MPI_Win_free (%d)", deleted);
    CHECK_MPI(MPI_Win_free_keyval(&key));

    /* Allocated: base and size. */
    double *d;
    CHECK_MPI(MPI_Win_allocate(10 * sizeof(double), sizeof(double), MPI_INFO_NULL, MPI_COMM_WORLD, &d, &win));
    CHECK_MPI(MPI_Win_get_attr(win, MPI_WIN_BASE, &base, &flag));
    CHECK(flag && base == d, "allocated base");
    CHECK_MPI(MPI_Win_get_attr(win, MPI_WIN_CREATE_FLAVOR, &flavor, &flag));
    CHECK(*flavor == MPI_WIN_FLAVOR_ALLOCATE, "allocate flavor");
    CHECK_MPI(MPI_Win_free(&win));

    /* The large-count forms. */
    long *lc;
    CHECK_MPI(MPI_Win_allocate_c(4 * sizeof(long), sizeof(long), MPI_INFO_NULL, MPI_COMM_WORLD, &lc, &win));
    for (int i = 0; i < 4; i++)
        lc[i] = 0; /* allocated memory is not initialized */
    CHECK_MPI(MPI_Win_fence(0, win));
    long lv[2] = {rank + 10, rank + 20}, lg[2] = {0, 0}, acc = 1;
    int nb = (rank + 1) % n;
    CHECK_MPI(MPI_Put_c(lv, 2, MPI_LONG, nb, 0, 2, MPI_LONG, win));
    CHECK_MPI(MPI_Accumulate_c(&acc, 1, MPI_LONG, 0, 3, 1, MPI_LONG, MPI_SUM, win));
    CHECK_MPI(MPI_Win_fence(0, win));
    CHECK_MPI(MPI_Get_c(lg, 2, MPI_LONG, nb, 0, 2, MPI_LONG, win));
    CHECK_MPI(MPI_Win_fence(0, win));
    CHECK(lg[0] == rank + 10 && lg[1] == rank + 20, "Put_c/Get_c: %ld %ld", lg[0], lg[1]);
    if (rank == 0)
        CHECK(lc[3] == n, "Accumulate_c: %ld", lc[3]);
    CHECK_MPI(MPI_Win_free(&win));
    char cbuf[64];
    CHECK_MPI(MPI_Win_create_c(cbuf, sizeof(cbuf), 2, MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    CHECK_MPI(MPI_Win_get_attr(win, MPI_WIN_DISP_UNIT, &du, &flag));
    CHECK(flag && *du == 2, "MPI_Win_create_c disp_unit");
    CHECK_MPI(MPI_Win_free(&win));

    /* Dynamic: attach, send the address, put, detach. */
    CHECK_MPI(MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    CHECK_MPI(MPI_Win_get_attr(win, MPI_WIN_CREATE_FLAVOR, &flavor, &flag));
    CHECK(*flavor == MPI_WIN_FLAVOR_DYNAMIC, "dynamic flavor");
    CHECK_MPI(MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN));
    long *region = calloc(4, sizeof(long));
    CHECK_MPI(MPI_Win_attach(win, region, 4 * sizeof(long)));
    MPI_Aint mine_addr, right_addr;
    MPI_Get_address(region, &mine_addr);
    int right = (rank + 1) % n, left = (rank + n - 1) % n;
    MPI_Sendrecv(&mine_addr, 1, MPI_AINT, left, 7, &right_addr, 1, MPI_AINT, right, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    long v = 100 + rank;
    CHECK_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, right, 0, win));
    CHECK_MPI(MPI_Put(&v, 1, MPI_LONG, right, right_addr + sizeof(long), 1, MPI_LONG, win));
    CHECK_MPI(MPI_Win_unlock(right, win));
    /* Outside the attached memory: reported when the epoch completes. */
    CHECK_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, right, 0, win));
    int rc_put = MPI_Put(&v, 1, MPI_LONG, right, right_addr + 4 * sizeof(long), 1, MPI_LONG, win);
    rc = MPI_Win_unlock(right, win);
    /* At the put (our own window) or when the epoch completes. */
    if (!TU_PEER_MPICH && !TU_PEER_OPENMPI)
        CHECK(tu_error_class(rc_put) == MPI_ERR_RMA_RANGE || tu_error_class(rc) == MPI_ERR_RMA_RANGE, "no MPI_ERR_RMA_RANGE for a put outside the attached memory (%d, %d)", rc_put, rc);
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK(region[1] == 100 + left && region[0] == 0 && region[2] == 0, "dynamic put: %ld %ld %ld", region[0], region[1], region[2]);
    CHECK_MPI(MPI_Win_detach(win, region));
    CHECK_MPI(MPI_Win_free(&win));
    free(region);
    MPI_Finalize();
    return test_finish();
}
