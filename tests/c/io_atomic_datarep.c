/* MPI-IO: atomic mode and data representations. With atomicity on,
 * concurrent overlapping writes through a view with holes (one access =
 * many pieces) leave each access whole: every int of the region comes
 * from one writer. external32: the file holds big-endian bytes (read
 * through a native view), and reads back; get_type_extent. A user data
 * representation (MPI_Register_datarep) with conversion functions (ints
 * negated in the file): called, and registering a name twice is
 * MPI_ERR_DUP_DATAREP. */
/* gridmpi-test: ranks=1,2,4 timeout=60 */
#include <mpi.h>
#include "testutil.h"
#include "ioutil.h"

#define N 4096 /* ints each writer writes */

static int conversions;

static int negate_write(void *userbuf, MPI_Datatype dt, int count, void *filebuf, MPI_Offset position, void *extra)
{
    (void)dt;
    (void)extra;
    for (int i = 0; i < count; i++)
        ((int *)filebuf)[i] = -((int *)userbuf)[position + i];
    conversions++;
    return MPI_SUCCESS;
}

static int negate_read(void *userbuf, MPI_Datatype dt, int count, void *filebuf, MPI_Offset position, void *extra)
{
    (void)dt;
    (void)extra;
    for (int i = 0; i < count; i++)
        ((int *)userbuf)[position + i] = -((int *)filebuf)[i];
    conversions++;
    return MPI_SUCCESS;
}

static int extent_fn(MPI_Datatype dt, MPI_Aint *extent, void *extra)
{
    (void)extra;
    MPI_Aint lb;
    return MPI_Type_get_extent(dt, &lb, extent);
}

int main(int argc, char **argv)
{
    int size, rank = test_init(&argc, &argv, &size);
    io_setup();
    MPI_File fh;
    MPI_Status st;
    int count, flag;

    /* ---- atomic mode ---- */
    CHECK_MPI(MPI_File_open(MPI_COMM_WORLD, io_path("atomic"), MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh));
    CHECK_MPI(MPI_File_get_atomicity(fh, &flag));
    CHECK_INT_EQ(flag, 0);
    CHECK_MPI(MPI_File_set_atomicity(fh, 1));
    CHECK_MPI(MPI_File_get_atomicity(fh, &flag));
    CHECK(flag != 0, "atomicity not set");
    MPI_Datatype every_other, ft;
    MPI_Type_vector(1, 1, 2, MPI_INT, &every_other);
    MPI_Type_create_resized(every_other, 0, 2 * sizeof(int), &ft);
    MPI_Type_commit(&ft);
    CHECK_MPI(MPI_File_set_view(fh, 0, MPI_INT, ft, "native", MPI_INFO_NULL));
    int *buf = malloc(N * sizeof(int));
    for (int round = 0; round < 3; round++) {
        for (int i = 0; i < N; i++)
            buf[i] = rank + 1 + 100 * round;
        CHECK_MPI(MPI_File_write_at(fh, 0, buf, N, MPI_INT, &st));
        MPI_Barrier(MPI_COMM_WORLD);
        CHECK_MPI(MPI_File_read_at(fh, 0, buf, N, MPI_INT, &st));
        MPI_Get_count(&st, MPI_INT, &count);
        CHECK_INT_EQ(count, N);
        int first = buf[0], mixed = 0;
        CHECK(first >= 1 + 100 * round && first <= size + 100 * round, "round %d: int 0 is %d", round, first);
        for (int i = 1; i < N; i++)
            mixed += buf[i] != first;
        CHECK(mixed == 0, "round %d: %d ints differ from the first (%d): writes interleaved", round, mixed, first);
        MPI_Barrier(MPI_COMM_WORLD);
    }
    CHECK_MPI(MPI_File_set_atomicity(fh, 0));
    MPI_Type_free(&every_other);
    MPI_Type_free(&ft);
    CHECK_MPI(MPI_File_close(&fh));

    /* ---- external32 ---- */
    CHECK_MPI(MPI_File_open(MPI_COMM_WORLD, io_path("ext32"), MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh));
    CHECK_MPI(MPI_File_set_view(fh, 0, MPI_INT, MPI_INT, "external32", MPI_INFO_NULL));
    char rep[MPI_MAX_DATAREP_STRING];
    MPI_Offset d;
    MPI_Datatype e, f;
    CHECK_MPI(MPI_File_get_view(fh, &d, &e, &f, rep));
    CHECK_STR_EQ(rep, "external32");
    MPI_Aint ext;
    CHECK_MPI(MPI_File_get_type_extent(fh, MPI_INT, &ext));
    CHECK_INT_EQ((int)ext, 4);
    int vals[2] = {0x01020304 + rank, -2 - rank};
    CHECK_MPI(MPI_File_write_at(fh, 2 * rank, vals, 2, MPI_INT, &st));
    MPI_Get_count(&st, MPI_INT, &count);
    CHECK_INT_EQ(count, 2);
    MPI_File_sync(fh);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_File_sync(fh);
    int back[2] = {0, 0};
    CHECK_MPI(MPI_File_read_at(fh, 2 * rank, back, 2, MPI_INT, &st));
    CHECK_INT_EQ(back[0], vals[0]);
    CHECK_INT_EQ(back[1], vals[1]);
    CHECK_MPI(MPI_File_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL));
    unsigned char raw[8];
    CHECK_MPI(MPI_File_read_at(fh, 8 * rank, raw, 8, MPI_BYTE, &st));
    unsigned char want[8] = {0x01, 0x02, 0x03, (unsigned char)(0x04 + rank), 0xff, 0xff, 0xff, (unsigned char)(0xfe - rank)};
    CHECK(!memcmp(raw, want, 8), "external32 bytes %02x %02x %02x %02x %02x %02x %02x %02x", raw[0], raw[1], raw[2], raw[3], raw[4], raw[5], raw[6], raw[7]);
    CHECK_MPI(MPI_File_close(&fh));

    /* ---- a user-defined representation ----
     * MPICH refuses conversion functions (see README): there, only the
     * registration without them and the duplicate name are checked. */
    if (TU_PEER_MPICH) {
        /* MPICH raises MPI_Register_datarep's errors on a communicator. */
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
        MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
        CHECK_MPI(MPI_Register_datarep("gridmpi-test-plain", MPI_CONVERSION_FN_NULL, MPI_CONVERSION_FN_NULL, extent_fn, NULL));
        int rc = MPI_Register_datarep("gridmpi-test-plain", MPI_CONVERSION_FN_NULL, MPI_CONVERSION_FN_NULL, extent_fn, NULL);
        CHECK_ERR_CLASS(rc, MPI_ERR_DUP_DATAREP);
        free(buf);
        io_teardown();
        MPI_Finalize();
        return test_finish();
    }
    CHECK_MPI(MPI_Register_datarep("gridmpi-test-negate", negate_read, negate_write, extent_fn, NULL));
    int rc = MPI_Register_datarep("gridmpi-test-negate", negate_read, negate_write, extent_fn, NULL);
    CHECK_ERR_CLASS(rc, MPI_ERR_DUP_DATAREP);
    CHECK_MPI(MPI_File_open(MPI_COMM_WORLD, io_path("user"), MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh));
    CHECK_MPI(MPI_File_set_view(fh, 0, MPI_INT, MPI_INT, "gridmpi-test-negate", MPI_INFO_NULL));
    int u[3] = {10 + rank, 20 + rank, 30 + rank};
    CHECK_MPI(MPI_File_write_at(fh, 3 * rank, u, 3, MPI_INT, &st));
    CHECK(conversions > 0, "the write conversion function was not called");
    MPI_File_sync(fh);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_File_sync(fh);
    int ub[3] = {0, 0, 0};
    CHECK_MPI(MPI_File_read_at(fh, 3 * rank, ub, 3, MPI_INT, &st));
    CHECK(ub[0] == u[0] && ub[1] == u[1] && ub[2] == u[2], "read back through the representation: %d %d %d", ub[0], ub[1], ub[2]);
    CHECK_MPI(MPI_File_set_view(fh, 0, MPI_INT, MPI_INT, "native", MPI_INFO_NULL));
    CHECK_MPI(MPI_File_read_at(fh, 3 * rank, ub, 3, MPI_INT, &st));
    CHECK(ub[0] == -u[0] && ub[1] == -u[1] && ub[2] == -u[2], "the file holds %d %d %d, not the negated values", ub[0], ub[1], ub[2]);
    CHECK_MPI(MPI_File_close(&fh));

    free(buf);
    io_teardown();
    MPI_Finalize();
    return test_finish();
}
