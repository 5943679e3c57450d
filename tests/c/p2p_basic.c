/* gridmpi-test: ranks=2,3,4,8 min-ranks=2 timeout=60 */
/*
 * Blocking point-to-point between rank 0 and every other rank in all send
 * modes (Send, Ssend, Rsend with the receive known to be posted), status
 * fields (MPI_SOURCE, MPI_TAG, Get_count), MPI_ANY_SOURCE / MPI_ANY_TAG,
 * receiving into a larger buffer (the rest stays untouched), zero-length
 * messages, a tag equal to MPI_TAG_UB, MPI_STATUS_IGNORE, several basic types.
 */
#include "testutil.h"

#define N 1000

int main(int argc, char **argv)
{
    int size;
    int rank = test_init(&argc, &argv, &size);
    MPI_Comm comm = MPI_COMM_WORLD;
    int sbuf[N], rbuf[N + 16];
    MPI_Status st;
    int count;

    /* 1. MPI_Send 0 -> p, MPI_Ssend p -> 0, with specific source and tag. */
    if (rank == 0) {
        for (int p = 1; p < size; p++) {
            fill_ints(sbuf, N, 10 + p);
            CHECK_MPI(MPI_Send(sbuf, N, MPI_INT, p, 100 + p, comm));
            for (int i = 0; i < N + 16; i++)
                rbuf[i] = -1;
            CHECK_MPI(MPI_Recv(rbuf, N + 16, MPI_INT, p, 200 + p, comm, &st));
            check_ints(rbuf, N, 20 + p, "Ssend data");
            CHECK(rbuf[N] == -1 && rbuf[N + 15] == -1, "receive wrote past the message length");
            CHECK_INT_EQ(st.MPI_SOURCE, p);
            CHECK_INT_EQ(st.MPI_TAG, 200 + p);
            MPI_Get_count(&st, MPI_INT, &count);
            CHECK_INT_EQ(count, N);
            MPI_Get_count(&st, MPI_BYTE, &count);
            CHECK_INT_EQ(count, N * (int)sizeof(int));
        }
    } else {
        CHECK_MPI(MPI_Recv(rbuf, N, MPI_INT, 0, 100 + rank, comm, &st));
        check_ints(rbuf, N, 10 + rank, "Send data");
        CHECK_INT_EQ(st.MPI_SOURCE, 0);
        CHECK_INT_EQ(st.MPI_TAG, 100 + rank);
        fill_ints(sbuf, N, 20 + rank);
        CHECK_MPI(MPI_Ssend(sbuf, N, MPI_INT, 0, 200 + rank, comm));
    }

    /* 2. Rsend: the receiver posts its receive, then tells the sender. */
    if (rank == 0) {
        for (int p = 1; p < size; p++) {
            CHECK_MPI(MPI_Recv(NULL, 0, MPI_INT, p, 300, comm, MPI_STATUS_IGNORE));
            fill_ints(sbuf, N, 30 + p);
            CHECK_MPI(MPI_Rsend(sbuf, N, MPI_INT, p, 301, comm));
        }
    } else {
        MPI_Request req;
        CHECK_MPI(MPI_Irecv(rbuf, N, MPI_INT, 0, 301, comm, &req));
        CHECK_MPI(MPI_Send(NULL, 0, MPI_INT, 0, 300, comm));
        CHECK_MPI(MPI_Wait(&req, &st));
        check_ints(rbuf, N, 30 + rank, "Rsend data");
        CHECK_INT_EQ(st.MPI_TAG, 301);
    }

    /* 3. ANY_SOURCE + ANY_TAG: every other rank sends tag = 1000 + its rank.
     * On a communicator of its own, so later traffic cannot match. */
    MPI_Comm anycomm;
    MPI_Comm_dup(MPI_COMM_WORLD, &anycomm);
    if (rank == 0) {
        int seen[64] = {0};
        for (int k = 1; k < size; k++) {
            CHECK_MPI(MPI_Recv(rbuf, N, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, anycomm, &st));
            int src = st.MPI_SOURCE;
            if (CHECK(src >= 1 && src < size, "ANY_SOURCE status source %d", src)) {
                CHECK_INT_EQ(st.MPI_TAG, 1000 + src);
                MPI_Get_count(&st, MPI_INT, &count);
                CHECK_INT_EQ(count, src);
                check_ints(rbuf, src, 40 + src, "ANY_SOURCE data");
                CHECK(seen[src]++ == 0, "message from %d received twice", src);
            }
        }
    } else {
        fill_ints(sbuf, rank, 40 + rank);
        CHECK_MPI(MPI_Send(sbuf, rank, MPI_INT, 0, 1000 + rank, anycomm));
    }
    MPI_Comm_free(&anycomm);

    /* 4. ANY_TAG with a specific source; zero-length message; STATUS_IGNORE. */
    if (rank == 1) {
        CHECK_MPI(MPI_Send(sbuf, 0, MPI_INT, 0, 7, comm));
        CHECK_MPI(MPI_Send(NULL, 0, MPI_BYTE, 0, 8, comm));
        fill_ints(sbuf, 5, 55);
        CHECK_MPI(MPI_Send(sbuf, 5, MPI_INT, 0, 9, comm));
    } else if (rank == 0) {
        rbuf[0] = -7;
        CHECK_MPI(MPI_Recv(rbuf, N, MPI_INT, 1, MPI_ANY_TAG, comm, &st));
        CHECK_INT_EQ(st.MPI_TAG, 7);
        CHECK_INT_EQ(st.MPI_SOURCE, 1);
        MPI_Get_count(&st, MPI_INT, &count);
        CHECK_INT_EQ(count, 0);
        CHECK(rbuf[0] == -7, "zero-length receive modified the buffer");
        CHECK_MPI(MPI_Recv(NULL, 0, MPI_BYTE, 1, 8, comm, &st));
        MPI_Get_count(&st, MPI_BYTE, &count);
        CHECK_INT_EQ(count, 0);
        CHECK_MPI(MPI_Recv(rbuf, N, MPI_INT, 1, MPI_ANY_TAG, comm, MPI_STATUS_IGNORE));
        check_ints(rbuf, 5, 55, "after zero-length messages");
    }

    /* 5. The largest tag MPI_TAG_UB allows. */
    int *tag_ub_ptr, flag;
    MPI_Comm_get_attr(comm, MPI_TAG_UB, &tag_ub_ptr, &flag);
    if (CHECK(flag, "MPI_TAG_UB missing")) {
        int tag_ub = *tag_ub_ptr;
        if (rank == 0) {
            double d[3] = {1.5, -2.25, 1e300};
            CHECK_MPI(MPI_Send(d, 3, MPI_DOUBLE, size - 1, tag_ub, comm));
        } else if (rank == size - 1) {
            double d[3] = {0};
            CHECK_MPI(MPI_Recv(d, 3, MPI_DOUBLE, 0, tag_ub, comm, &st));
            CHECK(d[0] == 1.5 && d[1] == -2.25 && d[2] == 1e300, "doubles corrupted");
            CHECK_INT_EQ(st.MPI_TAG, tag_ub);
        }
    }

    /* 6. Other basic types, and the message length in a different type. */
    if (rank == size - 1) {
        char c[11] = "hello MPI!";
        short s[4] = {-1, 2, -32768, 32767};
        long long ll[2] = {-1LL, 0x123456789abcdefLL};
        CHECK_MPI(MPI_Send(c, 11, MPI_CHAR, 0, 60, comm));
        CHECK_MPI(MPI_Send(s, 4, MPI_SHORT, 0, 61, comm));
        CHECK_MPI(MPI_Send(ll, 2, MPI_LONG_LONG, 0, 62, comm));
    } else if (rank == 0) {
        char c[32];
        short s[4];
        long long ll[2];
        CHECK_MPI(MPI_Recv(c, 32, MPI_CHAR, size - 1, 60, comm, &st));
        CHECK_STR_EQ(c, "hello MPI!");
        MPI_Get_count(&st, MPI_CHAR, &count);
        CHECK_INT_EQ(count, 11);
        CHECK_MPI(MPI_Recv(s, 4, MPI_SHORT, size - 1, 61, comm, &st));
        CHECK(s[0] == -1 && s[1] == 2 && s[2] == -32768 && s[3] == 32767, "shorts corrupted");
        MPI_Get_count(&st, MPI_BYTE, &count);
        CHECK_INT_EQ(count, 8);
        CHECK_MPI(MPI_Recv(ll, 2, MPI_LONG_LONG, size - 1, 62, comm, &st));
        CHECK(ll[0] == -1LL && ll[1] == 0x123456789abcdefLL, "long longs corrupted");
        MPI_Get_count(&st, MPI_INT, &count);
        CHECK_INT_EQ(count, 4);
    }

    MPI_Finalize();
    return test_finish();
}
