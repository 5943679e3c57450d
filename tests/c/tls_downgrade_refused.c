/* gridmpi-test: ranks=2 expect=fail timeout=60 env=GRIDMPI_TRANSPORT=tcp env=GRIDMPI_WAN_TLS=all gridmpi-stderr='refused a connection from rank 0: it called without TLS' gridmpi-stderr='rank 0.*requires TLS on this link' */
/*
 * No downgrade: rank 0 turns TLS off for itself (GRIDMPI_WAN_TLS=off set
 * before MPI_Init) while rank 1 requires it on every link. Rank 0 calls
 * rank 1 in clear; rank 1 refuses the connection once rank 0 has proven
 * the job secret, and says so; rank 0's error names the likely cause. The
 * message never arrives. (Other MPIs ignore the variable: there the test
 * fails as asked by exiting non-zero.)
 */
#include "testutil.h"

int main(int argc, char **argv)
{
    const char *r = getenv("PMI_RANK");
    if (r && atoi(r) == 0)
        setenv("GRIDMPI_WAN_TLS", "off", 1);
    int size;
    int rank = test_init(&argc, &argv, &size);
    int v = 42;
    if (rank == 0)
        CHECK_MPI(MPI_Send(&v, 1, MPI_INT, 1, 0, MPI_COMM_WORLD));
    else if (rank == 1) {
        CHECK_MPI(MPI_Recv(&v, 1, MPI_INT, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        CHECK(0, "rank 1 received %d over a link that must be encrypted, from a rank without TLS", v);
    }
    MPI_Finalize();
#if !TEST_IMPL_GRIDMPI
    return 1;
#endif
    return test_finish();
}
