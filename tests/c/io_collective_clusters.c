/* gridmpi-test: ranks=2,3,4 gridmpi-clusters=east,west timeout=60 */
/*
 * io_collective.c with its ranks in two clusters (GRIDMPI_CLUSTER per
 * group of ranks): GridMPI then chooses a domain's aggregator in the
 * cluster that holds most of its bytes, or in the cluster the
 * gridmpi_file_cluster hint names (its fifth setting, "west").
 */
#include "io_collective.c"
