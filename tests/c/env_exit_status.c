/* gridmpi-test: ranks=2,4 timeout=30 exitcode=5 */
/*
 * Each rank decides its own exit status (the tests rely on it): every rank
 * finalizes normally, then the last rank returns 5 from main while the
 * others return 0. The launcher must report the failure with that status.
 */
#include "testutil.h"

int main(int argc, char **argv)
{
    int size;
    int rank = test_init(&argc, &argv, &size);
    MPI_Finalize();
    return rank == size - 1 ? 5 : 0;
}
