/* gridmpi-test: ranks=2,4 min-ranks=2 timeout=30 exitcode=7 stderr='rank 1' gridmpi-stderr='MPI_Abort.*rank 1' */
/*
 * MPI_Abort(MPI_COMM_WORLD, 7) from rank 1 ends the whole job, including the
 * ranks blocked in a receive that will never be matched; the launcher exits
 * with the error code 7 and the message names the aborting rank.
 */
#include "testutil.h"

int main(int argc, char **argv)
{
    int size;
    int rank = test_init(&argc, &argv, &size);
    if (rank == 1) {
        MPI_Abort(MPI_COMM_WORLD, 7);
        printf("rank 1: MPI_Abort returned\n");
        return 3;
    }
    int x;
    /* Never matched: only MPI_Abort can end this. */
    MPI_Recv(&x, 1, MPI_INT, MPI_ANY_SOURCE, 12345, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    printf("rank %d: receive completed unexpectedly\n", rank);
    MPI_Finalize();
    return 4;
}
