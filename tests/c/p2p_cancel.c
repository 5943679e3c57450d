/* gridmpi-test: ranks=1,2 timeout=60 */
/*
 * Cancel and Request_free: cancelling a receive that can never match
 * (Test_cancelled true, and a message sent later is not consumed by it);
 * cancelling a started persistent receive, then starting it again;
 * MPI_Request_free on an active send (the data still arrives) and on an
 * inactive persistent request; Status_set_cancelled.
 */
#include "testutil.h"

/* After this returns, the rank I send to (rank + 1) has passed the same
 * point: it sends me a token and I wait for it. */
static void token_exchange(int rank, int size, int tag)
{
    int out = rank, in = -1;
    int to = (rank + size - 1) % size, from = (rank + 1) % size;
    CHECK_MPI(MPI_Sendrecv(&out, 1, MPI_INT, to, tag, &in, 1, MPI_INT, from, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    CHECK_INT_EQ(in, from);
}

int main(int argc, char **argv)
{
    int size;
    int rank = test_init(&argc, &argv, &size);
    MPI_Comm comm = MPI_COMM_WORLD;
    MPI_Status st;
    int flag;
    int peer = (rank + 1) % size;      /* I send to peer */
    int from = (rank + size - 1) % size; /* I receive from from */

    /* 1. Cancel a receive nobody will match. */
    int buf[16];
    MPI_Request req;
    CHECK_MPI(MPI_Irecv(buf, 16, MPI_INT, from, 100, comm, &req));
    CHECK_MPI(MPI_Cancel(&req));
    CHECK_MPI(MPI_Wait(&req, &st));
    CHECK(req == MPI_REQUEST_NULL, "Wait on a cancelled request did not free it");
    flag = 0;
    CHECK_MPI(MPI_Test_cancelled(&st, &flag));
    CHECK(flag == 1, "Test_cancelled after cancelling an unmatched receive gave %d", flag);

    /* ANY_SOURCE receive, cancelled, completed with Test. */
    CHECK_MPI(MPI_Irecv(buf, 16, MPI_INT, MPI_ANY_SOURCE, 101, comm, &req));
    CHECK_MPI(MPI_Cancel(&req));
    flag = 0;
    while (!flag)
        CHECK_MPI(MPI_Test(&req, &flag, &st));
    CHECK_MPI(MPI_Test_cancelled(&st, &flag));
    CHECK(flag == 1, "Test_cancelled on cancelled ANY_SOURCE receive gave %d", flag);

    /* 2. A cancelled receive does not consume a later message with its
     * envelope: the sender of tag 102 waits for a token that the receiver
     * sends only after its cancel completed. */
    CHECK_MPI(MPI_Irecv(buf, 16, MPI_INT, from, 102, comm, &req));
    CHECK_MPI(MPI_Cancel(&req));
    CHECK_MPI(MPI_Wait(&req, &st));
    CHECK_MPI(MPI_Test_cancelled(&st, &flag));
    CHECK(flag == 1, "cancel of receive tag 102 failed");
    token_exchange(rank, size, 200);
    {
        int out[16], in[16];
        fill_ints(out, 16, rank + 1);
        MPI_Request r2;
        CHECK_MPI(MPI_Isend(out, 16, MPI_INT, peer, 102, comm, &r2));
        CHECK_MPI(MPI_Recv(in, 16, MPI_INT, from, 102, comm, &st));
        check_ints(in, 16, from + 1, "message after a cancelled receive");
        CHECK_MPI(MPI_Test_cancelled(&st, &flag));
        CHECK(flag == 0, "Test_cancelled true for a normal receive");
        CHECK_MPI(MPI_Wait(&r2, &st));
    }

    /* 3. Cancel a started persistent receive, then reuse it. */
    {
        int in[8], out[8];
        MPI_Request preq;
        CHECK_MPI(MPI_Recv_init(in, 8, MPI_INT, from, 103, comm, &preq));
        CHECK_MPI(MPI_Start(&preq));
        CHECK_MPI(MPI_Cancel(&preq));
        CHECK_MPI(MPI_Wait(&preq, &st));
        CHECK(preq != MPI_REQUEST_NULL, "Wait freed a persistent request");
        CHECK_MPI(MPI_Test_cancelled(&st, &flag));
        CHECK(flag == 1, "cancel of a started persistent receive failed");
        CHECK_MPI(MPI_Start(&preq));
        token_exchange(rank, size, 201);
        fill_ints(out, 8, 300 + rank);
        CHECK_MPI(MPI_Send(out, 8, MPI_INT, peer, 103, comm));
        CHECK_MPI(MPI_Wait(&preq, &st));
        CHECK_MPI(MPI_Test_cancelled(&st, &flag));
        CHECK(flag == 0, "persistent receive restarted after cancel reports cancelled");
        check_ints(in, 8, 300 + from, "persistent receive restarted after cancel");
        CHECK_MPI(MPI_Request_free(&preq));
        CHECK(preq == MPI_REQUEST_NULL, "Request_free did not null the handle");
    }

    /* 4. Request_free on an active send: the message still arrives. The
     * buffer is kept until the peer acknowledges. */
    {
        int n = 100000;
        int *out = tu_malloc(sizeof(int) * n), *in = tu_malloc(sizeof(int) * n);
        fill_ints(out, n, 400 + rank);
        MPI_Request sreq;
        CHECK_MPI(MPI_Isend(out, n, MPI_INT, peer, 104, comm, &sreq));
        CHECK_MPI(MPI_Request_free(&sreq));
        CHECK(sreq == MPI_REQUEST_NULL, "Request_free on active send did not null the handle");
        CHECK_MPI(MPI_Recv(in, n, MPI_INT, from, 104, comm, &st));
        check_ints(in, n, 400 + from, "send whose request was freed while active");
        int ack = 1, ack_in = 0;
        CHECK_MPI(MPI_Sendrecv(&ack, 1, MPI_INT, from, 105, &ack_in, 1, MPI_INT, peer, 105, comm, &st));
        free(out);
        free(in);
    }

    /* 5. Status_set_cancelled / Test_cancelled on a user status. */
    MPI_Status us;
    memset(&us, 0, sizeof us);
    CHECK_MPI(MPI_Status_set_cancelled(&us, 1));
    CHECK_MPI(MPI_Test_cancelled(&us, &flag));
    CHECK(flag == 1, "Status_set_cancelled(1) not seen by Test_cancelled");
    CHECK_MPI(MPI_Status_set_cancelled(&us, 0));
    CHECK_MPI(MPI_Test_cancelled(&us, &flag));
    CHECK(flag == 0, "Status_set_cancelled(0) not seen by Test_cancelled");

    MPI_Finalize();
    return test_finish();
}
