/* gridmpi-test: ranks=1,2 timeout=30 */
/*
 * MPI_PROC_NULL as source and destination: every send mode (Send, Ssend,
 * Rsend, Bsend, Isend, Issend, Irsend, Ibsend) to PROC_NULL completes at once;
 * Recv/Irecv from PROC_NULL complete at once with status source PROC_NULL,
 * tag MPI_ANY_TAG, count 0 and an untouched buffer, also with a derived type
 * and through Waitall/Testany.
 */
#include "testutil.h"

static void check_pn(const MPI_Status *st, const char *what)
{
    int count = -1;
    MPI_Get_count(st, MPI_INT, &count);
    CHECK(st->MPI_SOURCE == MPI_PROC_NULL, "%s: source %d", what, st->MPI_SOURCE);
    CHECK(st->MPI_TAG == MPI_ANY_TAG, "%s: tag %d", what, st->MPI_TAG);
    CHECK(count == 0, "%s: count %d", what, count);
}

int main(int argc, char **argv)
{
    test_init(&argc, &argv, NULL);
    MPI_Comm comm = MPI_COMM_WORLD;
    int buf[10];
    for (int i = 0; i < 10; i++)
        buf[i] = 100 + i;
    MPI_Status st;
    MPI_Request reqs[4];
    int flag, index;

    CHECK_MPI(MPI_Send(buf, 10, MPI_INT, MPI_PROC_NULL, 1, comm));
    CHECK_MPI(MPI_Ssend(buf, 10, MPI_INT, MPI_PROC_NULL, 1, comm));
    CHECK_MPI(MPI_Rsend(buf, 10, MPI_INT, MPI_PROC_NULL, 1, comm));
    /* Bsend to PROC_NULL needs no buffer. */
    CHECK_MPI(MPI_Bsend(buf, 10, MPI_INT, MPI_PROC_NULL, 1, comm));
    CHECK_MPI(MPI_Isend(buf, 10, MPI_INT, MPI_PROC_NULL, 1, comm, &reqs[0]));
    CHECK_MPI(MPI_Issend(buf, 10, MPI_INT, MPI_PROC_NULL, 1, comm, &reqs[1]));
    CHECK_MPI(MPI_Irsend(buf, 10, MPI_INT, MPI_PROC_NULL, 1, comm, &reqs[2]));
    CHECK_MPI(MPI_Ibsend(buf, 10, MPI_INT, MPI_PROC_NULL, 1, comm, &reqs[3]));
    CHECK_MPI(MPI_Waitall(4, reqs, MPI_STATUSES_IGNORE));

    CHECK_MPI(MPI_Recv(buf, 10, MPI_INT, MPI_PROC_NULL, 1, comm, &st));
    check_pn(&st, "Recv");
    CHECK_MPI(MPI_Recv(buf, 10, MPI_INT, MPI_PROC_NULL, MPI_ANY_TAG, comm, &st));
    check_pn(&st, "Recv ANY_TAG");
    MPI_Datatype vec;
    MPI_Type_vector(2, 1, 3, MPI_INT, &vec);
    MPI_Type_commit(&vec);
    CHECK_MPI(MPI_Recv(buf, 2, vec, MPI_PROC_NULL, 1, comm, &st));
    check_pn(&st, "Recv derived type");
    MPI_Type_free(&vec);
    for (int i = 0; i < 10; i++)
        CHECK(buf[i] == 100 + i, "receive from PROC_NULL modified buf[%d]", i);

    CHECK_MPI(MPI_Irecv(buf, 10, MPI_INT, MPI_PROC_NULL, 2, comm, &reqs[0]));
    CHECK_MPI(MPI_Wait(&reqs[0], &st));
    /* Open MPI 5.0.11 returns an empty status (source MPI_ANY_SOURCE) here. */
    if (!TU_PEER_OPENMPI)
        check_pn(&st, "Irecv + Wait");
    MPI_Status sts[2];
    CHECK_MPI(MPI_Irecv(buf, 10, MPI_INT, MPI_PROC_NULL, 2, comm, &reqs[0]));
    CHECK_MPI(MPI_Irecv(buf, 10, MPI_INT, MPI_PROC_NULL, 2, comm, &reqs[1]));
    CHECK_MPI(MPI_Waitall(2, reqs, sts));
    if (!TU_PEER_OPENMPI) {
        check_pn(&sts[0], "Irecv + Waitall [0]");
        check_pn(&sts[1], "Irecv + Waitall [1]");
    }
    CHECK_MPI(MPI_Irecv(buf, 10, MPI_INT, MPI_PROC_NULL, 2, comm, &reqs[0]));
    flag = 0;
    while (!flag)
        CHECK_MPI(MPI_Testany(1, reqs, &index, &flag, &st));
    CHECK_INT_EQ(index, 0);
    if (!TU_PEER_OPENMPI)
        check_pn(&st, "Irecv + Testany");
    for (int i = 0; i < 10; i++)
        CHECK(buf[i] == 100 + i, "receive from PROC_NULL modified buf[%d]", i);

    MPI_Finalize();
    return test_finish();
}
