/* gridmpi-test: ranks=3,4 timeout=60 gridmpi-launcher-args='--with-ft ulfm' */
/*
 * A rank dies (SIGKILL, in the middle of the job) and the others go on,
 * as a ULFM program does: a receive from the dead rank fails with
 * MPIX_ERR_PROC_FAILED, a receive from MPI_ANY_SOURCE with
 * MPIX_ERR_PROC_FAILED_PENDING until the failure is acknowledged, a
 * collective fails, the survivors revoke, shrink and agree, and the
 * shrunk communicator works; the job ends well (gridmpirun exits 0).
 */
#include "testutil.h"
#include <signal.h>
#include <unistd.h>

static int cls_of(int rc)
{
    int c = -1;
    MPI_Error_class(rc, &c);
    return c;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    const int victim = size - 1;
    int x = rank;
    int rc = MPI_Allreduce(MPI_IN_PLACE, &x, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    /* The victim dies right after it: a survivor may learn of it before it
       saw the collective end, and then gets the error (ULFM allows it). */
    CHECK(rc == MPI_SUCCESS ? x == size * (size - 1) / 2 : cls_of(rc) == MPIX_ERR_PROC_FAILED, "allreduce before the failure: rc %d x %d", rc, x);
    if (rank == victim) {
        raise(SIGKILL);
    }
    /* A receive from the dead rank fails. */
    int buf = 0;
    rc = MPI_Recv(&buf, 1, MPI_INT, victim, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    CHECK(cls_of(rc) == MPIX_ERR_PROC_FAILED, "receive from the dead rank: class %d", cls_of(rc));
    /* From anyone: interrupted until acknowledged. */
    MPI_Request req;
    MPI_Irecv(&buf, 1, MPI_INT, MPI_ANY_SOURCE, 2, MPI_COMM_WORLD, &req);
    rc = MPI_Wait(&req, MPI_STATUS_IGNORE);
    CHECK(cls_of(rc) == MPIX_ERR_PROC_FAILED_PENDING, "any-source receive: class %d", cls_of(rc));
    CHECK(req != MPI_REQUEST_NULL, "the interrupted request was freed");
    MPIX_Comm_failure_ack(MPI_COMM_WORLD);
    MPI_Group acked;
    MPIX_Comm_failure_get_acked(MPI_COMM_WORLD, &acked);
    int n = 0, r0 = -1, r1 = -1;
    MPI_Group_size(acked, &n);
    CHECK(n == 1, "%d acknowledged failures", n);
    MPI_Group wg;
    MPI_Comm_group(MPI_COMM_WORLD, &wg);
    r0 = 0;
    MPI_Group_translate_ranks(acked, 1, &r0, wg, &r1);
    CHECK(r1 == victim, "the acknowledged failure is rank %d", r1);
    MPI_Group_free(&acked);
    MPI_Group_free(&wg);
    /* The survivors meet (everyone has seen the receive interrupted), then
       the receive waits for a real message. */
    int flag = 1;
    rc = MPIX_Comm_agree(MPI_COMM_WORLD, &flag);
    CHECK(rc == MPI_SUCCESS && flag == 1, "agree with an acknowledged failure: rc %d flag %d", rc, flag);
    if (rank == 0)
        for (int r = 1; r < victim; r++)
            MPI_Send(&r, 1, MPI_INT, r, 2, MPI_COMM_WORLD);
    if (rank != 0) {
        rc = MPI_Wait(&req, MPI_STATUS_IGNORE);
        CHECK(rc == MPI_SUCCESS && buf == rank, "any-source receive after the ack: rc %d buf %d", rc, buf);
    } else {
        MPI_Cancel(&req);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
    }
    /* The survivors meet again, so nobody revokes before everyone is done
       with the above. */
    flag = 1;
    rc = MPIX_Comm_agree(MPI_COMM_WORLD, &flag);
    CHECK(rc == MPI_SUCCESS && flag == 1, "agree with an acknowledged failure: rc %d flag %d", rc, flag);
    /* A collective on the world fails (revoked already, if a faster
       survivor got there first). */
    rc = MPI_Barrier(MPI_COMM_WORLD);
    CHECK(cls_of(rc) == MPIX_ERR_PROC_FAILED || cls_of(rc) == MPIX_ERR_REVOKED, "barrier with a dead member: class %d", cls_of(rc));
    /* Revoke, shrink, agree, and work on. */
    MPIX_Comm_revoke(MPI_COMM_WORLD);
    MPI_Comm s;
    rc = MPIX_Comm_shrink(MPI_COMM_WORLD, &s);
    CHECK(rc == MPI_SUCCESS, "shrink: %d", rc);
    int ssize = 0, srank = -1;
    MPI_Comm_size(s, &ssize);
    MPI_Comm_rank(s, &srank);
    CHECK(ssize == size - 1 && srank == rank, "shrunk: rank %d of %d", srank, ssize);
    flag = 1;
    rc = MPIX_Comm_agree(s, &flag);
    CHECK(rc == MPI_SUCCESS && flag == 1, "agree on the shrunk communicator: rc %d flag %d", rc, flag);
    x = rank;
    MPI_Allreduce(MPI_IN_PLACE, &x, 1, MPI_INT, MPI_SUM, s);
    CHECK(x == (size - 1) * (size - 2) / 2, "allreduce after shrinking: %d", x);
    MPI_Comm_free(&s);
    MPI_Finalize();
    return test_finish();
}
