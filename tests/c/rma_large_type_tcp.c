/* gridmpi-test: ranks=2,3 timeout=120 env=GRIDMPI_TRANSPORT=tcp */
/* rma_large_type.c between local ranks over TCP. */
#include "rma_large_type.c"
