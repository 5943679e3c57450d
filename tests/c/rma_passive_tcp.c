/* gridmpi-test: ranks=2,4 timeout=60 env=GRIDMPI_TRANSPORT=tcp */
/* rma_passive.c between local ranks over TCP. */
#include "rma_passive.c"
