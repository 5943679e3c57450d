/* gridmpi-test: ranks=2 timeout=120 env=GRIDMPI_TRANSPORT=tcp */
/* rma_pscw_get_wait.c between local ranks over TCP. */
#include "rma_pscw_get_wait.c"
