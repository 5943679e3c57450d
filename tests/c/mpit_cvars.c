/* gridmpi-test: ranks=2 timeout=60 env=GRIDMPI_TRANSPORT=tcp */
/*
 * Writing GridMPI's control variables (MPI_T, MPI 4.1 15.3.6):
 * GRIDMPI_EAGER_LIMIT written before MPI_Init (scope MPI_T_SCOPE_LOCAL
 * then) takes effect when MPI starts: a 10000-byte message waits for its
 * receive as a request to send, not as 10000 bytes in the receiver's
 * unexpected queue (seen through gridmpi_unexpected_bytes); after
 * MPI_Init the variable reads back, is MPI_T_SCOPE_READONLY and a write
 * fails with MPI_T_ERR_CVAR_SET_NEVER. While MPI runs, the collective
 * algorithm (an enumeration) and the yield time change at once and read
 * back; a value outside the enumeration is refused with MPI_T_ERR_INVALID;
 * the launcher's variables are MPI_T_SCOPE_CONSTANT and never writable.
 * GridMPI's own variables: the test does nothing under another MPI.
 */
#include "testutil.h"

static int cvar(const char *name)
{
    int i = -1;
    CHECK_MPI(MPI_T_cvar_get_index(name, &i));
    return i;
}

static int scope_of(int i)
{
    int scope = -1;
    MPI_T_cvar_get_info(i, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, &scope);
    return scope;
}

static MPI_T_cvar_handle handle(int i, int *count)
{
    MPI_T_cvar_handle h = MPI_T_CVAR_HANDLE_NULL;
    CHECK_MPI(MPI_T_cvar_handle_alloc(i, NULL, &h, count));
    return h;
}

static unsigned long long pvar_read1(MPI_T_pvar_session s, const char *name, int cls)
{
    int i = -1, count = 0;
    unsigned long long v = 0;
    MPI_T_pvar_handle h;
    CHECK_MPI(MPI_T_pvar_get_index(name, cls, &i));
    CHECK_MPI(MPI_T_pvar_handle_alloc(s, i, NULL, &h, &count));
    CHECK_INT_EQ(count, 1);
    CHECK_MPI(MPI_T_pvar_read(s, h, &v));
    MPI_T_pvar_handle_free(s, &h);
    return v;
}

int main(int argc, char **argv)
{
    int provided;
    MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
    if (!TEST_IMPL_GRIDMPI) {
        MPI_Init(&argc, &argv);
        MPI_T_finalize();
        MPI_Finalize();
        return 0;
    }

    /* Before MPI starts: write the eager limit. */
    int eager = cvar("GRIDMPI_EAGER_LIMIT"), count = 0;
    CHECK_INT_EQ(scope_of(eager), MPI_T_SCOPE_LOCAL);
    MPI_T_cvar_handle h = handle(eager, &count);
    char text[1024] = "4k", back[1024] = "";
    CHECK(count >= (int)sizeof "4k", "count %d", count);
    CHECK_MPI(MPI_T_cvar_write(h, text));
    CHECK_MPI(MPI_T_cvar_read(h, back));
    CHECK_STR_EQ(back, "4k");
    strcpy(text, "four kilobytes");
    CHECK_INT_EQ(MPI_T_cvar_write(h, text), MPI_T_ERR_INVALID);

    int size;
    int rank = test_init(&argc, &argv, &size);
    memset(back, 0, sizeof back);
    CHECK_MPI(MPI_T_cvar_read(h, back));
    CHECK_STR_EQ(back, "4k");
    CHECK_INT_EQ(scope_of(eager), MPI_T_SCOPE_READONLY);
    strcpy(text, "8k");
    CHECK_INT_EQ(MPI_T_cvar_write(h, text), MPI_T_ERR_CVAR_SET_NEVER);
    MPI_T_cvar_handle_free(&h);

    /* It took effect: 10000 bytes wait at the sender. */
    MPI_Comm comm;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    MPI_T_pvar_session ps;
    CHECK_MPI(MPI_T_pvar_session_create(&ps));
    static char msg[10000];
    if (rank == 0) {
        fill_pattern(msg, sizeof msg, 5);
        CHECK_MPI(MPI_Send(msg, sizeof msg, MPI_BYTE, 1, 1, comm));
    } else if (rank == 1) {
        int flag = 0;
        MPI_Status st;
        for (long spin = 0; !flag && spin < 100000000; spin++)
            MPI_Iprobe(0, 1, comm, &flag, &st);
        CHECK(flag, "the message never showed up");
        unsigned long long waiting = pvar_read1(ps, "gridmpi_unexpected_messages", MPI_T_PVAR_CLASS_LEVEL);
        unsigned long long bytes = pvar_read1(ps, "gridmpi_unexpected_bytes", MPI_T_PVAR_CLASS_SIZE);
        CHECK(waiting >= 1, "%llu unexpected messages", waiting);
        CHECK(bytes < sizeof msg, "%llu bytes of a 10000-byte message are queued: the 4k eager limit was not applied", bytes);
        CHECK_MPI(MPI_Recv(msg, sizeof msg, MPI_BYTE, 0, 1, comm, MPI_STATUS_IGNORE));
        check_pattern(msg, sizeof msg, 5, "rendezvous message");
    }

    /* While MPI runs: the allreduce algorithm, by its enumeration. */
    int coll = cvar("GRIDMPI_COLL_ALLREDUCE");
    CHECK_INT_EQ(scope_of(coll), MPI_T_SCOPE_ALL_EQ);
    MPI_T_enum et;
    MPI_Datatype dt;
    MPI_T_cvar_get_info(coll, NULL, NULL, NULL, &dt, &et, NULL, NULL, NULL, NULL);
    CHECK(dt == MPI_INT && et != MPI_T_ENUM_NULL, "GRIDMPI_COLL_ALLREDUCE is not an enumerated MPI_INT");
    int items = 0, ring = -1;
    MPI_T_enum_get_info(et, &items, NULL, NULL);
    for (int k = 0; k < items; k++) {
        char name[64];
        int len = sizeof name, v;
        MPI_T_enum_get_item(et, k, &v, name, &len);
        if (strcmp(name, "ring") == 0)
            ring = v;
    }
    CHECK(ring >= 0, "no item \"ring\"");
    h = handle(coll, &count);
    CHECK_MPI(MPI_T_cvar_write(h, &ring));
    int got = -1;
    CHECK_MPI(MPI_T_cvar_read(h, &got));
    CHECK_INT_EQ(got, ring);
    int bad = items;
    CHECK_INT_EQ(MPI_T_cvar_write(h, &bad), MPI_T_ERR_INVALID);
    MPI_T_cvar_handle_free(&h);
    double in[1000], out[1000];
    for (int i = 0; i < 1000; i++)
        in[i] = rank + i;
    CHECK_MPI(MPI_Allreduce(in, out, 1000, MPI_DOUBLE, MPI_SUM, comm));
    for (int i = 0; i < 1000; i++) {
        double want = size * (double)i + size * (size - 1) / 2.0;
        if (out[i] != want) {
            CHECK(0, "allreduce[%d] = %g, expected %g", i, out[i], want);
            break;
        }
    }

    /* The yield time, in microseconds. */
    int yield = cvar("GRIDMPI_YIELD_US");
    CHECK_INT_EQ(scope_of(yield), MPI_T_SCOPE_LOCAL);
    h = handle(yield, &count);
    unsigned long long us = 250, usback = 0;
    CHECK_MPI(MPI_T_cvar_write(h, &us));
    CHECK_MPI(MPI_T_cvar_read(h, &usback));
    CHECK_INT_EQ(usback, 250);
    MPI_T_cvar_handle_free(&h);

    /* The launcher's. */
    int hostfile = cvar("GRIDMPI_HOSTFILE");
    CHECK_INT_EQ(scope_of(hostfile), MPI_T_SCOPE_CONSTANT);
    h = handle(hostfile, &count);
    strcpy(text, "/tmp/hosts");
    CHECK_INT_EQ(MPI_T_cvar_write(h, text), MPI_T_ERR_CVAR_SET_NEVER);
    MPI_T_cvar_handle_free(&h);

    MPI_T_pvar_session_free(&ps);
    MPI_Comm_free(&comm);
    MPI_T_finalize();
    MPI_Finalize();
    return test_finish();
}
