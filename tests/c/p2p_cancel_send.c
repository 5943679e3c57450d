/* gridmpi-test: ranks=2 timeout=60 */
/*
 * MPI_Cancel of a send (MPI 4.1, 3.8.4): a wait for a cancelled send
 * returns whatever the receiver does, and either the cancellation or the
 * communication succeeds, not both.
 *   - A rendezvous-sized MPI_Isend and a small MPI_Issend that rank 1
 *     never receives: MPI_Wait returns, MPI_Test_cancelled is true, and
 *     rank 1 never sees them (MPI_Iprobe finds nothing; its next receive
 *     on that tag gets the message sent after).
 *   - A send that rank 1 has already received: the cancellation fails
 *     (Test_cancelled false) and the data arrived whole.
 *   - A synchronous send to ourselves that we never receive
 *     (MPI_Request_get_status says cancelled too, as mpi4py checks).
 *   - A persistent synchronous send (its status says cancelled, as a
 *     nonpersistent one's does), started again afterwards.
 * A small standard MPI_Isend completes by itself, and the standard lets
 * its cancellation fail: if it does, rank 1 receives it.
 * MPICH 5.0.2 and Open MPI 5.0 never return from the wait for a send
 * nobody receives, cancelled or not: they run the already-received case
 * only (tests/README.md).
 */
#include "testutil.h"

#define BIG (1 << 20)

static char big[BIG], got[BIG];

int main(int argc, char **argv)
{
    int size;
    int rank = test_init(&argc, &argv, &size);
    MPI_Comm comm = MPI_COMM_WORLD;
    MPI_Request r;
    MPI_Status st;
    int flag, cancelled[3] = {0, 0, 0};

    /* 1. Sends rank 1 never receives: a rendezvous, a synchronous eager,
     *    a standard eager one (whose cancellation may fail). */
    int lens[3] = {BIG, 16, 16};
    for (int k = 0; k < 3 && TEST_IMPL_GRIDMPI; k++) {
        if (rank == 0) {
            memset(big, 'a' + k, (size_t)lens[k]);
            if (k == 1)
                CHECK_MPI(MPI_Issend(big, lens[k], MPI_CHAR, 1, 10 + k, comm, &r));
            else
                CHECK_MPI(MPI_Isend(big, lens[k], MPI_CHAR, 1, 10 + k, comm, &r));
            CHECK_MPI(MPI_Cancel(&r));
            CHECK_MPI(MPI_Wait(&r, &st));
            CHECK_MPI(MPI_Test_cancelled(&st, &cancelled[k]));
        }
    }
    if (rank == 0 && TEST_IMPL_GRIDMPI) {
        CHECK(cancelled[0], "a rendezvous send nobody received was not cancelled");
        CHECK(cancelled[1], "a synchronous send nobody received was not cancelled");
    }
    CHECK_MPI(MPI_Bcast(cancelled, 3, MPI_INT, 0, comm));
    if (rank == 1 && TEST_IMPL_GRIDMPI) {
        for (int k = 0; k < 3; k++) {
            if (cancelled[k]) {
                CHECK_MPI(MPI_Iprobe(0, 10 + k, comm, &flag, MPI_STATUS_IGNORE));
                CHECK(!flag, "cancelled send %d is still there to receive", k);
            } else {
                CHECK_MPI(MPI_Recv(got, lens[k], MPI_CHAR, 0, 10 + k, comm, &st));
                CHECK(got[0] == 'a' + k && got[lens[k] - 1] == 'a' + k, "send %d (not cancelled) arrived wrong", k);
            }
        }
    }
    /* The next message on a cancelled tag is the one received. */
    if (rank == 0) {
        memset(big, 'z', BIG);
        CHECK_MPI(MPI_Send(big, BIG, MPI_CHAR, 1, 10, comm));
    } else {
        CHECK_MPI(MPI_Recv(got, BIG, MPI_CHAR, 0, 10, comm, &st));
        int n;
        MPI_Get_count(&st, MPI_CHAR, &n);
        CHECK(n == BIG && got[0] == 'z' && got[BIG - 1] == 'z', "the send after a cancelled one: %d bytes, '%c'", n, got[0]);
    }

    /* 2. A send already received: the cancellation fails. */
    if (rank == 1) {
        memset(got, 0, BIG);
        CHECK_MPI(MPI_Recv(got, BIG, MPI_CHAR, 0, 20, comm, &st));
        CHECK(got[0] == 'm' && got[BIG - 1] == 'm', "a received send arrived wrong");
        CHECK_MPI(MPI_Send(NULL, 0, MPI_CHAR, 0, 21, comm));
    } else {
        memset(big, 'm', BIG);
        CHECK_MPI(MPI_Issend(big, BIG, MPI_CHAR, 1, 20, comm, &r));
        CHECK_MPI(MPI_Recv(NULL, 0, MPI_CHAR, 1, 21, comm, MPI_STATUS_IGNORE));
        CHECK_MPI(MPI_Cancel(&r));
        CHECK_MPI(MPI_Wait(&r, &st));
        CHECK_MPI(MPI_Test_cancelled(&st, &flag));
        CHECK(!flag, "a send already received was cancelled");
    }

    /* 3. A synchronous send to ourselves nobody receives. */
    if (TEST_IMPL_GRIDMPI) {
        int one = 1;
        CHECK_MPI(MPI_Issend(&one, 1, MPI_INT, rank, 30, comm, &r));
        CHECK_MPI(MPI_Cancel(&r));
        /* MPI_Request_get_status says so too, before the wait. */
        int done = 0;
        while (!done)
            CHECK_MPI(MPI_Request_get_status(r, &done, &st));
        CHECK_MPI(MPI_Test_cancelled(&st, &flag));
        CHECK(flag, "MPI_Request_get_status of a cancelled send to ourselves: not cancelled");
        CHECK_MPI(MPI_Wait(&r, &st));
        CHECK_MPI(MPI_Test_cancelled(&st, &flag));
        CHECK(flag, "a synchronous send to ourselves was not cancelled");
        CHECK_MPI(MPI_Iprobe(rank, 30, comm, &flag, MPI_STATUS_IGNORE));
        CHECK(!flag, "the send to ourselves is still there");
    }

    /* 4. A persistent synchronous send nobody receives: its status says
     *    cancelled too, and the request can be started again. */
    if (rank == 0 && TEST_IMPL_GRIDMPI) {
        MPI_Request p;
        CHECK_MPI(MPI_Ssend_init(big, 100, MPI_CHAR, 1, 40, comm, &p));
        CHECK_MPI(MPI_Start(&p));
        CHECK_MPI(MPI_Cancel(&p));
        CHECK_MPI(MPI_Wait(&p, &st));
        CHECK_MPI(MPI_Test_cancelled(&st, &flag));
        CHECK(flag, "a persistent synchronous send nobody received was not cancelled");
        CHECK_MPI(MPI_Barrier(comm));
        memset(big, 'p', 100);
        CHECK_MPI(MPI_Start(&p));
        CHECK_MPI(MPI_Wait(&p, &st));
        CHECK_MPI(MPI_Test_cancelled(&st, &flag));
        CHECK(!flag, "the restarted persistent send says cancelled");
        CHECK_MPI(MPI_Request_free(&p));
    } else if (rank == 1 && TEST_IMPL_GRIDMPI) {
        CHECK_MPI(MPI_Barrier(comm)); /* rank 0 has cancelled */
        CHECK_MPI(MPI_Recv(got, 100, MPI_CHAR, 0, 40, comm, &st));
        CHECK(got[0] == 'p' && got[99] == 'p', "the restarted persistent send arrived wrong ('%c')", got[0]);
    }

    MPI_Finalize();
    return test_finish();
}
