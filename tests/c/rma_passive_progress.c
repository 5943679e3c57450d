/* gridmpi-test: ranks=2,4 timeout=60 env=GRIDMPI_PROGRESS_THREAD=on */
/* rma_passive.c with the library's progress thread serving the targets. */
#include "rma_passive.c"
