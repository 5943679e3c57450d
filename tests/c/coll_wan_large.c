/* gridmpi-test: ranks=10,12 min-ranks=10 timeout=180 env=GRIDMPI_TRANSPORT=tcp env=GRIDMPI_WAN_BANDWIDTH=2gbit env=GRIDMPI_WAN_DELAY=100us */
/*
 * Alltoall of large clusters, end to end: two "sites" of 5 or 6 ranks
 * (odd and even ranks) exchange more than 16 flows each way, so GridMPI's
 * MPI_Alltoall crosses through forwarders (each member collects its mates'
 * blocks for one rank of the other site) and MPI_Alltoallv sends one flow
 * per link at a time, paced, its receives held across rounds
 * (crates/engine/src/coll/wan.rs). Block sizes from one int to above the
 * TCP eager limit, MPI_IN_PLACE, uneven and empty alltoallv blocks, the
 * nonblocking forms overlapped: every block must land where any MPI puts
 * it. Under other MPIs GRIDMPI_CLUSTER means nothing and this is a plain
 * alltoall test.
 */
#include "testutil.h"

static int value(int from, int to, int i)
{
    return from * 1000003 + to * 10007 + i;
}

/* MPI_Alltoall of `blk` ints per peer (in place if asked); the number of
 * wrong ints. */
static int alltoall(MPI_Comm comm, int rank, int size, int blk, int in_place)
{
    int *s = malloc(sizeof(int) * blk * size), *r = malloc(sizeof(int) * blk * size);
    for (int p = 0; p < size; p++)
        for (int i = 0; i < blk; i++) {
            s[p * blk + i] = value(rank, p, i);
            r[p * blk + i] = in_place ? value(rank, p, i) : -1;
        }
    if (in_place)
        CHECK_MPI(MPI_Alltoall(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, r, blk, MPI_INT, comm));
    else
        CHECK_MPI(MPI_Alltoall(s, blk, MPI_INT, r, blk, MPI_INT, comm));
    int bad = 0;
    for (int p = 0; p < size; p++)
        for (int i = 0; i < blk; i++)
            bad += r[p * blk + i] != value(p, rank, i);
    free(s);
    free(r);
    return bad;
}

/* Counts of an alltoallv from `from` to `to`: uneven, some empty, some
 * above the eager limit. */
static int vcount(int from, int to, int salt)
{
    int k = (from * 7 + to * 3 + salt) % 5;
    return k == 0 ? 0 : k == 4 ? 20000 : k * 300;
}

int main(int argc, char **argv)
{
    test_sites_by_rank_parity();
    int size;
    int rank = test_init(&argc, &argv, &size);
    MPI_Comm comm = MPI_COMM_WORLD;

    int blks[] = {1, 1000, 20000};
    for (int b = 0; b < 3; b++) {
        int bad = alltoall(comm, rank, size, blks[b], 0);
        CHECK(bad == 0, "alltoall of %d ints: %d wrong", blks[b], bad);
        bad = alltoall(comm, rank, size, blks[b], 1);
        CHECK(bad == 0, "in-place alltoall of %d ints: %d wrong", blks[b], bad);
    }

    /* Alltoallv, blocking then two nonblocking ones at once. */
    int *sc[2], *rc[2], *sd[2], *rd[2], *sb[2], *rb[2];
    for (int salt = 0; salt < 2; salt++) {
        sc[salt] = malloc(sizeof(int) * size);
        rc[salt] = malloc(sizeof(int) * size);
        sd[salt] = malloc(sizeof(int) * size);
        rd[salt] = malloc(sizeof(int) * size);
        int st = 0, rt = 0;
        for (int p = 0; p < size; p++) {
            sc[salt][p] = vcount(rank, p, salt);
            rc[salt][p] = vcount(p, rank, salt);
            sd[salt][p] = st;
            rd[salt][p] = rt;
            st += sc[salt][p];
            rt += rc[salt][p];
        }
        sb[salt] = malloc(sizeof(int) * (st + 1));
        rb[salt] = malloc(sizeof(int) * (rt + 1));
        for (int p = 0; p < size; p++)
            for (int i = 0; i < sc[salt][p]; i++)
                sb[salt][sd[salt][p] + i] = value(rank, p, i + salt);
    }
    for (int round = 0; round < 2; round++) {
        MPI_Request req[2];
        for (int salt = 0; salt < 2; salt++) {
            int rt = rd[salt][size - 1] + rc[salt][size - 1];
            for (int i = 0; i < rt; i++)
                rb[salt][i] = -1;
            if (round == 0)
                CHECK_MPI(MPI_Alltoallv(sb[salt], sc[salt], sd[salt], MPI_INT, rb[salt], rc[salt], rd[salt], MPI_INT, comm));
            else
                CHECK_MPI(MPI_Ialltoallv(sb[salt], sc[salt], sd[salt], MPI_INT, rb[salt], rc[salt], rd[salt], MPI_INT, comm,
                                         &req[salt]));
        }
        if (round == 1)
            CHECK_MPI(MPI_Waitall(2, req, MPI_STATUSES_IGNORE));
        for (int salt = 0; salt < 2; salt++) {
            int bad = 0;
            for (int p = 0; p < size; p++)
                for (int i = 0; i < rc[salt][p]; i++)
                    bad += rb[salt][rd[salt][p] + i] != value(p, rank, i + salt);
            CHECK(bad == 0, "%s alltoallv %d: %d wrong", round ? "nonblocking" : "blocking", salt, bad);
        }
    }
    for (int salt = 0; salt < 2; salt++) {
        free(sc[salt]); free(rc[salt]); free(sd[salt]); free(rd[salt]); free(sb[salt]); free(rb[salt]);
    }

    /* Two nonblocking alltoalls at once through the forwarders. */
    int blk = 700;
    int *s1 = malloc(sizeof(int) * blk * size), *r1 = malloc(sizeof(int) * blk * size);
    int *s2 = malloc(sizeof(int) * blk * size), *r2 = malloc(sizeof(int) * blk * size);
    for (int p = 0; p < size; p++)
        for (int i = 0; i < blk; i++) {
            s1[p * blk + i] = value(rank, p, i);
            s2[p * blk + i] = value(rank, p, i + 1);
        }
    MPI_Request req[2];
    CHECK_MPI(MPI_Ialltoall(s1, blk, MPI_INT, r1, blk, MPI_INT, comm, &req[0]));
    CHECK_MPI(MPI_Ialltoall(s2, blk, MPI_INT, r2, blk, MPI_INT, comm, &req[1]));
    CHECK_MPI(MPI_Waitall(2, req, MPI_STATUSES_IGNORE));
    int bad = 0;
    for (int p = 0; p < size; p++)
        for (int i = 0; i < blk; i++)
            bad += (r1[p * blk + i] != value(p, rank, i)) + (r2[p * blk + i] != value(p, rank, i + 1));
    CHECK(bad == 0, "two nonblocking alltoalls: %d wrong", bad);
    free(s1); free(r1); free(s2); free(r2);

#ifdef GRIDMPI
    CHECK_CLUSTERS(comm, 2);
#endif
    MPI_Finalize();
    return test_finish();
}
