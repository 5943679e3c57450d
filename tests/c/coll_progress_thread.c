/* gridmpi-test: ranks=3,5 timeout=180 env=GRIDMPI_PROGRESS_THREAD=on */
/*
 * coll_algo_sweep.c with the progress thread running: user-function
 * reductions are then run by whichever thread finds them, and each must be
 * run exactly once.
 */
#include "coll_algo_sweep.c"
