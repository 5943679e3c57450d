/* gridmpi-test: ranks=1,2,4 timeout=30 */
/*
 * Argument errors in collectives with MPI_ERRORS_RETURN (every rank makes
 * the same mistake, so nobody is left waiting): invalid root (MPI_ERR_ROOT),
 * MPI_OP_NULL (MPI_ERR_OP), a predefined op on a type it does not apply to
 * (MPI_ERR_OP), negative count (MPI_ERR_COUNT), MPI_DATATYPE_NULL
 * (MPI_ERR_TYPE); afterwards collectives work normally.
 */
#include "testutil.h"

int main(int argc, char **argv)
{
    int size;
    int rank = test_init(&argc, &argv, &size);
    MPI_Comm comm;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    int a[4] = {1, 2, 3, 4}, b[4];
    int rc;

    rc = MPI_Bcast(a, 4, MPI_INT, size, comm);
    CHECK_ERR_CLASS(rc, MPI_ERR_ROOT);
    rc = MPI_Bcast(a, 4, MPI_INT, -3, comm);
    CHECK_ERR_CLASS(rc, MPI_ERR_ROOT);
    rc = MPI_Reduce(a, b, 4, MPI_INT, MPI_SUM, size + 2, comm);
    CHECK_ERR_CLASS(rc, MPI_ERR_ROOT);
    rc = MPI_Allreduce(a, b, 4, MPI_INT, MPI_OP_NULL, comm);
    CHECK_ERR_CLASS(rc, MPI_ERR_OP);
    /* Open MPI 5.0.11 accepts MPI_SUM on MPI_BYTE. */
    if (!TU_PEER_OPENMPI) {
        rc = MPI_Allreduce(a, b, 4, MPI_BYTE, MPI_SUM, comm);
        CHECK_ERR_CLASS(rc, MPI_ERR_OP);
    }
    rc = MPI_Allreduce(a, b, 2, MPI_DOUBLE, MPI_BAND, comm);
    CHECK_ERR_CLASS(rc, MPI_ERR_OP);
    rc = MPI_Allreduce(a, b, 2, MPI_INT, MPI_MAXLOC, comm);
    CHECK_ERR_CLASS(rc, MPI_ERR_OP);
    rc = MPI_Bcast(a, -1, MPI_INT, 0, comm);
    CHECK_ERR_CLASS(rc, MPI_ERR_COUNT);
    /* MPICH 5.0.2 fails an internal assertion (dt_ptr) here instead of
     * returning MPI_ERR_TYPE; Open MPI 5.0.11 returns MPI_ERR_OP. */
    if (!TU_PEER_MPICH && !TU_PEER_OPENMPI) {
        rc = MPI_Allreduce(a, b, 4, MPI_DATATYPE_NULL, MPI_SUM, comm);
        CHECK_ERR_CLASS(rc, MPI_ERR_TYPE);
    }
    rc = MPI_Bcast(a, 4, MPI_DATATYPE_NULL, 0, comm);
    CHECK_ERR_CLASS(rc, MPI_ERR_TYPE);

    CHECK_MPI(MPI_Allreduce(a, b, 4, MPI_INT, MPI_SUM, comm));
    CHECK(b[0] == size && b[3] == 4 * size, "Allreduce after errors: %d %d", b[0], b[3]);
    (void)rank;
    MPI_Comm_free(&comm);
    MPI_Finalize();
    return test_finish();
}
