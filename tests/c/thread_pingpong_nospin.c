/* gridmpi-test: ranks=2 timeout=120 env=GRIDMPI_SPIN_US=0 */
/* thread_pingpong.c with blocked calls going to sleep at once (no spinning). */
#include "thread_pingpong.c"
