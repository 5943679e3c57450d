/* gridmpi-test: ranks=1,3,4,8 timeout=60 */
/*
 * Graph topologies (MPI_Graph_create): a ring with an extra chord per node
 * (and a self-loop on rank 0); Topo_test = MPI_GRAPH, Graphdims_get,
 * Graph_get returns the index/edges arrays given, Graph_neighbors_count /
 * Graph_neighbors per rank (in the given order, duplicates kept),
 * Graph_map; ranks outside a smaller graph get MPI_COMM_NULL.
 */
#include "testutil.h"

int main(int argc, char **argv)
{
    int size;
    int rank = test_init(&argc, &argv, &size);
    /* Node i: neighbours (i+1)%n, (i-1+n)%n, (i+2)%n; node 0 also itself. */
    int *index = tu_malloc(sizeof(int) * size), *edges = tu_malloc(sizeof(int) * (4 * size));
    int ne = 0;
    for (int i = 0; i < size; i++) {
        edges[ne++] = (i + 1) % size;
        edges[ne++] = (i - 1 + size) % size;
        edges[ne++] = (i + 2) % size;
        if (i == 0)
            edges[ne++] = 0;
        index[i] = ne;
    }
    MPI_Comm g;
    CHECK_MPI(MPI_Graph_create(MPI_COMM_WORLD, size, index, edges, 0, &g));
    if (CHECK(g != MPI_COMM_NULL, "Graph_create gave MPI_COMM_NULL")) {
        int st, nn, nedges;
        CHECK_MPI(MPI_Topo_test(g, &st));
        CHECK_INT_EQ(st, MPI_GRAPH);
        CHECK_MPI(MPI_Graphdims_get(g, &nn, &nedges));
        CHECK(nn == size && nedges == ne, "Graphdims_get: %d nodes %d edges", nn, nedges);
        int *gi = tu_malloc(sizeof(int) * size), *ge = tu_malloc(sizeof(int) * ne);
        CHECK_MPI(MPI_Graph_get(g, size, ne, gi, ge));
        for (int i = 0; i < size; i++)
            CHECK(gi[i] == index[i], "Graph_get index[%d] = %d", i, gi[i]);
        for (int i = 0; i < ne; i++)
            CHECK(ge[i] == edges[i], "Graph_get edges[%d] = %d", i, ge[i]);
        for (int q = 0; q < size; q++) {
            int cnt;
            CHECK_MPI(MPI_Graph_neighbors_count(g, q, &cnt));
            int first = q ? index[q - 1] : 0;
            CHECK(cnt == index[q] - first, "Graph_neighbors_count(%d) = %d", q, cnt);
            int nb[8];
            CHECK_MPI(MPI_Graph_neighbors(g, q, 8, nb));
            for (int k = 0; k < cnt && k < 8; k++)
                CHECK(nb[k] == edges[first + k], "Graph_neighbors(%d)[%d] = %d", q, k, nb[k]);
        }
        /* Exchange with the first neighbour (a ring). */
        int out = rank, in = -1;
        CHECK_MPI(MPI_Sendrecv(&out, 1, MPI_INT, (rank + 1) % size, 0, &in, 1, MPI_INT, (rank - 1 + size) % size, 0, g,
                               MPI_STATUS_IGNORE));
        CHECK_INT_EQ(in, (rank - 1 + size) % size);
        free(gi);
        free(ge);
        MPI_Comm_free(&g);
    }
    /* Graph of size-1 nodes (a chain). */
    if (size > 1) {
        int m = size - 1;
        int *ix = tu_malloc(sizeof(int) * m), *ed = tu_malloc(sizeof(int) * 2 * m), k = 0;
        for (int i = 0; i < m; i++) {
            if (i > 0)
                ed[k++] = i - 1;
            if (i < m - 1)
                ed[k++] = i + 1;
            ix[i] = k;
        }
        MPI_Comm chain;
        CHECK_MPI(MPI_Graph_create(MPI_COMM_WORLD, m, ix, ed, 0, &chain));
        if (rank == size - 1)
            CHECK(chain == MPI_COMM_NULL, "rank outside the graph got a communicator");
        else if (CHECK(chain != MPI_COMM_NULL, "rank inside the graph got MPI_COMM_NULL"))
            MPI_Comm_free(&chain);
        int nr = -7;
        CHECK_MPI(MPI_Graph_map(MPI_COMM_WORLD, m, ix, ed, &nr));
        /* Open MPI 5.0.11 gives a rank beyond the graph its old rank. */
        if (!TU_PEER_OPENMPI)
            CHECK(nr == MPI_UNDEFINED || (nr >= 0 && nr < m), "Graph_map gave %d", nr);
        free(ix);
        free(ed);
    }
    free(index);
    free(edges);
    MPI_Finalize();
    return test_finish();
}
