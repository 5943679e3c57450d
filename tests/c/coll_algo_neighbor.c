/* gridmpi-test: ranks=1,2,3,4,5,6,7,8 timeout=60 */
/*
 * Neighbourhood collectives where duplicate edges decide which block lands
 * where, in their three forms (blocking, I-form, persistent started twice):
 *  - Cartesian grids with periodic dimensions of size 1 and 2 (the same
 *    process is the neighbour both ways) and a non-periodic one: MPI 4.1
 *    section 8.6 (Example 8.10) says block 2d+1 of the sender (sent in
 *    the + direction) lands in block 2d of the receiver and block 2d in
 *    block 2d+1; MPI_PROC_NULL blocks stay untouched.
 *  - A distributed graph with repeated edges and self-loops: the k-th edge
 *    from s to r pairs with the k-th occurrence of s in r's sources.
 * Neighbor_alltoall, _alltoallv (count depends on the block), _alltoallw
 * (byte displacements) and Neighbor_allgather.
 */
#include "testutil.h"

#define SENT (-4444)
static int rank, size, C, salt;
static MPI_Comm topo;
static int indeg, outdeg;
static int srcs[64], dsts[64];
/* For each receive slot: the sender and which of its send blocks lands there. */
static int from_rank[64], from_block[64];
static int *sb, *rb, scnt[64], sdsp[64], rcnt[64], rdsp[64], sbyte[64], rbyte[64], stot, rtot;
static MPI_Datatype wt[64];
static int vform; /* 0 alltoall, 1 alltoallv, 2 alltoallw, 3 allgather */

static int val(int r, int b, int i) { return r * 100000 + b * 1000 + i + salt; }
/* Items in send block b (v and w forms). */
static int bc(int b) { return vform == 0 || vform == 3 ? C : C + b % 3; }

static void setup(void)
{
    salt++;
    stot = rtot = 0;
    int gap = vform == 0 ? 0 : 1; /* plain alltoall: blocks back to back */
    for (int b = 0; b < outdeg; b++) {
        scnt[b] = bc(b);
        sdsp[b] = stot;
        stot += scnt[b] + gap;
    }
    for (int k = 0; k < indeg; k++) {
        rcnt[k] = vform == 3 ? C : bc(from_block[k]);
        rdsp[k] = rtot;
        rtot += rcnt[k] + gap;
    }
    for (int k = 0; k < 64; k++) {
        sbyte[k] = sdsp[k] * (int)sizeof(int);
        rbyte[k] = rdsp[k] * (int)sizeof(int);
        wt[k] = MPI_INT;
    }
    int need_s = stot + C + 4, need_r = rtot + 4;
    static int cap_s, cap_r;
    if (need_s > cap_s) {
        free(sb);
        sb = tu_malloc(need_s * sizeof(int));
        cap_s = need_s;
    }
    if (need_r > cap_r) {
        free(rb);
        rb = tu_malloc(need_r * sizeof(int));
        cap_r = need_r;
    }
    for (int i = 0; i < need_s; i++)
        sb[i] = SENT;
    for (int i = 0; i < need_r; i++)
        rb[i] = SENT;
    if (vform == 3)
        for (int i = 0; i < C; i++)
            sb[i] = val(rank, 0, i);
    else
        for (int b = 0; b < outdeg; b++)
            for (int i = 0; i < scnt[b]; i++)
                sb[sdsp[b] + i] = val(rank, b, i);
}

static int start(int f, MPI_Request *q)
{
    MPI_Comm c = topo;
    MPI_Info n = MPI_INFO_NULL;
    switch (vform) {
    case 0:
        return f == 0 ? MPI_Neighbor_alltoall(sb, C, MPI_INT, rb, C, MPI_INT, c)
             : f == 1 ? MPI_Ineighbor_alltoall(sb, C, MPI_INT, rb, C, MPI_INT, c, q)
                      : MPI_Neighbor_alltoall_init(sb, C, MPI_INT, rb, C, MPI_INT, c, n, q);
    case 1:
        return f == 0 ? MPI_Neighbor_alltoallv(sb, scnt, sdsp, MPI_INT, rb, rcnt, rdsp, MPI_INT, c)
             : f == 1 ? MPI_Ineighbor_alltoallv(sb, scnt, sdsp, MPI_INT, rb, rcnt, rdsp, MPI_INT, c, q)
                      : MPI_Neighbor_alltoallv_init(sb, scnt, sdsp, MPI_INT, rb, rcnt, rdsp, MPI_INT, c, n, q);
    case 2: {
        MPI_Aint sa[64], ra[64];
        for (int k = 0; k < 64; k++) {
            sa[k] = sbyte[k];
            ra[k] = rbyte[k];
        }
        return f == 0 ? MPI_Neighbor_alltoallw(sb, scnt, sa, wt, rb, rcnt, ra, wt, c)
             : f == 1 ? MPI_Ineighbor_alltoallw(sb, scnt, sa, wt, rb, rcnt, ra, wt, c, q)
                      : MPI_Neighbor_alltoallw_init(sb, scnt, sa, wt, rb, rcnt, ra, wt, c, n, q);
    }
    default:
        return f == 0 ? MPI_Neighbor_allgatherv(sb, C, MPI_INT, rb, rcnt, rdsp, MPI_INT, c)
             : f == 1 ? MPI_Ineighbor_allgatherv(sb, C, MPI_INT, rb, rcnt, rdsp, MPI_INT, c, q)
                      : MPI_Neighbor_allgatherv_init(sb, C, MPI_INT, rb, rcnt, rdsp, MPI_INT, c, n, q);
    }
}

static void verify(const char *what, const char *form)
{
    int bad = 0, first = -1;
    for (int k = 0; k < indeg; k++) {
        for (int i = 0; i < rcnt[k]; i++) {
            int want = from_rank[k] == MPI_PROC_NULL ? SENT
                     : val(from_rank[k], vform == 3 ? 0 : from_block[k], i);
            if (rb[rdsp[k] + i] != want && bad++ == 0)
                first = k;
        }
    }
    if (rb[rtot] != SENT)
        bad++;
    for (int k = 0; k < indeg && vform != 0; k++) {
        if (rb[rdsp[k] + rcnt[k]] != SENT)
            bad++;
    }
    CHECK(!bad, "%s, form %d (%s), C %d: %d ints wrong, first in slot %d", what, vform, form, C, bad, first);
}

static void run(const char *what)
{
    MPI_Request q;
    setup();
    CHECK_MPI(start(0, &q));
    verify(what, "blocking");
    setup();
    if (CHECK_MPI(start(1, &q)))
        CHECK_MPI(MPI_Wait(&q, MPI_STATUS_IGNORE));
    verify(what, "nonblocking");
    setup();
    if (CHECK_MPI(start(2, &q))) {
        for (int it = 0; it < 2; it++) {
            if (it)
                setup();
            CHECK_MPI(MPI_Start(&q));
            CHECK_MPI(MPI_Wait(&q, MPI_STATUS_IGNORE));
            verify(what, "persistent");
        }
        MPI_Request_free(&q);
    }
}

static void all_forms(const char *what)
{
    const int counts[] = {0, 1, 5, 3000};
    for (unsigned ci = 0; ci < sizeof counts / sizeof *counts; ci++) {
        C = counts[ci];
        for (vform = 0; vform < 4; vform++)
            run(what);
    }
}

static void cartesian(int ndims, const int *dims, const int *periods, const char *what)
{
    MPI_Cart_create(MPI_COMM_WORLD, ndims, dims, periods, 0, &topo);
    if (topo == MPI_COMM_NULL)
        return;
    indeg = outdeg = 2 * ndims;
    for (int d = 0; d < ndims; d++) {
        int neg, pos;
        MPI_Cart_shift(topo, d, 1, &neg, &pos);
        srcs[2 * d] = neg;
        srcs[2 * d + 1] = pos;
        /* Slot 2d gets what the - neighbour sent in its + direction, and
         * the other way round. */
        from_rank[2 * d] = neg;
        from_block[2 * d] = 2 * d + 1;
        from_rank[2 * d + 1] = pos;
        from_block[2 * d + 1] = 2 * d;
    }
    all_forms(what);
    MPI_Comm_free(&topo);
}

/* Rank r's destinations: r+1 twice, itself, r+2, and for rank 0 itself again. */
static int dests_of(int r, int *d)
{
    int n = 0;
    d[n++] = (r + 1) % size;
    d[n++] = (r + 1) % size;
    d[n++] = r;
    d[n++] = (r + 2) % size;
    if (r == 0)
        d[n++] = 0;
    return n;
}

static void multigraph(void)
{
    outdeg = dests_of(rank, dsts);
    indeg = 0;
    for (int s = 0; s < size; s++) {
        int d[8], n = dests_of(s, d);
        for (int k = 0; k < n; k++)
            if (d[k] == rank) {
                srcs[indeg] = s;
                from_rank[indeg] = s;
                from_block[indeg] = k;
                indeg++;
            }
    }
    MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, indeg, srcs, MPI_UNWEIGHTED, outdeg, dsts, MPI_UNWEIGHTED,
                                   MPI_INFO_NULL, 0, &topo);
    all_forms("multigraph");
    MPI_Comm_free(&topo);
}

int main(int argc, char **argv)
{
    rank = test_init(&argc, &argv, &size);
    {
        int dims[3] = {size, 1, 1}, periods[3] = {1, 1, 0};
        cartesian(3, dims, periods, "Cartesian size x 1 x 1 (periodic, periodic, not)");
    }
    if (size % 2 == 0) {
        int dims[2] = {2, size / 2}, periods[2] = {1, 0};
        cartesian(2, dims, periods, "Cartesian 2 x size/2 (periodic, not)");
        int dims2[2] = {size / 2, 2}, periods2[2] = {0, 1};
        cartesian(2, dims2, periods2, "Cartesian size/2 x 2 (not, periodic)");
    }
    multigraph();
    MPI_Finalize();
    return test_finish();
}
