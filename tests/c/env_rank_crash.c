/* gridmpi-test: ranks=2,4 timeout=30 expect=fail */
/*
 * A rank that dies from a signal (SIGABRT here) while the others wait in a
 * receive it will never send: the launcher must notice, end the job and fail
 * rather than hang.
 */
#include "testutil.h"
#include <signal.h>

int main(int argc, char **argv)
{
    int size;
    int rank = test_init(&argc, &argv, &size);
    if (rank == size - 1) {
        fflush(stdout);
        signal(SIGABRT, SIG_DFL);
        raise(SIGABRT);
    }
    int x;
    MPI_Recv(&x, 1, MPI_INT, size - 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    printf("rank %d: receive from the dead rank completed\n", rank);
    MPI_Finalize();
    return 0;
}
