/* gridmpi-test: ranks=1,2 timeout=30 */
/*
 * User error handlers: Comm_create_errhandler with a function that is
 * called with the communicator the error happened on and the error code
 * (whose class is right), and the MPI call then returns that code, or
 * the code the handler put in its place;
 * Comm_get_errhandler (default MPI_ERRORS_ARE_FATAL on MPI_COMM_WORLD,
 * then whatever was set); inheritance by Comm_dup; Comm_call_errhandler
 * (user handler called with the given code, returns MPI_SUCCESS);
 * Errhandler_free while attached; Add_error_class / Add_error_code /
 * Add_error_string with Error_class / Error_string of the new values and
 * MPI_LASTUSEDCODE following the new class.
 */
#include "testutil.h"

static int forgiven;

/* Sets the code the failed call returns. */
static void forgive(MPI_Comm *comm, int *code, ...)
{
    (void)comm;
    forgiven++;
    *code = MPI_SUCCESS;
}

static int calls;
static MPI_Comm last_comm;
static int last_code;

static void handler(MPI_Comm *comm, int *code, ...)
{
    calls++;
    last_comm = *comm;
    last_code = *code;
}

int main(int argc, char **argv)
{
    int size;
    int rank = test_init(&argc, &argv, &size);
    MPI_Errhandler eh, got;
    MPI_Comm c, d;
    int buf = 0, rc, cls;

    CHECK_MPI(MPI_Comm_get_errhandler(MPI_COMM_WORLD, &got));
    CHECK(got == MPI_ERRORS_ARE_FATAL, "default error handler of MPI_COMM_WORLD is not MPI_ERRORS_ARE_FATAL");
    MPI_Errhandler_free(&got);

    CHECK_MPI(MPI_Comm_create_errhandler(handler, &eh));
    MPI_Comm_dup(MPI_COMM_WORLD, &c);
    CHECK_MPI(MPI_Comm_set_errhandler(c, eh));
    CHECK_MPI(MPI_Comm_get_errhandler(c, &got));
    CHECK(got == eh, "Comm_get_errhandler does not return the handler that was set");
    MPI_Errhandler_free(&got);

    /* Error on c: handler called with c and an MPI_ERR_RANK code. */
    rc = MPI_Send(&buf, 1, MPI_INT, size + 1, 0, c);
    CHECK(calls == 1, "user error handler called %d times", calls);
    CHECK(last_comm == c, "user error handler got another communicator");
    MPI_Error_class(last_code, &cls);
    CHECK(cls == MPI_ERR_RANK, "user error handler got code %d of class %d, expected MPI_ERR_RANK", last_code, cls);
    /* The handler's code "is the error code to be returned by the MPI
     * routine that raised the error"; MPICH 5.0.2 returns MPI_SUCCESS after a
     * user handler returns. */
    if (!TU_PEER_MPICH)
        CHECK(rc == last_code, "MPI_Send returned %d, the handler got %d", rc, last_code);

    /* Inherited by a duplicate; called with the duplicate. */
    MPI_Comm_dup(c, &d);
    rc = MPI_Recv(&buf, 1, MPI_INT, 0, -9, d, MPI_STATUS_IGNORE);
    CHECK(calls == 2 && last_comm == d, "inherited handler: calls %d, right comm %d", calls, last_comm == d);
    MPI_Error_class(last_code, &cls);
    CHECK_INT_EQ(cls, MPI_ERR_TAG);

    /* Freeing the handler object while attached: still works. */
    CHECK_MPI(MPI_Errhandler_free(&eh));
    CHECK(eh == MPI_ERRHANDLER_NULL, "Errhandler_free did not set MPI_ERRHANDLER_NULL");
    rc = MPI_Send(&buf, -1, MPI_INT, 0, 0, c);
    CHECK(calls == 3, "handler after Errhandler_free: calls %d", calls);
    MPI_Error_class(last_code, &cls);
    CHECK_INT_EQ(cls, MPI_ERR_COUNT);
    if (!TU_PEER_MPICH)
        CHECK(rc == last_code, "MPI_Send returned %d, the handler got %d", rc, last_code);

    /* Comm_call_errhandler. */
    rc = MPI_Comm_call_errhandler(c, MPI_ERR_OTHER);
    CHECK(calls == 4 && last_code == MPI_ERR_OTHER && last_comm == c, "Comm_call_errhandler: calls %d code %d", calls,
          last_code);
    CHECK(rc == MPI_SUCCESS, "Comm_call_errhandler with a returning user handler returned %d", rc);
    MPI_Comm_set_errhandler(d, MPI_ERRORS_RETURN);
    rc = MPI_Comm_call_errhandler(d, MPI_ERR_OTHER);
    CHECK(calls == 4, "user handler called after MPI_ERRORS_RETURN was set");
    CHECK_MPI(MPI_Comm_get_errhandler(d, &got));
    CHECK(got == MPI_ERRORS_RETURN, "Comm_get_errhandler after setting MPI_ERRORS_RETURN");
    MPI_Errhandler_free(&got);

    /* A handler that sets the code to MPI_SUCCESS: the call returns it
     * (Open MPI 5.0.11 returns the original code). */
    MPI_Errhandler fe;
    CHECK_MPI(MPI_Comm_create_errhandler(forgive, &fe));
    CHECK_MPI(MPI_Comm_set_errhandler(d, fe));
    MPI_Errhandler_free(&fe);
    rc = MPI_Send(&buf, 1, MPI_INT, size + 1, 0, d);
    CHECK(forgiven == 1, "the forgiving handler was called %d times", forgiven);
    if (!TU_PEER_OPENMPI)
        CHECK(rc == MPI_SUCCESS, "MPI_Send returned %d after its handler set MPI_SUCCESS", rc);
    MPI_Comm_set_errhandler(d, MPI_ERRORS_RETURN);

    /* Names removed in MPI 3.0 that the MPICH ABI still exports (Open MPI's
     * header no longer declares them). */
#if !TU_PEER_OPENMPI
    CHECK_MPI(MPI_Errhandler_set(d, MPI_ERRORS_RETURN));
    CHECK_MPI(MPI_Errhandler_get(d, &got));
    CHECK(got == MPI_ERRORS_RETURN, "MPI_Errhandler_get");
    MPI_Errhandler_free(&got);
#endif

    /* User-defined classes, codes and strings. */
    int newclass, code1, code2;
    CHECK_MPI(MPI_Add_error_class(&newclass));
    CHECK(newclass > MPI_ERR_LASTCODE, "new error class %d not above MPI_ERR_LASTCODE %d", newclass, MPI_ERR_LASTCODE);
    CHECK_MPI(MPI_Add_error_code(newclass, &code1));
    CHECK_MPI(MPI_Add_error_code(newclass, &code2));
    CHECK(code1 != code2 && code1 != newclass, "new error codes not distinct: %d %d (class %d)", code1, code2, newclass);
    MPI_Error_class(code1, &cls);
    CHECK_INT_EQ(cls, newclass);
    MPI_Error_class(code2, &cls);
    CHECK_INT_EQ(cls, newclass);
    /* Open MPI 5.0.11 maps a user-defined class to MPI_ERR_UNKNOWN. */
    MPI_Error_class(newclass, &cls);
    if (!TU_PEER_OPENMPI)
        CHECK_INT_EQ(cls, newclass);
    /* A code in an existing class. */
    int code3;
    CHECK_MPI(MPI_Add_error_code(MPI_ERR_ARG, &code3));
    MPI_Error_class(code3, &cls);
    CHECK_INT_EQ(cls, MPI_ERR_ARG);
    CHECK_MPI(MPI_Add_error_string(newclass, "gridmpi test class"));
    CHECK_MPI(MPI_Add_error_string(code1, "gridmpi test code one"));
    char str[MPI_MAX_ERROR_STRING];
    int len;
    CHECK_MPI(MPI_Error_string(newclass, str, &len));
    CHECK_STR_EQ(str, "gridmpi test class");
    CHECK_INT_EQ(len, 18);
    CHECK_MPI(MPI_Error_string(code1, str, &len));
    CHECK_STR_EQ(str, "gridmpi test code one");
    /* Replacing a string. */
    CHECK_MPI(MPI_Add_error_string(code1, "replaced"));
    CHECK_MPI(MPI_Error_string(code1, str, &len));
    CHECK_STR_EQ(str, "replaced");
    /* A code without a string set yields some string (possibly empty). */
    CHECK_MPI(MPI_Error_string(code2, str, &len));
    CHECK(len >= 0 && len < MPI_MAX_ERROR_STRING, "Error_string of a code without string: len %d", len);
    int *last, flag;
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_LASTUSEDCODE, &last, &flag);
    /* "the current maximum error class including the user-defined ones" */
    CHECK(flag && *last >= newclass, "MPI_LASTUSEDCODE = %d below the new class %d", flag ? *last : -1, newclass);
    /* The new code goes through a user handler. */
    rc = MPI_Comm_call_errhandler(c, code1);
    CHECK(calls == 5 && last_code == code1, "call_errhandler with a user code: calls %d code %d", calls, last_code);

    (void)rank;
    MPI_Comm_free(&d);
    MPI_Comm_free(&c);
    MPI_Finalize();
    return test_finish();
}
