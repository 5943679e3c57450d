/* gridmpi-test: ranks=2,4 min-ranks=2 timeout=30 expect=fail gridmpi-stderr='MPI_Recv.*rank 1.*rank' */
/*
 * Default error handler on a derived communicator (inherited
 * MPI_ERRORS_ARE_FATAL): rank 1 receives from rank = size on a duplicate of
 * MPI_COMM_WORLD; the job fails, and GridMPI's message names MPI_Recv, rank 1
 * and the invalid source rank.
 */
#include "testutil.h"

int main(int argc, char **argv)
{
    int size;
    int rank = test_init(&argc, &argv, &size);
    MPI_Comm dup;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    int x = 0;
    if (rank == 1) {
        MPI_Recv(&x, 1, MPI_INT, size, 0, dup, MPI_STATUS_IGNORE);
        printf("rank 1: MPI_Recv from an invalid rank returned\n");
    } else {
        MPI_Recv(&x, 1, MPI_INT, MPI_ANY_SOURCE, 0, dup, MPI_STATUS_IGNORE);
        printf("rank %d: receive completed unexpectedly\n", rank);
    }
    MPI_Finalize();
    return 0;
}
