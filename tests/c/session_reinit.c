/* gridmpi-test: ranks=1,2,4 timeout=60 */
/*
 * Sessions made again after the last one ended (MPI 4.1, 11.3: the
 * Sessions model has no MPI_Finalize; a process may initialize and
 * finalize sessions any number of times). Each round makes a session, a
 * communicator of mpi://WORLD, allreduces over it and finalizes the
 * session; MPI_Session_init must work in every round.
 */
#include "testutil.h"

static void one_round(int round)
{
    MPI_Session s = MPI_SESSION_NULL;
    MPI_Group g;
    MPI_Comm c;
    int rank, size;
    CHECK_MPI(MPI_Session_init(MPI_INFO_NULL, MPI_ERRORS_RETURN, &s));
    CHECK_MPI(MPI_Group_from_session_pset(s, "mpi://WORLD", &g));
    CHECK_MPI(MPI_Comm_create_from_group(g, "gridmpi.test.session_reinit", MPI_INFO_NULL, MPI_ERRORS_RETURN, &c));
    MPI_Comm_rank(c, &rank);
    MPI_Comm_size(c, &size);
    int v = rank + round, sum = 0;
    CHECK_MPI(MPI_Allreduce(&v, &sum, 1, MPI_INT, MPI_SUM, c));
    CHECK(sum == size * (size - 1) / 2 + size * round, "round %d: sum %d", round, sum);
    MPI_Group_free(&g);
    MPI_Comm_free(&c);
    CHECK_MPI(MPI_Session_finalize(&s));
    CHECK(s == MPI_SESSION_NULL, "round %d: the session handle was not reset", round);
}

int main(void)
{
    for (int round = 0; round < 3; round++)
        one_round(round);
    int flag = 1;
    MPI_Initialized(&flag);
    CHECK(!flag, "MPI_Initialized says the world model started");
    return test_finish();
}
