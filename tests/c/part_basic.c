/* gridmpi-test: ranks=1,2,3,4 timeout=60 */
/*
 * Partitioned communication (MPI 4.1, ch. 4) around a ring: MPI_Psend_init
 * to the right, MPI_Precv_init from the left, several rounds with
 * MPI_Startall/MPI_Waitall, partitions made ready one by one in reverse
 * order, by MPI_Pready_range and by MPI_Pready_list; MPI_Parrived polled
 * until every partition is there, the data checked partition by partition
 * as it arrives; the receive's status (source, tag, count). A receive
 * cannot complete, and no partition can arrive, before the sender readies
 * anything (the sender waits for a go message first). Send and receive
 * partitioned differently (4 x 6 ints sent, 3 x 8 ints received; 6 x 1
 * double sent, 48 bytes received in 16 partitions of 3). A wildcard
 * receive posted on the same communicator catches none of the partitioned
 * traffic. MPI_PROC_NULL partners complete at once.
 */
#include "testutil.h"

#define NPART 8
#define PCOUNT 100

static void ring_rounds(MPI_Comm comm, int rank, int size)
{
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    static int sendbuf[NPART * PCOUNT], recvbuf[NPART * PCOUNT];
    MPI_Request req[2];
    CHECK_MPI(MPI_Psend_init(sendbuf, NPART, PCOUNT, MPI_INT, right, 11, comm, MPI_INFO_NULL, &req[0]));
    CHECK_MPI(MPI_Precv_init(recvbuf, NPART, PCOUNT, MPI_INT, left, 11, comm, MPI_INFO_NULL, &req[1]));

    /* A wildcard receive on the same communicator stays unmatched. */
    int stray = -1;
    MPI_Request wild;
    MPI_Irecv(&stray, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, comm, &wild);

    for (int round = 0; round < 4; round++) {
        fill_ints(sendbuf, NPART * PCOUNT, 1000 * round + rank);
        memset(recvbuf, 0, sizeof recvbuf);
        CHECK_MPI(MPI_Startall(2, req));
        if (round == 0) {
            CHECK_MPI(MPI_Pready_range(0, NPART - 1, req[0]));
        } else if (round == 1) {
            for (int p = NPART - 1; p >= 0; p--)
                CHECK_MPI(MPI_Pready(p, req[0]));
        } else {
            int list[NPART];
            for (int i = 0; i < NPART; i++)
                list[i] = (i * 3 + round) % NPART;
            CHECK_MPI(MPI_Pready_list(NPART, list, req[0]));
        }
        /* Poll for arrivals; each partition's data is there once it says so. */
        int seen[NPART] = {0}, nseen = 0;
        for (long spin = 0; nseen < NPART && spin < 100000000; spin++) {
            for (int p = 0; p < NPART; p++) {
                int flag = 0;
                if (seen[p])
                    continue;
                CHECK_MPI(MPI_Parrived(req[1], p, &flag));
                if (flag) {
                    seen[p] = 1;
                    nseen++;
                    int expect[PCOUNT];
                    int all[NPART * PCOUNT];
                    fill_ints(all, NPART * PCOUNT, 1000 * round + left);
                    memcpy(expect, all + p * PCOUNT, sizeof expect);
                    CHECK(memcmp(recvbuf + p * PCOUNT, expect, sizeof expect) == 0, "round %d: partition %d arrived with wrong data", round, p);
                }
            }
        }
        CHECK_INT_EQ(nseen, NPART);
        MPI_Status st[2];
        CHECK_MPI(MPI_Waitall(2, req, st));
        check_ints(recvbuf, NPART * PCOUNT, 1000 * round + left, "partitioned message");
        int count = -1;
        MPI_Get_count(&st[1], MPI_INT, &count);
        CHECK_INT_EQ(count, NPART * PCOUNT);
        CHECK_INT_EQ(st[1].MPI_SOURCE, left);
        CHECK_INT_EQ(st[1].MPI_TAG, 11);
    }
    CHECK_MPI(MPI_Request_free(&req[0]));
    CHECK_MPI(MPI_Request_free(&req[1]));
    CHECK(req[0] == MPI_REQUEST_NULL && req[1] == MPI_REQUEST_NULL, "MPI_Request_free did not set MPI_REQUEST_NULL");

    /* The only message it may get is the left neighbour's tag 99 (which
     * may already have come). */
    int v = rank;
    CHECK_MPI(MPI_Send(&v, 1, MPI_INT, right, 99, comm));
    MPI_Status ws;
    CHECK_MPI(MPI_Wait(&wild, &ws));
    CHECK(ws.MPI_TAG == 99 && ws.MPI_SOURCE == left, "a wildcard receive caught partitioned traffic (source %d, tag %d)", ws.MPI_SOURCE, ws.MPI_TAG);
    CHECK_INT_EQ(stray, left);
}

/* Nothing arrives before the sender readies a partition. */
static void not_before_ready(MPI_Comm comm, int rank, int size)
{
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    double out[6], in[6];
    for (int i = 0; i < 6; i++)
        out[i] = rank + i / 10.0;
    MPI_Request s, r;
    CHECK_MPI(MPI_Psend_init(out, 6, 1, MPI_DOUBLE, right, 12, comm, MPI_INFO_NULL, &s));
    /* 48 bytes received as 16 partitions of 3 bytes: partition edges fall
     * inside the sender's doubles. */
    CHECK_MPI(MPI_Precv_init(in, 16, 3, MPI_BYTE, left, 12, comm, MPI_INFO_NULL, &r));
    CHECK_MPI(MPI_Start(&r));
    CHECK_MPI(MPI_Start(&s));
    int flag = 1;
    CHECK_MPI(MPI_Test(&r, &flag, MPI_STATUS_IGNORE));
    CHECK(!flag, "a partitioned receive completed before any partition was ready");
    for (int q = 0; q < 16; q++) {
        flag = 1;
        CHECK_MPI(MPI_Parrived(r, q, &flag));
        CHECK(!flag, "partition %d arrived before any was ready", q);
    }
    /* Let the left neighbour's sender go (our receive has been tested);
     * our sender goes once the right neighbour (its receiver) says so. */
    int go = 1, go_right = 0;
    MPI_Request gs;
    MPI_Isend(&go, 1, MPI_INT, left, 13, comm, &gs);
    CHECK_MPI(MPI_Recv(&go_right, 1, MPI_INT, right, 13, comm, MPI_STATUS_IGNORE));
    MPI_Wait(&gs, MPI_STATUS_IGNORE);
    for (int p = 5; p >= 0; p--)
        CHECK_MPI(MPI_Pready(p, s));
    CHECK_MPI(MPI_Wait(&s, MPI_STATUS_IGNORE));
    MPI_Status st;
    CHECK_MPI(MPI_Wait(&r, &st));
    for (int i = 0; i < 6; i++)
        CHECK(in[i] == left + i / 10.0, "double %d is %g, expected %g", i, in[i], left + i / 10.0);
    int count = -1;
    MPI_Get_count(&st, MPI_BYTE, &count);
    CHECK_INT_EQ(count, 48);
    MPI_Request_free(&s);
    MPI_Request_free(&r);
}

/* 4 partitions of 6 ints sent, 3 partitions of 8 ints received. */
static void other_partitioning(MPI_Comm comm, int rank, int size)
{
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    int out[24], in[24];
    MPI_Request req[2];
    CHECK_MPI(MPI_Psend_init(out, 4, 6, MPI_INT, right, 14, comm, MPI_INFO_NULL, &req[0]));
    CHECK_MPI(MPI_Precv_init(in, 3, 8, MPI_INT, left, 14, comm, MPI_INFO_NULL, &req[1]));
    for (int round = 0; round < 2; round++) {
        fill_ints(out, 24, 77 + round + rank);
        memset(in, 0, sizeof in);
        CHECK_MPI(MPI_Startall(2, req));
        int order[4] = {2, 0, 3, 1};
        for (int i = 0; i < 4; i++)
            CHECK_MPI(MPI_Pready(order[i], req[0]));
        CHECK_MPI(MPI_Waitall(2, req, MPI_STATUSES_IGNORE));
        check_ints(in, 24, 77 + round + left, "differently partitioned message");
        for (int q = 0; q < 3; q++) {
            int flag = 0;
            CHECK_MPI(MPI_Parrived(req[1], q, &flag));
            CHECK(flag, "MPI_Parrived on a completed request says partition %d is missing", q);
        }
    }
    MPI_Request_free(&req[0]);
    MPI_Request_free(&req[1]);
}

static void proc_null(MPI_Comm comm)
{
    int x[4] = {1, 2, 3, 4}, y[4] = {0};
    MPI_Request s, r;
    CHECK_MPI(MPI_Psend_init(x, 2, 2, MPI_INT, MPI_PROC_NULL, 15, comm, MPI_INFO_NULL, &s));
    CHECK_MPI(MPI_Precv_init(y, 2, 2, MPI_INT, MPI_PROC_NULL, 15, comm, MPI_INFO_NULL, &r));
    CHECK_MPI(MPI_Start(&s));
    CHECK_MPI(MPI_Start(&r));
    CHECK_MPI(MPI_Pready_range(0, 1, s));
    MPI_Status st;
    CHECK_MPI(MPI_Wait(&s, MPI_STATUS_IGNORE));
    CHECK_MPI(MPI_Wait(&r, &st));
    CHECK_INT_EQ(st.MPI_SOURCE, MPI_PROC_NULL);
    CHECK_INT_EQ(y[0], 0);
    MPI_Request_free(&s);
    MPI_Request_free(&r);
}

int main(int argc, char **argv)
{
    int size;
    int rank = test_init(&argc, &argv, &size);
    /* The wildcard receive of ring_rounds has a communicator of its own. */
    MPI_Comm ring, comm;
    MPI_Comm_dup(MPI_COMM_WORLD, &ring);
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    ring_rounds(ring, rank, size);
    MPI_Comm_free(&ring);
    not_before_ready(comm, rank, size);
    other_partitioning(comm, rank, size);
    /* MPICH 5.0.2 segfaults in MPI_Psend_init to MPI_PROC_NULL. */
    if (!TU_PEER_MPICH)
        proc_null(comm);
    MPI_Comm_free(&comm);
    MPI_Finalize();
    return test_finish();
}
