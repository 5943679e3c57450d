/* gridmpi-test: ranks=2,3 min-ranks=2 timeout=60 env=GRIDMPI_TRANSPORT=tcp */
/*
 * GridMPI's performance variables (MPI_T, MPI 4.1 15.3.7), over TCP:
 * sessions and handles (MPI_T_PVAR_HANDLE_NULL and
 * MPI_T_PVAR_SESSION_NULL after freeing; a handle of another session is
 * refused); the unexpected queue (messages a rank sends itself and has not
 * received are counted, with the peak; a posted receive is counted);
 * per-peer TCP variables with one element per process (the neighbours'
 * connections are open with a congestion window, our own element is not a
 * connection); bytes sent to each peer grow by what was sent; the
 * per-cluster counter counts only between MPI_T_pvar_start and _stop,
 * and can be read and reset at once, reset and written; continuous
 * variables cannot be started (MPI_T_ERR_PVAR_NO_STARTSTOP), read-only ones
 * not written or reset (MPI_T_ERR_PVAR_NO_WRITE); MPI_T_PVAR_ALL_HANDLES
 * starts and stops every handle that can be. Under another MPI only the
 * session calls are checked.
 */
#include "testutil.h"

static MPI_T_pvar_session ses;

static MPI_T_pvar_handle alloc(const char *name, int cls, int *count)
{
    int i = -1;
    MPI_T_pvar_handle h = MPI_T_PVAR_HANDLE_NULL;
    CHECK_MPI(MPI_T_pvar_get_index(name, cls, &i));
    CHECK_MPI(MPI_T_pvar_handle_alloc(ses, i, NULL, &h, count));
    return h;
}

static unsigned long long read1(MPI_T_pvar_handle h)
{
    unsigned long long v = 0;
    CHECK_MPI(MPI_T_pvar_read(ses, h, &v));
    return v;
}

int main(int argc, char **argv)
{
    int provided, size;
    MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
    int rank = test_init(&argc, &argv, &size);
    CHECK_MPI(MPI_T_pvar_session_create(&ses));
    CHECK_MPI(MPI_T_pvar_start(ses, MPI_T_PVAR_ALL_HANDLES));
    if (!TEST_IMPL_GRIDMPI)
        goto done;
    MPI_Comm comm;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    int count;

    /* The unexpected queue: five messages to ourselves, not received yet. */
    MPI_T_pvar_handle unexp = alloc("gridmpi_unexpected_messages", MPI_T_PVAR_CLASS_LEVEL, &count);
    MPI_T_pvar_handle peak = alloc("gridmpi_unexpected_messages_peak", MPI_T_PVAR_CLASS_HIGHWATERMARK, &count);
    MPI_T_pvar_handle posted = alloc("gridmpi_posted_receives", MPI_T_PVAR_CLASS_LEVEL, &count);
    unsigned long long u0 = read1(unexp);
    int v[5] = {1, 2, 3, 4, 5}, r[5];
    for (int i = 0; i < 5; i++)
        CHECK_MPI(MPI_Send(&v[i], 1, MPI_INT, rank, 40 + i, comm));
    unsigned long long u1 = read1(unexp);
    CHECK(u1 >= u0 + 5, "unexpected messages: %llu before five sends to self, %llu after", u0, u1);
    CHECK(read1(peak) >= u1, "the peak is below the level");
    for (int i = 4; i >= 0; i--)
        CHECK_MPI(MPI_Recv(&r[i], 1, MPI_INT, rank, 40 + i, comm, MPI_STATUS_IGNORE));
    CHECK(read1(unexp) + 5 <= u1, "receiving did not shorten the unexpected queue");
    MPI_Request never;
    unsigned long long p0 = read1(posted);
    MPI_Irecv(&r[0], 1, MPI_INT, rank, 99, comm, &never);
    CHECK(read1(posted) == p0 + 1, "a posted receive is not counted");
    MPI_Cancel(&never);
    MPI_Wait(&never, MPI_STATUS_IGNORE);

    /* A handle belongs to its session. */
    MPI_T_pvar_session other;
    CHECK_MPI(MPI_T_pvar_session_create(&other));
    unsigned long long x;
    CHECK_INT_EQ(MPI_T_pvar_read(other, unexp, &x), MPI_T_ERR_INVALID_HANDLE);
    CHECK_MPI(MPI_T_pvar_session_free(&other));
    CHECK(other == MPI_T_PVAR_SESSION_NULL, "the freed session is not MPI_T_PVAR_SESSION_NULL");

    /* Per peer: the connections around a ring, and the bytes sent. */
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    MPI_T_pvar_handle conn = alloc("gridmpi_tcp_connection", MPI_T_PVAR_CLASS_STATE, &count);
    CHECK_INT_EQ(count, size);
    MPI_T_pvar_handle cwnd = alloc("gridmpi_tcp_cwnd", MPI_T_PVAR_CLASS_LEVEL, &count);
    MPI_T_pvar_handle retrans = alloc("gridmpi_tcp_total_retrans", MPI_T_PVAR_CLASS_COUNTER, &count);
    MPI_T_pvar_handle sent = alloc("gridmpi_bytes_sent", MPI_T_PVAR_CLASS_COUNTER, &count);
    CHECK_INT_EQ(count, size);
    unsigned long long *b0 = calloc(size, 8), *b1 = calloc(size, 8), *w = calloc(size, 8);
    int *state = calloc(size, sizeof(int));
    CHECK_MPI(MPI_T_pvar_read(ses, sent, b0));
    static char big[200000], in[200000];
    fill_pattern(big, sizeof big, rank);
    CHECK_MPI(MPI_Sendrecv(big, sizeof big, MPI_BYTE, right, 1, in, sizeof in, MPI_BYTE, left, 1, comm, MPI_STATUS_IGNORE));
    CHECK_MPI(MPI_Sendrecv(big, sizeof big, MPI_BYTE, left, 2, in, sizeof in, MPI_BYTE, right, 2, comm, MPI_STATUS_IGNORE));
    check_pattern(in, sizeof in, right, "ring message");
    CHECK_MPI(MPI_T_pvar_read(ses, sent, b1));
    CHECK(b1[right] >= b0[right] + sizeof big, "bytes sent to rank %d: %llu, then %llu after %zu more", right, b0[right], b1[right], sizeof big);
    CHECK_INT_EQ(b1[rank], 0);
    CHECK_MPI(MPI_T_pvar_read(ses, conn, state));
    CHECK(state[right] == 1 && state[left] == 1, "connections to %d and %d: %d %d (expected open, 1)", left, right, state[left], state[right]);
    CHECK_INT_EQ(state[rank], 0);
    CHECK_MPI(MPI_T_pvar_read(ses, cwnd, w));
    CHECK(w[right] > 0, "the congestion window to rank %d is %llu", right, w[right]);
    CHECK_MPI(MPI_T_pvar_read(ses, retrans, w));

    /* Continuous, read-only variables. */
    CHECK_INT_EQ(MPI_T_pvar_start(ses, retrans), MPI_T_ERR_PVAR_NO_STARTSTOP);
    CHECK_INT_EQ(MPI_T_pvar_stop(ses, retrans), MPI_T_ERR_PVAR_NO_STARTSTOP);
    CHECK_INT_EQ(MPI_T_pvar_write(ses, sent, b0), MPI_T_ERR_PVAR_NO_WRITE);
    CHECK_INT_EQ(MPI_T_pvar_reset(ses, sent), MPI_T_ERR_PVAR_NO_WRITE);
    CHECK_INT_EQ(MPI_T_pvar_readreset(ses, sent, b0), MPI_T_ERR_PVAR_NO_WRITE);

    /* Per cluster: one cluster here; counts only while started. */
    MPI_T_pvar_handle cl = alloc("gridmpi_cluster_bytes_sent", MPI_T_PVAR_CLASS_COUNTER, &count);
    CHECK_INT_EQ(count, 1);
    CHECK_INT_EQ(read1(cl), 0);
    CHECK_MPI(MPI_Sendrecv(big, sizeof big, MPI_BYTE, right, 3, in, sizeof in, MPI_BYTE, left, 3, comm, MPI_STATUS_IGNORE));
    CHECK_INT_EQ(read1(cl), 0);
    CHECK_MPI(MPI_T_pvar_start(ses, cl));
    CHECK_MPI(MPI_Sendrecv(big, sizeof big, MPI_BYTE, right, 4, in, sizeof in, MPI_BYTE, left, 4, comm, MPI_STATUS_IGNORE));
    CHECK_MPI(MPI_T_pvar_stop(ses, cl));
    unsigned long long c1 = read1(cl);
    CHECK(c1 >= sizeof big && c1 < 3 * sizeof big, "%llu bytes counted for one %zu-byte message", c1, sizeof big);
    CHECK_MPI(MPI_Sendrecv(big, sizeof big, MPI_BYTE, right, 5, in, sizeof in, MPI_BYTE, left, 5, comm, MPI_STATUS_IGNORE));
    CHECK_INT_EQ(read1(cl), c1);
    unsigned long long got = 0;
    CHECK_MPI(MPI_T_pvar_readreset(ses, cl, &got));
    CHECK_INT_EQ(got, c1);
    CHECK_INT_EQ(read1(cl), 0);
    unsigned long long put = 42;
    CHECK_MPI(MPI_T_pvar_write(ses, cl, &put));
    CHECK_INT_EQ(read1(cl), 42);
    /* Every handle that can be started, at once. */
    CHECK_MPI(MPI_T_pvar_start(ses, MPI_T_PVAR_ALL_HANDLES));
    CHECK_MPI(MPI_Sendrecv(big, sizeof big, MPI_BYTE, right, 6, in, sizeof in, MPI_BYTE, left, 6, comm, MPI_STATUS_IGNORE));
    CHECK_MPI(MPI_T_pvar_stop(ses, MPI_T_PVAR_ALL_HANDLES));
    CHECK(read1(cl) >= 42 + sizeof big, "MPI_T_PVAR_ALL_HANDLES did not start the counter");
    CHECK_MPI(MPI_T_pvar_reset(ses, MPI_T_PVAR_ALL_HANDLES));
    CHECK_INT_EQ(read1(cl), 0);

    CHECK_MPI(MPI_T_pvar_handle_free(ses, &cl));
    CHECK(cl == MPI_T_PVAR_HANDLE_NULL, "the freed handle is not MPI_T_PVAR_HANDLE_NULL");
    free(b0);
    free(b1);
    free(w);
    free(state);
    MPI_Comm_free(&comm);
done:
    CHECK_MPI(MPI_T_pvar_session_free(&ses));
    CHECK(ses == MPI_T_PVAR_SESSION_NULL, "the freed session is not MPI_T_PVAR_SESSION_NULL");
    MPI_T_finalize();
    MPI_Finalize();
    return test_finish();
}
