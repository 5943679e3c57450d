/* gridmpi-test: ranks=1,2 timeout=60 env=GRIDMPI_SINGLE_COPY=yes */
/* p2p_truncate.c with messages above half a shared-memory ring moved by
 * single-copy reads (process_vm_readv) instead of through the ring. */
#include "p2p_truncate.c"
