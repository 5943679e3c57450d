/* gridmpi-test: ranks=1,2,4 timeout=30 env=GRIDMPI_TEST_PROBE=forwarded args='alpha "beta gamma"' */
/*
 * Environment queries around MPI_Init/MPI_Finalize: Initialized/Finalized
 * before, during and after; Query_thread and Is_thread_main after MPI_Init;
 * Get_version (4.1 for GridMPI) and Get_library_version before Init and after
 * Finalize (both allowed since MPI 4.0); Get_processor_name; Wtime/Wtick;
 * Alloc_mem/Free_mem; Pcontrol. Also what the launcher must pass on: the
 * program arguments (intact after MPI_Init) and the environment.
 */
#include "testutil.h"
#include <time.h>

static void check_versions(const char *when)
{
    int version = -1, subversion = -1;
    CHECK_MPI(MPI_Get_version(&version, &subversion));
    CHECK(version >= 1 && subversion >= 0, "%s: MPI_Get_version gave %d.%d", when, version, subversion);
    CHECK(version == MPI_VERSION && subversion == MPI_SUBVERSION,
          "%s: MPI_Get_version %d.%d differs from mpi.h's MPI_VERSION.MPI_SUBVERSION %d.%d", when,
          version, subversion, MPI_VERSION, MPI_SUBVERSION);
#if TEST_IMPL_GRIDMPI
    CHECK(version == 4 && subversion == 1, "%s: GridMPI must report MPI 4.1, got %d.%d", when,
          version, subversion);
#endif
    char lib[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = -1;
    memset(lib, 'X', sizeof lib);
    CHECK_MPI(MPI_Get_library_version(lib, &len));
    CHECK(len > 0 && len < MPI_MAX_LIBRARY_VERSION_STRING,
          "%s: library version length %d out of range", when, len);
    /* Open MPI 5.0.11 counts the terminating NUL in resultlen. */
    if (len > 0 && len < MPI_MAX_LIBRARY_VERSION_STRING && !TU_PEER_OPENMPI)
        CHECK(lib[len] == '\0' && (int)strlen(lib) == len,
              "%s: library version string not terminated at resultlen %d", when, len);
#if TEST_IMPL_GRIDMPI
    CHECK(strstr(lib, "GridMPI") != NULL, "%s: library version \"%s\" does not name GridMPI", when, lib);
#endif
}

int main(int argc, char **argv)
{
    int flag = -1;
    CHECK_MPI(MPI_Initialized(&flag));
    CHECK(flag == 0, "MPI_Initialized before MPI_Init gave %d", flag);
    flag = -1;
    CHECK_MPI(MPI_Finalized(&flag));
    CHECK(flag == 0, "MPI_Finalized before MPI_Init gave %d", flag);
    check_versions("before MPI_Init");

    int size;
    int rank = test_init(&argc, &argv, &size);

    CHECK_MPI(MPI_Initialized(&flag));
    CHECK(flag == 1, "MPI_Initialized after MPI_Init gave %d", flag);
    CHECK_MPI(MPI_Finalized(&flag));
    CHECK(flag == 0, "MPI_Finalized after MPI_Init gave %d", flag);
    CHECK(rank >= 0 && rank < size, "rank %d of size %d", rank, size);
    CHECK(argc == 3 && strcmp(argv[1], "alpha") == 0 && strcmp(argv[2], "beta gamma") == 0,
          "program arguments after MPI_Init: argc %d, argv[1] \"%s\"", argc, argc > 1 ? argv[1] : "");
    const char *probe = getenv("GRIDMPI_TEST_PROBE");
    CHECK(probe && strcmp(probe, "forwarded") == 0, "environment variable not forwarded to the rank: %s",
          probe ? probe : "(unset)");

    int provided = -1;
    CHECK_MPI(MPI_Query_thread(&provided));
    CHECK(provided == MPI_THREAD_SINGLE || provided == MPI_THREAD_FUNNELED ||
              provided == MPI_THREAD_SERIALIZED || provided == MPI_THREAD_MULTIPLE,
          "MPI_Query_thread gave %d, not a thread level", provided);
    volatile int monotonic = MPI_THREAD_SINGLE < MPI_THREAD_FUNNELED && MPI_THREAD_FUNNELED < MPI_THREAD_SERIALIZED &&
                             MPI_THREAD_SERIALIZED < MPI_THREAD_MULTIPLE;
    CHECK(monotonic, "thread level constants are not monotonic");
    flag = -1;
    CHECK_MPI(MPI_Is_thread_main(&flag));
    CHECK(flag == 1, "MPI_Is_thread_main in the thread that called MPI_Init gave %d", flag);

    check_versions("after MPI_Init");

    char name[MPI_MAX_PROCESSOR_NAME];
    int len = -1;
    memset(name, 'X', sizeof name);
    CHECK_MPI(MPI_Get_processor_name(name, &len));
    CHECK(len > 0 && len < MPI_MAX_PROCESSOR_NAME, "processor name length %d", len);
    if (len > 0 && len < MPI_MAX_PROCESSOR_NAME)
        CHECK(name[len] == '\0' && (int)strlen(name) == len, "processor name not terminated at %d", len);

    /* Wtime never goes backwards; Wtick is a positive resolution. */
    double tick = MPI_Wtick();
    CHECK(tick > 0.0 && tick < 1.0, "MPI_Wtick = %g", tick);
    double prev = MPI_Wtime(), first = prev;
    for (int i = 0; i < 100000; i++) {
        double t = MPI_Wtime();
        if (!CHECK(t >= prev, "MPI_Wtime went backwards: %.9f after %.9f", t, prev))
            break;
        prev = t;
    }
    struct timespec ts = {0, 20 * 1000 * 1000};
    nanosleep(&ts, NULL);
    double after = MPI_Wtime();
    /* Only a lower bound: sleeping 20 ms must advance the clock by at least 10 ms. */
    CHECK(after - first >= 0.010, "MPI_Wtime advanced %.6f s across a 20 ms sleep", after - first);

    /* Alloc_mem: usable memory, also as a communication buffer. */
    const MPI_Aint nbytes = 1 << 20;
    unsigned char *mem = NULL;
    if (CHECK_MPI(MPI_Alloc_mem(nbytes, MPI_INFO_NULL, &mem)) && CHECK(mem != NULL, "Alloc_mem gave NULL")) {
        fill_pattern(mem, nbytes, 77);
        unsigned char *copy = NULL;
        CHECK_MPI(MPI_Alloc_mem(nbytes, MPI_INFO_NULL, &copy));
        CHECK_MPI(MPI_Sendrecv(mem, (int)nbytes, MPI_BYTE, 0, 3, copy, (int)nbytes, MPI_BYTE, 0, 3,
                               MPI_COMM_SELF, MPI_STATUS_IGNORE));
        check_pattern(copy, nbytes, 77, "self Sendrecv between Alloc_mem buffers");
        CHECK_MPI(MPI_Free_mem(copy));
        CHECK_MPI(MPI_Free_mem(mem));
    }
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "gridmpi_unknown_hint", "ignored");
    void *small = NULL;
    if (CHECK_MPI(MPI_Alloc_mem(64, info, &small))) {
        memset(small, 1, 64);
        CHECK_MPI(MPI_Free_mem(small));
    }
    MPI_Info_free(&info);

    CHECK_MPI(MPI_Pcontrol(1));
    CHECK_MPI(MPI_Pcontrol(0));

    CHECK_MPI(MPI_Finalize());

    flag = -1;
    CHECK_MPI(MPI_Finalized(&flag));
    CHECK(flag == 1, "MPI_Finalized after MPI_Finalize gave %d", flag);
    flag = -1;
    CHECK_MPI(MPI_Initialized(&flag));
    CHECK(flag == 1, "MPI_Initialized after MPI_Finalize gave %d", flag);
    check_versions("after MPI_Finalize");
    return test_finish();
}
