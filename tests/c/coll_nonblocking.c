/* gridmpi-test: ranks=1,2,3,5,8 timeout=60 */
/*
 * Nonblocking collectives: every I-form (Ibarrier, Ibcast, Igather(v),
 * Iscatter(v), Iallgather(v), Ialltoall(v,w), Ireduce, Iallreduce,
 * Ireduce_scatter(_block), Iscan, Iexscan) started back to back on one
 * communicator (same order on all ranks), with point-to-point traffic in
 * between, completed by one Waitall (or a Test loop) in any order; results
 * equal what the blocking forms give. Also several Iallreduce in flight on
 * a duplicate, completed in reverse order, and MPI_IN_PLACE.
 */
#include "testutil.h"

#define N 6

int main(int argc, char **argv)
{
    int size;
    int rank = test_init(&argc, &argv, &size);
    MPI_Comm comm = MPI_COMM_WORLD;
    int root = size > 1 ? 1 : 0;
    MPI_Request reqs[20];
    int nr = 0;

    int bc[N];
    int gin[N], *gout = tu_malloc(sizeof(int) * N * size);
    int *gvcounts = tu_malloc(sizeof(int) * size), *gvdispls = tu_malloc(sizeof(int) * size);
    int *gvout = tu_malloc(sizeof(int) * N * size);
    int *scin = tu_malloc(sizeof(int) * N * size), scout[N];
    int *scvout = tu_malloc(sizeof(int) * N);
    int *agout = tu_malloc(sizeof(int) * N * size), *agvout = tu_malloc(sizeof(int) * N * size);
    int *a2in = tu_malloc(sizeof(int) * N * size), *a2out = tu_malloc(sizeof(int) * N * size);
    int *a2vout = tu_malloc(sizeof(int) * N * size);
    int *a2wout = tu_malloc(sizeof(int) * N * size);
    int *ones = tu_malloc(sizeof(int) * size), *zeros_disp = tu_malloc(sizeof(int) * size);
    int *wcounts = tu_malloc(sizeof(int) * size), *wdispls = tu_malloc(sizeof(int) * size);
    MPI_Datatype *wtypes = tu_malloc(sizeof(MPI_Datatype) * size);
    int rin[N], rout[N], arout[N], sout[N], exout[N], inplace[N];
    int *rsin = tu_malloc(sizeof(int) * N * size), rsout[N], rsbout[N];
    int *rscounts = tu_malloc(sizeof(int) * size);

    if (rank == root)
        fill_ints(bc, N, 77);
    fill_ints(gin, N, rank);
    for (int p = 0; p < size; p++) {
        gvcounts[p] = p % 2 ? N : N / 2;
        gvdispls[p] = p * N;
        fill_ints(scin + p * N, N, 100 + p);
        fill_ints(a2in + p * N, N, rank * 1000 + p);
        ones[p] = N;
        zeros_disp[p] = p * N;
        wcounts[p] = N;
        wdispls[p] = p * N * (int)sizeof(int);
        wtypes[p] = MPI_INT;
        rscounts[p] = N;
    }
    for (int i = 0; i < N; i++) {
        rin[i] = rank + i;
        inplace[i] = rank * 2 + i;
    }
    for (int i = 0; i < N * size; i++)
        rsin[i] = rank + i;

    CHECK_MPI(MPI_Ibarrier(comm, &reqs[nr++]));
    CHECK_MPI(MPI_Ibcast(bc, N, MPI_INT, root, comm, &reqs[nr++]));
    CHECK_MPI(MPI_Igather(gin, N, MPI_INT, gout, N, MPI_INT, root, comm, &reqs[nr++]));
    CHECK_MPI(MPI_Igatherv(gin, gvcounts[rank], MPI_INT, gvout, gvcounts, gvdispls, MPI_INT, root, comm, &reqs[nr++]));
    /* Point-to-point in the middle. */
    int right = (rank + 1) % size, left = (rank + size - 1) % size, pv = rank, pin = -1;
    MPI_Request pr[2];
    CHECK_MPI(MPI_Irecv(&pin, 1, MPI_INT, left, 0, comm, &pr[0]));
    CHECK_MPI(MPI_Isend(&pv, 1, MPI_INT, right, 0, comm, &pr[1]));
    CHECK_MPI(MPI_Iscatter(scin, N, MPI_INT, scout, N, MPI_INT, root, comm, &reqs[nr++]));
    CHECK_MPI(MPI_Iscatterv(scin, gvcounts, gvdispls, MPI_INT, scvout, gvcounts[rank], MPI_INT, root, comm, &reqs[nr++]));
    CHECK_MPI(MPI_Iallgather(gin, N, MPI_INT, agout, N, MPI_INT, comm, &reqs[nr++]));
    CHECK_MPI(MPI_Iallgatherv(gin, gvcounts[rank], MPI_INT, agvout, gvcounts, gvdispls, MPI_INT, comm, &reqs[nr++]));
    CHECK_MPI(MPI_Ialltoall(a2in, N, MPI_INT, a2out, N, MPI_INT, comm, &reqs[nr++]));
    CHECK_MPI(MPI_Ialltoallv(a2in, ones, zeros_disp, MPI_INT, a2vout, ones, zeros_disp, MPI_INT, comm, &reqs[nr++]));
    CHECK_MPI(MPI_Ialltoallw(a2in, wcounts, wdispls, wtypes, a2wout, wcounts, wdispls, wtypes, comm, &reqs[nr++]));
    CHECK_MPI(MPI_Ireduce(rin, rout, N, MPI_INT, MPI_SUM, root, comm, &reqs[nr++]));
    CHECK_MPI(MPI_Iallreduce(rin, arout, N, MPI_INT, MPI_MAX, comm, &reqs[nr++]));
    CHECK_MPI(MPI_Iallreduce(MPI_IN_PLACE, inplace, N, MPI_INT, MPI_SUM, comm, &reqs[nr++]));
    CHECK_MPI(MPI_Ireduce_scatter(rsin, rsout, rscounts, MPI_INT, MPI_SUM, comm, &reqs[nr++]));
    CHECK_MPI(MPI_Ireduce_scatter_block(rsin, rsbout, N, MPI_INT, MPI_MAX, comm, &reqs[nr++]));
    CHECK_MPI(MPI_Iscan(rin, sout, N, MPI_INT, MPI_SUM, comm, &reqs[nr++]));
    CHECK_MPI(MPI_Iexscan(rin, exout, N, MPI_INT, MPI_SUM, comm, &reqs[nr++]));
    CHECK_MPI(MPI_Waitall(2, pr, MPI_STATUSES_IGNORE));
    CHECK_INT_EQ(pin, left);
    /* Complete by testing, in a loop. */
    int flag = 0;
    while (!flag)
        CHECK_MPI(MPI_Testall(nr, reqs, &flag, MPI_STATUSES_IGNORE));

    check_ints(bc, N, 77, "Ibcast");
    if (rank == root)
        for (int p = 0; p < size; p++) {
            check_ints(gout + p * N, N, p, "Igather");
            check_ints(gvout + p * N, gvcounts[p], p, "Igatherv");
        }
    check_ints(scout, N, 100 + rank, "Iscatter");
    check_ints(scvout, gvcounts[rank], 100 + rank, "Iscatterv");
    for (int p = 0; p < size; p++) {
        check_ints(agout + p * N, N, p, "Iallgather");
        check_ints(agvout + p * N, gvcounts[p], p, "Iallgatherv");
        check_ints(a2out + p * N, N, p * 1000 + rank, "Ialltoall");
        check_ints(a2vout + p * N, N, p * 1000 + rank, "Ialltoallv");
        check_ints(a2wout + p * N, N, p * 1000 + rank, "Ialltoallw");
    }
    for (int i = 0; i < N; i++) {
        if (rank == root)
            CHECK(rout[i] == size * (size - 1) / 2 + size * i, "Ireduce element %d = %d", i, rout[i]);
        CHECK(arout[i] == size - 1 + i, "Iallreduce MAX element %d = %d", i, arout[i]);
        CHECK(inplace[i] == size * (size - 1) + size * i, "Iallreduce IN_PLACE element %d = %d", i, inplace[i]);
        CHECK(rsout[i] == size * (size - 1) / 2 + size * (rank * N + i), "Ireduce_scatter element %d = %d", i, rsout[i]);
        CHECK(rsbout[i] == size - 1 + rank * N + i, "Ireduce_scatter_block element %d = %d", i, rsbout[i]);
        CHECK(sout[i] == rank * (rank + 1) / 2 + (rank + 1) * i, "Iscan element %d = %d", i, sout[i]);
        if (rank > 0)
            CHECK(exout[i] == rank * (rank - 1) / 2 + rank * i, "Iexscan element %d = %d", i, exout[i]);
    }

    /* Several Iallreduce in flight on a duplicate, waited in reverse. */
    {
        MPI_Comm dup;
        MPI_Comm_dup(comm, &dup);
        enum { K = 8 };
        int vin[K], vout[K];
        MPI_Request rq[K];
        for (int k = 0; k < K; k++) {
            vin[k] = rank * (k + 1);
            CHECK_MPI(MPI_Iallreduce(&vin[k], &vout[k], 1, MPI_INT, MPI_SUM, dup, &rq[k]));
        }
        for (int k = K - 1; k >= 0; k--) {
            CHECK_MPI(MPI_Wait(&rq[k], MPI_STATUS_IGNORE));
            CHECK(vout[k] == (k + 1) * size * (size - 1) / 2, "Iallreduce %d of %d in flight: %d", k, K, vout[k]);
        }
        MPI_Comm_free(&dup);
    }

    free(gout); free(gvcounts); free(gvdispls); free(gvout); free(scin); free(scvout); free(agout); free(agvout);
    free(a2in); free(a2out); free(a2vout); free(a2wout); free(ones); free(zeros_disp); free(wcounts); free(wdispls);
    free(wtypes); free(rsin); free(rscounts);
    MPI_Finalize();
    return test_finish();
}
