/* gridmpi-test: ranks=2,4 timeout=30 expect=fail gridmpi-stderr='MPI_Send.*count' */
/*
 * MPI_ERRORS_ABORT (MPI 4.0) set on a duplicate of MPI_COMM_WORLD: an error
 * on it aborts the processes of that communicator (all of them here), so
 * the job fails, while ranks blocked in a receive are torn down too.
 */
#include "testutil.h"

int main(int argc, char **argv)
{
    int size;
    int rank = test_init(&argc, &argv, &size);
    MPI_Comm dup;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    MPI_Comm_set_errhandler(dup, MPI_ERRORS_ABORT);
    MPI_Errhandler got;
    MPI_Comm_get_errhandler(dup, &got);
    if (got != MPI_ERRORS_ABORT)
        printf("rank %d: Comm_get_errhandler does not return MPI_ERRORS_ABORT\n", rank);
    int x = 0;
    if (rank == size - 1) {
        MPI_Send(&x, -3, MPI_INT, 0, 0, dup);
        printf("rank %d: MPI_Send with count -3 returned under MPI_ERRORS_ABORT\n", rank);
        MPI_Finalize();
        return 0; /* exit 0: the job succeeds only if the handler did nothing */
    }
    MPI_Recv(&x, 1, MPI_INT, MPI_ANY_SOURCE, 0, dup, MPI_STATUS_IGNORE);
    printf("rank %d: receive completed unexpectedly\n", rank);
    MPI_Finalize();
    return 0;
}
