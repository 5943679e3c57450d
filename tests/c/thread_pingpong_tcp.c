/* gridmpi-test: ranks=2 timeout=120 env=GRIDMPI_TRANSPORT=tcp */
/* thread_pingpong.c over TCP. */
#include "thread_pingpong.c"
