/* gridmpi-test: ranks=1,3,4,8 timeout=60 */
/*
 * Distributed graph topologies: Dist_graph_create_adjacent (weighted and
 * MPI_UNWEIGHTED) returns neighbours and weights in the order given;
 * Dist_graph_create where each rank contributes edges of other ranks: the
 * resulting in/out neighbour sets (order not specified) and weights are
 * right; Dist_graph_neighbors_count (indegree, outdegree, weighted flag);
 * Topo_test = MPI_DIST_GRAPH; a rank with no edges.
 */
#include "testutil.h"

static int cmp_int(const void *a, const void *b) { return *(const int *)a - *(const int *)b; }

int main(int argc, char **argv)
{
    int size;
    int rank = test_init(&argc, &argv, &size);
    int st, indeg, outdeg, weighted;

    /* Adjacent: sources = {r-1, r-2}, destinations = {r+1, r+2} (mod n). */
    {
        int srcs[2] = {(rank - 1 + size) % size, (rank - 2 + 2 * size) % size};
        int dsts[2] = {(rank + 1) % size, (rank + 2) % size};
        int sw[2] = {10 * srcs[0] + rank, 10 * srcs[1] + rank}, dw[2] = {10 * rank + dsts[0], 10 * rank + dsts[1]};
        MPI_Comm dg;
        CHECK_MPI(MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 2, srcs, sw, 2, dsts, dw, MPI_INFO_NULL, 0, &dg));
        CHECK_MPI(MPI_Topo_test(dg, &st));
        CHECK_INT_EQ(st, MPI_DIST_GRAPH);
        CHECK_MPI(MPI_Dist_graph_neighbors_count(dg, &indeg, &outdeg, &weighted));
        CHECK(indeg == 2 && outdeg == 2 && weighted, "adjacent: indegree %d outdegree %d weighted %d", indeg, outdeg, weighted);
        int gs[2], gsw[2], gd[2], gdw[2];
        CHECK_MPI(MPI_Dist_graph_neighbors(dg, 2, gs, gsw, 2, gd, gdw));
        for (int k = 0; k < 2; k++) {
            CHECK(gs[k] == srcs[k] && gsw[k] == sw[k], "adjacent source %d: %d (w %d)", k, gs[k], gsw[k]);
            CHECK(gd[k] == dsts[k] && gdw[k] == dw[k], "adjacent destination %d: %d (w %d)", k, gd[k], gdw[k]);
        }
        MPI_Comm_free(&dg);

        CHECK_MPI(MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 2, srcs, MPI_UNWEIGHTED, 2, dsts, MPI_UNWEIGHTED,
                                                 MPI_INFO_NULL, 0, &dg));
        CHECK_MPI(MPI_Dist_graph_neighbors_count(dg, &indeg, &outdeg, &weighted));
        CHECK(indeg == 2 && outdeg == 2 && !weighted, "unweighted: %d %d weighted %d", indeg, outdeg, weighted);
        MPI_Comm_free(&dg);
    }

    /* Dist_graph_create: rank r declares the edges r -> (r*3+1)%n and also,
     * for rank 0 only, the edges k -> 0 for every k (so rank 0 declares edges
     * of others). The last rank (if n > 2) declares nothing. */
    {
        int n = 0, srcs[2], degrees[2], dsts[64], wts[64];
        int nsrc = 0, nd = 0;
        if (!(size > 2 && rank == size - 1)) {
            srcs[nsrc] = rank;
            degrees[nsrc] = 1;
            dsts[nd] = (rank * 3 + 1) % size;
            wts[nd++] = 100 + rank;
            nsrc++;
        }
        (void)n;
        int *srcs2 = tu_malloc(sizeof(int) * (size + 2)), *deg2 = tu_malloc(sizeof(int) * (size + 2));
        int *dst2 = tu_malloc(sizeof(int) * (size + 66)), *w2 = tu_malloc(sizeof(int) * (size + 66));
        for (int k = 0; k < nsrc; k++) {
            srcs2[k] = srcs[k];
            deg2[k] = degrees[k];
        }
        for (int k = 0; k < nd; k++) {
            dst2[k] = dsts[k];
            w2[k] = wts[k];
        }
        if (rank == 0)
            for (int k = 0; k < size; k++) {
                srcs2[nsrc++] = k;
                deg2[nsrc - 1] = 1;
                dst2[nd] = 0;
                w2[nd++] = 200 + k;
            }
        MPI_Comm dg;
        CHECK_MPI(MPI_Dist_graph_create(MPI_COMM_WORLD, nsrc, srcs2, deg2, dst2, w2, MPI_INFO_NULL, 0, &dg));
        /* Expected out-edges of me: (me*3+1)%n unless I am the silent last rank; plus 0. */
        int eo[4], neo = 0, ei[128], nei = 0;
        if (!(size > 2 && rank == size - 1))
            eo[neo++] = (rank * 3 + 1) % size;
        eo[neo++] = 0;
        for (int k = 0; k < size; k++)
            if (!(size > 2 && k == size - 1) && (k * 3 + 1) % size == rank)
                ei[nei++] = k;
        if (rank == 0)
            for (int k = 0; k < size; k++)
                ei[nei++] = k;
        CHECK_MPI(MPI_Dist_graph_neighbors_count(dg, &indeg, &outdeg, &weighted));
        CHECK(indeg == nei && outdeg == neo, "Dist_graph_create: indegree %d (expected %d) outdegree %d (expected %d)",
              indeg, nei, outdeg, neo);
        CHECK(weighted, "Dist_graph_create with weights: weighted flag 0");
        if (indeg == nei && outdeg == neo) {
            int *gs = tu_malloc(sizeof(int) * (indeg + 1)), *gsw = tu_malloc(sizeof(int) * (indeg + 1));
            int gd[4], gdw[4];
            CHECK_MPI(MPI_Dist_graph_neighbors(dg, indeg, gs, gsw, outdeg, gd, gdw));
            qsort(gs, indeg, sizeof(int), cmp_int);
            qsort(ei, nei, sizeof(int), cmp_int);
            for (int k = 0; k < nei; k++)
                CHECK(gs[k] == ei[k], "in-neighbour set element %d: %d, expected %d", k, gs[k], ei[k]);
            qsort(gd, outdeg, sizeof(int), cmp_int);
            qsort(eo, neo, sizeof(int), cmp_int);
            for (int k = 0; k < neo; k++)
                CHECK(gd[k] == eo[k], "out-neighbour set element %d: %d, expected %d", k, gd[k], eo[k]);
            free(gs);
            free(gsw);
        }
        MPI_Comm_free(&dg);
        free(srcs2);
        free(deg2);
        free(dst2);
        free(w2);
    }
    /* NULL weights for an empty array are not MPI_UNWEIGHTED: the graph is
     * weighted (MPI 4.1 8.5.5; MPICH's topo/distgraph1 "no graph --
     * NULLs"), also where one side's empty weights are NULL and the other
     * side's real. */
    {
        MPI_Comm dg;
        CHECK_MPI(MPI_Dist_graph_create(MPI_COMM_WORLD, 0, NULL, NULL, NULL, NULL, MPI_INFO_NULL, 0, &dg));
        CHECK_MPI(MPI_Dist_graph_neighbors_count(dg, &indeg, &outdeg, &weighted));
        CHECK(indeg == 0 && outdeg == 0 && weighted, "no edges, NULL weights: %d %d weighted %d", indeg, outdeg, weighted);
        MPI_Comm_free(&dg);
        int next = (rank + 1) % size, prev = (rank + size - 1) % size, w = 7, one_way = size > 1 && rank < 2;
        /* Rank 0 to rank 1 only: 0 has no sources, 1 no destinations. */
        int in = one_way && rank == 1, out = one_way && rank == 0;
        CHECK_MPI(MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, in, in ? &prev : NULL, in ? &w : NULL, out, out ? &next : NULL,
                                                 out ? &w : NULL, MPI_INFO_NULL, 0, &dg));
        CHECK_MPI(MPI_Dist_graph_neighbors_count(dg, &indeg, &outdeg, &weighted));
        CHECK(indeg == in && outdeg == out && weighted, "one edge, the empty side's weights NULL: %d %d weighted %d", indeg, outdeg, weighted);
        MPI_Comm_free(&dg);
    }
    MPI_Finalize();
    return test_finish();
}
