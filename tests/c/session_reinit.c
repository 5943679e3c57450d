/* gridmpi-test: ranks=1,2 timeout=30 */
/*
 * Starting MPI again after its last user finalized it (a session after
 * the last MPI_Session_finalize). MPI 4.1 allows it; GridMPI does not yet
 * (its PMI connection ends with the runtime): the call must fail with a
 * clear error through the handler it was given (MPI_ERRORS_RETURN here),
 * not crash or hang. Under another MPI the second session must work.
 */
#include "testutil.h"

int main(void)
{
    MPI_Session s;
    CHECK_MPI(MPI_Session_init(MPI_INFO_NULL, MPI_ERRORS_RETURN, &s));
    MPI_Group g;
    CHECK_MPI(MPI_Group_from_session_pset(s, "mpi://SELF", &g));
    MPI_Group_free(&g);
    CHECK_MPI(MPI_Session_finalize(&s));

    int rc = MPI_Session_init(MPI_INFO_NULL, MPI_ERRORS_RETURN, &s);
    if (TEST_IMPL_GRIDMPI) {
        CHECK(rc != MPI_SUCCESS, "a session started after MPI ended");
        int cls = -1;
        MPI_Error_class(rc, &cls);
        CHECK_INT_EQ(cls, MPI_ERR_OTHER);
        char msg[MPI_MAX_ERROR_STRING];
        int len = 0;
        MPI_Error_string(rc, msg, &len);
        CHECK(len > 0, "no error string");
    } else {
        CHECK_MPI(rc);
        if (rc == MPI_SUCCESS) {
            CHECK_MPI(MPI_Group_from_session_pset(s, "mpi://WORLD", &g));
            MPI_Group_free(&g);
            CHECK_MPI(MPI_Session_finalize(&s));
        }
    }
    return test_finish();
}
