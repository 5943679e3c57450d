/* gridmpi-test: ranks=1,2,3,4,5,6,7,8 timeout=180 env=GRIDMPI_COLL_ALLTOALL=scattered env=GRIDMPI_COLL_ALLTOALL_INFLIGHT=3 env=GRIDMPI_COLL_ALLREDUCE=reduce_bcast */
/*
 * coll_algo_sweep.c with these collective algorithms forced (GridMPI;
 * other MPIs ignore the settings):
 *   ALLTOALL=scattered
 *   ALLTOALL_INFLIGHT=3
 *   ALLREDUCE=reduce_bcast
 * A forced algorithm that cannot run a given call (ring on a
 * non-commutative operation, Bruck on unequal blocks) falls back to the
 * table's choice.
 */
#include "coll_algo_sweep.c"
