/* gridmpi-test: ranks=2 min-ranks=2 timeout=30 expect=fail gridmpi-stderr='MPI_Send.*rank 1.*comm' */
/*
 * An error with no valid communicator (MPI_COMM_NULL) is raised on
 * MPI_COMM_SELF (MPI 4.0). Here MPI_COMM_WORLD has MPI_ERRORS_RETURN but
 * MPI_COMM_SELF keeps MPI_ERRORS_ARE_FATAL, so the job must fail.
 */
#include "testutil.h"

int main(int argc, char **argv)
{
    int size;
    int rank = test_init(&argc, &argv, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int x = 0;
    if (rank == 1) {
        int rc = MPI_Send(&x, 1, MPI_INT, 0, 0, MPI_COMM_NULL);
        printf("rank 1: MPI_Send on MPI_COMM_NULL returned %d: the error was not raised on MPI_COMM_SELF\n", rc);
        if (TU_PEER_MPICH || TU_PEER_OPENMPI) {
            /* MPICH 5.0.2 and Open MPI 5.0.11 raise it on MPI_COMM_WORLD's
             * handler when that one is MPI_ERRORS_RETURN. */
            printf("known deviation of the peer MPI; failing the job on purpose\n");
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
    } else {
        MPI_Recv(&x, 1, MPI_INT, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        printf("rank %d: receive completed unexpectedly\n", rank);
    }
    MPI_Finalize();
    return 0;
}
