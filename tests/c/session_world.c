/* gridmpi-test: ranks=1,2,3 timeout=60 */
/*
 * The sessions model and the world model in one program (MPI 4.1, 11.3):
 * a session started before MPI_Init, a second one after it; communicators
 * of both models used side by side (a session communicator is not
 * MPI_COMM_WORLD: messages on one never match receives on the other);
 * MPI_Finalize while the sessions live (MPI_Finalized is then true and the
 * session communicators still work); the last MPI_Session_finalize ends
 * MPI. Also a session's buffer for buffered sends: MPI_Bsend on the
 * session's communicator uses it, MPI_Session_flush_buffer and
 * MPI_Session_iflush_buffer wait for those sends, MPI_Session_detach_buffer
 * gives the buffer back.
 */
#include "testutil.h"

static MPI_Comm comm_of(MPI_Session s, const char *tag)
{
    MPI_Group g;
    MPI_Comm c = MPI_COMM_NULL;
    CHECK_MPI(MPI_Group_from_session_pset(s, "mpi://WORLD", &g));
    CHECK_MPI(MPI_Comm_create_from_group(g, tag, MPI_INFO_NULL, MPI_ERRORS_RETURN, &c));
    MPI_Group_free(&g);
    return c;
}

int main(int argc, char **argv)
{
    MPI_Session early, late;
    CHECK_MPI(MPI_Session_init(MPI_INFO_NULL, MPI_ERRORS_RETURN, &early));
    MPI_Comm ce = comm_of(early, "gridmpi.test.world.early");

    int size;
    int rank = test_init(&argc, &argv, &size);
    int crank = -1;
    MPI_Comm_rank(ce, &crank);
    CHECK_INT_EQ(crank, rank);

    CHECK_MPI(MPI_Session_init(MPI_INFO_NULL, MPI_ERRORS_RETURN, &late));
    MPI_Comm cl = comm_of(late, "gridmpi.test.world.late");

    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    int a[8], b[8], c[8];
    fill_ints(a, 8, 100 + rank);
    fill_ints(b, 8, 200 + rank);

    /* Same tag and peers on the world and a session communicator: each
     * receive gets the message of its own communicator. */
    MPI_Request rq[4];
    MPI_Irecv(c, 8, MPI_INT, left, 5, ce, &rq[0]);
    int w[8];
    MPI_Irecv(w, 8, MPI_INT, left, 5, MPI_COMM_WORLD, &rq[1]);
    MPI_Isend(b, 8, MPI_INT, right, 5, MPI_COMM_WORLD, &rq[2]);
    MPI_Isend(a, 8, MPI_INT, right, 5, ce, &rq[3]);
    CHECK_MPI(MPI_Waitall(4, rq, MPI_STATUSES_IGNORE));
    check_ints(c, 8, 100 + left, "session communicator message");
    check_ints(w, 8, 200 + left, "MPI_COMM_WORLD message");

    /* A buffer attached to the late session serves its communicators. */
    int bufsize = 4 * (sizeof a + MPI_BSEND_OVERHEAD);
    char *buf = malloc(bufsize);
    CHECK_MPI(MPI_Session_attach_buffer(late, buf, bufsize));
    /* The receives are posted first: a flush may wait for them (MPICH's
     * does, when a rank sends to itself). */
    int c2[8];
    MPI_Irecv(c, 8, MPI_INT, left, 6, cl, &rq[0]);
    MPI_Irecv(c2, 8, MPI_INT, left, 6, cl, &rq[1]);
    CHECK_MPI(MPI_Bsend(a, 8, MPI_INT, right, 6, cl));
    CHECK_MPI(MPI_Session_flush_buffer(late));
    CHECK_MPI(MPI_Bsend(b, 8, MPI_INT, right, 6, cl));
    MPI_Request fr;
    CHECK_MPI(MPI_Session_iflush_buffer(late, &fr));
    CHECK_MPI(MPI_Waitall(2, rq, MPI_STATUSES_IGNORE));
    check_ints(c, 8, 100 + left, "first buffered message");
    check_ints(c2, 8, 200 + left, "second buffered message");
    CHECK_MPI(MPI_Wait(&fr, MPI_STATUS_IGNORE));
    void *back = NULL;
    int backsize = 0;
    CHECK_MPI(MPI_Session_detach_buffer(late, &back, &backsize));
    CHECK(back == buf, "MPI_Session_detach_buffer gave another buffer");
    CHECK_INT_EQ(backsize, bufsize);
    free(buf);

    /* The world model ends; the sessions go on. */
    MPI_Finalize();
    int fin = 0;
    MPI_Finalized(&fin);
    CHECK(fin, "MPI_Finalized is false after MPI_Finalize");
    CHECK_MPI(MPI_Sendrecv(a, 8, MPI_INT, right, 9, c, 8, MPI_INT, left, 9, ce, MPI_STATUS_IGNORE));
    check_ints(c, 8, 100 + left, "session message after MPI_Finalize");
    MPI_Comm_free(&ce);
    CHECK_MPI(MPI_Session_finalize(&early));
    CHECK_MPI(MPI_Sendrecv(b, 8, MPI_INT, left, 10, c, 8, MPI_INT, right, 10, cl, MPI_STATUS_IGNORE));
    check_ints(c, 8, 200 + right, "message on the last session");
    MPI_Comm_free(&cl);
    CHECK_MPI(MPI_Session_finalize(&late));
    return test_finish();
}
