/* gridmpi-test: ranks=1,2,3,4,5,6,7,8 timeout=180 env=GRIDMPI_COLL_BARRIER=tree env=GRIDMPI_COLL_BCAST=scatter_allgather env=GRIDMPI_COLL_GATHER=binomial env=GRIDMPI_COLL_SCATTER=binomial env=GRIDMPI_COLL_ALLGATHER=bruck env=GRIDMPI_COLL_ALLTOALL=bruck env=GRIDMPI_COLL_REDUCE=rabenseifner env=GRIDMPI_COLL_ALLREDUCE=ring env=GRIDMPI_COLL_REDUCE_SCATTER=ring env=GRIDMPI_COLL_SCAN=linear */
/*
 * coll_algo_sweep.c with these collective algorithms forced (GridMPI;
 * other MPIs ignore the settings):
 *   BARRIER=tree
 *   BCAST=scatter_allgather
 *   GATHER=binomial
 *   SCATTER=binomial
 *   ALLGATHER=bruck
 *   ALLTOALL=bruck
 *   REDUCE=rabenseifner
 *   ALLREDUCE=ring
 *   REDUCE_SCATTER=ring
 *   SCAN=linear
 * A forced algorithm that cannot run a given call (ring on a
 * non-commutative operation, Bruck on unequal blocks) falls back to the
 * table's choice.
 */
#include "coll_algo_sweep.c"
