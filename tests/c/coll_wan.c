/* gridmpi-test: ranks=2,3,4,6 min-ranks=2 timeout=120 env=GRIDMPI_TRANSPORT=tcp env=GRIDMPI_WAN_BANDWIDTH=2gbit env=GRIDMPI_WAN_DELAY=100us */
/*
 * The cluster-aware (WAN) collectives, end to end: each rank names its
 * cluster before MPI_Init (odd and even ranks: two "sites", so clusters are
 * not rank ranges), so GridMPI's collectives take their cluster-aware
 * algorithms, with pacing on the TCP connections that cross clusters. The
 * results must be those of any MPI: barrier, bcast (small: via leaders;
 * large: split over the root's cluster), allreduce (small and the
 * segmented large path), reduce to every root, alltoall and alltoallv.
 * Under other MPIs GRIDMPI_CLUSTER means nothing and this is a plain
 * collectives test.
 */
#include "testutil.h"

int main(int argc, char **argv)
{
    test_sites_by_rank_parity();
    int size;
    int rank = test_init(&argc, &argv, &size);
    MPI_Comm comm = MPI_COMM_WORLD;

    for (int i = 0; i < 3; i++)
        CHECK_MPI(MPI_Barrier(comm));

    /* Bcast: small (leaders) and large (split) from every root. */
    int sizes[] = {1, 1000, 300000};
    for (int si = 0; si < 3; si++) {
        int n = sizes[si];
        int *b = malloc(sizeof(int) * n);
        for (int root = 0; root < size; root++) {
            for (int i = 0; i < n; i++)
                b[i] = rank == root ? root * 1000003 + i : -1;
            CHECK_MPI(MPI_Bcast(b, n, MPI_INT, root, comm));
            int bad = 0;
            for (int i = 0; i < n; i++)
                bad += b[i] != root * 1000003 + i;
            CHECK(bad == 0, "bcast of %d ints from %d: %d wrong", n, root, bad);
        }
        free(b);
    }

    /* Allreduce (commutative): small and large, in place and not. */
    int asizes[] = {1, 7, 100000};
    for (int si = 0; si < 3; si++) {
        int n = asizes[si];
        long *in = malloc(sizeof(long) * n), *out = malloc(sizeof(long) * n);
        for (int i = 0; i < n; i++)
            in[i] = (long)(rank + 1) * (i + 1);
        CHECK_MPI(MPI_Allreduce(in, out, n, MPI_LONG, MPI_SUM, comm));
        long tri = (long)size * (size + 1) / 2;
        int bad = 0;
        for (int i = 0; i < n; i++)
            bad += out[i] != tri * (i + 1);
        CHECK(bad == 0, "allreduce of %d longs: %d wrong", n, bad);
        CHECK_MPI(MPI_Allreduce(MPI_IN_PLACE, in, n, MPI_LONG, MPI_SUM, comm));
        bad = 0;
        for (int i = 0; i < n; i++)
            bad += in[i] != tri * (i + 1);
        CHECK(bad == 0, "in-place allreduce of %d longs: %d wrong", n, bad);
        /* Doubles: every rank gets the same bits. */
        double *d = malloc(sizeof(double) * n), *e = malloc(sizeof(double) * n);
        for (int i = 0; i < n; i++)
            d[i] = 1.0 / (rank + 3) + i * 1e-7;
        CHECK_MPI(MPI_Allreduce(d, e, n, MPI_DOUBLE, MPI_SUM, comm));
        double *f = malloc(sizeof(double) * n);
        CHECK_MPI(MPI_Allreduce(e, f, n, MPI_DOUBLE, MPI_MAX, comm));
        CHECK(memcmp(e, f, sizeof(double) * n) == 0, "allreduce of doubles differs between ranks (n %d)", n);
        free(in); free(out); free(d); free(e); free(f);
    }

    /* Reduce to every root. */
    for (int root = 0; root < size; root++) {
        int v[3] = {rank, 2 * rank, 1}, s[3] = {0, 0, 0};
        CHECK_MPI(MPI_Reduce(v, s, 3, MPI_INT, MPI_SUM, root, comm));
        if (rank == root) {
            CHECK_INT_EQ(s[0], size * (size - 1) / 2);
            CHECK_INT_EQ(s[1], size * (size - 1));
            CHECK_INT_EQ(s[2], size);
        }
    }

    /* Alltoall and alltoallv. */
    int blk = 5000;
    int *sa = malloc(sizeof(int) * blk * size), *ra = malloc(sizeof(int) * blk * size);
    for (int p = 0; p < size; p++)
        for (int i = 0; i < blk; i++)
            sa[p * blk + i] = rank * 100000 + p * 1000 + i % 1000;
    CHECK_MPI(MPI_Alltoall(sa, blk, MPI_INT, ra, blk, MPI_INT, comm));
    int bad = 0;
    for (int p = 0; p < size; p++)
        for (int i = 0; i < blk; i++)
            bad += ra[p * blk + i] != p * 100000 + rank * 1000 + i % 1000;
    CHECK(bad == 0, "alltoall: %d wrong", bad);
    int *sc = malloc(sizeof(int) * size), *rc = malloc(sizeof(int) * size), *sd = malloc(sizeof(int) * size), *rd = malloc(sizeof(int) * size);
    for (int p = 0; p < size; p++) {
        sc[p] = (rank + p) % 3 * 100;  /* some empty */
        rc[p] = (p + rank) % 3 * 100;
        sd[p] = p * blk;
        rd[p] = p * blk;
    }
    memset(ra, 0, sizeof(int) * blk * size);
    CHECK_MPI(MPI_Alltoallv(sa, sc, sd, MPI_INT, ra, rc, rd, MPI_INT, comm));
    bad = 0;
    for (int p = 0; p < size; p++)
        for (int i = 0; i < rc[p]; i++)
            bad += ra[p * blk + i] != p * 100000 + rank * 1000 + i % 1000;
    CHECK(bad == 0, "alltoallv: %d wrong", bad);
    free(sa); free(ra); free(sc); free(rc); free(sd); free(rd);

    /* The library says it saw two clusters. */
#ifdef GRIDMPI
    CHECK_CLUSTERS(comm, 2);
#endif
    MPI_Finalize();
    return test_finish();
}
