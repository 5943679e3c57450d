/* gridmpi-test: ranks=1,2 timeout=30 */
/*
 * MPI_INFO_ENV is an info object like any other: it may be given as the
 * hints of a communicator, a window and a file (MPI_X_set_info), and as
 * MPI_Comm_dup_with_info's. Each call must return (the library reads the
 * environment's entries from its own state), and the object keeps working.
 */
#include "testutil.h"
#include <stdio.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    int size;
    int rank = test_init(&argc, &argv, &size);
    MPI_Info used;
    int n = -1;

    CHECK_MPI(MPI_Comm_set_info(MPI_COMM_WORLD, MPI_INFO_ENV));
    CHECK_MPI(MPI_Comm_get_info(MPI_COMM_WORLD, &used));
    CHECK_MPI(MPI_Info_get_nkeys(used, &n));
    CHECK(n >= 0, "communicator hints: %d keys", n);
    CHECK_MPI(MPI_Info_free(&used));

    MPI_Comm dup;
    CHECK_MPI(MPI_Comm_dup_with_info(MPI_COMM_WORLD, MPI_INFO_ENV, &dup));
    CHECK_MPI(MPI_Barrier(dup));
    CHECK_MPI(MPI_Comm_free(&dup));

    int *base;
    MPI_Win win;
    CHECK_MPI(MPI_Win_allocate(sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win));
    CHECK_MPI(MPI_Win_set_info(win, MPI_INFO_ENV));
    CHECK_MPI(MPI_Win_get_info(win, &used));
    CHECK_MPI(MPI_Info_free(&used));
    CHECK_MPI(MPI_Win_fence(0, win));
    CHECK_MPI(MPI_Win_free(&win));

    char path[64];
    snprintf(path, sizeof path, "/tmp/gridmpi-info-env-%d.dat", (int)getpid());
    if (size > 1) {
        /* One name for all: rank 0's. */
        int pid = (int)getpid();
        CHECK_MPI(MPI_Bcast(&pid, 1, MPI_INT, 0, MPI_COMM_WORLD));
        snprintf(path, sizeof path, "/tmp/gridmpi-info-env-%d.dat", pid);
    }
    MPI_File fh;
    CHECK_MPI(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR | MPI_MODE_DELETE_ON_CLOSE, MPI_INFO_NULL, &fh));
    CHECK_MPI(MPI_File_set_info(fh, MPI_INFO_ENV));
    CHECK_MPI(MPI_File_get_info(fh, &used));
    CHECK_MPI(MPI_Info_free(&used));
    CHECK_MPI(MPI_File_close(&fh));

    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    (void)rank;
    MPI_Finalize();
    return test_finish();
}
