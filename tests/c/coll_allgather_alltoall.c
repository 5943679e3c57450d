/* gridmpi-test: ranks=1,2,3,5,8 timeout=60 */
/*
 * Allgather, Allgatherv, Alltoall, Alltoallv, Alltoallw: regular and
 * varying counts (zeros included), displacements out of order with gaps,
 * MPI_IN_PLACE (Allgather, Allgatherv, Alltoall, Alltoallv), derived types
 * (Alltoallw with a different type per peer), 0-count calls.
 */
#include "testutil.h"

#define GUARD (-55)

int main(int argc, char **argv)
{
    int size;
    int rank = test_init(&argc, &argv, &size);
    MPI_Comm comm = MPI_COMM_WORLD;
    const int N = 13;
    int *sb = tu_malloc(sizeof(int) * (N * size * 4 + 64));
    int *rb = tu_malloc(sizeof(int) * (N * size * 4 + 64));
    int *sc = tu_malloc(sizeof(int) * size), *sd = tu_malloc(sizeof(int) * size);
    int *rc = tu_malloc(sizeof(int) * size), *rd = tu_malloc(sizeof(int) * size);
    char what[96];

    /* Allgather */
    fill_ints(sb, N, rank);
    for (int i = 0; i < N * size; i++)
        rb[i] = GUARD;
    CHECK_MPI(MPI_Allgather(sb, N, MPI_INT, rb, N, MPI_INT, comm));
    for (int p = 0; p < size; p++) {
        snprintf(what, sizeof what, "Allgather block %d", p);
        check_ints(rb + p * N, N, p, what);
    }
    /* Allgather IN_PLACE */
    for (int i = 0; i < N * size; i++)
        rb[i] = GUARD;
    fill_ints(rb + rank * N, N, 100 + rank);
    CHECK_MPI(MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, rb, N, MPI_INT, comm));
    for (int p = 0; p < size; p++) {
        snprintf(what, sizeof what, "Allgather IN_PLACE block %d", p);
        check_ints(rb + p * N, N, 100 + p, what);
    }
    /* Allgather of zero elements. */
    CHECK_MPI(MPI_Allgather(sb, 0, MPI_INT, rb, 0, MPI_INT, comm));

    /* Allgatherv: count of p is (p*2)%5, reversed layout with gaps. */
    int total = 0;
    for (int p = size - 1; p >= 0; p--) {
        rc[p] = (p * 2) % 5;
        rd[p] = total;
        total += rc[p] + 1;
    }
    fill_ints(sb, rc[rank], 200 + rank);
    for (int i = 0; i < total + 2; i++)
        rb[i] = GUARD;
    CHECK_MPI(MPI_Allgatherv(sb, rc[rank], MPI_INT, rb, rc, rd, MPI_INT, comm));
    for (int p = 0; p < size; p++) {
        snprintf(what, sizeof what, "Allgatherv block %d", p);
        check_ints(rb + rd[p], rc[p], 200 + p, what);
        CHECK(rb[rd[p] + rc[p]] == GUARD, "Allgatherv wrote into the gap after block %d", p);
    }
    for (int i = 0; i < total + 2; i++)
        rb[i] = GUARD;
    fill_ints(rb + rd[rank], rc[rank], 300 + rank);
    CHECK_MPI(MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, rb, rc, rd, MPI_INT, comm));
    for (int p = 0; p < size; p++) {
        snprintf(what, sizeof what, "Allgatherv IN_PLACE block %d", p);
        check_ints(rb + rd[p], rc[p], 300 + p, what);
    }

    /* Alltoall: block for q from p has seed p*100+q. */
    for (int q = 0; q < size; q++)
        fill_ints(sb + q * N, N, rank * 100 + q + 5000);
    for (int i = 0; i < N * size; i++)
        rb[i] = GUARD;
    CHECK_MPI(MPI_Alltoall(sb, N, MPI_INT, rb, N, MPI_INT, comm));
    for (int p = 0; p < size; p++) {
        snprintf(what, sizeof what, "Alltoall block from %d", p);
        check_ints(rb + p * N, N, p * 100 + rank + 5000, what);
    }
    for (int q = 0; q < size; q++)
        fill_ints(rb + q * N, N, rank * 100 + q + 6000);
    CHECK_MPI(MPI_Alltoall(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, rb, N, MPI_INT, comm));
    for (int p = 0; p < size; p++) {
        snprintf(what, sizeof what, "Alltoall IN_PLACE block from %d", p);
        check_ints(rb + p * N, N, p * 100 + rank + 6000, what);
    }

    /* Alltoallv: p sends (p + q) % 4 ints to q. Send layout: blocks in
     * reverse order; receive layout: forward with one-int gaps. */
    int stot = 0, rtot = 0;
    for (int q = size - 1; q >= 0; q--) {
        sc[q] = (rank + q) % 4;
        sd[q] = stot;
        stot += sc[q];
    }
    for (int p = 0; p < size; p++) {
        rc[p] = (p + rank) % 4;
        rd[p] = rtot;
        rtot += rc[p] + 1;
    }
    for (int q = 0; q < size; q++)
        fill_ints(sb + sd[q], sc[q], rank * 100 + q + 7000);
    for (int i = 0; i < rtot + 2; i++)
        rb[i] = GUARD;
    CHECK_MPI(MPI_Alltoallv(sb, sc, sd, MPI_INT, rb, rc, rd, MPI_INT, comm));
    for (int p = 0; p < size; p++) {
        snprintf(what, sizeof what, "Alltoallv block from %d", p);
        check_ints(rb + rd[p], rc[p], p * 100 + rank + 7000, what);
        CHECK(rb[rd[p] + rc[p]] == GUARD, "Alltoallv wrote into a gap");
    }
    /* Alltoallv IN_PLACE: symmetric counts needed: count (p+q)%4 is symmetric. */
    for (int p = 0; p < size; p++)
        fill_ints(rb + rd[p], rc[p], rank * 100 + p + 8000);
    CHECK_MPI(MPI_Alltoallv(MPI_IN_PLACE, NULL, NULL, MPI_DATATYPE_NULL, rb, rc, rd, MPI_INT, comm));
    for (int p = 0; p < size; p++) {
        snprintf(what, sizeof what, "Alltoallv IN_PLACE block from %d", p);
        check_ints(rb + rd[p], rc[p], p * 100 + rank + 8000, what);
    }

    /* Alltoallw: to peer q send q+1 doubles as contiguous doubles from a
     * double array; receive from p (p+1) doubles into a strided vector
     * type. Byte displacements. */
    {
        MPI_Datatype *st = tu_malloc(sizeof(MPI_Datatype) * size), *rt = tu_malloc(sizeof(MPI_Datatype) * size);
        int *scw = tu_malloc(sizeof(int) * size), *sdw = tu_malloc(sizeof(int) * size);
        int *rcw = tu_malloc(sizeof(int) * size), *rdw = tu_malloc(sizeof(int) * size);
        int soff = 0, roff = 0;
        for (int q = 0; q < size; q++) {
            st[q] = MPI_DOUBLE;
            scw[q] = q + 1;
            sdw[q] = soff * (int)sizeof(double);
            soff += q + 1;
        }
        double *sw = tu_malloc(sizeof(double) * (soff + 1));
        for (int q = 0, k = 0; q < size; q++)
            for (int j = 0; j <= q; j++, k++)
                sw[k] = rank * 1000 + q * 10 + j;
        for (int p = 0; p < size; p++) {
            MPI_Type_vector(rank + 1, 1, 2, MPI_DOUBLE, &rt[p]);
            MPI_Type_commit(&rt[p]);
            rcw[p] = 1;
            rdw[p] = roff * (int)sizeof(double);
            roff += 2 * (rank + 1);
        }
        double *rw = tu_malloc(sizeof(double) * (roff + 1));
        for (int i = 0; i < roff; i++)
            rw[i] = -1;
        CHECK_MPI(MPI_Alltoallw(sw, scw, sdw, st, rw, rcw, rdw, rt, comm));
        for (int p = 0; p < size; p++)
            for (int j = 0; j <= rank; j++) {
                double got = rw[rdw[p] / sizeof(double) + 2 * j], gap = rw[rdw[p] / sizeof(double) + 2 * j + 1];
                CHECK(got == p * 1000 + rank * 10 + j && gap == -1, "Alltoallw from %d element %d: %g (gap %g)", p, j, got, gap);
            }
        for (int p = 0; p < size; p++)
            MPI_Type_free(&rt[p]);
        free(st); free(rt); free(scw); free(sdw); free(rcw); free(rdw); free(sw); free(rw);
    }

    free(sb); free(rb); free(sc); free(sd); free(rc); free(rd);
    MPI_Finalize();
    return test_finish();
}
