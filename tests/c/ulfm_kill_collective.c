/* gridmpi-test: ranks=4,5 timeout=60 gridmpi-launcher-args='--with-ft ulfm' */
/*
 * A rank dies in the middle of a loop of collectives (small and large
 * allreduces, an alltoall, point-to-point exchanges around a ring): no
 * survivor hangs; each sees an error (MPIX_ERR_PROC_FAILED, or
 * MPIX_ERR_REVOKED once another survivor revoked), revokes, shrinks, and
 * the loop goes on to the end on the shrunk communicator with checked
 * results, the usual ULFM recovery loop.
 */
#include "testutil.h"
#include <signal.h>
#include <unistd.h>

#define BIG (256 * 1024)

static int cls_of(int rc)
{
    int c = -1;
    MPI_Error_class(rc, &c);
    return c;
}

/* One round on comm; MPI_SUCCESS or the first error. */
static int round_on(MPI_Comm comm, int round, int world_rank, double *big, double *bigsum, int *a2a_in, int *a2a_out)
{
    int rank, size, rc;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    int x = world_rank + round, sum = 0;
    rc = MPI_Allreduce(&x, &sum, 1, MPI_INT, MPI_SUM, comm);
    if (rc != MPI_SUCCESS)
        return rc;
    for (int i = 0; i < BIG; i++)
        big[i] = (double)(round + i % 7);
    rc = MPI_Allreduce(big, bigsum, BIG, MPI_DOUBLE, MPI_SUM, comm);
    if (rc != MPI_SUCCESS)
        return rc;
    for (int i = 0; i < BIG; i += 4099)
        CHECK(bigsum[i] == (double)size * (round + i % 7), "round %d: big allreduce element %d = %g", round, i, bigsum[i]);
    for (int r = 0; r < size; r++)
        a2a_out[r] = world_rank * 1000 + round;
    rc = MPI_Alltoall(a2a_out, 1, MPI_INT, a2a_in, 1, MPI_INT, comm);
    if (rc != MPI_SUCCESS)
        return rc;
    int right = (rank + 1) % size, left = (rank + size - 1) % size, got = -1;
    rc = MPI_Sendrecv(big, BIG, MPI_DOUBLE, right, round, bigsum, BIG, MPI_DOUBLE, left, round, comm, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS)
        return rc;
    (void)got;
    return MPI_SUCCESS;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    /* argv[1]: the rank that dies (the testbed picks one across the WAN);
       argv[2]: rounds. */
    const int victim = argc > 1 ? atoi(argv[1]) % size : 1;
    const int ROUNDS = argc > 2 ? atoi(argv[2]) : 60, dies_at = ROUNDS / 3;
    double *big = malloc(BIG * sizeof(double)), *bigsum = malloc(BIG * sizeof(double));
    int *a2a_in = malloc(size * sizeof(int)), *a2a_out = malloc(size * sizeof(int));
    MPI_Comm comm;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    int errors_seen = 0, shrinks = 0;
    for (int round = 0; round < ROUNDS; round++) {
        if (rank == victim && round == dies_at) {
            /* Half-way through a round's work for the others. */
            int x = 0;
            MPI_Allreduce(MPI_IN_PLACE, &x, 1, MPI_INT, MPI_SUM, comm);
            raise(SIGKILL);
        }
        int rc = round_on(comm, round, rank, big, bigsum, a2a_in, a2a_out);
        if (rc != MPI_SUCCESS) {
            int c = cls_of(rc);
            CHECK(c == MPIX_ERR_PROC_FAILED || c == MPIX_ERR_REVOKED, "round %d: error class %d", round, c);
            errors_seen++;
            MPIX_Comm_revoke(comm);
            MPI_Comm s;
            rc = MPIX_Comm_shrink(comm, &s);
            CHECK(rc == MPI_SUCCESS, "shrink: %d", rc);
            MPI_Comm_free(&comm);
            comm = s;
            MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
            shrinks++;
            round--; /* this round again, on the survivors */
            CHECK(shrinks <= 3, "more shrinks than failures");
            if (shrinks > 3)
                break;
            continue;
        }
        /* The alltoall carried every member's world rank. */
        int csize;
        MPI_Comm_size(comm, &csize);
        int seen = 0;
        for (int r = 0; r < csize; r++)
            seen += a2a_in[r] % 1000 == round;
        CHECK(seen == csize, "round %d: alltoall values off", round);
    }
    int csize;
    MPI_Comm_size(comm, &csize);
    CHECK(csize == size - 1, "the loop ended on %d ranks, not %d", csize, size - 1);
    CHECK(errors_seen >= 1, "no survivor error although rank %d died", victim);
    if (argc > 1 && rank == 0)
        printf("ulfm: rank %d died; the %d survivors shrank %d time(s) and finished %d rounds, checked\n", victim, csize, shrinks, ROUNDS);
    MPI_Comm_free(&comm);
    free(big);
    free(bigsum);
    free(a2a_in);
    free(a2a_out);
    MPI_Finalize();
    return test_finish();
}
