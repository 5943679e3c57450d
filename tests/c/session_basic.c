/* gridmpi-test: ranks=1,2,4 timeout=60 */
/*
 * Sessions without the world model (MPI 4.1, 11.3): an error handler made
 * before any session exists, MPI_Session_init with a thread level asked
 * for in its info (MPI_Session_get_info says it back), the process sets
 * (mpi://WORLD and mpi://SELF among them, names by MPI_Session_get_nth_pset
 * with the length-only query and truncation, sizes by
 * MPI_Session_get_pset_info), groups from them, communicators from those
 * groups (string tags; traffic on a ring; the error handler given is the
 * one attached), errors raised on the session's handler (an unknown
 * process set, MPI_Session_call_errhandler; a user handler sees the session
 * and the code), two sessions at once, MPI_Initialized staying false, and
 * the handle set to MPI_SESSION_NULL by MPI_Session_finalize.
 */
#include "testutil.h"

static int handler_calls = 0;
static MPI_Session handler_session = MPI_SESSION_NULL;
static int handler_code = MPI_SUCCESS;

static void on_error(MPI_Session *s, int *code, ...)
{
    handler_calls++;
    handler_session = *s;
    handler_code = *code;
}

/* Index of the process set named `want`, or -1. */
static int find_pset(MPI_Session s, const char *want)
{
    int n = 0;
    MPI_Session_get_num_psets(s, MPI_INFO_NULL, &n);
    for (int i = 0; i < n; i++) {
        char name[MPI_MAX_PSET_NAME_LEN];
        int len = sizeof name;
        MPI_Session_get_nth_pset(s, MPI_INFO_NULL, i, &len, name);
        if (strcmp(name, want) == 0)
            return i;
    }
    return -1;
}

static int pset_size(MPI_Session s, const char *name)
{
    MPI_Info info;
    char v[64];
    int flag = 0, len = sizeof v;
    if (!CHECK_MPI(MPI_Session_get_pset_info(s, name, &info)))
        return -1;
    CHECK_MPI(MPI_Info_get_string(info, "mpi_size", &len, v, &flag));
    CHECK(flag, "pset info of %s has no mpi_size", name);
    MPI_Info_free(&info);
    return flag ? atoi(v) : -1;
}

int main(void)
{
    MPI_Errhandler eh;
    CHECK_MPI(MPI_Session_create_errhandler(on_error, &eh));

    MPI_Info hints;
    CHECK_MPI(MPI_Info_create(&hints));
    CHECK_MPI(MPI_Info_set(hints, "mpi_thread_support_level", "MPI_THREAD_MULTIPLE"));
    MPI_Session s;
    CHECK_MPI(MPI_Session_init(hints, MPI_ERRORS_RETURN, &s));
    MPI_Info_free(&hints);
    CHECK(s != MPI_SESSION_NULL, "MPI_Session_init gave MPI_SESSION_NULL");

    int flag = 1;
    MPI_Initialized(&flag);
    CHECK(!flag, "MPI_Initialized is true in a process that only has a session");

    /* The session's info says the thread level. */
    MPI_Info used;
    CHECK_MPI(MPI_Session_get_info(s, &used));
    char level[64];
    int len = sizeof level;
    flag = 0;
    CHECK_MPI(MPI_Info_get_string(used, "mpi_thread_support_level", &len, level, &flag));
    /* MPICH 5.0.2 names the key "thread_level" (MPI_INFO_ENV's key). */
    if (!TU_PEER_MPICH) {
        CHECK(flag, "MPI_Session_get_info has no mpi_thread_support_level");
        if (flag)
            CHECK_STR_EQ(level, "MPI_THREAD_MULTIPLE");
    }
    MPI_Info_free(&used);

    /* Process sets. */
    int npsets = 0;
    CHECK_MPI(MPI_Session_get_num_psets(s, MPI_INFO_NULL, &npsets));
    CHECK(npsets >= 2, "%d process sets (mpi://WORLD and mpi://SELF at least)", npsets);
    int iworld = find_pset(s, "mpi://WORLD"), iself = find_pset(s, "mpi://SELF");
    CHECK(iworld >= 0, "no process set mpi://WORLD");
    CHECK(iself >= 0, "no process set mpi://SELF");
    if (TEST_IMPL_GRIDMPI)
        CHECK(find_pset(s, "gridmpi://cluster/SELF") >= 0, "no process set gridmpi://cluster/SELF");
    if (iworld >= 0) {
        /* Length-only query (pset_len 0), then a name cut short. */
        int want = 0;
        CHECK_MPI(MPI_Session_get_nth_pset(s, MPI_INFO_NULL, iworld, &want, NULL));
        CHECK_INT_EQ(want, (int)strlen("mpi://WORLD") + 1);
        char shortname[5] = "xxxx";
        int l = 4;
        CHECK_MPI(MPI_Session_get_nth_pset(s, MPI_INFO_NULL, iworld, &l, shortname));
        CHECK_STR_EQ(shortname, "mpi");
    }
    int size = pset_size(s, "mpi://WORLD");
    CHECK(size >= 1, "mpi://WORLD has %d processes", size);
    CHECK_INT_EQ(pset_size(s, "mpi://SELF"), 1);

    /* A communicator of every process. */
    MPI_Group gworld, gself;
    CHECK_MPI(MPI_Group_from_session_pset(s, "mpi://WORLD", &gworld));
    CHECK_MPI(MPI_Group_from_session_pset(s, "mpi://SELF", &gself));
    int gsize = -1, rank = -1;
    MPI_Group_size(gworld, &gsize);
    MPI_Group_rank(gworld, &rank);
    CHECK_INT_EQ(gsize, size);
    CHECK(rank >= 0 && rank < gsize, "rank %d in a group of %d", rank, gsize);
    tu_cached_rank = rank;
    int sself = -1, rself = -1;
    MPI_Group_size(gself, &sself);
    MPI_Group_rank(gself, &rself);
    CHECK_INT_EQ(sself, 1);
    CHECK_INT_EQ(rself, 0);

    MPI_Comm world;
    CHECK_MPI(MPI_Comm_create_from_group(gworld, "gridmpi.test.session.world", MPI_INFO_NULL, MPI_ERRORS_RETURN, &world));
    int csize = -1, crank = -1;
    MPI_Comm_size(world, &csize);
    MPI_Comm_rank(world, &crank);
    CHECK_INT_EQ(csize, size);
    CHECK_INT_EQ(crank, rank);
    MPI_Errhandler got;
    CHECK_MPI(MPI_Comm_get_errhandler(world, &got));
    CHECK(got == MPI_ERRORS_RETURN, "the communicator's error handler is not the one given");

    /* Traffic around a ring. */
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    int out[100], in[100];
    fill_ints(out, 100, rank);
    MPI_Status st;
    CHECK_MPI(MPI_Sendrecv(out, 100, MPI_INT, right, 7, in, 100, MPI_INT, left, 7, world, &st));
    check_ints(in, 100, left, "ring message");
    CHECK_INT_EQ(st.MPI_SOURCE, left);

    /* A communicator of this process alone. */
    MPI_Comm self;
    CHECK_MPI(MPI_Comm_create_from_group(gself, "gridmpi.test.session.self", MPI_INFO_NULL, MPI_ERRORS_RETURN, &self));
    MPI_Comm_size(self, &csize);
    CHECK_INT_EQ(csize, 1);
    CHECK_MPI(MPI_Sendrecv(out, 10, MPI_INT, 0, 3, in, 10, MPI_INT, 0, 3, self, MPI_STATUS_IGNORE));
    check_ints(in, 10, rank, "message to self");

    /* Errors go to the session's handler. */
    MPI_Group bad = MPI_GROUP_NULL;
    int rc = MPI_Group_from_session_pset(s, "mpi://NO-SUCH-SET", &bad);
    CHECK(rc != MPI_SUCCESS, "an unknown process set was accepted");
    CHECK_MPI(MPI_Session_set_errhandler(s, eh));
    MPI_Errhandler cur;
    CHECK_MPI(MPI_Session_get_errhandler(s, &cur));
    CHECK(cur == eh, "MPI_Session_get_errhandler gave another handler");
    MPI_Errhandler_free(&cur);
    rc = MPI_Group_from_session_pset(s, "mpi://NO-SUCH-SET", &bad);
    CHECK_INT_EQ(handler_calls, 1);
    CHECK(handler_session == s, "the handler was called with another session");
    /* MPICH 5.0.2: after a user handler returns, the call returns MPI_SUCCESS. */
    if (!TU_PEER_MPICH) {
        CHECK(handler_code == rc, "the handler saw code %d, the call returned %d", handler_code, rc);
        CHECK(rc != MPI_SUCCESS, "an unknown process set was accepted");
    }
    CHECK_MPI(MPI_Session_call_errhandler(s, MPI_ERR_OTHER));
    CHECK_INT_EQ(handler_calls, 2);
    CHECK_INT_EQ(handler_code, MPI_ERR_OTHER);
    CHECK_MPI(MPI_Session_set_errhandler(s, MPI_ERRORS_RETURN));
    CHECK_MPI(MPI_Errhandler_free(&eh));

    /* A second session at the same time; finalizing it leaves the first. */
    MPI_Session s2;
    CHECK_MPI(MPI_Session_init(MPI_INFO_NULL, MPI_ERRORS_RETURN, &s2));
    CHECK(s2 != s, "two sessions got one handle");
    MPI_Group g2;
    CHECK_MPI(MPI_Group_from_session_pset(s2, "mpi://WORLD", &g2));
    MPI_Comm world2;
    CHECK_MPI(MPI_Comm_create_from_group(g2, "gridmpi.test.session.world2", MPI_INFO_NULL, MPI_ERRORS_RETURN, &world2));
    CHECK_MPI(MPI_Sendrecv(out, 100, MPI_INT, left, 8, in, 100, MPI_INT, right, 8, world2, MPI_STATUS_IGNORE));
    check_ints(in, 100, right, "message on the second session's communicator");
    MPI_Comm_free(&world2);
    MPI_Group_free(&g2);
    CHECK_MPI(MPI_Session_finalize(&s2));
    CHECK(s2 == MPI_SESSION_NULL, "MPI_Session_finalize did not set the handle to MPI_SESSION_NULL");

    CHECK_MPI(MPI_Sendrecv(out, 100, MPI_INT, right, 9, in, 100, MPI_INT, left, 9, world, MPI_STATUS_IGNORE));
    check_ints(in, 100, left, "message after the second session ended");

    MPI_Comm_free(&self);
    MPI_Comm_free(&world);
    MPI_Group_free(&gself);
    MPI_Group_free(&gworld);
    CHECK_MPI(MPI_Session_finalize(&s));
    CHECK(s == MPI_SESSION_NULL, "MPI_Session_finalize did not set the handle to MPI_SESSION_NULL");
    MPI_Initialized(&flag);
    CHECK(!flag, "MPI_Initialized is true after the session ended");
    return test_finish();
}
