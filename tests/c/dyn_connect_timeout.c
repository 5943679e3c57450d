/* gridmpi-test: ranks=2 timeout=60 env=GRIDMPI_CONNECT_TIMEOUT=1s */
/*
 * MPI_Comm_connect to an open port that nobody accepts on times out with
 * MPI_ERR_PORT (MPI 4.1, 11.2.2: "the attempt will eventually time out"):
 * with the info key "timeout" (seconds) and with the default
 * (GRIDMPI_CONNECT_TIMEOUT, 1 s here). It waited for ever (MPICH's
 * errors/spawn/connect_timeout_no_accept). Then the owner accepts: the
 * calls that gave up are dropped and a new connect succeeds.
 */
#include "testutil.h"
#include <time.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    char port[MPI_MAX_PORT_NAME] = {0};
    if (rank == 0)
        CHECK_MPI(MPI_Open_port(MPI_INFO_NULL, port));
    MPI_Bcast(port, MPI_MAX_PORT_NAME, MPI_CHAR, 0, MPI_COMM_WORLD);
    MPI_Comm inter = MPI_COMM_NULL;
    if (rank == 1) {
        MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
        MPI_Info info;
        MPI_Info_create(&info);
        MPI_Info_set(info, "timeout", "0.5");
        double t0 = now();
        int rc = MPI_Comm_connect(port, info, 0, MPI_COMM_SELF, &inter), cls = -1;
        MPI_Error_class(rc, &cls);
        CHECK(cls == MPI_ERR_PORT && now() - t0 < 10, "connect with timeout 0.5: class %d after %.1f s", cls, now() - t0);
        CHECK(inter == MPI_COMM_NULL, "a failed connect gave a communicator");
        t0 = now();
        rc = MPI_Comm_connect(port, MPI_INFO_NULL, 0, MPI_COMM_SELF, &inter);
        MPI_Error_class(rc, &cls);
        CHECK(cls == MPI_ERR_PORT && now() - t0 < 10, "connect with the default timeout: class %d after %.1f s", cls, now() - t0);
        MPI_Info_set(info, "timeout", "soon");
        rc = MPI_Comm_connect(port, info, 0, MPI_COMM_SELF, &inter);
        MPI_Error_class(rc, &cls);
        CHECK(cls == MPI_ERR_INFO_VALUE, "a timeout that is no number: class %d", cls);
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Info_set(info, "timeout", "30");
        CHECK_MPI(MPI_Comm_connect(port, info, 0, MPI_COMM_SELF, &inter));
        MPI_Info_free(&info);
    } else {
        MPI_Barrier(MPI_COMM_WORLD);
        CHECK_MPI(MPI_Comm_accept(port, MPI_INFO_NULL, 0, MPI_COMM_SELF, &inter));
    }
    int v = rank == 0 ? 42 : -1;
    if (inter != MPI_COMM_NULL) {
        MPI_Bcast(&v, 1, MPI_INT, rank == 0 ? MPI_ROOT : 0, inter);
        CHECK(v == 42, "bcast across the accepted connection gave %d", v);
        MPI_Comm_disconnect(&inter);
    }
    if (rank == 0)
        MPI_Close_port(port);
    MPI_Finalize();
    return test_finish();
}
