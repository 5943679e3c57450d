/* gridmpi-test: ranks=1,2,3 timeout=60 */
/*
 * No items of MPI_DATATYPE_NULL: point-to-point calls with a zero count
 * and MPI_DATATYPE_NULL succeed, to MPI_PROC_NULL and to a real peer, in
 * the blocking, nonblocking, send-receive and persistent forms, and the
 * receive's status counts 0 (MPICH accepts them too; programs pass the
 * null type where they have nothing to send). With items, the null type
 * is still an MPI_ERR_TYPE.
 */
#include "testutil.h"

int main(int argc, char **argv)
{
    int rank, size, cls, n = -1, x = 7;
    MPI_Status st;
    MPI_Request r[2];
    CHECK_MPI(MPI_Init(&argc, &argv));
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);

    /* Open MPI 5.0.11 refuses the null type even with no items
     * (tests/README.md); the rest runs against it too. */
    if (TU_PEER_OPENMPI)
        goto with_items;

    /* To and from nobody. */
    CHECK_MPI(MPI_Send(NULL, 0, MPI_DATATYPE_NULL, MPI_PROC_NULL, 1, MPI_COMM_WORLD));
    CHECK_MPI(MPI_Recv(NULL, 0, MPI_DATATYPE_NULL, MPI_PROC_NULL, 1, MPI_COMM_WORLD, &st));
    CHECK(st.MPI_SOURCE == MPI_PROC_NULL && st.MPI_TAG == MPI_ANY_TAG, "status of a receive from MPI_PROC_NULL: source %d tag %d", st.MPI_SOURCE, st.MPI_TAG);
    CHECK_MPI(MPI_Irecv(NULL, 0, MPI_DATATYPE_NULL, MPI_PROC_NULL, 1, MPI_COMM_WORLD, &r[0]));
    CHECK_MPI(MPI_Isend(NULL, 0, MPI_DATATYPE_NULL, MPI_PROC_NULL, 1, MPI_COMM_WORLD, &r[1]));
    CHECK_MPI(MPI_Waitall(2, r, MPI_STATUSES_IGNORE));

    /* Around a ring. */
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    CHECK_MPI(MPI_Sendrecv(NULL, 0, MPI_DATATYPE_NULL, right, 2, NULL, 0, MPI_DATATYPE_NULL, left, 2, MPI_COMM_WORLD, &st));
    MPI_Get_count(&st, MPI_BYTE, &n);
    CHECK(st.MPI_SOURCE == left && st.MPI_TAG == 2 && n == 0, "sendrecv: source %d tag %d count %d", st.MPI_SOURCE, st.MPI_TAG, n);
    CHECK_MPI(MPI_Irecv(NULL, 0, MPI_DATATYPE_NULL, left, 3, MPI_COMM_WORLD, &r[0]));
    CHECK_MPI(MPI_Isend(NULL, 0, MPI_DATATYPE_NULL, right, 3, MPI_COMM_WORLD, &r[1]));
    CHECK_MPI(MPI_Waitall(2, r, MPI_STATUSES_IGNORE));
    /* A zero-count message of the null type meets a zero-count receive of
     * another type. */
    CHECK_MPI(MPI_Irecv(&x, 0, MPI_INT, left, 4, MPI_COMM_WORLD, &r[0]));
    CHECK_MPI(MPI_Send(NULL, 0, MPI_DATATYPE_NULL, right, 4, MPI_COMM_WORLD));
    CHECK_MPI(MPI_Wait(&r[0], &st));
    MPI_Get_count(&st, MPI_INT, &n);
    CHECK(n == 0 && x == 7, "count %d, buffer %d", n, x);

    /* Persistent. */
    CHECK_MPI(MPI_Recv_init(NULL, 0, MPI_DATATYPE_NULL, left, 5, MPI_COMM_WORLD, &r[0]));
    CHECK_MPI(MPI_Send_init(NULL, 0, MPI_DATATYPE_NULL, right, 5, MPI_COMM_WORLD, &r[1]));
    for (int i = 0; i < 3; i++) {
        CHECK_MPI(MPI_Startall(2, r));
        CHECK_MPI(MPI_Waitall(2, r, MPI_STATUSES_IGNORE));
    }
    MPI_Request_free(&r[0]);
    MPI_Request_free(&r[1]);

    /* With items the null type is an error. */
with_items:;
    int rc = MPI_Send(&x, 1, MPI_DATATYPE_NULL, MPI_PROC_NULL, 6, MPI_COMM_WORLD);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_TYPE, "one item of MPI_DATATYPE_NULL: error class %d", cls);
    rc = MPI_Recv(&x, 1, MPI_DATATYPE_NULL, left, 6, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_TYPE, "receive of one item of MPI_DATATYPE_NULL: error class %d", cls);

    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();
    return test_finish();
}
