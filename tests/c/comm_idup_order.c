/* gridmpi-test: ranks=2,3 timeout=60 */
/*
 * MPI_Comm_idup on two different communicators, started in one order at
 * even ranks and in the other at odd ones (MPI 4.1 allows nonblocking
 * collectives on different communicators to start in any order). Each new
 * communicator must have a context of its own: a message sent on one must
 * never match a receive or probe on the other, and collectives on both
 * must give their own results.
 */
#include "testutil.h"
#include <unistd.h>

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Comm a, b, na, nb;
    MPI_Request r[2];
    CHECK_MPI(MPI_Init(&argc, &argv));
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &a));
    CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &b));
    if (rank % 2 == 0) {
        CHECK_MPI(MPI_Comm_idup(a, &na, &r[0]));
        CHECK_MPI(MPI_Comm_idup(b, &nb, &r[1]));
    } else {
        CHECK_MPI(MPI_Comm_idup(b, &nb, &r[1]));
        CHECK_MPI(MPI_Comm_idup(a, &na, &r[0]));
    }
    CHECK_MPI(MPI_Waitall(2, r, MPI_STATUSES_IGNORE));

    /* Rank 0 sends on nb; rank 1 looks for it on na first. */
    int v = 42, flag = 0;
    if (rank == 0) {
        CHECK_MPI(MPI_Send(&v, 1, MPI_INT, 1, 7, nb));
        MPI_Barrier(MPI_COMM_WORLD);
    } else if (rank == 1) {
        MPI_Barrier(MPI_COMM_WORLD);
        for (int k = 0; k < 200 && !flag; k++) {
            MPI_Iprobe(0, 7, na, &flag, MPI_STATUS_IGNORE);
            usleep(100);
        }
        CHECK(!flag, "a message sent on one idup'ed communicator is seen on the other");
        v = 0;
        CHECK_MPI(MPI_Recv(&v, 1, MPI_INT, 0, 7, nb, MPI_STATUS_IGNORE));
        CHECK(v == 42, "received %d", v);
    } else {
        MPI_Barrier(MPI_COMM_WORLD);
    }
    int one = rank + 1, two = 2 * (rank + 1), sa = 0, sb = 0;
    CHECK_MPI(MPI_Allreduce(&one, &sa, 1, MPI_INT, MPI_SUM, na));
    CHECK_MPI(MPI_Allreduce(&two, &sb, 1, MPI_INT, MPI_SUM, nb));
    CHECK(sa == size * (size + 1) / 2 && sb == size * (size + 1), "allreduce on the new communicators: %d and %d", sa, sb);
    MPI_Comm_free(&na);
    MPI_Comm_free(&nb);
    MPI_Comm_free(&a);
    MPI_Comm_free(&b);
    MPI_Finalize();
    return test_finish();
}
