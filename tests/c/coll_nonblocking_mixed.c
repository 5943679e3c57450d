/* gridmpi-test: ranks=2,4 */
/* Beyond the standard (MPI 4.1 section 6.12 asks every rank to start
 * blocking and nonblocking collectives in one order): one rank starts an
 * MPI_Iallreduce before an MPI_Barrier, the others after it. mpi4py's
 * MPI_Comm_iagree fallback does exactly this, so GridMPI keeps blocking and
 * nonblocking collectives in separate sequences (tags and the host area). */
#include "testutil.h"

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm comm;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    for (int root = 0; root < size; root++) {
        int in = rank == root ? 0xB : 0xD, out = -1;
        MPI_Request req;
        CHECK_MPI(MPI_Barrier(comm));
        if (rank == root) {
            CHECK_MPI(MPI_Iallreduce(&in, &out, 1, MPI_INT, MPI_BAND, comm, &req));
            CHECK_MPI(MPI_Barrier(comm));
        } else {
            CHECK_MPI(MPI_Barrier(comm));
            CHECK_MPI(MPI_Iallreduce(&in, &out, 1, MPI_INT, MPI_BAND, comm, &req));
        }
        CHECK_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
        CHECK(out == 0x9, "root %d: got %#x, expected 0x9", root, out);
    }
    MPI_Comm_free(&comm);
    MPI_Finalize();
    return test_finish();
}
