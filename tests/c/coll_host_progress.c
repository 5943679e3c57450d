/* gridmpi-test: ranks=2,3,4 timeout=90 */
/*
 * A blocking collective on one host waits for the others without the
 * library's lock (shell/coll/host_inline.rs); the requests it leaves
 * pending must still progress meanwhile, and ranks that come late (so the
 * early ones go to sleep) must still be woken.
 *
 * 1. Rank 0 starts a 4 MiB MPI_Isend to rank 1 (large enough for a
 *    rendezvous) and enters MPI_Barrier; rank 1 receives it with a
 *    blocking MPI_Recv before its own barrier. Rank 0's barrier can only
 *    end if its waiting moves the send on.
 * 2. The same the other way round: rank 1 posts MPI_Irecv, enters
 *    MPI_Allreduce; rank 0 sends with a blocking MPI_Send first.
 * 3. Late ranks: the last rank sleeps 300 ms before each of a few
 *    barriers, broadcasts and allreduces, so the others sleep in the
 *    kernel meanwhile; every result is checked.
 * 4. A tight loop of barriers, broadcasts and allreduces with checked
 *    results, alternating with a nonblocking collective on the same
 *    communicator (which the executor runs).
 */
#include "testutil.h"
#include <string.h>
#include <unistd.h>

#define BIG (4 << 20)

int main(int argc, char **argv)
{
    int size;
    int rank = test_init(&argc, &argv, &size);
    MPI_Comm comm = MPI_COMM_WORLD;
    unsigned char *buf = malloc(BIG);
    CHECK(buf != NULL, "malloc");

    for (int round = 0; round < 5; round++) {
        /* 1. A pending send must move while rank 0 waits in a barrier. */
        if (rank == 0) {
            MPI_Request req;
            for (int i = 0; i < BIG; i++)
                buf[i] = (unsigned char)(i * 7 + round);
            CHECK_MPI(MPI_Isend(buf, BIG, MPI_BYTE, 1, 5, comm, &req));
            CHECK_MPI(MPI_Barrier(comm));
            CHECK_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
        } else if (rank == 1) {
            memset(buf, 0, BIG);
            CHECK_MPI(MPI_Recv(buf, BIG, MPI_BYTE, 0, 5, comm, MPI_STATUS_IGNORE));
            int bad = 0;
            for (int i = 0; i < BIG; i++)
                bad += buf[i] != (unsigned char)(i * 7 + round);
            CHECK(bad == 0, "round %d: %d wrong bytes in the 4 MiB message", round, bad);
            CHECK_MPI(MPI_Barrier(comm));
        } else {
            CHECK_MPI(MPI_Barrier(comm));
        }

        /* 2. A pending receive must complete while rank 1 waits in an allreduce. */
        double x = rank + 1, sum = 0;
        if (rank == 1) {
            MPI_Request req;
            CHECK_MPI(MPI_Irecv(buf, BIG, MPI_BYTE, 0, 6, comm, &req));
            CHECK_MPI(MPI_Allreduce(&x, &sum, 1, MPI_DOUBLE, MPI_SUM, comm));
            CHECK_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
            CHECK(buf[BIG - 1] == (unsigned char)(round + 1), "round %d: the received message is wrong", round);
        } else {
            if (rank == 0) {
                memset(buf, round + 1, BIG);
                CHECK_MPI(MPI_Send(buf, BIG, MPI_BYTE, 1, 6, comm));
            }
            CHECK_MPI(MPI_Allreduce(&x, &sum, 1, MPI_DOUBLE, MPI_SUM, comm));
        }
        CHECK(sum == size * (size + 1) / 2.0, "round %d: allreduce gave %g", round, sum);
    }

    /* 3. Late ranks: the others sleep, and must be woken. */
    for (int i = 0; i < 3; i++) {
        if (rank == size - 1)
            usleep(300 * 1000);
        CHECK_MPI(MPI_Barrier(comm));
        int v = rank == 0 ? 1000 + i : -1;
        if (rank == size - 1)
            usleep(300 * 1000);
        CHECK_MPI(MPI_Bcast(&v, 1, MPI_INT, 0, comm));
        CHECK(v == 1000 + i, "late bcast %d gave %d", i, v);
        long one = 1, n = 0;
        if (rank == 0)
            usleep(300 * 1000);
        CHECK_MPI(MPI_Allreduce(&one, &n, 1, MPI_LONG, MPI_SUM, comm));
        CHECK(n == size, "late allreduce %d gave %ld", i, n);
    }

    /* 4. Many in a row, with nonblocking ones on the same communicator. */
    for (int i = 0; i < 20000; i++) {
        long v = rank == i % size ? i : -1, s = 0;
        CHECK_MPI(MPI_Bcast(&v, 1, MPI_LONG, i % size, comm));
        if (v != i) {
            CHECK(0, "bcast %d gave %ld", i, v);
            break;
        }
        CHECK_MPI(MPI_Allreduce(&v, &s, 1, MPI_LONG, MPI_MAX, comm));
        if (s != i) {
            CHECK(0, "allreduce %d gave %ld", i, s);
            break;
        }
        CHECK_MPI(MPI_Barrier(comm));
        if (i % 1000 == 0) {
            MPI_Request req;
            long t = 0;
            CHECK_MPI(MPI_Iallreduce(&v, &t, 1, MPI_LONG, MPI_SUM, comm, &req));
            CHECK_MPI(MPI_Barrier(comm));
            CHECK_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
            CHECK(t == (long)i * size, "iallreduce %d gave %ld", i, t);
        }
    }

    free(buf);
    MPI_Finalize();
    return test_finish();
}
