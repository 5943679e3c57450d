/* gridmpi-test: ranks=2,3,4 min-ranks=2 timeout=90 env=GRIDMPI_TRANSPORT=tcp env=GRIDMPI_WAN_TLS=all */
/*
 * Every TCP link encrypted (GRIDMPI_WAN_TLS=all, on one host): messages of
 * many sizes (eager, rendezvous, the large ones landing straight in the
 * receive buffer through TLS), both ways between every pair, and an
 * alltoall; every byte checked. Under other MPIs the setting means nothing
 * and this is a plain point-to-point and alltoall test.
 */
#include "testutil.h"

static unsigned char val(int from, int to, int len, long i)
{
    return (unsigned char)(from * 131 + to * 17 + len * 7 + i * 31 + (i >> 9));
}

int main(int argc, char **argv)
{
    int size;
    int rank = test_init(&argc, &argv, &size);
    int lens[] = {0, 1, 100, 4096, 16383, 65536, 300000, 4 << 20};
    int nlens = sizeof lens / sizeof lens[0];
    int maxlen = lens[nlens - 1];
    unsigned char *sb = malloc(maxlen), *rb = malloc(maxlen);

    for (int li = 0; li < nlens; li++) {
        int len = lens[li];
        for (int peer = 0; peer < size; peer++) {
            if (peer == rank)
                continue;
            for (long i = 0; i < len; i++)
                sb[i] = val(rank, peer, len, i);
            memset(rb, 0, (size_t)(unsigned)len);
            MPI_Status st;
            CHECK_MPI(MPI_Sendrecv(sb, len, MPI_BYTE, peer, li, rb, len, MPI_BYTE, peer, li, MPI_COMM_WORLD, &st));
            int bad = 0;
            for (long i = 0; i < len; i++)
                bad += rb[i] != val(peer, rank, len, i);
            CHECK(bad == 0, "%d bytes from %d: %d wrong", len, peer, bad);
        }
    }

    /* An alltoall of 256 KiB per pair, a few times. */
    int block = 256 * 1024;
    unsigned char *a = malloc((size_t)block * size), *b = malloc((size_t)block * size);
    for (int round = 0; round < 3; round++) {
        for (int to = 0; to < size; to++)
            for (long i = 0; i < block; i++)
                a[(size_t)to * block + i] = val(rank, to, round, i);
        memset(b, 0, (size_t)block * size);
        CHECK_MPI(MPI_Alltoall(a, block, MPI_BYTE, b, block, MPI_BYTE, MPI_COMM_WORLD));
        int bad = 0;
        for (int from = 0; from < size; from++)
            for (long i = 0; i < block; i++)
                bad += b[(size_t)from * block + i] != val(from, rank, round, i);
        CHECK(bad == 0, "alltoall round %d: %d bytes wrong", round, bad);
    }
    free(a);
    free(b);
    free(sb);
    free(rb);
    MPI_Finalize();
    return test_finish();
}
