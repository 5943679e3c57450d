/* gridmpi-test: ranks=1,2 timeout=60 */
/*
 * Messages to oneself: on MPI_COMM_SELF and on MPI_COMM_WORLD with dest =
 * own rank; Isend then Recv, Irecv then Send and Ssend (the receive is
 * already posted), Sendrecv and Sendrecv_replace to self, small and large
 * (4 MiB) messages, ANY_SOURCE matching oneself, ordering of several
 * self-messages with the same tag, Probe of a self-message.
 */
#include "testutil.h"

#define BIG (1 << 20) /* ints = 4 MiB */

static void self_tests(MPI_Comm comm, int me, const char *name)
{
    MPI_Status st;
    MPI_Request req;
    int count;
    char what[96];
    int *out = tu_malloc(sizeof(int) * BIG), *in = tu_malloc(sizeof(int) * BIG);
    const int lens[] = {0, 1, 100, BIG};
    for (int l = 0; l < 4; l++) {
        int n = lens[l];
        snprintf(what, sizeof what, "%s: Isend+Recv %d ints", name, n);
        fill_ints(out, n, 1 + l);
        CHECK_MPI(MPI_Isend(out, n, MPI_INT, me, l, comm, &req));
        CHECK_MPI(MPI_Recv(in, n, MPI_INT, MPI_ANY_SOURCE, l, comm, &st));
        CHECK_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
        check_ints(in, n, 1 + l, what);
        CHECK(st.MPI_SOURCE == me, "%s: status source %d", what, st.MPI_SOURCE);
        MPI_Get_count(&st, MPI_INT, &count);
        CHECK(count == n, "%s: count %d", what, count);

        snprintf(what, sizeof what, "%s: Irecv+Send %d ints", name, n);
        fill_ints(out, n, 11 + l);
        CHECK_MPI(MPI_Irecv(in, n, MPI_INT, me, 10 + l, comm, &req));
        CHECK_MPI(MPI_Send(out, n, MPI_INT, me, 10 + l, comm));
        CHECK_MPI(MPI_Wait(&req, &st));
        check_ints(in, n, 11 + l, what);

        snprintf(what, sizeof what, "%s: Irecv+Ssend %d ints", name, n);
        fill_ints(out, n, 21 + l);
        CHECK_MPI(MPI_Irecv(in, n, MPI_INT, me, 20 + l, comm, &req));
        CHECK_MPI(MPI_Ssend(out, n, MPI_INT, me, 20 + l, comm));
        CHECK_MPI(MPI_Wait(&req, &st));
        check_ints(in, n, 21 + l, what);

        snprintf(what, sizeof what, "%s: Sendrecv %d ints", name, n);
        fill_ints(out, n, 31 + l);
        CHECK_MPI(MPI_Sendrecv(out, n, MPI_INT, me, 30, in, n, MPI_INT, me, 30, comm, &st));
        check_ints(in, n, 31 + l, what);

        snprintf(what, sizeof what, "%s: Sendrecv_replace %d ints", name, n);
        fill_ints(in, n, 41 + l);
        CHECK_MPI(MPI_Sendrecv_replace(in, n, MPI_INT, me, 40, me, 40, comm, &st));
        check_ints(in, n, 41 + l, what);
    }
    /* Several self-messages, same tag: received in order. Probe first. */
    MPI_Request reqs[5];
    int small[5][3];
    for (int i = 0; i < 5; i++) {
        fill_ints(small[i], 3, 100 + i);
        CHECK_MPI(MPI_Isend(small[i], i % 2 ? 3 : 2, MPI_INT, me, 50, comm, &reqs[i]));
    }
    for (int i = 0; i < 5; i++) {
        int buf[3];
        CHECK_MPI(MPI_Probe(me, 50, comm, &st));
        MPI_Get_count(&st, MPI_INT, &count);
        CHECK(count == (i % 2 ? 3 : 2), "%s: probe of self-message %d: count %d", name, i, count);
        CHECK_MPI(MPI_Recv(buf, 3, MPI_INT, me, 50, comm, &st));
        snprintf(what, sizeof what, "%s: ordered self-message %d", name, i);
        check_ints(buf, i % 2 ? 3 : 2, 100 + i, what);
    }
    CHECK_MPI(MPI_Waitall(5, reqs, MPI_STATUSES_IGNORE));
    free(out);
    free(in);
}

int main(int argc, char **argv)
{
    int size;
    int rank = test_init(&argc, &argv, &size);
    self_tests(MPI_COMM_SELF, 0, "MPI_COMM_SELF");
    self_tests(MPI_COMM_WORLD, rank, "MPI_COMM_WORLD");
    MPI_Finalize();
    return test_finish();
}
