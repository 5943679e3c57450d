/* gridmpi-test: ranks=4 timeout=120 */
/*
 * Collectives whose ranks pass sizes that do not match (an erroneous
 * program: MPI 4.1, 6.1, requires the amount of data sent to equal the
 * amount received) fail instead of truncating, combining stale bytes, or
 * hanging. With MPI_ERRORS_RETURN on the communicator:
 *   - a rank that receives more or less than it expects fails with
 *     MPI_ERR_TRUNCATE (a bcast, scatter, gather, allreduce, alltoall of
 *     1 item against 10, both ways round), blocking and nonblocking;
 *   - a rank that forwards in a tree passes the failure on, so every
 *     receiver of a short scatter fails, not only the first;
 *   - the communicator still works afterwards.
 * GridMPI's host-area collectives (ranks of one host) judge the sizes
 * every member states; its message-based ones check each message's
 * length. The cases are those of MPICH's errors/coll/*length tests.
 * The standard leaves an erroneous program's outcome open: MPICH 5.0.2
 * hangs in one of these calls and Open MPI 5.0 aborts, so the peers run
 * only the checks of a working communicator (tests/README.md).
 */
#include <mpi.h>
#include "testutil.h"

#define BIG 10

static int rank, size;
static int sbuf[BIG * 16], rbuf[BIG * 16];

static void expect_truncate(int rc, int must_fail, const char *what)
{
    int cls = MPI_SUCCESS;
    if (rc != MPI_SUCCESS)
        MPI_Error_class(rc, &cls);
    if (must_fail)
        CHECK(cls == MPI_ERR_TRUNCATE, "%s: class %d, want MPI_ERR_TRUNCATE", what, cls);
}

static void still_works(const char *after)
{
    int one = 1, sum = 0;
    CHECK(MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD) == MPI_SUCCESS && sum == size, "allreduce after %s: %d", after, sum);
    int v = rank == 0 ? 42 : -1;
    CHECK(MPI_Bcast(&v, 1, MPI_INT, 0, MPI_COMM_WORLD) == MPI_SUCCESS && v == 42, "bcast after %s: %d", after, v);
}

static int wait_rc(int rc, MPI_Request *r)
{
    return rc == MPI_SUCCESS ? MPI_Wait(r, MPI_STATUS_IGNORE) : rc;
}

int main(int argc, char **argv)
{
#ifdef SIZE_MISMATCH_SITES
    test_sites_by_rank_parity();
#endif
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Request r;
    int rc;

    for (int nb = 0; nb < 2 * TEST_IMPL_GRIDMPI; nb++) {
        for (int long_root = 0; long_root < 2; long_root++) {
            int at_root = long_root ? BIG : 1, other = long_root ? 1 : BIG;
            char what[96];

            /* The root sends another size than the others receive. */
            snprintf(what, sizeof what, "%sbcast of %d items to ranks expecting %d", nb ? "i" : "", at_root, other);
            int n = rank == 0 ? at_root : other;
            rc = nb ? wait_rc(MPI_Ibcast(sbuf, n, MPI_INT, 0, MPI_COMM_WORLD, &r), &r) : MPI_Bcast(sbuf, n, MPI_INT, 0, MPI_COMM_WORLD);
            expect_truncate(rc, rank != 0, what);
            still_works(what);

            snprintf(what, sizeof what, "%sallreduce of %d items at rank 0, %d elsewhere", nb ? "i" : "", at_root, other);
            rc = nb ? wait_rc(MPI_Iallreduce(sbuf, rbuf, n, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &r), &r)
                    : MPI_Allreduce(sbuf, rbuf, n, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
            /* Which ranks see it depends on the algorithm; one at least. */
            int failed = rc != MPI_SUCCESS, any = 0;
            MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
            MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
            MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
            CHECK(any, "%s: no rank failed", what);
            expect_truncate(rc, 0, what);
            still_works(what);
        }

        char what[96];
        /* Each block of a scatter is 1 item at the root, 10 elsewhere. */
        snprintf(what, sizeof what, "%sscatter of 1-item blocks to ranks expecting 10", nb ? "i" : "");
        int sc = rank == 0 ? 1 : BIG;
        rc = nb ? wait_rc(MPI_Iscatter(sbuf, sc, MPI_INT, rbuf, BIG, MPI_INT, 0, MPI_COMM_WORLD, &r), &r)
                : MPI_Scatter(sbuf, sc, MPI_INT, rbuf, BIG, MPI_INT, 0, MPI_COMM_WORLD);
        expect_truncate(rc, rank != 0, what);
        still_works(what);

        /* A gather root that receives 1 item from ranks that send 10. */
        snprintf(what, sizeof what, "%sgather of 10 items into 1-item blocks", nb ? "i" : "");
        rc = nb ? wait_rc(MPI_Igather(sbuf, BIG, MPI_INT, rbuf, 1, MPI_INT, 0, MPI_COMM_WORLD, &r), &r)
                : MPI_Gather(sbuf, BIG, MPI_INT, rbuf, 1, MPI_INT, 0, MPI_COMM_WORLD);
        expect_truncate(rc, rank == 0, what);
        still_works(what);

        /* Every rank sends 10 items to each and expects 1 from each. */
        snprintf(what, sizeof what, "%salltoall of 10 items into 1-item blocks", nb ? "i" : "");
        rc = nb ? wait_rc(MPI_Ialltoall(sbuf, BIG, MPI_INT, rbuf, 1, MPI_INT, MPI_COMM_WORLD, &r), &r)
                : MPI_Alltoall(sbuf, BIG, MPI_INT, rbuf, 1, MPI_INT, MPI_COMM_WORLD);
        expect_truncate(rc, 1, what);
        still_works(what);
    }
    still_works("the start");

    MPI_Finalize();
    return test_finish();
}
