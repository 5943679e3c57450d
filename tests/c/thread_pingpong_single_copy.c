/* gridmpi-test: ranks=2 timeout=120 env=GRIDMPI_SINGLE_COPY=yes */
/* thread_pingpong.c with messages above half a shared-memory ring moved by
 * single-copy reads (process_vm_readv) instead of through the ring. */
#include "thread_pingpong.c"
