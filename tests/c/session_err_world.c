/* gridmpi-test: ranks=2 timeout=30 expect=fail gridmpi-stderr='MPI_Comm_size\(rank [01]\): MPI_COMM_WORLD is not available: MPI_Init has not been called' */
/*
 * MPI_COMM_WORLD belongs to the world model: a process that only started
 * a session gets an invalid-communicator error (raised on the initial
 * error handler, MPI_ERRORS_ARE_FATAL), which names the reason.
 */
#include "testutil.h"

int main(void)
{
    MPI_Session s;
    CHECK_MPI(MPI_Session_init(MPI_INFO_NULL, MPI_ERRORS_RETURN, &s));
    int n;
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    printf("MPI_Comm_size(MPI_COMM_WORLD) did not fail in a session-only process\n");
    MPI_Session_finalize(&s);
    return 0;
}
