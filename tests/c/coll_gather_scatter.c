/* gridmpi-test: ranks=1,2,3,5,8 timeout=60 */
/*
 * Gather, Gatherv, Scatter, Scatterv from every root: regular counts,
 * varying counts (including zero) with displacements out of order and with
 * gaps (gaps untouched), MPI_IN_PLACE at the root, derived receive type at
 * the root.
 */
#include "testutil.h"

#define GUARD (-77)

int main(int argc, char **argv)
{
    int size;
    int rank = test_init(&argc, &argv, &size);
    MPI_Comm comm = MPI_COMM_WORLD;
    const int N = 37;
    int *send = tu_malloc(sizeof(int) * N * size * 2 + 64);
    int *recv = tu_malloc(sizeof(int) * N * size * 4 + 64);
    int *counts = tu_malloc(sizeof(int) * size), *displs = tu_malloc(sizeof(int) * size);
    char what[96];

    for (int root = 0; root < size; root++) {
        /* Gather */
        fill_ints(send, N, rank);
        for (int i = 0; i < N * size; i++)
            recv[i] = GUARD;
        CHECK_MPI(MPI_Gather(send, N, MPI_INT, recv, N, MPI_INT, root, comm));
        if (rank == root)
            for (int p = 0; p < size; p++) {
                snprintf(what, sizeof what, "Gather root %d from %d", root, p);
                check_ints(recv + p * N, N, p, what);
            }

        /* Gather with MPI_IN_PLACE at the root (its block already in place). */
        if (rank == root) {
            for (int i = 0; i < N * size; i++)
                recv[i] = GUARD;
            fill_ints(recv + root * N, N, 500 + root);
            CHECK_MPI(MPI_Gather(MPI_IN_PLACE, N, MPI_INT, recv, N, MPI_INT, root, comm));
            for (int p = 0; p < size; p++) {
                snprintf(what, sizeof what, "Gather IN_PLACE root %d from %d", root, p);
                check_ints(recv + p * N, N, 500 + p, what);
            }
        } else {
            fill_ints(send, N, 500 + rank);
            CHECK_MPI(MPI_Gather(send, N, MPI_INT, NULL, 0, MPI_INT, root, comm));
        }

        /* Gatherv: rank p sends p % 3 * 5 ints (0 for some), placed in
         * reverse rank order with a gap of 2 between blocks. */
        int total = 0;
        for (int p = size - 1; p >= 0; p--) {
            counts[p] = (p % 3) * 5;
            displs[p] = total;
            total += counts[p] + 2;
        }
        fill_ints(send, counts[rank], 1000 + rank);
        for (int i = 0; i < total + 4; i++)
            recv[i] = GUARD;
        CHECK_MPI(MPI_Gatherv(send, counts[rank], MPI_INT, recv, counts, displs, MPI_INT, root, comm));
        if (rank == root) {
            for (int p = 0; p < size; p++) {
                snprintf(what, sizeof what, "Gatherv root %d from %d", root, p);
                check_ints(recv + displs[p], counts[p], 1000 + p, what);
                CHECK(recv[displs[p] + counts[p]] == GUARD && recv[displs[p] + counts[p] + 1] == GUARD,
                      "Gatherv wrote into the gap after block %d", p);
            }
        }

        /* Scatter */
        if (rank == root)
            for (int p = 0; p < size; p++)
                fill_ints(send + p * N, N, 2000 + p);
        for (int i = 0; i < N; i++)
            recv[i] = GUARD;
        CHECK_MPI(MPI_Scatter(send, N, MPI_INT, recv, N, MPI_INT, root, comm));
        snprintf(what, sizeof what, "Scatter root %d", root);
        check_ints(recv, N, 2000 + rank, what);

        /* Scatter with MPI_IN_PLACE at the root. */
        if (rank == root) {
            for (int p = 0; p < size; p++)
                fill_ints(send + p * N, N, 3000 + p);
            CHECK_MPI(MPI_Scatter(send, N, MPI_INT, MPI_IN_PLACE, N, MPI_INT, root, comm));
            check_ints(send + root * N, N, 3000 + root, "Scatter IN_PLACE root block untouched");
        } else {
            CHECK_MPI(MPI_Scatter(NULL, 0, MPI_INT, recv, N, MPI_INT, root, comm));
            snprintf(what, sizeof what, "Scatter IN_PLACE root %d", root);
            check_ints(recv, N, 3000 + rank, what);
        }

        /* Scatterv with the Gatherv layout. */
        if (rank == root)
            for (int p = 0; p < size; p++)
                fill_ints(send + displs[p], counts[p], 4000 + p);
        for (int i = 0; i < N; i++)
            recv[i] = GUARD;
        CHECK_MPI(MPI_Scatterv(send, counts, displs, MPI_INT, recv, counts[rank], MPI_INT, root, comm));
        snprintf(what, sizeof what, "Scatterv root %d", root);
        check_ints(recv, counts[rank], 4000 + rank, what);
        CHECK(recv[counts[rank]] == GUARD, "Scatterv wrote past the count");
    }

    /* Gather into a derived type at the root: each rank's 2 ints land in a
     * column of a size x 2 matrix stored column-major... i.e. resized vector. */
    {
        int root = 0;
        MPI_Datatype col, colr;
        MPI_Type_vector(2, 1, size, MPI_INT, &col);
        MPI_Type_create_resized(col, 0, sizeof(int), &colr);
        MPI_Type_commit(&colr);
        int mine[2] = {rank * 10, rank * 10 + 1};
        for (int i = 0; i < 2 * size; i++)
            recv[i] = GUARD;
        CHECK_MPI(MPI_Gather(mine, 2, MPI_INT, recv, 1, colr, root, comm));
        if (rank == root)
            for (int p = 0; p < size; p++)
                CHECK(recv[p] == p * 10 && recv[size + p] == p * 10 + 1, "Gather into resized column: rank %d got %d %d", p,
                      recv[p], recv[size + p]);
        MPI_Type_free(&col);
        MPI_Type_free(&colr);
    }

    free(send);
    free(recv);
    free(counts);
    free(displs);
    MPI_Finalize();
    return test_finish();
}
