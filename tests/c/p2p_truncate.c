/* gridmpi-test: ranks=1,2 timeout=60 */
/*
 * Truncation: a message longer than the receive buffer gives an error of
 * class MPI_ERR_TRUNCATE (with MPI_ERRORS_RETURN on the communicator) from
 * Recv, from Wait of an Irecv, and MPI_ERR_IN_STATUS from Waitall with
 * MPI_ERR_TRUNCATE in that receive's status, for small and large (1 MiB)
 * messages; memory past the receive buffer is never written; the sender's
 * operation succeeds; communication works normally afterwards.
 */
#include "testutil.h"

#define GUARD 64

static int receive_truncated(int mode, int from, int tag, int nsent, MPI_Comm comm)
{
    int nrecv = nsent / 2 + 1;
    unsigned char *raw = tu_malloc(nrecv * sizeof(int) + GUARD);
    memset(raw, 0x5A, nrecv * sizeof(int) + GUARD);
    int *buf = (int *)raw;
    MPI_Status st;
    int rc;
    const char *names[] = {"Recv", "Irecv+Wait", "Irecv+Waitall"};
    if (mode == 0) {
        rc = MPI_Recv(buf, nrecv, MPI_INT, from, tag, comm, &st);
        CHECK_ERR_CLASS(rc, MPI_ERR_TRUNCATE);
    } else if (mode == 1) {
        MPI_Request req;
        CHECK_MPI(MPI_Irecv(buf, nrecv, MPI_INT, from, tag, comm, &req));
        rc = MPI_Wait(&req, &st);
        CHECK_ERR_CLASS(rc, MPI_ERR_TRUNCATE);
    } else {
        MPI_Request reqs[2];
        MPI_Status sts[2];
        int dummy_in = 0, dummy_out = 5;
        CHECK_MPI(MPI_Irecv(&dummy_in, 1, MPI_INT, 0, 12345, MPI_COMM_SELF, &reqs[0]));
        CHECK_MPI(MPI_Irecv(buf, nrecv, MPI_INT, from, tag, comm, &reqs[1]));
        CHECK_MPI(MPI_Send(&dummy_out, 1, MPI_INT, 0, 12345, MPI_COMM_SELF));
        sts[0].MPI_ERROR = sts[1].MPI_ERROR = -1;
        rc = MPI_Waitall(2, reqs, sts);
        CHECK_ERR_CLASS(rc, MPI_ERR_IN_STATUS);
        CHECK_ERR_CLASS(sts[1].MPI_ERROR, MPI_ERR_TRUNCATE);
        CHECK(sts[0].MPI_ERROR == MPI_SUCCESS, "Waitall: status of the good receive has error %d", sts[0].MPI_ERROR);
        CHECK_INT_EQ(dummy_in, 5);
        st = sts[1];
    }
    for (int i = 0; i < GUARD; i++) {
        if (!CHECK(raw[nrecv * sizeof(int) + i] == 0x5A, "%s: truncated receive of %d ints into %d wrote past the buffer (offset +%d)",
                   names[mode], nsent, nrecv, i))
            break;
    }
    CHECK(st.MPI_SOURCE == from && st.MPI_TAG == tag, "%s: truncated status source %d tag %d", names[mode],
          st.MPI_SOURCE, st.MPI_TAG);
    free(raw);
    return rc;
}

int main(int argc, char **argv)
{
    int size;
    int rank = test_init(&argc, &argv, &size);
    MPI_Comm comm;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    int peer = (rank + 1) % size, from = (rank + size - 1) % size;
    const int lens[] = {10, 1 << 18};

    /* Open MPI 5.0.11 writes past the receive buffer when a large message
     * is truncated (heap corruption): only the small case there. */
    for (int l = 0; l < (TU_PEER_OPENMPI ? 1 : 2); l++) {
        int n = lens[l];
        int *out = tu_malloc(sizeof(int) * n);
        fill_ints(out, n, n);
        for (int mode = 0; mode < 3; mode++) {
            int tag = 10 * l + mode;
            MPI_Request sreq;
            CHECK_MPI(MPI_Isend(out, n, MPI_INT, peer, tag, comm, &sreq));
            receive_truncated(mode, from, tag, n, comm);
            /* The send itself is not in error. */
            CHECK_MPI(MPI_Wait(&sreq, MPI_STATUS_IGNORE));
            /* And the channel still works. */
            int *in = tu_malloc(sizeof(int) * n);
            CHECK_MPI(MPI_Sendrecv(out, n, MPI_INT, peer, 100 + tag, in, n, MPI_INT, from, 100 + tag, comm,
                                   MPI_STATUS_IGNORE));
            check_ints(in, n, n, "message after a truncated receive");
            free(in);
        }
        free(out);
    }
    /* A receive buffer of zero elements and a one-element message. */
    {
        int one = 1;
        MPI_Request sreq;
        CHECK_MPI(MPI_Isend(&one, 1, MPI_INT, peer, 50, comm, &sreq));
        int rc = MPI_Recv(NULL, 0, MPI_INT, from, 50, comm, MPI_STATUS_IGNORE);
        CHECK_ERR_CLASS(rc, MPI_ERR_TRUNCATE);
        CHECK_MPI(MPI_Wait(&sreq, MPI_STATUS_IGNORE));
    }
    MPI_Comm_free(&comm);
    MPI_Finalize();
    return test_finish();
}
