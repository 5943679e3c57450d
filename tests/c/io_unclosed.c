/* MPI-IO: a file the program never closes. Shared-pointer writes, then
 * MPI_Finalize with the file open: GridMPI removes the shared pointer's
 * sidecar (and, with MPI_MODE_DELETE_ON_CLOSE, the file) once every
 * process is past Finalize's barrier, so nothing is left in the directory
 * when rank 0's MPI_Finalize returns. */
/* gridmpi-test: ranks=1,2,4 timeout=60 */
#include <mpi.h>
#include "testutil.h"
#include "ioutil.h"

int main(int argc, char **argv)
{
    int size, rank = test_init(&argc, &argv, &size);
    io_setup();
    MPI_File fh;
    MPI_Status st;
    CHECK_MPI(MPI_File_open(MPI_COMM_WORLD, io_path("unclosed"), MPI_MODE_CREATE | MPI_MODE_RDWR | MPI_MODE_DELETE_ON_CLOSE, MPI_INFO_NULL, &fh));
    int v = rank;
    CHECK_MPI(MPI_File_write_shared(fh, &v, 1, MPI_INT, &st));
    CHECK(io_exists(io_path("unclosed")), "the file is not there while open");
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();
    if (rank == 0) {
        if (TEST_IMPL_GRIDMPI)
            CHECK_INT_EQ(io_count_entries(), 0);
        io_remove_dir(); /* MPI is gone: no barrier */
    }
    return test_finish();
}
