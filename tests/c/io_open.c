/* MPI-IO: opening and closing. Every access mode combination's checks and
 * error classes (MPI_ERR_AMODE, MPI_ERR_NO_SUCH_FILE, MPI_ERR_FILE_EXISTS,
 * MPI_ERR_ACCESS, MPI_ERR_READ_ONLY), MPI_MODE_DELETE_ON_CLOSE, MPI_File_delete,
 * get_amode/get_group/get_info/set_info, set_size/preallocate/get_size,
 * the default error handler of files (MPI_ERRORS_RETURN, from
 * MPI_FILE_NULL), user file error handlers, call_errhandler, c2f/f2c, and
 * bad arguments returning errors (never crashing). */
/* gridmpi-test: ranks=1,2,4 timeout=60 */
#include <mpi.h>
#include "testutil.h"
#include "ioutil.h"

static int handler_calls;
static int handler_code;
static MPI_File handler_file;

static void file_handler(MPI_File *fh, int *code, ...)
{
    handler_calls++;
    handler_code = *code;
    handler_file = *fh;
}

int main(int argc, char **argv)
{
    int size, rank = test_init(&argc, &argv, &size);
    io_setup();
    const char *path = io_path("data");
    MPI_File fh;
    int rc;

    /* The default handler of MPI_FILE_NULL is MPI_ERRORS_RETURN. */
    MPI_Errhandler eh;
    CHECK_MPI(MPI_File_get_errhandler(MPI_FILE_NULL, &eh));
    CHECK(eh == MPI_ERRORS_RETURN, "MPI_FILE_NULL's handler is not MPI_ERRORS_RETURN");
    MPI_Errhandler_free(&eh);

    /* Bad amodes. */
    rc = MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDONLY | MPI_MODE_RDWR, MPI_INFO_NULL, &fh);
    CHECK_ERR_CLASS(rc, MPI_ERR_AMODE);
    rc = MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE, MPI_INFO_NULL, &fh);
    CHECK_ERR_CLASS(rc, MPI_ERR_AMODE);
    rc = MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDONLY | MPI_MODE_CREATE, MPI_INFO_NULL, &fh);
    CHECK_ERR_CLASS(rc, MPI_ERR_AMODE);
    rc = MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDONLY | MPI_MODE_EXCL, MPI_INFO_NULL, &fh);
    CHECK_ERR_CLASS(rc, MPI_ERR_AMODE);
    rc = MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDWR | MPI_MODE_SEQUENTIAL, MPI_INFO_NULL, &fh);
    CHECK_ERR_CLASS(rc, MPI_ERR_AMODE);

    /* A file that does not exist. */
    rc = MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh);
    CHECK_ERR_CLASS(rc, MPI_ERR_NO_SUCH_FILE);
    CHECK(!io_exists(path), "a failed open made the file");

    /* Create, then EXCL on the existing file. */
    int amode = MPI_MODE_CREATE | MPI_MODE_RDWR;
    CHECK_MPI(MPI_File_open(MPI_COMM_WORLD, path, amode, MPI_INFO_NULL, &fh));
    int got;
    CHECK_MPI(MPI_File_get_amode(fh, &got));
    CHECK_INT_EQ(got, amode);
    MPI_Group g, wg;
    int cmp;
    CHECK_MPI(MPI_File_get_group(fh, &g));
    MPI_Comm_group(MPI_COMM_WORLD, &wg);
    MPI_Group_compare(g, wg, &cmp);
    CHECK_INT_EQ(cmp, MPI_IDENT);
    MPI_Group_free(&g);
    MPI_Group_free(&wg);
    /* A new file takes MPI_FILE_NULL's handler: MPI_ERRORS_RETURN. */
    CHECK_MPI(MPI_File_get_errhandler(fh, &eh));
    CHECK(eh == MPI_ERRORS_RETURN, "a file's default handler is not MPI_ERRORS_RETURN");
    MPI_Errhandler_free(&eh);
    /* Sizes. */
    MPI_Offset sz = -1;
    CHECK_MPI(MPI_File_get_size(fh, &sz));
    CHECK_INT_EQ((int)sz, 0);
    CHECK_MPI(MPI_File_set_size(fh, 1000));
    CHECK_MPI(MPI_File_get_size(fh, &sz));
    CHECK_INT_EQ((int)sz, 1000);
    CHECK_MPI(MPI_File_preallocate(fh, 500)); /* never shrinks */
    CHECK_MPI(MPI_File_get_size(fh, &sz));
    CHECK_INT_EQ((int)sz, 1000);
    CHECK_MPI(MPI_File_preallocate(fh, 4096));
    CHECK_MPI(MPI_File_get_size(fh, &sz));
    CHECK_INT_EQ((int)sz, 4096);
    CHECK_MPI(MPI_File_set_size(fh, 10));
    CHECK_MPI(MPI_File_get_size(fh, &sz));
    CHECK_INT_EQ((int)sz, 10);
    rc = MPI_File_set_size(fh, -1);
    CHECK(rc != MPI_SUCCESS, "MPI_File_set_size(-1) succeeded");
    /* Info: hints given are reported. */
    MPI_Info info, used;
    MPI_Info_create(&info);
    MPI_Info_set(info, "cb_buffer_size", "1048576");
    MPI_Info_set(info, "striping_unit", "65536");
    CHECK_MPI(MPI_File_set_info(fh, info));
    MPI_Info_free(&info);
    CHECK_MPI(MPI_File_get_info(fh, &used));
    int nkeys = 0, flag = 0;
    char value[MPI_MAX_INFO_VAL + 1];
    MPI_Info_get_nkeys(used, &nkeys);
    CHECK(nkeys > 0, "MPI_File_get_info gave no hints");
    if (TEST_IMPL_GRIDMPI) {
        MPI_Info_get(used, "cb_buffer_size", MPI_MAX_INFO_VAL, value, &flag);
        CHECK(flag && !strcmp(value, "1048576"), "cb_buffer_size hint not reported as set");
        MPI_Info_get(used, "striping_unit", MPI_MAX_INFO_VAL, value, &flag);
        CHECK(flag && !strcmp(value, "65536"), "striping_unit hint not reported as set");
    }
    MPI_Info_free(&used);
    /* Handle conversion. */
    MPI_Fint f = MPI_File_c2f(fh);
    CHECK(MPI_File_f2c(f) == fh, "MPI_File_f2c(MPI_File_c2f(fh)) != fh");
    CHECK(MPI_File_f2c(MPI_File_c2f(MPI_FILE_NULL)) == MPI_FILE_NULL, "MPI_FILE_NULL does not convert back");
    CHECK_MPI(MPI_File_close(&fh));
    CHECK(fh == MPI_FILE_NULL, "MPI_File_close did not set MPI_FILE_NULL");

    rc = MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_EXCL | MPI_MODE_RDWR, MPI_INFO_NULL, &fh);
    /* MPICH gives the class on rank 0 only (MPI_ERR_OTHER elsewhere; see README). */
    if (!TU_PEER_MPICH || rank == 0)
        CHECK_ERR_CLASS(rc, MPI_ERR_FILE_EXISTS);
    else
        CHECK(rc != MPI_SUCCESS, "MPI_MODE_EXCL on an existing file succeeded");

    /* Reads on write-only files, writes on read-only ones. */
    char buf[16] = {0};
    MPI_Status st;
    CHECK_MPI(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_WRONLY, MPI_INFO_NULL, &fh));
    rc = MPI_File_read_at(fh, 0, buf, 4, MPI_CHAR, &st);
    CHECK_ERR_CLASS(rc, MPI_ERR_ACCESS);
    CHECK_MPI(MPI_File_close(&fh));
    CHECK_MPI(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh));
    rc = MPI_File_write_at(fh, 0, buf, 4, MPI_CHAR, &st);
    CHECK_ERR_CLASS(rc, MPI_ERR_READ_ONLY);
    /* Bad arguments come back as errors on the file. */
    rc = MPI_File_read_at(fh, 0, buf, -1, MPI_CHAR, &st);
    CHECK_ERR_CLASS(rc, MPI_ERR_COUNT);
    MPI_Datatype uncommitted;
    MPI_Type_contiguous(2, MPI_INT, &uncommitted);
    rc = MPI_File_read_at(fh, 0, buf, 1, uncommitted, &st);
    CHECK_ERR_CLASS(rc, MPI_ERR_TYPE);
    MPI_Type_free(&uncommitted);
    rc = MPI_File_read_at(fh, -5, buf, 1, MPI_CHAR, &st);
    CHECK(rc != MPI_SUCCESS, "a read at offset -5 succeeded");
    rc = MPI_File_seek(fh, -1, MPI_SEEK_SET);
    CHECK(rc != MPI_SUCCESS, "a seek to -1 succeeded");
    rc = MPI_File_seek(fh, 0, 12345);
    CHECK(rc != MPI_SUCCESS, "a seek with a bad whence succeeded");
    /* A filetype with a negative displacement or not monotone is refused. */
    MPI_Datatype neg, back;
    int bl[2] = {1, 1};
    MPI_Aint dneg[1] = {-4}, dback[2] = {8, 0};
    MPI_Type_create_hindexed(1, bl, dneg, MPI_INT, &neg);
    MPI_Type_commit(&neg);
    rc = MPI_File_set_view(fh, 0, MPI_INT, neg, "native", MPI_INFO_NULL);
    CHECK(rc != MPI_SUCCESS, "a filetype with a negative displacement was accepted");
    MPI_Type_create_hindexed(2, bl, dback, MPI_INT, &back);
    MPI_Type_commit(&back);
    rc = MPI_File_set_view(fh, 0, MPI_INT, back, "native", MPI_INFO_NULL);
    CHECK(rc != MPI_SUCCESS, "a non-monotone filetype was accepted");
    MPI_Type_free(&neg);
    MPI_Type_free(&back);
    rc = MPI_File_set_view(fh, 0, MPI_INT, MPI_INT, "no-such-datarep", MPI_INFO_NULL);
    CHECK_ERR_CLASS(rc, MPI_ERR_UNSUPPORTED_DATAREP);

    /* A user handler on the file sees the file and the code. */
    MPI_Errhandler mine;
    CHECK_MPI(MPI_File_create_errhandler(file_handler, &mine));
    CHECK_MPI(MPI_File_set_errhandler(fh, mine));
    rc = MPI_File_write_at(fh, 0, buf, 4, MPI_CHAR, &st);
    /* MPICH returns MPI_SUCCESS once a user handler returned (see README). */
    if (!TU_PEER_MPICH)
        CHECK_ERR_CLASS(rc, MPI_ERR_READ_ONLY);
    CHECK_INT_EQ(handler_calls, 1);
    CHECK(handler_file == fh, "the handler got another file");
    CHECK_ERR_CLASS(handler_code, MPI_ERR_READ_ONLY);
    CHECK_MPI(MPI_File_call_errhandler(fh, MPI_ERR_IO));
    CHECK_INT_EQ(handler_calls, 2);
    CHECK_INT_EQ(handler_code, MPI_ERR_IO);
    CHECK_MPI(MPI_File_get_errhandler(fh, &eh));
    CHECK(eh == mine, "MPI_File_get_errhandler is not the handler set");
    MPI_Errhandler_free(&eh);
    CHECK_MPI(MPI_File_close(&fh));
    /* On MPI_FILE_NULL: open errors go there. */
    CHECK_MPI(MPI_File_set_errhandler(MPI_FILE_NULL, mine));
    rc = MPI_File_open(MPI_COMM_WORLD, io_path("missing"), MPI_MODE_RDONLY, MPI_INFO_NULL, &fh);
    if (!TU_PEER_MPICH)
        CHECK_ERR_CLASS(rc, MPI_ERR_NO_SUCH_FILE);
    CHECK_INT_EQ(handler_calls, 3);
    CHECK_ERR_CLASS(handler_code, MPI_ERR_NO_SUCH_FILE);
    CHECK(handler_file == MPI_FILE_NULL, "the open error's handler did not get MPI_FILE_NULL");
    CHECK_MPI(MPI_File_set_errhandler(MPI_FILE_NULL, MPI_ERRORS_RETURN));
    MPI_Errhandler_free(&mine);
    /* An invalid file handle (MPI_FILE_NULL) is an error, not a crash. */
    rc = MPI_File_get_size(MPI_FILE_NULL, &sz);
    CHECK_ERR_CLASS(rc, MPI_ERR_FILE);

    /* DELETE_ON_CLOSE; nothing else is left behind (no shared-pointer file). */
    MPI_Barrier(MPI_COMM_WORLD);
    const char *tmp = io_path("doomed");
    CHECK_MPI(MPI_File_open(MPI_COMM_WORLD, tmp, MPI_MODE_CREATE | MPI_MODE_WRONLY | MPI_MODE_DELETE_ON_CLOSE, MPI_INFO_NULL, &fh));
    CHECK(io_exists(tmp), "the created file does not exist");
    CHECK_MPI(MPI_File_close(&fh));
    CHECK(!io_exists(tmp), "MPI_MODE_DELETE_ON_CLOSE left the file");
    MPI_Barrier(MPI_COMM_WORLD);
    if (TEST_IMPL_GRIDMPI)
        CHECK_INT_EQ(io_count_entries(), 1);

    /* MPI_File_delete (by one rank), then it is gone. */
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        CHECK_MPI(MPI_File_delete(path, MPI_INFO_NULL));
        rc = MPI_File_delete(path, MPI_INFO_NULL);
        CHECK_ERR_CLASS(rc, MPI_ERR_NO_SUCH_FILE);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK(!io_exists(path), "MPI_File_delete left the file");

    /* MPI_COMM_SELF: each rank its own file. */
    char own[64];
    snprintf(own, sizeof own, "self-%d", rank);
    CHECK_MPI(MPI_File_open(MPI_COMM_SELF, io_path(own), MPI_MODE_CREATE | MPI_MODE_RDWR | MPI_MODE_DELETE_ON_CLOSE | MPI_MODE_UNIQUE_OPEN, MPI_INFO_NULL, &fh));
    CHECK_MPI(MPI_File_write(fh, "hello", 5, MPI_CHAR, &st));
    CHECK_MPI(MPI_File_get_size(fh, &sz));
    CHECK_INT_EQ((int)sz, 5);
    CHECK_MPI(MPI_File_close(&fh));

    io_teardown();
    MPI_Finalize();
    return test_finish();
}
