/* gridmpi-test: ranks=2,3,4 min-ranks=2 timeout=60 */
/*
 * Ports within one job: the world split into a low and a high half; the
 * low half's root opens a port and sends its name (over MPI_COMM_WORLD) to
 * the high half's root; the low half accepts, the high half connects.
 * Checked: the intercommunicator's sizes and ranks, traffic both ways with
 * patterns, a collective across (bcast from the low root), a merge, a
 * second accept/connect on the same port, disconnect (the handle becomes
 * MPI_COMM_NULL), close of the port, and errors: a malformed port name and
 * a closed port fail with MPI_ERR_PORT under MPI_ERRORS_RETURN.
 */
#include "testutil.h"

static void traffic(MPI_Comm inter, int low)
{
    int rsize, rank;
    MPI_Comm_remote_size(inter, &rsize);
    MPI_Comm_rank(inter, &rank);
    for (int r = 0; r < rsize; r++) {
        int out[4], in[4];
        for (int i = 0; i < 4; i++)
            out[i] = (low ? 1000 : 2000) + 100 * rank + 10 * r + i;
        MPI_Status st;
        CHECK_MPI(MPI_Sendrecv(out, 4, MPI_INT, r, 7, in, 4, MPI_INT, r, 7, inter, &st));
        for (int i = 0; i < 4; i++)
            CHECK(in[i] == (low ? 2000 : 1000) + 100 * r + 10 * rank + i, "from remote %d: in[%d] = %d", r, i, in[i]);
        CHECK_INT_EQ(st.MPI_SOURCE, r);
    }
}

int main(int argc, char **argv)
{
    int size;
    int rank = test_init(&argc, &argv, &size);
    int nlow = size / 2, low = rank < nlow;
    MPI_Comm half, inter, inter2, merged;
    char port[MPI_MAX_PORT_NAME];

    CHECK_MPI(MPI_Comm_split(MPI_COMM_WORLD, low, rank, &half));
    if (rank == 0) {
        CHECK_MPI(MPI_Open_port(MPI_INFO_NULL, port));
        CHECK_MPI(MPI_Send(port, MPI_MAX_PORT_NAME, MPI_CHAR, nlow, 0, MPI_COMM_WORLD));
    } else if (rank == nlow) {
        CHECK_MPI(MPI_Recv(port, MPI_MAX_PORT_NAME, MPI_CHAR, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    }
    if (low)
        CHECK_MPI(MPI_Comm_accept(port, MPI_INFO_NULL, 0, half, &inter));
    else
        CHECK_MPI(MPI_Comm_connect(port, MPI_INFO_NULL, 0, half, &inter));

    int flag, n, r;
    MPI_Comm_test_inter(inter, &flag);
    CHECK_INT_EQ(flag, 1);
    MPI_Comm_size(inter, &n);
    MPI_Comm_rank(inter, &r);
    CHECK_INT_EQ(n, low ? nlow : size - nlow);
    CHECK_INT_EQ(r, low ? rank : rank - nlow);
    MPI_Comm_remote_size(inter, &n);
    CHECK_INT_EQ(n, low ? size - nlow : nlow);
    traffic(inter, low);

    int v = low ? -1 : 0;
    if (low && rank == 0)
        v = 4242;
    CHECK_MPI(MPI_Bcast(&v, 1, MPI_INT, low ? (rank == 0 ? MPI_ROOT : MPI_PROC_NULL) : 0, inter));
    if (!low)
        CHECK_INT_EQ(v, 4242);

    CHECK_MPI(MPI_Intercomm_merge(inter, !low, &merged));
    MPI_Comm_rank(merged, &n);
    CHECK_INT_EQ(n, rank);
    int sum = 0;
    CHECK_MPI(MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, merged));
    CHECK_INT_EQ(sum, size * (size - 1) / 2);
    MPI_Comm_free(&merged);

    /* The same port serves a second connection. */
    if (low)
        CHECK_MPI(MPI_Comm_accept(port, MPI_INFO_NULL, 0, half, &inter2));
    else
        CHECK_MPI(MPI_Comm_connect(port, MPI_INFO_NULL, 0, half, &inter2));
    traffic(inter2, low);
    CHECK_MPI(MPI_Comm_disconnect(&inter2));
    CHECK(inter2 == MPI_COMM_NULL, "disconnect left the handle");
    CHECK_MPI(MPI_Comm_disconnect(&inter));

    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0)
        CHECK_MPI(MPI_Close_port(port));
    MPI_Barrier(MPI_COMM_WORLD);

    /* Errors come back with MPI_ERR_PORT. */
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    MPI_Comm bad;
    int rc = MPI_Comm_connect("no such port", MPI_INFO_NULL, 0, MPI_COMM_SELF, &bad);
    int cls = -1;
    MPI_Error_class(rc, &cls);
    CHECK_INT_EQ(cls, MPI_ERR_PORT);
    if (rank == nlow) {
        /* The port is closed: nobody listens there any more. */
        rc = MPI_Comm_connect(port, MPI_INFO_NULL, 0, MPI_COMM_SELF, &bad);
        MPI_Error_class(rc, &cls);
        CHECK_INT_EQ(cls, MPI_ERR_PORT);
    }
    MPI_Comm_free(&half);
    MPI_Finalize();
    return test_finish();
}
