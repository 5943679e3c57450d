/* gridmpi-test: ranks=2,4 min-ranks=2 timeout=30 expect=fail gridmpi-stderr='MPI_Send.*rank 0.*tag' */
/*
 * Default error handler (MPI_ERRORS_ARE_FATAL): rank 0 sends with tag -5;
 * the whole job ends with a failure, including the ranks blocked in a receive
 * that will never be matched. GridMPI's message names the function, the rank
 * and the reason, e.g. "MPI_Send(rank 0): invalid tag -5 (must be
 * 0..=MPI_TAG_UB)".
 */
#include "testutil.h"

int main(int argc, char **argv)
{
    int size;
    int rank = test_init(&argc, &argv, &size);
    int x = 0;
    if (rank == 0) {
        MPI_Send(&x, 1, MPI_INT, 1, -5, MPI_COMM_WORLD);
        printf("rank 0: MPI_Send with tag -5 returned under MPI_ERRORS_ARE_FATAL\n");
    } else {
        MPI_Recv(&x, 1, MPI_INT, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        printf("rank %d: receive completed unexpectedly\n", rank);
    }
    MPI_Finalize();
    return 0;
}
