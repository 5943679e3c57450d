/* gridmpi-test: ranks=2 */
/* A NULL buffer with count > 0 is an error (MPI_ERR_BUFFER) under
 * MPI_ERRORS_RETURN, not a crash; NULL with count 0 and MPI_BOTTOM with a
 * datatype of absolute addresses are fine. */
#include "testutil.h"

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm comm;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    int peer = 1 - rank;

    /* NULL with data: refused on both sides, nothing sent. */
    if (rank == 0)
        CHECK_ERR_CLASS(MPI_Send(NULL, 4, MPI_INT, peer, 1, comm), MPI_ERR_BUFFER);
    else
        CHECK_ERR_CLASS(MPI_Recv(NULL, 4, MPI_INT, peer, 1, comm, MPI_STATUS_IGNORE), MPI_ERR_BUFFER);
    MPI_Request req = MPI_REQUEST_NULL;
    CHECK_ERR_CLASS(MPI_Isend(NULL, 1, MPI_DOUBLE, peer, 2, comm, &req), MPI_ERR_BUFFER);
    CHECK_ERR_CLASS(MPI_Irecv(NULL, 1, MPI_DOUBLE, peer, 2, comm, &req), MPI_ERR_BUFFER);
    CHECK_ERR_CLASS(MPI_Bcast(NULL, 3, MPI_INT, 0, comm), MPI_ERR_BUFFER);

    /* NULL with nothing in it: fine. */
    if (rank == 0)
        CHECK_MPI(MPI_Send(NULL, 0, MPI_INT, peer, 3, comm));
    else
        CHECK_MPI(MPI_Recv(NULL, 0, MPI_INT, peer, 3, comm, MPI_STATUS_IGNORE));

    /* MPI_BOTTOM with absolute addresses: fine. */
    int value = rank == 0 ? 42 : -1;
    MPI_Aint addr;
    MPI_Get_address(&value, &addr);
    int one = 1;
    MPI_Datatype abs_int;
    MPI_Datatype types[1] = {MPI_INT};
    CHECK_MPI(MPI_Type_create_struct(1, &one, &addr, types, &abs_int));
    CHECK_MPI(MPI_Type_commit(&abs_int));
    if (rank == 0)
        CHECK_MPI(MPI_Send(MPI_BOTTOM, 1, abs_int, peer, 4, comm));
    else {
        CHECK_MPI(MPI_Recv(MPI_BOTTOM, 1, abs_int, peer, 4, comm, MPI_STATUS_IGNORE));
        CHECK_INT_EQ(value, 42);
    }
    MPI_Type_free(&abs_int);

    /* The communicator still works after the refused calls. */
    int token = rank == 0 ? 7 : 0;
    if (rank == 0)
        CHECK_MPI(MPI_Send(&token, 1, MPI_INT, peer, 5, comm));
    else {
        CHECK_MPI(MPI_Recv(&token, 1, MPI_INT, peer, 5, comm, MPI_STATUS_IGNORE));
        CHECK_INT_EQ(token, 7);
    }
    MPI_Comm_free(&comm);
    MPI_Finalize();
    return test_finish();
}
