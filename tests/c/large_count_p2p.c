/* gridmpi-test: ranks=2 timeout=60 */
/*
 * Point-to-point communication through the large-count (MPI_X_c, MPI 4.0)
 * functions, between ranks 0 and 1, with small real data: every send mode
 * blocking and nonblocking, receives, persistent requests, send-receive
 * (also in place, also nonblocking), matched probes with MPI_Mrecv_c and
 * MPI_Imrecv_c, buffered sends through MPI_Buffer_attach_c and
 * MPI_Comm_attach_buffer_c (the detach forms give the size back as an
 * MPI_Count), a derived type from a _c constructor, and MPI_Get_count_c /
 * MPI_Get_elements_c on the statuses. The 2 GiB message is in
 * large_count_big.
 */
#include "testutil.h"

enum { N = 1000 };

static int rank, peer;
static int sbuf[N], rbuf[N];

static void check_status(const char *what, const MPI_Status *st, int source, int tag, MPI_Count count)
{
    MPI_Count c = -1, e = -1;
    int ci = -1;
    CHECK(st->MPI_SOURCE == source && st->MPI_TAG == tag, "%s: status source %d tag %d, expected %d %d", what, st->MPI_SOURCE,
          st->MPI_TAG, source, tag);
    CHECK_MPI(MPI_Get_count_c(st, MPI_INT, &c));
    CHECK_MPI(MPI_Get_elements_c(st, MPI_INT, &e));
    CHECK_MPI(MPI_Get_count(st, MPI_INT, &ci));
    CHECK(c == count && e == count && ci == count, "%s: count_c %lld, elements_c %lld, count %d, expected %lld", what, c, e,
          ci, count);
}

/* Rank 0 sends `count` ints with seed `seed`, rank 1 checks them. */
static void expect_ints(const char *what, int seed, int count)
{
    check_ints(rbuf, (size_t)count, seed, what);
}

static void test_modes(MPI_Comm comm)
{
    MPI_Status st;
    MPI_Request r;
    /* Blocking modes; the ready send's receive is known to be posted. */
    if (rank == 0) {
        fill_ints(sbuf, N, 1);
        CHECK_MPI(MPI_Send_c(sbuf, N, MPI_INT, peer, 1, comm));
        fill_ints(sbuf, N, 2);
        CHECK_MPI(MPI_Ssend_c(sbuf, N, MPI_INT, peer, 2, comm));
        CHECK_MPI(MPI_Recv_c(NULL, 0, MPI_INT, peer, 99, comm, MPI_STATUS_IGNORE));
        fill_ints(sbuf, N, 3);
        CHECK_MPI(MPI_Rsend_c(sbuf, N, MPI_INT, peer, 3, comm));
    } else {
        CHECK_MPI(MPI_Recv_c(rbuf, N, MPI_INT, peer, 1, comm, &st));
        check_status("Send_c/Recv_c", &st, peer, 1, N);
        expect_ints("Send_c", 1, N);
        CHECK_MPI(MPI_Recv_c(rbuf, N, MPI_INT, peer, 2, comm, &st));
        check_status("Ssend_c", &st, peer, 2, N);
        expect_ints("Ssend_c", 2, N);
        CHECK_MPI(MPI_Irecv_c(rbuf, N, MPI_INT, peer, 3, comm, &r));
        CHECK_MPI(MPI_Send_c(NULL, 0, MPI_INT, peer, 99, comm));
        CHECK_MPI(MPI_Wait(&r, &st));
        check_status("Rsend_c/Irecv_c", &st, peer, 3, N);
        expect_ints("Rsend_c", 3, N);
    }

    /* Nonblocking modes. */
    if (rank == 0) {
        MPI_Request rs[3];
        static int s1[N], s2[N], s3[N];
        fill_ints(s1, N, 4);
        fill_ints(s2, N, 5);
        fill_ints(s3, N, 6);
        CHECK_MPI(MPI_Isend_c(s1, N, MPI_INT, peer, 4, comm, &rs[0]));
        CHECK_MPI(MPI_Issend_c(s2, N, MPI_INT, peer, 5, comm, &rs[1]));
        CHECK_MPI(MPI_Recv_c(NULL, 0, MPI_INT, peer, 99, comm, MPI_STATUS_IGNORE));
        CHECK_MPI(MPI_Irsend_c(s3, N, MPI_INT, peer, 6, comm, &rs[2]));
        CHECK_MPI(MPI_Waitall(3, rs, MPI_STATUSES_IGNORE));
    } else {
        MPI_Request rr[3];
        static int r1[N], r2[N], r3[N];
        MPI_Status sts[3];
        CHECK_MPI(MPI_Irecv_c(r1, N, MPI_INT, peer, 4, comm, &rr[0]));
        CHECK_MPI(MPI_Irecv_c(r2, N, MPI_INT, peer, 5, comm, &rr[1]));
        CHECK_MPI(MPI_Irecv_c(r3, N, MPI_INT, peer, 6, comm, &rr[2]));
        CHECK_MPI(MPI_Send_c(NULL, 0, MPI_INT, peer, 99, comm));
        CHECK_MPI(MPI_Waitall(3, rr, sts));
        check_status("Isend_c", &sts[0], peer, 4, N);
        check_status("Issend_c", &sts[1], peer, 5, N);
        check_status("Irsend_c", &sts[2], peer, 6, N);
        check_ints(r1, N, 4, "Isend_c");
        check_ints(r2, N, 5, "Issend_c");
        check_ints(r3, N, 6, "Irsend_c");
    }
}

static void test_persistent(MPI_Comm comm)
{
    MPI_Request r[3];
    MPI_Status st[3];
    if (rank == 0) {
        static int s1[N], s2[N], s3[N];
        CHECK_MPI(MPI_Send_init_c(s1, N, MPI_INT, peer, 10, comm, &r[0]));
        CHECK_MPI(MPI_Ssend_init_c(s2, N, MPI_INT, peer, 11, comm, &r[1]));
        CHECK_MPI(MPI_Rsend_init_c(s3, N, MPI_INT, peer, 12, comm, &r[2]));
        for (int round = 0; round < 3; round++) {
            fill_ints(s1, N, 10 + round);
            fill_ints(s2, N, 20 + round);
            fill_ints(s3, N, 30 + round);
            CHECK_MPI(MPI_Startall(2, r));
            CHECK_MPI(MPI_Recv_c(NULL, 0, MPI_INT, peer, 99, comm, MPI_STATUS_IGNORE));
            CHECK_MPI(MPI_Start(&r[2]));
            CHECK_MPI(MPI_Waitall(3, r, MPI_STATUSES_IGNORE));
        }
    } else {
        static int r1[N], r2[N], r3[N];
        CHECK_MPI(MPI_Recv_init_c(r1, N, MPI_INT, peer, 10, comm, &r[0]));
        CHECK_MPI(MPI_Recv_init_c(r2, N, MPI_INT, peer, 11, comm, &r[1]));
        CHECK_MPI(MPI_Recv_init_c(r3, N, MPI_INT, peer, 12, comm, &r[2]));
        for (int round = 0; round < 3; round++) {
            CHECK_MPI(MPI_Startall(3, r));
            CHECK_MPI(MPI_Send_c(NULL, 0, MPI_INT, peer, 99, comm));
            CHECK_MPI(MPI_Waitall(3, r, st));
            check_status("Send_init_c", &st[0], peer, 10, N);
            check_status("Ssend_init_c", &st[1], peer, 11, N);
            check_status("Rsend_init_c", &st[2], peer, 12, N);
            check_ints(r1, N, 10 + round, "Send_init_c");
            check_ints(r2, N, 20 + round, "Ssend_init_c");
            check_ints(r3, N, 30 + round, "Rsend_init_c");
        }
    }
    for (int i = 0; i < 3; i++)
        CHECK_MPI(MPI_Request_free(&r[i]));
}

static void test_buffered(MPI_Comm comm)
{
    MPI_Count psize = 0;
    CHECK_MPI(MPI_Pack_size_c(N, MPI_INT, comm, &psize));
    MPI_Count size = 3 * (psize + MPI_BSEND_OVERHEAD);
    char *buf = malloc((size_t)size);
    if (rank == 0) {
        CHECK_MPI(MPI_Buffer_attach_c(buf, size));
        fill_ints(sbuf, N, 40);
        CHECK_MPI(MPI_Bsend_c(sbuf, N, MPI_INT, peer, 40, comm));
        MPI_Request r;
        fill_ints(sbuf, N, 41);
        CHECK_MPI(MPI_Ibsend_c(sbuf, N, MPI_INT, peer, 41, comm, &r));
        CHECK_MPI(MPI_Wait(&r, MPI_STATUS_IGNORE));
        CHECK_MPI(MPI_Bsend_init_c(sbuf, N, MPI_INT, peer, 42, comm, &r));
        fill_ints(sbuf, N, 42);
        CHECK_MPI(MPI_Start(&r));
        CHECK_MPI(MPI_Wait(&r, MPI_STATUS_IGNORE));
        CHECK_MPI(MPI_Request_free(&r));
        void *back = NULL;
        MPI_Count back_size = -1;
        CHECK_MPI(MPI_Buffer_detach_c(&back, &back_size));
        CHECK(back == buf && back_size == size, "MPI_Buffer_detach_c gave %p/%lld, expected %p/%lld", back, back_size,
              (void *)buf, size);

        /* The communicator's own buffer; detached through the int form. */
        CHECK_MPI(MPI_Comm_attach_buffer_c(comm, buf, size));
        fill_ints(sbuf, N, 43);
        CHECK_MPI(MPI_Bsend_c(sbuf, N, MPI_INT, peer, 43, comm));
        int isize = -1;
        CHECK_MPI(MPI_Comm_detach_buffer(comm, &back, &isize));
        CHECK(back == buf && isize == size, "MPI_Comm_detach_buffer gave %p/%d, expected %p/%lld", back, isize, (void *)buf,
              size);
        CHECK_MPI(MPI_Comm_attach_buffer(comm, buf, (int)size));
        CHECK_MPI(MPI_Comm_detach_buffer_c(comm, &back, &back_size));
        CHECK(back == buf && back_size == size, "MPI_Comm_detach_buffer_c gave %p/%lld", back, back_size);
    } else {
        MPI_Status st;
        for (int tag = 40; tag <= 43; tag++) {
            CHECK_MPI(MPI_Recv_c(rbuf, N, MPI_INT, peer, tag, comm, &st));
            check_status("buffered send", &st, peer, tag, N);
            check_ints(rbuf, N, tag, "buffered send");
        }
    }
    free(buf);
}

static void test_sendrecv(MPI_Comm comm)
{
    MPI_Status st;
    static int s[N], r[N];
    fill_ints(s, N, 50 + rank);
    CHECK_MPI(MPI_Sendrecv_c(s, N, MPI_INT, peer, 50, r, N, MPI_INT, peer, 50, comm, &st));
    check_status("Sendrecv_c", &st, peer, 50, N);
    check_ints(r, N, 50 + peer, "Sendrecv_c");

    fill_ints(r, N, 60 + rank);
    CHECK_MPI(MPI_Sendrecv_replace_c(r, N, MPI_INT, peer, 60, peer, 60, comm, &st));
    check_status("Sendrecv_replace_c", &st, peer, 60, N);
    check_ints(r, N, 60 + peer, "Sendrecv_replace_c");

    MPI_Request req;
    fill_ints(s, N, 70 + rank);
    CHECK_MPI(MPI_Isendrecv_c(s, N, MPI_INT, peer, 70, r, N, MPI_INT, peer, 70, comm, &req));
    CHECK_MPI(MPI_Wait(&req, &st));
    /* MPICH 5.0.2 completes MPI_Isendrecv(_c) with a meaningless status. */
    if (!TU_PEER_MPICH)
        check_status("Isendrecv_c", &st, peer, 70, N);
    check_ints(r, N, 70 + peer, "Isendrecv_c");

    fill_ints(r, N, 80 + rank);
    CHECK_MPI(MPI_Isendrecv_replace_c(r, N, MPI_INT, peer, 80, peer, 80, comm, &req));
    CHECK_MPI(MPI_Wait(&req, &st));
    if (!TU_PEER_MPICH)
        check_status("Isendrecv_replace_c", &st, peer, 80, N);
    check_ints(r, N, 80 + peer, "Isendrecv_replace_c");
}

static void test_mprobe(MPI_Comm comm)
{
    /* A communicator of its own: the probes match nothing else. */
    MPI_Comm pc;
    CHECK_MPI(MPI_Comm_dup(comm, &pc));
    if (rank == 0) {
        fill_ints(sbuf, N, 90);
        CHECK_MPI(MPI_Send_c(sbuf, N, MPI_INT, peer, 90, pc));
        fill_ints(sbuf, N / 2, 91);
        CHECK_MPI(MPI_Send_c(sbuf, N / 2, MPI_INT, peer, 91, pc));
    } else {
        MPI_Message m;
        MPI_Status st;
        CHECK_MPI(MPI_Mprobe(peer, 90, pc, &m, &st));
        check_status("Mprobe", &st, peer, 90, N);
        CHECK_MPI(MPI_Mrecv_c(rbuf, N, MPI_INT, &m, &st));
        CHECK(m == MPI_MESSAGE_NULL, "MPI_Mrecv_c left the message handle set");
        check_status("Mrecv_c", &st, peer, 90, N);
        check_ints(rbuf, N, 90, "Mrecv_c");
        int flag = 0;
        while (!flag)
            CHECK_MPI(MPI_Improbe(MPI_ANY_SOURCE, MPI_ANY_TAG, pc, &flag, &m, &st));
        MPI_Request r;
        CHECK_MPI(MPI_Imrecv_c(rbuf, N, MPI_INT, &m, &r));
        CHECK_MPI(MPI_Wait(&r, &st));
        check_status("Imrecv_c", &st, peer, 91, N / 2);
        check_ints(rbuf, N / 2, 91, "Imrecv_c");
    }
    MPI_Comm_free(&pc);
}

static void test_derived(MPI_Comm comm)
{
    /* Every third int, N / 3 of them, through a type from MPI_Type_vector_c. */
    MPI_Datatype every3;
    CHECK_MPI(MPI_Type_vector_c(N / 3, 1, 3, MPI_INT, &every3));
    CHECK_MPI(MPI_Type_commit(&every3));
    if (rank == 0) {
        fill_ints(sbuf, N, 100);
        CHECK_MPI(MPI_Send_c(sbuf, 1, every3, peer, 100, comm));
    } else {
        MPI_Status st;
        for (int i = 0; i < N; i++)
            rbuf[i] = -1;
        CHECK_MPI(MPI_Recv_c(rbuf, N / 3, MPI_INT, peer, 100, comm, &st));
        check_status("vector_c send", &st, peer, 100, N / 3);
        MPI_Count c = -1, e = -1;
        CHECK_MPI(MPI_Get_count_c(&st, every3, &c));
        CHECK_MPI(MPI_Get_elements_c(&st, every3, &e));
        CHECK(c == 1 && e == N / 3, "Get_count_c/Get_elements_c with the vector type: %lld/%lld", c, e);
        int bad = 0;
        for (int i = 0; i < N / 3; i++)
            bad += rbuf[i] != (int)(100u * 1000u + 3u * (unsigned)i);
        CHECK(bad == 0, "vector_c send: %d wrong values", bad);
    }
    MPI_Type_free(&every3);
}

int main(int argc, char **argv)
{
    int size;
    rank = test_init(&argc, &argv, &size);
    peer = 1 - rank;
    MPI_Comm comm;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    test_modes(comm);
    test_persistent(comm);
    test_buffered(comm);
    test_sendrecv(comm);
    test_mprobe(comm);
    test_derived(comm);
    MPI_Comm_free(&comm);
    MPI_Finalize();
    return test_finish();
}
