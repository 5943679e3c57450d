/* gridmpi-test: ranks=1,2,3 timeout=60 */
/*
 * MPI_Finalize called from an atexit() handler, after main returned: the
 * C library runs such handlers after the main thread's thread-local
 * storage is gone. Collectives that used scratch buffers of bytes (an
 * in-place MPI_Alltoallw, a barrier) ran before it, and MPI_Finalize
 * itself synchronizes. Every rank must end with status 0.
 */
#include "testutil.h"
#include <unistd.h>

static void finalize_at_exit(void)
{
    int done = 0;
    MPI_Finalized(&done);
    if (!done && MPI_Finalize() != MPI_SUCCESS) {
        fprintf(stderr, "MPI_Finalize failed in the atexit handler\n");
        _exit(1);
    }
}

int main(int argc, char **argv)
{
    int rank, size;
    CHECK_MPI(MPI_Init(&argc, &argv));
    CHECK(atexit(finalize_at_exit) == 0, "atexit");
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int *buf = malloc(sizeof(int) * size), *counts = malloc(sizeof(int) * size), *displs = malloc(sizeof(int) * size);
    MPI_Datatype *types = malloc(sizeof(MPI_Datatype) * size);
    for (int i = 0; i < size; i++) {
        buf[i] = rank * 100 + i;
        counts[i] = 1;
        displs[i] = i * (int)sizeof(int);
        types[i] = MPI_INT;
    }
    CHECK_MPI(MPI_Alltoallw(MPI_IN_PLACE, NULL, NULL, NULL, buf, counts, displs, types, MPI_COMM_WORLD));
    for (int i = 0; i < size; i++)
        CHECK(buf[i] == i * 100 + rank, "in-place alltoallw: block %d holds %d", i, buf[i]);
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    free(buf);
    free(counts);
    free(displs);
    free(types);
    return test_finish();
}
