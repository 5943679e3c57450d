/* gridmpi-test: ranks=2,4 min-ranks=2 gridmpi-clusters=east,west timeout=90 env=GRIDMPI_TRANSPORT=tcp env=GRIDMPI_WAN_TLS=on */
/*
 * TLS on the links between clusters only (GRIDMPI_WAN_TLS=on; two clusters
 * on one host): a ring of messages crossing and not crossing the cluster
 * boundary, and an alltoall, checked byte for byte.
 */
#include "testutil.h"

int main(int argc, char **argv)
{
    int size;
    int rank = test_init(&argc, &argv, &size);
    int n = 1 << 20;
    int *s = malloc(sizeof(int) * n), *r = malloc(sizeof(int) * n);
    for (int hop = 1; hop < size; hop++) {
        int to = (rank + hop) % size, from = (rank - hop + size) % size;
        for (int i = 0; i < n; i++)
            s[i] = rank * 7919 + hop * 104729 + i;
        CHECK_MPI(MPI_Sendrecv(s, n, MPI_INT, to, hop, r, n, MPI_INT, from, hop, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        int bad = 0;
        for (int i = 0; i < n; i++)
            bad += r[i] != from * 7919 + hop * 104729 + i;
        CHECK(bad == 0, "hop %d from %d: %d wrong", hop, from, bad);
    }
    int block = 20000;
    int *a = malloc(sizeof(int) * block * size), *b = malloc(sizeof(int) * block * size);
    for (int to = 0; to < size; to++)
        for (int i = 0; i < block; i++)
            a[to * block + i] = rank * 1000003 + to * 7 + i;
    CHECK_MPI(MPI_Alltoall(a, block, MPI_INT, b, block, MPI_INT, MPI_COMM_WORLD));
    int bad = 0;
    for (int from = 0; from < size; from++)
        for (int i = 0; i < block; i++)
            bad += b[from * block + i] != from * 1000003 + rank * 7 + i;
    CHECK(bad == 0, "alltoall: %d wrong", bad);
    free(s);
    free(r);
    free(a);
    free(b);
    MPI_Finalize();
    return test_finish();
}
