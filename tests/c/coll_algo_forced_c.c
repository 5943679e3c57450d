/* gridmpi-test: ranks=1,2,3,4,5,6,7,8 timeout=180 env=GRIDMPI_COLL_BCAST=binomial env=GRIDMPI_COLL_ALLGATHER=ring env=GRIDMPI_COLL_ALLTOALL=scattered env=GRIDMPI_COLL_ALLTOALL_INFLIGHT=1 env=GRIDMPI_COLL_ALLREDUCE=recursive_doubling env=GRIDMPI_COLL_REDUCE_SCATTER=reduce_scatterv */
/*
 * coll_algo_sweep.c with these collective algorithms forced (GridMPI;
 * other MPIs ignore the settings):
 *   BCAST=binomial
 *   ALLGATHER=ring
 *   ALLTOALL=scattered
 *   ALLTOALL_INFLIGHT=1
 *   ALLREDUCE=recursive_doubling
 *   REDUCE_SCATTER=reduce_scatterv
 * A forced algorithm that cannot run a given call (ring on a
 * non-commutative operation, Bruck on unequal blocks) falls back to the
 * table's choice.
 */
#include "coll_algo_sweep.c"
