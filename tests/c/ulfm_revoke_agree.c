/* gridmpi-test: ranks=1,2,3,4 timeout=60 */
/*
 * ULFM without failures: MPIX_Comm_agree ANDs the flags of every rank (and
 * says nothing failed), MPIX_Comm_shrink of a healthy communicator is a
 * copy of it, MPIX_Comm_revoke by one rank fails a receive posted at every
 * other rank with MPIX_ERR_REVOKED and every later operation on it, while
 * agreement and shrinking still work on the revoked communicator.
 */
#include "testutil.h"
#include <unistd.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm comm;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);

    /* Agreement: bit r cleared by rank r. */
    for (int round = 0; round < 3; round++) {
        int flag = ~(1 << rank);
        int rc = MPIX_Comm_agree(comm, &flag);
        CHECK(rc == MPI_SUCCESS, "agree round %d returned %d", round, rc);
        int want = ~0;
        for (int r = 0; r < size; r++)
            want &= ~(1 << r);
        CHECK(flag == want, "agree round %d: flag %#x, want %#x", round, flag, want);
    }
    MPI_Group failed;
    CHECK(MPIX_Comm_get_failed(comm, &failed) == MPI_SUCCESS, "get_failed");
    int n = -1;
    MPI_Group_size(failed, &n);
    CHECK(n == 0, "%d failed processes reported without failures", n);
    MPI_Group_free(&failed);

    /* Shrinking a healthy communicator: same ranks, a working copy. */
    MPI_Comm s;
    CHECK(MPIX_Comm_shrink(comm, &s) == MPI_SUCCESS, "shrink");
    int srank = -1, ssize = -1;
    MPI_Comm_rank(s, &srank);
    MPI_Comm_size(s, &ssize);
    CHECK(srank == rank && ssize == size, "shrunk rank %d size %d", srank, ssize);
    int sum = 0;
    MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, s);
    CHECK(sum == size * (size - 1) / 2, "allreduce on the shrunk communicator: %d", sum);

    /* Revocation: rank 0 revokes; everyone else has a receive posted. */
    if (size > 1) {
        MPI_Request req = MPI_REQUEST_NULL;
        int buf = 0;
        if (rank != 0)
            MPI_Irecv(&buf, 1, MPI_INT, MPI_ANY_SOURCE, 7, comm, &req);
        MPI_Barrier(s);
        if (rank == 0)
            CHECK(MPIX_Comm_revoke(comm) == MPI_SUCCESS, "revoke");
        if (rank != 0) {
            int rc = MPI_Wait(&req, MPI_STATUS_IGNORE);
            int cls = -1;
            MPI_Error_class(rc, &cls);
            CHECK(cls == MPIX_ERR_REVOKED, "the pending receive ended with class %d, not MPIX_ERR_REVOKED", cls);
        }
        int revoked = 0;
        MPIX_Comm_is_revoked(comm, &revoked);
        CHECK(revoked == 1, "MPIX_Comm_is_revoked says %d", revoked);
        int acked = -1;
        CHECK(MPIX_Comm_ack_failed(comm, 10, &acked) == MPI_SUCCESS && acked == 0, "ack_failed: %d acknowledged", acked);
        /* Everything after fails the same way, at every rank. */
        int rc = MPI_Send(&rank, 1, MPI_INT, (rank + 1) % size, 8, comm);
        int cls = -1;
        MPI_Error_class(rc, &cls);
        CHECK(cls == MPIX_ERR_REVOKED, "send on a revoked communicator: class %d", cls);
        rc = MPI_Barrier(comm);
        MPI_Error_class(rc, &cls);
        CHECK(cls == MPIX_ERR_REVOKED, "barrier on a revoked communicator: class %d", cls);
        /* Agreement still works on it. */
        int flag = 1;
        rc = MPIX_Comm_agree(comm, &flag);
        CHECK(rc == MPI_SUCCESS && flag == 1, "agree on a revoked communicator: rc %d flag %d", rc, flag);
        MPI_Comm s2;
        CHECK(MPIX_Comm_shrink(comm, &s2) == MPI_SUCCESS, "shrink of a revoked communicator");
        sum = 0;
        MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, s2);
        CHECK(sum == size * (size - 1) / 2, "allreduce after shrinking the revoked communicator: %d", sum);
        MPI_Comm_free(&s2);
    }
    MPI_Comm_free(&s);
    MPI_Comm_free(&comm);
    MPI_Finalize();
    return test_finish();
}
