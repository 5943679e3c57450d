/* gridmpi-test: ranks=1 timeout=30 */
/*
 * Partitioned communication errors under MPI_ERRORS_RETURN: MPI_Pready on
 * a request not started, of a partition that does not exist (also through
 * MPI_Pready_range and MPI_Pready_list), on a receive; MPI_Parrived on a
 * send or of a partition that does not exist; MPI_Precv_init with
 * MPI_ANY_SOURCE or MPI_ANY_TAG (a partitioned receive names its sender);
 * MPI_Start of an active partitioned request. The error classes are
 * GridMPI's choice (the standard names none) and are checked only for it;
 * a failed call leaves the request usable.
 */
#include "testutil.h"

int main(int argc, char **argv)
{
    test_init(&argc, &argv, NULL);
    MPI_Comm comm;
    MPI_Comm_dup(MPI_COMM_SELF, &comm);
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    /* MPICH 5.0.2 raises MPI_Pready errors on MPI_COMM_WORLD, not on the
     * request's communicator. */
    if (TU_PEER_MPICH)
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int x[8], y[8], flag;
    MPI_Request s, r, w;
    CHECK_MPI(MPI_Psend_init(x, 4, 2, MPI_INT, 0, 1, comm, MPI_INFO_NULL, &s));
    CHECK_MPI(MPI_Precv_init(y, 4, 2, MPI_INT, 0, 1, comm, MPI_INFO_NULL, &r));
    int rc = MPI_Pready(0, s);
    CHECK(rc != MPI_SUCCESS, "MPI_Pready on a request not started succeeded");
    if (TEST_IMPL_GRIDMPI)
        CHECK_ERR_CLASS(rc, MPI_ERR_REQUEST);
    CHECK_MPI(MPI_Start(&s));
    CHECK_MPI(MPI_Start(&r));
    /* MPICH 5.0.2 lets an active partitioned request be started again. */
    if (!TU_PEER_MPICH) {
        rc = MPI_Start(&s);
        CHECK(rc != MPI_SUCCESS, "MPI_Start of an active partitioned request succeeded");
        if (TEST_IMPL_GRIDMPI)
            CHECK_ERR_CLASS(rc, MPI_ERR_REQUEST);
    }
    int bad[] = {4, -1};
    for (int i = 0; i < 2; i++) {
        rc = MPI_Pready(bad[i], s);
        CHECK(rc != MPI_SUCCESS, "MPI_Pready of partition %d of 4 succeeded", bad[i]);
        if (TEST_IMPL_GRIDMPI)
            CHECK_ERR_CLASS(rc, MPI_ERR_ARG);
    }
    rc = MPI_Pready_range(2, 4, s);
    CHECK(rc != MPI_SUCCESS, "MPI_Pready_range(2, 4) of 4 partitions succeeded");
    int list[2] = {1, 7};
    rc = MPI_Pready_list(2, list, s);
    CHECK(rc != MPI_SUCCESS, "MPI_Pready_list with partition 7 of 4 succeeded");
    rc = MPI_Pready(0, r);
    CHECK(rc != MPI_SUCCESS, "MPI_Pready on a receive succeeded");
    if (TEST_IMPL_GRIDMPI)
        CHECK_ERR_CLASS(rc, MPI_ERR_REQUEST);
    rc = MPI_Parrived(s, 0, &flag);
    CHECK(rc != MPI_SUCCESS, "MPI_Parrived on a send succeeded");
    rc = MPI_Parrived(r, 4, &flag);
    CHECK(rc != MPI_SUCCESS, "MPI_Parrived of partition 4 of 4 succeeded");
    rc = MPI_Precv_init(y, 4, 2, MPI_INT, MPI_ANY_SOURCE, 1, comm, MPI_INFO_NULL, &w);
    CHECK(rc != MPI_SUCCESS, "MPI_Precv_init from MPI_ANY_SOURCE succeeded");
    if (TEST_IMPL_GRIDMPI)
        CHECK_ERR_CLASS(rc, MPI_ERR_RANK);
    rc = MPI_Precv_init(y, 4, 2, MPI_INT, 0, MPI_ANY_TAG, comm, MPI_INFO_NULL, &w);
    CHECK(rc != MPI_SUCCESS, "MPI_Precv_init with MPI_ANY_TAG succeeded");
    if (TEST_IMPL_GRIDMPI)
        CHECK_ERR_CLASS(rc, MPI_ERR_TAG);

    /* After all that, the message goes through. The range and list calls
     * above failed on a partition that does not exist: whether the ones
     * before it were marked is not defined, so only partitions 0 and 3,
     * which neither named, are readied one by one. */
    for (int i = 0; i < 8; i++)
        x[i] = 10 + i;
    CHECK_MPI(MPI_Pready(0, s));
    CHECK_MPI(MPI_Pready(3, s));
    if (TEST_IMPL_GRIDMPI) {
        /* GridMPI checks a whole range or list before marking any of it. */
        CHECK_MPI(MPI_Pready_range(1, 2, s));
    }
    else {
        MPI_Pready(1, s);
        MPI_Pready(2, s);
    }
    CHECK_MPI(MPI_Wait(&s, MPI_STATUS_IGNORE));
    CHECK_MPI(MPI_Wait(&r, MPI_STATUS_IGNORE));
    for (int i = 0; i < 8; i++)
        CHECK_INT_EQ(y[i], 10 + i);
    MPI_Request_free(&s);
    MPI_Request_free(&r);
    MPI_Comm_free(&comm);
    MPI_Finalize();
    return test_finish();
}
