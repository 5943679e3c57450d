/* gridmpi-test: ranks=1,2,4,6,8 timeout=60 */
/*
 * Neighbourhood collectives: Neighbor_allgather(v), Neighbor_alltoall(v,w)
 * and their I-forms on a 2-D Cartesian grid (periodic in one dimension,
 * with MPI_PROC_NULL neighbours at the other's edges whose receive blocks
 * stay untouched; block order: per dimension, the negative then the
 * positive direction) and on a distributed graph made with
 * Dist_graph_create_adjacent (block order = the order given).
 */
#include "testutil.h"

#define B 3
#define GUARD (-9)

int main(int argc, char **argv)
{
    int size;
    int rank = test_init(&argc, &argv, &size);

    /* Cartesian. */
    int dims[2] = {0, 0}, periods[2] = {1, 0};
    MPI_Dims_create(size, 2, dims);
    MPI_Comm cart;
    MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 0, &cart);
    int nb[4];
    /* Open MPI 5.0.11's nonblocking neighbour alltoall pairs the blocks the
     * other way round when a periodic dimension has size 1 or 2 (both
     * neighbours are the same process), unlike its blocking form and the
     * standard; use only the blocking forms there. */
    int peer_quirk = TU_PEER_OPENMPI && dims[0] <= 2;
    MPI_Cart_shift(cart, 0, 1, &nb[0], &nb[1]);
    MPI_Cart_shift(cart, 1, 1, &nb[2], &nb[3]);
    {
        int sb[4 * B], rb[4 * B + 1];
        char what[96];
        /* allgather: each sends B ints seeded by its rank. */
        fill_ints(sb, B, rank);
        for (int variant = 0; variant < 2; variant++) {
            for (int i = 0; i <= 4 * B; i++)
                rb[i] = GUARD;
            if (variant == 0)
                CHECK_MPI(MPI_Neighbor_allgather(sb, B, MPI_INT, rb, B, MPI_INT, cart));
            else {
                MPI_Request r;
                CHECK_MPI(MPI_Ineighbor_allgather(sb, B, MPI_INT, rb, B, MPI_INT, cart, &r));
                CHECK_MPI(MPI_Wait(&r, MPI_STATUS_IGNORE));
            }
            for (int k = 0; k < 4; k++) {
                snprintf(what, sizeof what, "%sNeighbor_allgather on cart, block %d (neighbour %d)", variant ? "I" : "", k, nb[k]);
                if (nb[k] == MPI_PROC_NULL)
                    CHECK(rb[k * B] == GUARD && rb[k * B + B - 1] == GUARD, "%s: PROC_NULL block written", what);
                else
                    check_ints(rb + k * B, B, nb[k], what);
            }
        }
        /* alltoall: block k goes to neighbour k; from neighbour k I get the
         * block it sent in my direction. Direction pairs: 0<->1, 2<->3. */
        for (int k = 0; k < 4; k++)
            fill_ints(sb + k * B, B, rank * 10 + k);
        for (int variant = 0; variant < (peer_quirk ? 1 : 2); variant++) {
            for (int i = 0; i <= 4 * B; i++)
                rb[i] = GUARD;
            if (variant == 0)
                CHECK_MPI(MPI_Neighbor_alltoall(sb, B, MPI_INT, rb, B, MPI_INT, cart));
            else {
                MPI_Request r;
                CHECK_MPI(MPI_Ineighbor_alltoall(sb, B, MPI_INT, rb, B, MPI_INT, cart, &r));
                CHECK_MPI(MPI_Wait(&r, MPI_STATUS_IGNORE));
            }
            for (int k = 0; k < 4; k++) {
                snprintf(what, sizeof what, "%sNeighbor_alltoall on cart, block %d (neighbour %d)", variant ? "I" : "", k, nb[k]);
                if (nb[k] == MPI_PROC_NULL)
                    CHECK(rb[k * B] == GUARD, "%s: PROC_NULL block written", what);
                else
                    check_ints(rb + k * B, B, nb[k] * 10 + (k ^ 1), what);
            }
        }
        /* With a periodic dimension of size 1 or 2 both neighbours of dim 0
         * can be the same rank: the blocks are still distinct (covered above). */
    }
    /* alltoallv / alltoallw on cart: neighbour k gets k+1 ints. */
    {
        int sc[4], sd[4], rc[4], rd[4], so = 0, ro = 0;
        for (int k = 0; k < 4; k++) {
            sc[k] = k + 1;
            sd[k] = so;
            so += k + 1;
            rc[k] = (k ^ 1) + 1; /* what the neighbour in direction k sends me */
            rd[k] = ro;
            ro += rc[k] + 1;
        }
        int sb[16], rb[32];
        for (int k = 0; k < 4; k++)
            fill_ints(sb + sd[k], sc[k], rank * 10 + k);
        for (int i = 0; i < 32; i++)
            rb[i] = GUARD;
        CHECK_MPI(MPI_Neighbor_alltoallv(sb, sc, sd, MPI_INT, rb, rc, rd, MPI_INT, cart));
        for (int k = 0; k < 4; k++) {
            if (nb[k] == MPI_PROC_NULL)
                CHECK(rb[rd[k]] == GUARD, "Neighbor_alltoallv PROC_NULL block written");
            else
                check_ints(rb + rd[k], rc[k], nb[k] * 10 + (k ^ 1), "Neighbor_alltoallv on cart");
            CHECK(rb[rd[k] + rc[k]] == GUARD, "Neighbor_alltoallv wrote into a gap");
        }
        MPI_Aint sdw[4], rdw[4];
        MPI_Datatype ty[4] = {MPI_INT, MPI_INT, MPI_INT, MPI_INT};
        for (int k = 0; k < 4; k++) {
            sdw[k] = sd[k] * (MPI_Aint)sizeof(int);
            rdw[k] = rd[k] * (MPI_Aint)sizeof(int);
        }
        for (int i = 0; i < 32; i++)
            rb[i] = GUARD;
        MPI_Request r;
        if (peer_quirk)
            CHECK_MPI(MPI_Neighbor_alltoallw(sb, sc, sdw, ty, rb, rc, rdw, ty, cart));
        else {
            CHECK_MPI(MPI_Ineighbor_alltoallw(sb, sc, sdw, ty, rb, rc, rdw, ty, cart, &r));
            CHECK_MPI(MPI_Wait(&r, MPI_STATUS_IGNORE));
        }
        for (int k = 0; k < 4; k++)
            if (nb[k] != MPI_PROC_NULL)
                check_ints(rb + rd[k], rc[k], nb[k] * 10 + (k ^ 1), "Ineighbor_alltoallw on cart");
        /* allgatherv */
        int gc[4], gd[4];
        for (int k = 0; k < 4; k++) {
            gc[k] = B;
            gd[k] = (3 - k) * (B + 1); /* reversed blocks with gaps */
        }
        int one[B];
        fill_ints(one, B, 700 + rank);
        for (int i = 0; i < 32; i++)
            rb[i] = GUARD;
        CHECK_MPI(MPI_Neighbor_allgatherv(one, B, MPI_INT, rb, gc, gd, MPI_INT, cart));
        for (int k = 0; k < 4; k++)
            if (nb[k] != MPI_PROC_NULL)
                check_ints(rb + gd[k], B, 700 + nb[k], "Neighbor_allgatherv on cart");
    }
    MPI_Comm_free(&cart);

    /* Distributed graph: in from r-1 and r+3, out to r+1 and r-3 (mod n). */
    {
        int srcs[2] = {(rank - 1 + size) % size, (rank + 3) % size};
        int dsts[2] = {(rank + 1) % size, (rank - 3 + 3 * size) % size};
        MPI_Comm dg;
        MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 2, srcs, MPI_UNWEIGHTED, 2, dsts, MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &dg);
        int sb[2 * B], rb[2 * B];
        fill_ints(sb, B, 300 + rank);
        CHECK_MPI(MPI_Neighbor_allgather(sb, B, MPI_INT, rb, B, MPI_INT, dg));
        check_ints(rb, B, 300 + srcs[0], "Neighbor_allgather on dist graph, source 0");
        check_ints(rb + B, B, 300 + srcs[1], "Neighbor_allgather on dist graph, source 1");
        /* alltoall: block j to dsts[j]. Source 0 (r-1) sent me its block 0
         * (to its r+1 = me); source 1 (r+3) sent me its block 1 (to its r-3). */
        fill_ints(sb, B, 400 + rank * 2);
        fill_ints(sb + B, B, 400 + rank * 2 + 1);
        MPI_Request r;
        CHECK_MPI(MPI_Ineighbor_alltoall(sb, B, MPI_INT, rb, B, MPI_INT, dg, &r));
        CHECK_MPI(MPI_Wait(&r, MPI_STATUS_IGNORE));
        check_ints(rb, B, 400 + srcs[0] * 2, "Ineighbor_alltoall on dist graph, source 0");
        check_ints(rb + B, B, 400 + srcs[1] * 2 + 1, "Ineighbor_alltoall on dist graph, source 1");
        MPI_Comm_free(&dg);
    }

    MPI_Finalize();
    return test_finish();
}
