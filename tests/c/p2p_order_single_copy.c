/* gridmpi-test: ranks=2,4 min-ranks=2 timeout=120 env=GRIDMPI_SINGLE_COPY=yes */
/* p2p_order.c with messages above half a shared-memory ring moved by
 * single-copy reads (process_vm_readv) instead of through the ring. */
#include "p2p_order.c"
