/* gridmpi-test: ranks=2 timeout=120 env=GRIDMPI_PROGRESS_THREAD=on */
/* thread_pingpong.c with the library's progress thread running beside the application's threads. */
#include "thread_pingpong.c"
