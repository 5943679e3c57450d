/* gridmpi-test: ranks=2,4,8 min-ranks=2 timeout=60 */
/*
 * Probe, Iprobe, Mprobe, Improbe, Mrecv, Imrecv: probing with ANY_SOURCE /
 * ANY_TAG and sizing the receive from the status; Iprobe for a message that
 * is never sent gives flag 0; a matched probe (Mprobe) removes the message
 * from matching so a later Probe sees the next one; message handles become
 * MPI_MESSAGE_NULL after Mrecv/Imrecv; probes on MPI_PROC_NULL
 * (MPI_MESSAGE_NO_PROC, status source PROC_NULL, tag ANY_TAG, count 0); a
 * probe does not see messages of another communicator.
 */
#include "testutil.h"

static void check_procnull_status(const MPI_Status *st, const char *what)
{
    int count = -1;
    MPI_Get_count(st, MPI_INT, &count);
    CHECK(st->MPI_SOURCE == MPI_PROC_NULL && st->MPI_TAG == MPI_ANY_TAG && count == 0,
          "%s: status source %d tag %d count %d, expected PROC_NULL/ANY_TAG/0", what, st->MPI_SOURCE,
          st->MPI_TAG, count);
}

int main(int argc, char **argv)
{
    int size;
    int rank = test_init(&argc, &argv, &size);
    /* Each phase that probes with wildcards has a communicator of its own,
     * so traffic of a later phase cannot match. */
    MPI_Comm comm, comm1, comm4;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    MPI_Comm_dup(MPI_COMM_WORLD, &comm1);
    MPI_Comm_dup(MPI_COMM_WORLD, &comm4);
    MPI_Status st;
    int flag, count;

    /* PROC_NULL probes. */
    CHECK_MPI(MPI_Probe(MPI_PROC_NULL, 3, comm, &st));
    check_procnull_status(&st, "Probe(PROC_NULL)");
    flag = 0;
    CHECK_MPI(MPI_Iprobe(MPI_PROC_NULL, MPI_ANY_TAG, comm, &flag, &st));
    CHECK(flag == 1, "Iprobe(PROC_NULL) flag %d", flag);
    check_procnull_status(&st, "Iprobe(PROC_NULL)");
    MPI_Message msg = MPI_MESSAGE_NULL;
    CHECK_MPI(MPI_Mprobe(MPI_PROC_NULL, 3, comm, &msg, &st));
    CHECK(msg == MPI_MESSAGE_NO_PROC, "Mprobe(PROC_NULL) did not return MPI_MESSAGE_NO_PROC");
    check_procnull_status(&st, "Mprobe(PROC_NULL)");
    int guard[2] = {11, 12};
    CHECK_MPI(MPI_Mrecv(guard, 2, MPI_INT, &msg, &st));
    CHECK(msg == MPI_MESSAGE_NULL, "Mrecv(MPI_MESSAGE_NO_PROC) did not set MPI_MESSAGE_NULL");
    check_procnull_status(&st, "Mrecv(MPI_MESSAGE_NO_PROC)");
    CHECK(guard[0] == 11 && guard[1] == 12, "Mrecv(NO_PROC) modified the buffer");
    flag = 0;
    msg = MPI_MESSAGE_NULL;
    CHECK_MPI(MPI_Improbe(MPI_PROC_NULL, 3, comm, &flag, &msg, &st));
    CHECK(flag == 1 && msg == MPI_MESSAGE_NO_PROC, "Improbe(PROC_NULL): flag %d, message not NO_PROC", flag);
    MPI_Request req;
    CHECK_MPI(MPI_Imrecv(guard, 2, MPI_INT, &msg, &req));
    CHECK(msg == MPI_MESSAGE_NULL, "Imrecv(NO_PROC) did not set MPI_MESSAGE_NULL");
    CHECK_MPI(MPI_Wait(&req, &st));
    check_procnull_status(&st, "Imrecv(MPI_MESSAGE_NO_PROC)");

    /* Nothing was sent with tag 999. */
    flag = 1;
    CHECK_MPI(MPI_Iprobe(MPI_ANY_SOURCE, 999, comm, &flag, &st));
    CHECK(flag == 0, "Iprobe found a message that was never sent");
    flag = 1;
    msg = MPI_MESSAGE_NULL;
    CHECK_MPI(MPI_Improbe(MPI_ANY_SOURCE, 999, comm, &flag, &msg, &st));
    CHECK(flag == 0, "Improbe found a message that was never sent");

    /* 1. Every rank > 0 sends two messages of rank-dependent length to 0;
     * rank 0 probes with wildcards and receives exactly what the status says. */
    if (rank == 0) {
        int got[64] = {0};
        for (int k = 0; k < 2 * (size - 1); k++) {
            CHECK_MPI(MPI_Probe(MPI_ANY_SOURCE, MPI_ANY_TAG, comm1, &st));
            MPI_Get_count(&st, MPI_INT, &count);
            int src = st.MPI_SOURCE, tag = st.MPI_TAG;
            if (!CHECK(src > 0 && src < size && (tag == 1 || tag == 2), "Probe status source %d tag %d", src, tag))
                break;
            CHECK_INT_EQ(count, src * 10 + tag);
            int *buf = tu_malloc(sizeof(int) * (count + 1));
            CHECK_MPI(MPI_Recv(buf, count, MPI_INT, src, tag, comm1, &st));
            check_ints(buf, count, src * 10 + tag, "probed message");
            /* Non-overtaking: tag 1 was sent first, but a probe with
             * ANY_TAG may see them in order only. */
            if (got[src] == 0)
                CHECK(tag == 1, "ANY_TAG probe saw message tag %d from %d before tag 1", tag, src);
            got[src]++;
            free(buf);
        }
    } else {
        int buf[200];
        fill_ints(buf, rank * 10 + 1, rank * 10 + 1);
        CHECK_MPI(MPI_Send(buf, rank * 10 + 1, MPI_INT, 0, 1, comm1));
        fill_ints(buf, rank * 10 + 2, rank * 10 + 2);
        CHECK_MPI(MPI_Send(buf, rank * 10 + 2, MPI_INT, 0, 2, comm1));
    }

    /* 2. Iprobe polling, then Mprobe/Mrecv with a second identical-envelope
     * message behind: after Mprobe, Probe must see the second message. */
    if (rank == 0) {
        int a[10], b[20];
        fill_ints(a, 10, 1);
        fill_ints(b, 20, 2);
        CHECK_MPI(MPI_Send(a, 10, MPI_INT, 1, 5, comm));
        CHECK_MPI(MPI_Send(b, 20, MPI_INT, 1, 5, comm));
    } else if (rank == 1) {
        do {
            CHECK_MPI(MPI_Iprobe(0, 5, comm, &flag, &st));
        } while (!flag);
        MPI_Get_count(&st, MPI_INT, &count);
        CHECK_INT_EQ(count, 10);
        MPI_Message ma, mb;
        CHECK_MPI(MPI_Mprobe(0, 5, comm, &ma, &st));
        MPI_Get_count(&st, MPI_INT, &count);
        CHECK_INT_EQ(count, 10);
        CHECK(ma != MPI_MESSAGE_NULL && ma != MPI_MESSAGE_NO_PROC, "Mprobe returned a null message");
        CHECK_MPI(MPI_Probe(0, 5, comm, &st));
        MPI_Get_count(&st, MPI_INT, &count);
        CHECK(count == 20, "after Mprobe, Probe sees a message of %d ints (the matched one has 10, the next 20)", count);
        flag = 0;
        do {
            CHECK_MPI(MPI_Improbe(0, 5, comm, &flag, &mb, &st));
        } while (!flag);
        MPI_Get_count(&st, MPI_INT, &count);
        CHECK_INT_EQ(count, 20);
        /* Nothing else is left to match. */
        CHECK_MPI(MPI_Iprobe(0, 5, comm, &flag, &st));
        CHECK(flag == 0, "Iprobe sees a message already matched by Mprobe/Improbe");
        int a[10], b[20];
        /* Receive the second one first. */
        CHECK_MPI(MPI_Imrecv(b, 20, MPI_INT, &mb, &req));
        CHECK(mb == MPI_MESSAGE_NULL, "Imrecv did not set the message to MPI_MESSAGE_NULL");
        CHECK_MPI(MPI_Wait(&req, &st));
        check_ints(b, 20, 2, "Imrecv data");
        CHECK_INT_EQ(st.MPI_SOURCE, 0);
        CHECK_INT_EQ(st.MPI_TAG, 5);
        CHECK_MPI(MPI_Mrecv(a, 10, MPI_INT, &ma, &st));
        CHECK(ma == MPI_MESSAGE_NULL, "Mrecv did not set the message to MPI_MESSAGE_NULL");
        check_ints(a, 10, 1, "Mrecv data");
        MPI_Get_count(&st, MPI_INT, &count);
        CHECK_INT_EQ(count, 10);
    }

    /* 3. A probe on the duplicate does not see a message on MPI_COMM_WORLD. */
    if (rank == size - 1) {
        int v = 42;
        CHECK_MPI(MPI_Send(&v, 1, MPI_INT, 0, 7, MPI_COMM_WORLD));
        CHECK_MPI(MPI_Send(&v, 1, MPI_INT, 0, 8, comm));
    } else if (rank == 0) {
        /* The comm message was sent after the world one, so once it is
         * probed the world one may be there too; it must not show on comm. */
        CHECK_MPI(MPI_Probe(size - 1, MPI_ANY_TAG, comm, &st));
        CHECK_INT_EQ(st.MPI_TAG, 8);
        int v;
        CHECK_MPI(MPI_Recv(&v, 1, MPI_INT, size - 1, 8, comm, &st));
        CHECK_MPI(MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, comm, &flag, &st));
        CHECK(flag == 0, "Iprobe on a duplicate sees a message of MPI_COMM_WORLD (tag %d)", st.MPI_TAG);
        CHECK_MPI(MPI_Probe(size - 1, MPI_ANY_TAG, MPI_COMM_WORLD, &st));
        CHECK_INT_EQ(st.MPI_TAG, 7);
        CHECK_MPI(MPI_Recv(&v, 1, MPI_INT, size - 1, 7, MPI_COMM_WORLD, &st));
        CHECK_INT_EQ(v, 42);
    }

    /* 4. Mprobe with ANY_SOURCE from many senders: each message is received
     * exactly once, via its own handle. */
    if (rank == 0) {
        MPI_Message *msgs = tu_malloc(sizeof(MPI_Message) * size);
        int *srcs = tu_malloc(sizeof(int) * size);
        for (int k = 0; k < size - 1; k++) {
            CHECK_MPI(MPI_Mprobe(MPI_ANY_SOURCE, 20, comm4, &msgs[k], &st));
            srcs[k] = st.MPI_SOURCE;
        }
        for (int k = size - 2; k >= 0; k--) {
            int v = -1;
            CHECK_MPI(MPI_Mrecv(&v, 1, MPI_INT, &msgs[k], &st));
            CHECK(v == srcs[k] * 3 && st.MPI_SOURCE == srcs[k], "Mrecv of message from %d got %d (status source %d)",
                  srcs[k], v, st.MPI_SOURCE);
        }
        free(msgs);
        free(srcs);
    } else {
        int v = rank * 3;
        CHECK_MPI(MPI_Send(&v, 1, MPI_INT, 0, 20, comm4));
    }

    MPI_Comm_free(&comm);
    MPI_Comm_free(&comm1);
    MPI_Comm_free(&comm4);
    MPI_Finalize();
    return test_finish();
}
