/* gridmpi-test: ranks=1,2,3,5,8 timeout=60 */
/*
 * Barrier, Ibarrier and Bcast. Ibarrier cannot complete on rank 0 before
 * every other rank has entered (they only enter after a message rank 0
 * sends once it has tested the request a number of times). Bcast from every
 * root with 0 and 1 elements, odd sizes, 1 MiB, sizes that go through
 * GridMPI's shared-memory area in 2, 3 and 4 pieces of 16 KiB, different
 * but matching datatypes on root and non-roots (vector on the root,
 * contiguous elsewhere; small, and in pieces), and on a split
 * communicator.
 */
#include "testutil.h"

int main(int argc, char **argv)
{
    int size;
    int rank = test_init(&argc, &argv, &size);
    MPI_Comm comm = MPI_COMM_WORLD;

    CHECK_MPI(MPI_Barrier(comm));
    CHECK_MPI(MPI_Barrier(MPI_COMM_SELF));

    /* Ibarrier ordering. */
    {
        MPI_Request req;
        int flag;
        if (rank == 0) {
            CHECK_MPI(MPI_Ibarrier(comm, &req));
            for (int i = 0; i < 50 && size > 1; i++) {
                CHECK_MPI(MPI_Test(&req, &flag, MPI_STATUS_IGNORE));
                if (!CHECK(!flag, "Ibarrier completed before the other ranks entered"))
                    break;
            }
            for (int p = 1; p < size; p++)
                CHECK_MPI(MPI_Send(NULL, 0, MPI_INT, p, 1, comm));
            CHECK_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
        } else {
            CHECK_MPI(MPI_Recv(NULL, 0, MPI_INT, 0, 1, comm, MPI_STATUS_IGNORE));
            CHECK_MPI(MPI_Ibarrier(comm, &req));
            CHECK_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
        }
    }

    /* Barrier as a separator: each rank sends to its right neighbour with
     * Send before the barrier; after the barrier, the message is there
     * (Send completed, so at least it was matched or buffered; we receive it). */
    {
        int right = (rank + 1) % size, left = (rank + size - 1) % size, v = rank, in = -1;
        MPI_Request r;
        CHECK_MPI(MPI_Irecv(&in, 1, MPI_INT, left, 2, comm, &r));
        CHECK_MPI(MPI_Send(&v, 1, MPI_INT, right, 2, comm));
        CHECK_MPI(MPI_Barrier(comm));
        CHECK_MPI(MPI_Wait(&r, MPI_STATUS_IGNORE));
        CHECK_INT_EQ(in, left);
    }

    /* Bcast from every root, several sizes. */
    const int counts[] = {0, 1, 7, 1000, 4097, 12000, 16384, 65537, 1 << 18};
    const int ncounts = sizeof counts / sizeof counts[0];
    int *buf = tu_malloc(sizeof(int) * (1 << 18));
    for (int root = 0; root < size; root++) {
        for (int c = 0; c < ncounts; c++) {
            int n = counts[c];
            if (n > 1000 && root != 0 && root != size - 1)
                continue; /* large sizes from two roots only, to stay quick */
            if (rank == root)
                fill_ints(buf, n, root * 10 + c);
            else
                for (int i = 0; i < n; i++)
                    buf[i] = -1;
            CHECK_MPI(MPI_Bcast(buf, n, MPI_INT, root, comm));
            char what[64];
            snprintf(what, sizeof what, "Bcast root %d count %d", root, n);
            check_ints(buf, n, root * 10 + c, what);
        }
    }
    free(buf);

    /* Root sends a strided vector, others receive contiguously: 20
     * doubles, and 6000 (in pieces through the area). */
    for (int n = 20; n <= 6000; n += 5980) {
        double *src = tu_malloc(sizeof(double) * 2 * n), *dst = tu_malloc(sizeof(double) * n);
        MPI_Datatype every2;
        MPI_Type_vector(n, 1, 2, MPI_DOUBLE, &every2);
        MPI_Type_commit(&every2);
        int root = size - 1;
        if (rank == root) {
            for (int i = 0; i < 2 * n; i++)
                src[i] = i * 0.5;
            CHECK_MPI(MPI_Bcast(src, 1, every2, root, comm));
        } else {
            for (int i = 0; i < n; i++)
                dst[i] = -1;
            CHECK_MPI(MPI_Bcast(dst, n, MPI_DOUBLE, root, comm));
            for (int i = 0; i < n; i++)
                if (!CHECK(dst[i] == i * 1.0, "Bcast vector of %d -> contiguous: [%d] = %g", n, i, dst[i]))
                    break;
        }
        /* The operations after it on the area are still numbered alike. */
        double sum = 1, all = 0;
        CHECK_MPI(MPI_Allreduce(&sum, &all, 1, MPI_DOUBLE, MPI_SUM, comm));
        CHECK(all == size, "Allreduce after Bcast of %d: %g", n, all);
        MPI_Type_free(&every2);
        free(src);
        free(dst);
    }

    /* On a split communicator (odd/even), root 0 of each. */
    {
        MPI_Comm half;
        MPI_Comm_split(comm, rank % 2, rank, &half);
        int v = rank % 2 ? 111 : 222;
        int hr;
        MPI_Comm_rank(half, &hr);
        if (hr != 0)
            v = 0;
        CHECK_MPI(MPI_Bcast(&v, 1, MPI_INT, 0, half));
        CHECK_INT_EQ(v, rank % 2 ? 111 : 222);
        CHECK_MPI(MPI_Barrier(half));
        MPI_Comm_free(&half);
    }

    MPI_Finalize();
    return test_finish();
}
