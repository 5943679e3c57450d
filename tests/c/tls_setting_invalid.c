/* gridmpi-test: ranks=2 expect=fail timeout=30 env=GRIDMPI_WAN_TLS=yes gridmpi-stderr='GRIDMPI_WAN_TLS.*off, on, all' */
/*
 * GRIDMPI_WAN_TLS takes off, on or all: anything else stops the job with
 * an error naming the setting and the values it accepts. (Other MPIs
 * ignore the variable: there the test fails as asked by exiting non-zero.)
 */
#include "testutil.h"

int main(int argc, char **argv)
{
    int size;
    test_init(&argc, &argv, &size);
    MPI_Finalize();
#if !TEST_IMPL_GRIDMPI
    return 1;
#endif
    return test_finish();
}
