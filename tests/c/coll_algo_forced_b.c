/* gridmpi-test: ranks=1,2,3,4,5,6,7,8 timeout=180 env=GRIDMPI_COLL_BARRIER=dissemination env=GRIDMPI_COLL_BCAST=pipeline env=GRIDMPI_COLL_GATHER=linear env=GRIDMPI_COLL_SCATTER=linear env=GRIDMPI_COLL_ALLGATHER=recursive_doubling env=GRIDMPI_COLL_ALLTOALL=pairwise env=GRIDMPI_COLL_REDUCE=binomial env=GRIDMPI_COLL_ALLREDUCE=rabenseifner env=GRIDMPI_COLL_REDUCE_SCATTER=recursive_halving env=GRIDMPI_COLL_SCAN=recursive_doubling */
/*
 * coll_algo_sweep.c with these collective algorithms forced (GridMPI;
 * other MPIs ignore the settings):
 *   BARRIER=dissemination
 *   BCAST=pipeline
 *   GATHER=linear
 *   SCATTER=linear
 *   ALLGATHER=recursive_doubling
 *   ALLTOALL=pairwise
 *   REDUCE=binomial
 *   ALLREDUCE=rabenseifner
 *   REDUCE_SCATTER=recursive_halving
 *   SCAN=recursive_doubling
 * A forced algorithm that cannot run a given call (ring on a
 * non-commutative operation, Bruck on unequal blocks) falls back to the
 * table's choice.
 */
#include "coll_algo_sweep.c"
