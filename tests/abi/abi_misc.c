/*
 * The MPI-5 standard ABI, the less common crossings: probes and matched
 * probes (MPI_MESSAGE_NO_PROC), MPI_Waitsome's statuses, a generalized
 * request whose query callback fills the standard's status, a file error
 * handler and file modes, a window's flavor and model attributes, the
 * MPI_PROC_NULL that MPI_Cart_shift and MPI_Group_translate_ranks return,
 * MPI_UNWEIGHTED, MPI_BUFFER_AUTOMATIC, a subarray's contents, and the
 * Fortran registration functions. Prints "abi_misc OK" on rank 0.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int rank, size;

#define CHECK(cond, ...)                                                   \
    do {                                                                   \
        if (!(cond)) {                                                     \
            fprintf(stderr, "rank %d: %s:%d: ", rank, __FILE__, __LINE__); \
            fprintf(stderr, __VA_ARGS__);                                  \
            fprintf(stderr, "\n");                                         \
            MPI_Abort(MPI_COMM_WORLD, 1);                                  \
        }                                                                  \
    } while (0)

static int greq_freed;
static int greq_query(void *extra, MPI_Status *st)
{
    CHECK(extra == &greq_freed, "query extra_state");
    st->MPI_SOURCE = 3;
    st->MPI_TAG = 33;
    st->MPI_ERROR = MPI_SUCCESS;
    MPI_Status_set_elements(st, MPI_BYTE, 17);
    MPI_Status_set_cancelled(st, 0);
    return MPI_SUCCESS;
}
static int greq_free(void *extra)
{
    (*(int *)extra)++;
    return MPI_SUCCESS;
}
static int greq_cancel(void *extra, int complete)
{
    (void)extra, (void)complete;
    return MPI_SUCCESS;
}

static MPI_File file_expected;
static int file_errors, file_error_class;
static void file_errh(MPI_File *fh, int *code, ...)
{
    CHECK(*fh == file_expected, "file error handler got %p, expected %p", (void *)*fh, (void *)file_expected);
    MPI_Error_class(*code, &file_error_class);
    file_errors++;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int right = (rank + 1) % size, left = (rank + size - 1) % size;

    /* Probe, matched probe, MPI_MESSAGE_NO_PROC. */
    {
        int v = rank, got = -1, flag = 0, count = -1;
        MPI_Status st;
        MPI_Request r;
        MPI_Isend(&v, 1, MPI_INT, right, 21, MPI_COMM_WORLD, &r);
        MPI_Probe(MPI_ANY_SOURCE, 21, MPI_COMM_WORLD, &st);
        CHECK(st.MPI_SOURCE == left && st.MPI_TAG == 21, "probe status %d %d", st.MPI_SOURCE, st.MPI_TAG);
        MPI_Message msg;
        MPI_Improbe(left, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &msg, &st);
        while (!flag) MPI_Improbe(left, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &msg, &st);
        CHECK(msg != MPI_MESSAGE_NULL && msg != MPI_MESSAGE_NO_PROC, "improbe message");
        MPI_Get_count(&st, MPI_INT, &count);
        CHECK(count == 1, "improbe count %d", count);
        MPI_Mrecv(&got, 1, MPI_INT, &msg, &st);
        CHECK(got == left && msg == MPI_MESSAGE_NULL && st.MPI_TAG == 21, "mrecv %d", got);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
        MPI_Mprobe(MPI_PROC_NULL, 0, MPI_COMM_WORLD, &msg, &st);
        CHECK(msg == MPI_MESSAGE_NO_PROC && st.MPI_SOURCE == MPI_PROC_NULL, "mprobe PROC_NULL: %p %d", (void *)msg, st.MPI_SOURCE);
        MPI_Mrecv(&got, 1, MPI_INT, &msg, MPI_STATUS_IGNORE);
    }

    /* MPI_Waitsome: the statuses of what completed. */
    {
        int in[2] = {-1, -1}, out = rank, done = 0, outcount, idx[2];
        MPI_Request reqs[2];
        MPI_Status sts[2];
        MPI_Irecv(&in[0], 1, MPI_INT, left, 31, MPI_COMM_WORLD, &reqs[0]);
        MPI_Irecv(&in[1], 1, MPI_INT, left, 32, MPI_COMM_WORLD, &reqs[1]);
        MPI_Send(&out, 1, MPI_INT, right, 32, MPI_COMM_WORLD);
        MPI_Send(&out, 1, MPI_INT, right, 31, MPI_COMM_WORLD);
        while (done < 2) {
            MPI_Waitsome(2, reqs, &outcount, idx, sts);
            CHECK(outcount != MPI_UNDEFINED, "waitsome undefined");
            for (int k = 0; k < outcount; k++) {
                CHECK(sts[k].MPI_SOURCE == left && sts[k].MPI_TAG == 31 + idx[k], "waitsome status %d: %d %d", k, sts[k].MPI_SOURCE, sts[k].MPI_TAG);
                CHECK(reqs[idx[k]] == MPI_REQUEST_NULL, "completed request not freed");
            }
            done += outcount;
        }
        MPI_Waitsome(2, reqs, &outcount, idx, sts);
        CHECK(outcount == MPI_UNDEFINED, "waitsome on null requests: %d", outcount);
    }

    /* A generalized request. */
    {
        MPI_Request g;
        MPI_Status st;
        MPI_Grequest_start(greq_query, greq_free, greq_cancel, &greq_freed, &g);
        MPI_Grequest_complete(g);
        MPI_Wait(&g, &st);
        int count = -1, cancelled = 1;
        MPI_Get_count(&st, MPI_BYTE, &count);
        MPI_Test_cancelled(&st, &cancelled);
        CHECK(st.MPI_SOURCE == 3 && st.MPI_TAG == 33 && count == 17 && !cancelled && g == MPI_REQUEST_NULL && greq_freed == 1,
              "grequest: source %d tag %d count %d cancelled %d freed %d", st.MPI_SOURCE, st.MPI_TAG, count, cancelled, greq_freed);
    }

    /* Files: modes, the default error handler (returns), a user one. */
    {
        char path[256];
        snprintf(path, sizeof path, "/tmp/gridmpi-abi-misc-%d-%d", (int)getppid(), rank);
        MPI_File fh;
        int rc = MPI_File_open(MPI_COMM_SELF, path, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh);
        int cls;
        MPI_Error_class(rc, &cls);
        CHECK(rc != MPI_SUCCESS && cls == MPI_ERR_NO_SUCH_FILE, "opening a missing file: class %d", cls);
        rc = MPI_File_open(MPI_COMM_SELF, path, MPI_MODE_CREATE | MPI_MODE_WRONLY | MPI_MODE_DELETE_ON_CLOSE, MPI_INFO_NULL, &fh);
        CHECK(rc == MPI_SUCCESS && fh != MPI_FILE_NULL, "create: rc %d", rc);
        int amode = 0;
        MPI_File_get_amode(fh, &amode);
        CHECK(amode == (MPI_MODE_CREATE | MPI_MODE_WRONLY | MPI_MODE_DELETE_ON_CLOSE), "amode %d", amode);
        MPI_Errhandler eh;
        MPI_File_create_errhandler(file_errh, &eh);
        MPI_File_set_errhandler(fh, eh);
        MPI_Errhandler_free(&eh);
        file_expected = fh;
        int v[4] = {1, 2, 3, 4};
        MPI_File_write_at(fh, 0, v, 4, MPI_INT, MPI_STATUS_IGNORE);
        MPI_File_set_view(fh, 0, MPI_INT, MPI_INT, "native", MPI_INFO_NULL);
        MPI_Offset pos = -1;
        MPI_File_seek(fh, 2, MPI_SEEK_SET);
        MPI_File_get_position(fh, &pos);
        CHECK(pos == 2, "position after MPI_SEEK_SET %lld", (long long)pos);
        MPI_File_seek(fh, -1, MPI_SEEK_END);
        MPI_File_get_position(fh, &pos);
        CHECK(pos == 3, "position after MPI_SEEK_END %lld", (long long)pos);
        /* Reading a write-only file: the user handler, with this file. */
        MPI_File_read_at(fh, 0, v, 1, MPI_INT, MPI_STATUS_IGNORE);
        CHECK(file_errors == 1 && file_error_class == MPI_ERR_ACCESS, "file handler: %d calls, class %d", file_errors, file_error_class);
        MPI_File_close(&fh);
        CHECK(fh == MPI_FILE_NULL, "close left %p", (void *)fh);
    }

    /* A window's flavor and model. */
    {
        int *base, *flavor = NULL, *model = NULL, flag = 0;
        MPI_Win win;
        MPI_Win_allocate(sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
        MPI_Win_get_attr(win, MPI_WIN_CREATE_FLAVOR, &flavor, &flag);
        CHECK(flag && *flavor == MPI_WIN_FLAVOR_ALLOCATE, "flavor %d", flag ? *flavor : -1);
        MPI_Win_get_attr(win, MPI_WIN_MODEL, &model, &flag);
        CHECK(flag && (*model == MPI_WIN_UNIFIED || *model == MPI_WIN_SEPARATE), "model %d", flag ? *model : -1);
        *base = rank;
        MPI_Win_fence(MPI_MODE_NOPRECEDE, win);
        int got = -1;
        MPI_Get(&got, 1, MPI_INT, right, 0, 1, MPI_INT, win);
        MPI_Win_fence(MPI_MODE_NOSUCCEED, win);
        CHECK(got == right, "MPI_Get %d", got);
        MPI_Win_lock(MPI_LOCK_SHARED, left, MPI_MODE_NOCHECK, win);
        MPI_Get(&got, 1, MPI_INT, left, 0, 1, MPI_INT, win);
        MPI_Win_unlock(left, win);
        CHECK(got == left, "MPI_Get under a shared lock %d", got);
        MPI_Win_free(&win);
        CHECK(win == MPI_WIN_NULL, "win free");
    }

    /* MPI_PROC_NULL out of topologies and groups; MPI_UNWEIGHTED. */
    {
        int dims[1] = {size}, periods[1] = {0}, src = -7, dst = -7;
        MPI_Comm cart;
        MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, 0, &cart);
        MPI_Cart_shift(cart, 0, 1, &src, &dst);
        CHECK(src == (rank == 0 ? MPI_PROC_NULL : rank - 1) && dst == (rank == size - 1 ? MPI_PROC_NULL : rank + 1), "cart_shift %d %d", src, dst);
        int kind;
        MPI_Topo_test(cart, &kind);
        CHECK(kind == MPI_CART, "topo_test %d", kind);
        MPI_Comm_free(&cart);
        MPI_Group world, self;
        MPI_Comm_group(MPI_COMM_WORLD, &world);
        MPI_Comm_group(MPI_COMM_SELF, &self);
        int in[2] = {MPI_PROC_NULL, rank}, out[2] = {0, 0};
        MPI_Group_translate_ranks(world, 2, in, self, out);
        CHECK(out[0] == MPI_PROC_NULL && out[1] == 0, "translate_ranks %d %d", out[0], out[1]);
        MPI_Group_free(&self);
        MPI_Group_free(&world);
        MPI_Comm ring;
        int srcs[1] = {left}, dsts[1] = {right};
        MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 1, srcs, MPI_UNWEIGHTED, 1, dsts, MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &ring);
        int indeg, outdeg, weighted = -1;
        MPI_Dist_graph_neighbors_count(ring, &indeg, &outdeg, &weighted);
        CHECK(indeg == 1 && outdeg == 1 && weighted == 0, "dist graph %d %d %d", indeg, outdeg, weighted);
        MPI_Topo_test(ring, &kind);
        CHECK(kind == MPI_DIST_GRAPH, "topo_test %d", kind);
        int x = rank, y = -1;
        MPI_Datatype ts[1] = {MPI_INT};
        int c1[1] = {1};
        MPI_Aint d0[1] = {0};
        MPI_Neighbor_alltoallw(&x, c1, d0, ts, &y, c1, d0, ts, ring);
        CHECK(y == left, "neighbor_alltoallw %d", y);
        MPI_Comm_free(&ring);
    }

    /* MPI_BUFFER_AUTOMATIC. */
    {
        MPI_Buffer_attach(MPI_BUFFER_AUTOMATIC, 0);
        int v = rank, got = -1;
        MPI_Bsend(&v, 1, MPI_INT, right, 41, MPI_COMM_WORLD);
        MPI_Recv(&got, 1, MPI_INT, left, 41, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        CHECK(got == left, "bsend %d", got);
        void *addr = NULL;
        int bsize = -1;
        MPI_Buffer_detach(&addr, &bsize);
        CHECK(addr == MPI_BUFFER_AUTOMATIC, "detach gave %p", addr);
    }

    /* A subarray's contents: the order constant is the standard's. */
    {
        int sizes[2] = {4, 4}, subs[2] = {2, 2}, starts[2] = {1, 1};
        MPI_Datatype sub;
        MPI_Type_create_subarray(2, sizes, subs, starts, MPI_ORDER_FORTRAN, MPI_INT, &sub);
        int ni, na, nd, comb, ints[8];
        MPI_Type_get_envelope(sub, &ni, &na, &nd, &comb);
        CHECK(comb == MPI_COMBINER_SUBARRAY && ni == 8 && nd == 1, "subarray envelope %d %d %d", comb, ni, nd);
        MPI_Aint addrs[1];
        MPI_Datatype types[1];
        MPI_Type_get_contents(sub, 8, 0, 1, ints, addrs, types);
        CHECK(ints[7] == MPI_ORDER_FORTRAN && types[0] == MPI_INT, "subarray order %d", ints[7]);
        MPI_Type_free(&sub);
    }

    /* The Fortran registration: set once. GridMPI's C library does not know
     * the Fortran compiler until a binding registers it (MPI_INFO_NULL);
     * an implementation that knows (MPICH) may refuse a registration. */
    MPI_Info info = (MPI_Info)0x1234;
    MPI_Abi_get_fortran_info(&info);
    if (info != MPI_INFO_NULL) {
        MPI_Info_free(&info);
    } else {
        MPI_Info mine;
        MPI_Info_create(&mine);
        MPI_Info_set(mine, "mpi_logical_size", "4");
        CHECK(MPI_Abi_set_fortran_info(mine) == MPI_SUCCESS, "first registration");
        MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
        int rc = MPI_Abi_set_fortran_info(mine), cls = -1;
        MPI_Error_class(rc, &cls);
        CHECK(cls == MPI_ERR_ABI, "second registration: class %d", cls);
        MPI_Abi_get_fortran_info(&info);
        char val[8];
        int len = sizeof val, flag = 0;
        MPI_Info_get_string(info, "mpi_logical_size", &len, val, &flag);
        CHECK(flag && strcmp(val, "4") == 0, "registered fortran info");
        MPI_Info_free(&info);
        MPI_Info_free(&mine);
        int t = 1, f = 0, is_set = -1;
        MPI_Abi_get_fortran_booleans(4, &t, &f, &is_set);
        CHECK(is_set == 0, "booleans set before registration");
    }

    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("abi_misc OK (%d ranks)\n", size);
    MPI_Finalize();
    return 0;
}
