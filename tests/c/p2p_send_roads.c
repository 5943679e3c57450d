/* gridmpi-test: ranks=2 min-ranks=2 max-ranks=2 timeout=120 */
/*
 * A small send of a predefined type leaves on its own road (written straight
 * from the caller's bytes); other sends take the engine's. Messages of both
 * kinds on one (source, tag, communicator) must still arrive in the order
 * they were sent (MPI 4.1, 3.5), also when the receiver is late and the
 * sender's frames stop fitting where they go and wait:
 *   A. Isends alternating MPI_INT[2] (contiguous) and a strided type holding
 *      two ints, 4000 of them, every 1000th a long one (past any eager
 *      limit), received after the receiver slept.
 *   B. The same with blocking MPI_Send, received with MPI_ANY_TAG as the
 *      sender goes, with a zero-count message, a synchronous send and pairs
 *      of long Isends among them.
 *   C. A send the buffer of which is changed at once after MPI_Send returns
 *      delivers what it held at the call.
 */
#include "testutil.h"
#include <unistd.h>

#define N 4000
#define LONG (1 << 20) /* ints: 4 MiB */

static MPI_Datatype strided2(void)
{
    MPI_Datatype t;
    CHECK_MPI(MPI_Type_vector(2, 1, 2, MPI_INT, &t));
    CHECK_MPI(MPI_Type_commit(&t));
    return t;
}

/* Receive message i of a sequence: ints all equal to i, two of them
 * (LONG when `long_one`, none when `zero`). */
static void recv_seq(int *v, int i, int tag, int zero, int long_one, const char *what)
{
    MPI_Status st;
    v[0] = v[1] = -1;
    CHECK_MPI(MPI_Recv(v, LONG, MPI_INT, 0, tag, MPI_COMM_WORLD, &st));
    int n = -1, want = zero ? 0 : long_one ? LONG : 2;
    CHECK_MPI(MPI_Get_count(&st, MPI_INT, &n));
    CHECK(n == want, "%s %d: count %d, want %d", what, i, n, want);
    if (n == want && want > 0)
        CHECK(v[0] == i && v[want - 1] == i, "%s %d: got values %d .. %d", what, i, v[0], v[want - 1]);
}

int main(int argc, char **argv)
{
    int size;
    int rank = test_init(&argc, &argv, &size);
    MPI_Comm w = MPI_COMM_WORLD;
    MPI_Datatype vec = strided2();
    int *v = tu_malloc(sizeof(int) * LONG);

    /* A: everything sent before the receiver looks. */
    if (rank == 0) {
        int *plain = tu_malloc(sizeof(int) * 2 * N);
        int *spread = tu_malloc(sizeof(int) * 3 * N);
        int *longs = tu_malloc(sizeof(int) * LONG * (N / 1000));
        MPI_Request *r = tu_malloc(sizeof(MPI_Request) * N);
        for (int i = 0; i < N; i++) {
            if (i % 1000 == 500) {
                int *l = &longs[LONG * (i / 1000)];
                for (int k = 0; k < LONG; k++)
                    l[k] = i;
                CHECK_MPI(MPI_Isend(l, LONG, MPI_INT, 1, 1, w, &r[i]));
            } else if (i % 2 == 0) {
                plain[2 * i] = plain[2 * i + 1] = i;
                CHECK_MPI(MPI_Isend(&plain[2 * i], 2, MPI_INT, 1, 1, w, &r[i]));
            } else {
                spread[3 * i] = spread[3 * i + 2] = i;
                spread[3 * i + 1] = -7;
                CHECK_MPI(MPI_Isend(&spread[3 * i], 1, vec, 1, 1, w, &r[i]));
            }
        }
        CHECK_MPI(MPI_Waitall(N, r, MPI_STATUSES_IGNORE));
        free(plain);
        free(spread);
        free(longs);
        free(r);
    } else {
        usleep(200 * 1000);
        for (int i = 0; i < N; i++)
            recv_seq(v, i, 1, 0, i % 1000 == 500, "A");
    }

    /* B: blocking sends, received as they come; long Isends in pairs among
     * them (the second's request to send may wait behind the first's data). */
    if (rank == 0) {
        int *longs = tu_malloc(sizeof(int) * LONG * 2 * (N / 1000));
        MPI_Request *r = tu_malloc(sizeof(MPI_Request) * 2 * (N / 1000));
        int nr = 0;
        for (int i = 0; i < N; i++) {
            int v[3] = {i, i, i};
            if (i % 1000 == 500 || i % 1000 == 501) {
                int *l = &longs[LONG * nr];
                for (int k = 0; k < LONG; k++)
                    l[k] = i;
                CHECK_MPI(MPI_Isend(l, LONG, MPI_INT, 1, 2, w, &r[nr++]));
            } else if (i % 500 == 7)
                CHECK_MPI(MPI_Send(v, 0, MPI_INT, 1, 2, w));
            else if (i % 500 == 8)
                CHECK_MPI(MPI_Ssend(v, 2, MPI_INT, 1, 2, w));
            else if (i % 3 == 0)
                CHECK_MPI(MPI_Send(v, 1, vec, 1, 2, w));
            else
                CHECK_MPI(MPI_Send(v, 2, MPI_INT, 1, 2, w));
        }
        CHECK_MPI(MPI_Waitall(nr, r, MPI_STATUSES_IGNORE));
        free(longs);
        free(r);
    } else {
        for (int i = 0; i < N; i++)
            recv_seq(v, i, MPI_ANY_TAG, i % 500 == 7, i % 1000 == 500 || i % 1000 == 501, "B");
    }

    /* C: the buffer is the caller's again when MPI_Send returns. */
    if (rank == 0) {
        double d[4] = {1.5, 2.5, 3.5, 4.5};
        CHECK_MPI(MPI_Send(d, 4, MPI_DOUBLE, 1, 3, w));
        for (int k = 0; k < 4; k++)
            d[k] = -1;
        CHECK_MPI(MPI_Send(d, 4, MPI_DOUBLE, 1, 3, w));
    } else {
        double a[4], b[4];
        usleep(50 * 1000);
        CHECK_MPI(MPI_Recv(a, 4, MPI_DOUBLE, 0, 3, w, MPI_STATUS_IGNORE));
        CHECK_MPI(MPI_Recv(b, 4, MPI_DOUBLE, 0, 3, w, MPI_STATUS_IGNORE));
        for (int k = 0; k < 4; k++) {
            CHECK(a[k] == 1.5 + k, "C first message [%d] = %g", k, a[k]);
            CHECK(b[k] == -1, "C second message [%d] = %g", k, b[k]);
        }
    }

    CHECK_MPI(MPI_Type_free(&vec));
    free(v);
    MPI_Finalize();
    return test_finish();
}
