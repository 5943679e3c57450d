/* gridmpi-test: ranks=2,3,4,6 min-ranks=2 timeout=120 env=GRIDMPI_TRANSPORT=tcp env=GRIDMPI_WAN_BANDWIDTH=2gbit env=GRIDMPI_WAN_DELAY=100us */
/*
 * coll_size_mismatch.c with the ranks in two clusters (odd and even
 * ranks), so the cluster-aware (WAN) algorithms meet the mismatched sizes.
 */
#define SIZE_MISMATCH_SITES
#include "coll_size_mismatch.c"
