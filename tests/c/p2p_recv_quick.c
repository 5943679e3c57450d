/* gridmpi-test: ranks=2 min-ranks=2 max-ranks=2 timeout=120 */
/*
 * Blocking MPI_Recv on one host, where GridMPI may take a small message
 * straight from its sender's shared-memory ring (its quick road): only
 * where a posted receive would have matched it, so MPI's order holds.
 *   A. Messages already here, received in another tag order than sent.
 *   B. A nonblocking receive posted first takes the first match; the
 *      blocking one after it the next.
 *   C. A message of another tag at the head of the ring: the blocking
 *      receive of a later tag gets its own, the earlier one waits.
 *   D. MPI_Ssend to MPI_Recv completes (it needs the acknowledgment).
 *   E. A message longer than the buffer: MPI_ERR_TRUNCATE.
 *   F. Zero bytes into a NULL buffer; a non-contiguous datatype.
 *   G. Ping-pong of every eager size class, MPI_ANY_TAG, checked content
 *      and status; then 20000 blocking receives in a row (the credit
 *      they consume goes back, or the sender stalls).
 */
#include "testutil.h"

#define NSTREAM 20000

static void recv_int(int src, int tag, int want, const char *what)
{
    int v = -1;
    MPI_Status st;
    CHECK_MPI(MPI_Recv(&v, 1, MPI_INT, src, tag, MPI_COMM_WORLD, &st));
    CHECK(v == want, "%s: got %d, want %d", what, v, want);
    CHECK(st.MPI_SOURCE == src, "%s: source %d", what, st.MPI_SOURCE);
    if (tag != MPI_ANY_TAG)
        CHECK(st.MPI_TAG == tag, "%s: tag %d", what, st.MPI_TAG);
}

int main(int argc, char **argv)
{
    int size;
    int rank = test_init(&argc, &argv, &size);
    int peer = 1 - rank;
    MPI_Comm w = MPI_COMM_WORLD;

    /* A: three messages, all here before the receives, taken 3, 1, 2. */
    if (rank == 0) {
        for (int t = 1; t <= 3; t++)
            CHECK_MPI(MPI_Send(&t, 1, MPI_INT, peer, t, w));
        CHECK_MPI(MPI_Barrier(w));
    } else {
        CHECK_MPI(MPI_Barrier(w));
        recv_int(0, 3, 3, "A tag 3");
        recv_int(0, 1, 1, "A tag 1");
        recv_int(0, 2, 2, "A tag 2");
    }

    /* B: an Irecv of any tag posted first gets the first message. */
    if (rank == 0) {
        CHECK_MPI(MPI_Barrier(w));
        int a = 10, b = 20;
        CHECK_MPI(MPI_Send(&a, 1, MPI_INT, peer, 5, w));
        CHECK_MPI(MPI_Send(&b, 1, MPI_INT, peer, 5, w));
    } else {
        int first = -1;
        MPI_Request r;
        CHECK_MPI(MPI_Irecv(&first, 1, MPI_INT, 0, MPI_ANY_TAG, w, &r));
        CHECK_MPI(MPI_Barrier(w));
        recv_int(0, 5, 20, "B blocking after a posted receive");
        CHECK_MPI(MPI_Wait(&r, MPI_STATUS_IGNORE));
        CHECK(first == 10, "B posted receive got %d, want 10", first);
    }

    /* C: tag 7 at the head of the ring, the receive wants tag 8 first. */
    if (rank == 0) {
        int a = 70, b = 80;
        CHECK_MPI(MPI_Send(&a, 1, MPI_INT, peer, 7, w));
        CHECK_MPI(MPI_Send(&b, 1, MPI_INT, peer, 8, w));
    } else {
        recv_int(0, 8, 80, "C tag 8");
        recv_int(0, 7, 70, "C tag 7");
    }

    /* D: synchronous sends, both ways. */
    for (int i = 0; i < 100; i++) {
        int v = i;
        if (rank == 0) {
            CHECK_MPI(MPI_Ssend(&v, 1, MPI_INT, peer, 9, w));
            recv_int(1, 9, i, "D reply");
        } else {
            recv_int(0, 9, i, "D");
            CHECK_MPI(MPI_Ssend(&v, 1, MPI_INT, peer, 9, w));
        }
    }

    /* E: 16 bytes into an 8-byte buffer. */
    CHECK_MPI(MPI_Comm_set_errhandler(w, MPI_ERRORS_RETURN));
    if (rank == 0) {
        char big[16] = {0};
        CHECK_MPI(MPI_Send(big, 16, MPI_CHAR, peer, 11, w));
    } else {
        char small[8];
        MPI_Status st;
        int rc = MPI_Recv(small, 8, MPI_CHAR, 0, 11, w, &st);
        CHECK_ERR_CLASS(rc, MPI_ERR_TRUNCATE);
    }
    CHECK_MPI(MPI_Comm_set_errhandler(w, MPI_ERRORS_ARE_FATAL));

    /* F: zero bytes into NULL, then a strided receive. */
    if (rank == 0) {
        CHECK_MPI(MPI_Send(NULL, 0, MPI_INT, peer, 12, w));
        int v[4] = {1, 2, 3, 4};
        CHECK_MPI(MPI_Send(v, 4, MPI_INT, peer, 13, w));
    } else {
        MPI_Status st;
        int n = -1;
        CHECK_MPI(MPI_Recv(NULL, 0, MPI_INT, 0, 12, w, &st));
        CHECK_MPI(MPI_Get_count(&st, MPI_INT, &n));
        CHECK(n == 0 && st.MPI_TAG == 12, "F zero bytes: count %d tag %d", n, st.MPI_TAG);
        MPI_Datatype every_other;
        CHECK_MPI(MPI_Type_vector(4, 1, 2, MPI_INT, &every_other));
        CHECK_MPI(MPI_Type_commit(&every_other));
        int got[8] = {0};
        CHECK_MPI(MPI_Recv(got, 1, every_other, 0, 13, w, MPI_STATUS_IGNORE));
        CHECK(got[0] == 1 && got[2] == 2 && got[4] == 3 && got[6] == 4 && got[1] == 0, "F strided receive");
        CHECK_MPI(MPI_Type_free(&every_other));
    }

    /* G: ping-pong of every size class up to 64 KiB, then a stream. */
    unsigned char *buf = tu_malloc(65536), *back = tu_malloc(65536);
    for (size_t n = 1; n <= 65536; n *= 2) {
        for (size_t len = n - 1; len <= n; len++) {
            int tag = (int)(len % 1000);
            MPI_Status st;
            int cnt = -1;
            if (rank == 0) {
                fill_pattern(buf, len, (uint32_t)len);
                CHECK_MPI(MPI_Send(buf, (int)len, MPI_BYTE, peer, tag, w));
                CHECK_MPI(MPI_Recv(back, 65536, MPI_BYTE, peer, MPI_ANY_TAG, w, &st));
                check_pattern(back, len, (uint32_t)len + 1, "G echo");
            } else {
                CHECK_MPI(MPI_Recv(buf, 65536, MPI_BYTE, peer, MPI_ANY_TAG, w, &st));
                check_pattern(buf, len, (uint32_t)len, "G message");
                fill_pattern(back, len, (uint32_t)len + 1);
                CHECK_MPI(MPI_Send(back, (int)len, MPI_BYTE, peer, tag, w));
            }
            CHECK_MPI(MPI_Get_count(&st, MPI_BYTE, &cnt));
            CHECK(cnt == (int)len && st.MPI_TAG == tag && st.MPI_SOURCE == peer, "G %zu bytes: count %d tag %d", len, cnt, st.MPI_TAG);
        }
    }
    for (int i = 0; i < NSTREAM; i++) {
        if (rank == 0)
            CHECK_MPI(MPI_Send(&i, 1, MPI_INT, peer, 14, w));
        else
            recv_int(0, 14, i, "G stream");
    }
    free(buf);
    free(back);
    MPI_Finalize();
    return test_finish();
}
