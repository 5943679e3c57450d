/* gridmpi-test: ranks=1,2 timeout=60 */
/*
 * The error handler given to MPI_Comm_create_from_group and
 * MPI_Intercomm_create_from_groups "will also be invoked if the function
 * encounters an error" (MPI 4.1, 7.4.2 and 7.6.2): a NULL output handle
 * calls it (with MPI_COMM_NULL) and the call returns what it left. Before,
 * the errors went to the session's handler (MPICH's
 * errors/session/comm_create_from_group).
 */
#include <mpi.h>
#include <stdio.h>

static int calls;
static MPI_Comm seen = (MPI_Comm)12345;

static void count_calls(MPI_Comm *comm, int *code, ...)
{
    calls++;
    seen = *comm;
    (void)code;
}

int main(void)
{
    MPI_Session s;
    MPI_Group g;
    MPI_Errhandler h;
    int errs = 0;
    MPI_Session_init(MPI_INFO_NULL, MPI_ERRORS_RETURN, &s);
    MPI_Comm_create_errhandler(count_calls, &h);
    MPI_Group_from_session_pset(s, "mpi://WORLD", &g);
    int rc = MPI_Comm_create_from_group(g, "gridmpi.test.errh", MPI_INFO_NULL, h, NULL);
    if (rc == MPI_SUCCESS || calls != 1 || seen != MPI_COMM_NULL) {
        printf("FAILED: MPI_Comm_create_from_group: rc %d, handler called %d times\n", rc, calls);
        errs++;
    }
    calls = 0;
    rc = MPI_Intercomm_create_from_groups(g, 0, g, 0, "gridmpi.test.errh2", MPI_INFO_NULL, h, NULL);
    if (rc == MPI_SUCCESS || calls != 1) {
        printf("FAILED: MPI_Intercomm_create_from_groups: rc %d, handler called %d times\n", rc, calls);
        errs++;
    }
    /* A good call still works, and its communicator has the handler. */
    MPI_Comm c;
    rc = MPI_Comm_create_from_group(g, "gridmpi.test.ok", MPI_INFO_NULL, h, &c);
    MPI_Errhandler got;
    if (rc != MPI_SUCCESS || MPI_Comm_get_errhandler(c, &got) != MPI_SUCCESS || got != h) {
        printf("FAILED: a good MPI_Comm_create_from_group\n");
        errs++;
    } else {
        MPI_Errhandler_free(&got);
        MPI_Comm_free(&c);
    }
    MPI_Group_free(&g);
    MPI_Errhandler_free(&h);
    MPI_Session_finalize(&s);
    return errs ? 1 : 0;
}
