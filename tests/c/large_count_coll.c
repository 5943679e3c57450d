/* gridmpi-test: ranks=1,2,3,4 timeout=60 */
/*
 * Collectives through the large-count (MPI_X_c, MPI 4.0) functions, with
 * small real data: every collective with counts (MPI_Count) and
 * displacements (MPI_Aint) in its blocking, nonblocking (MPI_IX_c) and
 * persistent (MPI_X_init_c) form, including MPI_IN_PLACE where it applies,
 * a reduction with an operation from MPI_Op_create_c, and the five
 * neighbourhood collectives on a periodic ring (MPI_Cart_create).
 * (A collective test outside coll_*: it is the large-count binding's.)
 */
#include "testutil.h"

enum form { BLOCKING, NONBLOCKING, PERSISTENT };
static const char *form_name[] = {"blocking", "nonblocking", "persistent"};

static int rank, size;

/* Run one collective in `form`: the blocking call, or the I-call / init-call
 * (which set `req`) followed by the wait (and start, for persistent). */
#define RUN(form, blocking_call, nonblocking_call, init_call)                            \
    do {                                                                                 \
        MPI_Request req = MPI_REQUEST_NULL;                                              \
        switch (form) {                                                                  \
        case BLOCKING: CHECK_MPI(blocking_call); break;                                  \
        case NONBLOCKING:                                                                \
            CHECK_MPI(nonblocking_call);                                                 \
            CHECK_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));                                \
            break;                                                                       \
        case PERSISTENT:                                                                 \
            CHECK_MPI(init_call);                                                        \
            CHECK_MPI(MPI_Start(&req));                                                  \
            CHECK_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));                                \
            CHECK_MPI(MPI_Request_free(&req));                                           \
            break;                                                                       \
        }                                                                                \
    } while (0)

/* Value i of the block rank r contributes to rank d. */
static int val(int r, int d, int i)
{
    return r * 10000 + d * 100 + i;
}

#define MAXP 8
#define B 5 /* items per block */

static void check_vals(const char *what, int form, const int *buf, int n, int (*want)(int))
{
    int bad = 0, first = -1;
    for (int i = 0; i < n; i++) {
        if (buf[i] != want(i) && bad++ == 0)
            first = i;
    }
    CHECK(bad == 0, "%s (%s): %d of %d wrong, first [%d] = %d, expected %d", what, form_name[form], bad, n, first,
          first >= 0 ? buf[first] : 0, first >= 0 ? want(first) : 0);
}

/* Expected values, as functions of the index, for the current rank. */
static int root_g;
static int want_bcast(int i) { return val(root_g, 0, i); }
static int want_gathered(int i) { return val(i / B, 0, i % B); }             /* block r from rank r */
static int want_scattered(int i) { return val(root_g, rank, i); }            /* root's block for me */
static int want_a2a(int i) { return val(i / B, rank, i % B); }               /* block r: from r, for me */
static int want_sum(int i) { return size * (size - 1) / 2 * 10000 + i * size; } /* sum over r of val(r,0,i) */
static int want_scan(int i) { return rank * (rank + 1) / 2 * 10000 + i * (rank + 1); }
static int want_exscan(int i) { return (rank - 1) * rank / 2 * 10000 + i * rank; }
static int want_rs(int i) { return want_sum(rank * B + i); }

static void test_rooted(MPI_Comm comm, int form)
{
    static int send[MAXP * B], recv[MAXP * B];
    MPI_Count counts[MAXP];
    MPI_Aint displs[MAXP];
    for (int r = 0; r < size; r++) {
        counts[r] = B;
        displs[r] = (MPI_Aint)r * B;
    }
    for (root_g = 0; root_g < size; root_g++) {
        int root = root_g;
        /* Bcast_c */
        for (int i = 0; i < B; i++)
            recv[i] = rank == root ? val(root, 0, i) : -1;
        RUN(form, MPI_Bcast_c(recv, B, MPI_INT, root, comm), MPI_Ibcast_c(recv, B, MPI_INT, root, comm, &req),
            MPI_Bcast_init_c(recv, B, MPI_INT, root, comm, MPI_INFO_NULL, &req));
        check_vals("Bcast_c", form, recv, B, want_bcast);

        /* Gather_c, Gatherv_c */
        for (int i = 0; i < B; i++)
            send[i] = val(rank, 0, i);
        memset(recv, 0xff, sizeof recv);
        RUN(form, MPI_Gather_c(send, B, MPI_INT, recv, B, MPI_INT, root, comm),
            MPI_Igather_c(send, B, MPI_INT, recv, B, MPI_INT, root, comm, &req),
            MPI_Gather_init_c(send, B, MPI_INT, recv, B, MPI_INT, root, comm, MPI_INFO_NULL, &req));
        if (rank == root)
            check_vals("Gather_c", form, recv, size * B, want_gathered);
        memset(recv, 0xff, sizeof recv);
        RUN(form, MPI_Gatherv_c(send, B, MPI_INT, recv, counts, displs, MPI_INT, root, comm),
            MPI_Igatherv_c(send, B, MPI_INT, recv, counts, displs, MPI_INT, root, comm, &req),
            MPI_Gatherv_init_c(send, B, MPI_INT, recv, counts, displs, MPI_INT, root, comm, MPI_INFO_NULL, &req));
        if (rank == root)
            check_vals("Gatherv_c", form, recv, size * B, want_gathered);

        /* Scatter_c, Scatterv_c */
        for (int r = 0; r < size; r++)
            for (int i = 0; i < B; i++)
                send[r * B + i] = val(rank, r, i);
        memset(recv, 0xff, sizeof recv);
        RUN(form, MPI_Scatter_c(send, B, MPI_INT, recv, B, MPI_INT, root, comm),
            MPI_Iscatter_c(send, B, MPI_INT, recv, B, MPI_INT, root, comm, &req),
            MPI_Scatter_init_c(send, B, MPI_INT, recv, B, MPI_INT, root, comm, MPI_INFO_NULL, &req));
        check_vals("Scatter_c", form, recv, B, want_scattered);
        memset(recv, 0xff, sizeof recv);
        RUN(form, MPI_Scatterv_c(send, counts, displs, MPI_INT, recv, B, MPI_INT, root, comm),
            MPI_Iscatterv_c(send, counts, displs, MPI_INT, recv, B, MPI_INT, root, comm, &req),
            MPI_Scatterv_init_c(send, counts, displs, MPI_INT, recv, B, MPI_INT, root, comm, MPI_INFO_NULL, &req));
        check_vals("Scatterv_c", form, recv, B, want_scattered);

        /* Reduce_c, in place at the root too */
        for (int i = 0; i < B; i++)
            send[i] = val(rank, 0, i);
        memset(recv, 0xff, sizeof recv);
        RUN(form, MPI_Reduce_c(send, recv, B, MPI_INT, MPI_SUM, root, comm),
            MPI_Ireduce_c(send, recv, B, MPI_INT, MPI_SUM, root, comm, &req),
            MPI_Reduce_init_c(send, recv, B, MPI_INT, MPI_SUM, root, comm, MPI_INFO_NULL, &req));
        if (rank == root)
            check_vals("Reduce_c", form, recv, B, want_sum);
        for (int i = 0; i < B; i++)
            recv[i] = val(rank, 0, i);
        const void *sb = rank == root ? MPI_IN_PLACE : (const void *)recv;
        RUN(form, MPI_Reduce_c(sb, recv, B, MPI_INT, MPI_SUM, root, comm),
            MPI_Ireduce_c(sb, recv, B, MPI_INT, MPI_SUM, root, comm, &req),
            MPI_Reduce_init_c(sb, recv, B, MPI_INT, MPI_SUM, root, comm, MPI_INFO_NULL, &req));
        if (rank == root)
            check_vals("Reduce_c in place", form, recv, B, want_sum);
    }
}

/* A large-count user operation: integer sum. */
static void sum_c(void *in, void *inout, MPI_Count *len, MPI_Datatype *dt)
{
    (void)dt;
    for (MPI_Count i = 0; i < *len; i++)
        ((int *)inout)[i] += ((const int *)in)[i];
}

static void test_all(MPI_Comm comm, int form)
{
    static int send[MAXP * B], recv[MAXP * B];
    MPI_Count counts[MAXP], bcounts[MAXP];
    MPI_Aint displs[MAXP], bdispls[MAXP];
    MPI_Datatype types[MAXP];
    for (int r = 0; r < size; r++) {
        counts[r] = B;
        displs[r] = (MPI_Aint)r * B;
        bcounts[r] = B;
        bdispls[r] = (MPI_Aint)(r * B * sizeof(int));
        types[r] = MPI_INT;
    }

    /* Allgather_c, Allgatherv_c, and in place */
    for (int i = 0; i < B; i++)
        send[i] = val(rank, 0, i);
    memset(recv, 0xff, sizeof recv);
    RUN(form, MPI_Allgather_c(send, B, MPI_INT, recv, B, MPI_INT, comm),
        MPI_Iallgather_c(send, B, MPI_INT, recv, B, MPI_INT, comm, &req),
        MPI_Allgather_init_c(send, B, MPI_INT, recv, B, MPI_INT, comm, MPI_INFO_NULL, &req));
    check_vals("Allgather_c", form, recv, size * B, want_gathered);
    memset(recv, 0xff, sizeof recv);
    RUN(form, MPI_Allgatherv_c(send, B, MPI_INT, recv, counts, displs, MPI_INT, comm),
        MPI_Iallgatherv_c(send, B, MPI_INT, recv, counts, displs, MPI_INT, comm, &req),
        MPI_Allgatherv_init_c(send, B, MPI_INT, recv, counts, displs, MPI_INT, comm, MPI_INFO_NULL, &req));
    check_vals("Allgatherv_c", form, recv, size * B, want_gathered);
    memset(recv, 0xff, sizeof recv);
    for (int i = 0; i < B; i++)
        recv[rank * B + i] = val(rank, 0, i);
    RUN(form, MPI_Allgatherv_c(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, recv, counts, displs, MPI_INT, comm),
        MPI_Iallgatherv_c(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, recv, counts, displs, MPI_INT, comm, &req),
        MPI_Allgatherv_init_c(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, recv, counts, displs, MPI_INT, comm, MPI_INFO_NULL, &req));
    check_vals("Allgatherv_c in place", form, recv, size * B, want_gathered);

    /* Alltoall_c, Alltoallv_c, Alltoallw_c */
    for (int r = 0; r < size; r++)
        for (int i = 0; i < B; i++)
            send[r * B + i] = val(rank, r, i);
    memset(recv, 0xff, sizeof recv);
    RUN(form, MPI_Alltoall_c(send, B, MPI_INT, recv, B, MPI_INT, comm),
        MPI_Ialltoall_c(send, B, MPI_INT, recv, B, MPI_INT, comm, &req),
        MPI_Alltoall_init_c(send, B, MPI_INT, recv, B, MPI_INT, comm, MPI_INFO_NULL, &req));
    check_vals("Alltoall_c", form, recv, size * B, want_a2a);
    memset(recv, 0xff, sizeof recv);
    RUN(form, MPI_Alltoallv_c(send, counts, displs, MPI_INT, recv, counts, displs, MPI_INT, comm),
        MPI_Ialltoallv_c(send, counts, displs, MPI_INT, recv, counts, displs, MPI_INT, comm, &req),
        MPI_Alltoallv_init_c(send, counts, displs, MPI_INT, recv, counts, displs, MPI_INT, comm, MPI_INFO_NULL, &req));
    check_vals("Alltoallv_c", form, recv, size * B, want_a2a);
    memset(recv, 0xff, sizeof recv);
    RUN(form, MPI_Alltoallw_c(send, bcounts, bdispls, types, recv, bcounts, bdispls, types, comm),
        MPI_Ialltoallw_c(send, bcounts, bdispls, types, recv, bcounts, bdispls, types, comm, &req),
        MPI_Alltoallw_init_c(send, bcounts, bdispls, types, recv, bcounts, bdispls, types, comm, MPI_INFO_NULL, &req));
    check_vals("Alltoallw_c", form, recv, size * B, want_a2a);

    /* Allreduce_c with a predefined and an MPI_Op_create_c operation, in place too */
    MPI_Op op;
    CHECK_MPI(MPI_Op_create_c(sum_c, 1, &op));
    for (int i = 0; i < B; i++)
        send[i] = val(rank, 0, i);
    memset(recv, 0xff, sizeof recv);
    RUN(form, MPI_Allreduce_c(send, recv, B, MPI_INT, MPI_SUM, comm),
        MPI_Iallreduce_c(send, recv, B, MPI_INT, MPI_SUM, comm, &req),
        MPI_Allreduce_init_c(send, recv, B, MPI_INT, MPI_SUM, comm, MPI_INFO_NULL, &req));
    check_vals("Allreduce_c", form, recv, B, want_sum);
    for (int i = 0; i < B; i++)
        recv[i] = val(rank, 0, i);
    RUN(form, MPI_Allreduce_c(MPI_IN_PLACE, recv, B, MPI_INT, op, comm),
        MPI_Iallreduce_c(MPI_IN_PLACE, recv, B, MPI_INT, op, comm, &req),
        MPI_Allreduce_init_c(MPI_IN_PLACE, recv, B, MPI_INT, op, comm, MPI_INFO_NULL, &req));
    check_vals("Allreduce_c (MPI_Op_create_c op, in place)", form, recv, B, want_sum);
    CHECK_MPI(MPI_Op_free(&op));

    /* Reduce_scatter_c, Reduce_scatter_block_c */
    for (int i = 0; i < size * B; i++)
        send[i] = val(rank, 0, i);
    memset(recv, 0xff, sizeof recv);
    RUN(form, MPI_Reduce_scatter_c(send, recv, counts, MPI_INT, MPI_SUM, comm),
        MPI_Ireduce_scatter_c(send, recv, counts, MPI_INT, MPI_SUM, comm, &req),
        MPI_Reduce_scatter_init_c(send, recv, counts, MPI_INT, MPI_SUM, comm, MPI_INFO_NULL, &req));
    check_vals("Reduce_scatter_c", form, recv, B, want_rs);
    memset(recv, 0xff, sizeof recv);
    RUN(form, MPI_Reduce_scatter_block_c(send, recv, B, MPI_INT, MPI_SUM, comm),
        MPI_Ireduce_scatter_block_c(send, recv, B, MPI_INT, MPI_SUM, comm, &req),
        MPI_Reduce_scatter_block_init_c(send, recv, B, MPI_INT, MPI_SUM, comm, MPI_INFO_NULL, &req));
    check_vals("Reduce_scatter_block_c", form, recv, B, want_rs);

    /* Scan_c, Exscan_c */
    for (int i = 0; i < B; i++)
        send[i] = val(rank, 0, i);
    memset(recv, 0xff, sizeof recv);
    RUN(form, MPI_Scan_c(send, recv, B, MPI_INT, MPI_SUM, comm), MPI_Iscan_c(send, recv, B, MPI_INT, MPI_SUM, comm, &req),
        MPI_Scan_init_c(send, recv, B, MPI_INT, MPI_SUM, comm, MPI_INFO_NULL, &req));
    check_vals("Scan_c", form, recv, B, want_scan);
    memset(recv, 0xff, sizeof recv);
    RUN(form, MPI_Exscan_c(send, recv, B, MPI_INT, MPI_SUM, comm),
        MPI_Iexscan_c(send, recv, B, MPI_INT, MPI_SUM, comm, &req),
        MPI_Exscan_init_c(send, recv, B, MPI_INT, MPI_SUM, comm, MPI_INFO_NULL, &req));
    if (rank > 0)
        check_vals("Exscan_c", form, recv, B, want_exscan);
}

/* Neighbours on a periodic ring: left (rank - 1) is source/destination 0, right is 1. */
static int left, right;
static int want_ngh_gather(int i) { return val(i < B ? left : right, 0, i % B); }
static int want_ngh_a2a(int i) { return val(i < B ? left : right, i < B ? 1 : 0, i % B); }

static void test_neighbor(MPI_Comm ring, int form)
{
    static int send[2 * B], recv[2 * B];
    MPI_Count counts[2] = {B, B}, bcounts[2] = {B, B};
    MPI_Aint displs[2] = {0, B}, bdispls[2] = {0, B * sizeof(int)};
    MPI_Datatype types[2] = {MPI_INT, MPI_INT};

    for (int i = 0; i < B; i++)
        send[i] = val(rank, 0, i);
    memset(recv, 0xff, sizeof recv);
    RUN(form, MPI_Neighbor_allgather_c(send, B, MPI_INT, recv, B, MPI_INT, ring),
        MPI_Ineighbor_allgather_c(send, B, MPI_INT, recv, B, MPI_INT, ring, &req),
        MPI_Neighbor_allgather_init_c(send, B, MPI_INT, recv, B, MPI_INT, ring, MPI_INFO_NULL, &req));
    check_vals("Neighbor_allgather_c", form, recv, 2 * B, want_ngh_gather);
    memset(recv, 0xff, sizeof recv);
    RUN(form, MPI_Neighbor_allgatherv_c(send, B, MPI_INT, recv, counts, displs, MPI_INT, ring),
        MPI_Ineighbor_allgatherv_c(send, B, MPI_INT, recv, counts, displs, MPI_INT, ring, &req),
        MPI_Neighbor_allgatherv_init_c(send, B, MPI_INT, recv, counts, displs, MPI_INT, ring, MPI_INFO_NULL, &req));
    check_vals("Neighbor_allgatherv_c", form, recv, 2 * B, want_ngh_gather);

    /* Block 0 goes left, block 1 right: from the left comes its block 1. */
    for (int k = 0; k < 2; k++)
        for (int i = 0; i < B; i++)
            send[k * B + i] = val(rank, k, i);
    memset(recv, 0xff, sizeof recv);
    RUN(form, MPI_Neighbor_alltoall_c(send, B, MPI_INT, recv, B, MPI_INT, ring),
        MPI_Ineighbor_alltoall_c(send, B, MPI_INT, recv, B, MPI_INT, ring, &req),
        MPI_Neighbor_alltoall_init_c(send, B, MPI_INT, recv, B, MPI_INT, ring, MPI_INFO_NULL, &req));
    check_vals("Neighbor_alltoall_c", form, recv, 2 * B, want_ngh_a2a);
    memset(recv, 0xff, sizeof recv);
    RUN(form, MPI_Neighbor_alltoallv_c(send, counts, displs, MPI_INT, recv, counts, displs, MPI_INT, ring),
        MPI_Ineighbor_alltoallv_c(send, counts, displs, MPI_INT, recv, counts, displs, MPI_INT, ring, &req),
        MPI_Neighbor_alltoallv_init_c(send, counts, displs, MPI_INT, recv, counts, displs, MPI_INT, ring, MPI_INFO_NULL, &req));
    check_vals("Neighbor_alltoallv_c", form, recv, 2 * B, want_ngh_a2a);
    memset(recv, 0xff, sizeof recv);
    RUN(form, MPI_Neighbor_alltoallw_c(send, bcounts, bdispls, types, recv, bcounts, bdispls, types, ring),
        MPI_Ineighbor_alltoallw_c(send, bcounts, bdispls, types, recv, bcounts, bdispls, types, ring, &req),
        MPI_Neighbor_alltoallw_init_c(send, bcounts, bdispls, types, recv, bcounts, bdispls, types, ring, MPI_INFO_NULL, &req));
    check_vals("Neighbor_alltoallw_c", form, recv, 2 * B, want_ngh_a2a);
}

int main(int argc, char **argv)
{
    rank = test_init(&argc, &argv, &size);
    if (size > MAXP) {
        MPI_Finalize();
        return 0;
    }
    MPI_Comm comm;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    int dims[1] = {size}, periods[1] = {1};
    MPI_Comm ring;
    MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, 0, &ring);
    MPI_Cart_shift(ring, 0, 1, &left, &right);
    for (int form = BLOCKING; form <= PERSISTENT; form++) {
        test_rooted(comm, form);
        test_all(comm, form);
        test_neighbor(ring, form);
    }
    MPI_Comm_free(&ring);
    MPI_Comm_free(&comm);
    MPI_Finalize();
    return test_finish();
}
