/* gridmpi-test: ranks=4 timeout=60 gridmpi-launcher-args='--with-ft ulfm' env=GRIDMPI_TRANSPORT=tcp */
/* ulfm_kill_collective.c over TCP (every link keeps what it sent, and the
   dead rank's connections close under the survivors' feet). */
#include "ulfm_kill_collective.c"
