/* gridmpi-test: ranks=3,4 timeout=120 env=GRIDMPI_TRANSPORT=tcp */
/* rma_atomic_contention.c with the ranks' messages over TCP: the
 * MPI_Win_allocate window goes as frames applied by rank 0's engine, the
 * MPI_Win_allocate_shared one stays shared memory (its epochs' messages
 * over TCP). */
#include "rma_atomic_contention.c"
