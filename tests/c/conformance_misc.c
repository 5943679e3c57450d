/* gridmpi-test: ranks=1,2,4 timeout=60 */
/*
 * Semantics an outside conformance suite found broken (issue 12), one
 * check each:
 *   - info objects are usable before MPI_Init (MPI 4.0);
 *   - MPI_Status_set_elements_x / MPI_Get_elements_x keep the top bit of
 *     large counts;
 *   - MPI_Reduce_local with MPI_IN_PLACE is an error, not a crash;
 *   - a collective whose send and receive buffers are the same memory (not
 *     MPI_IN_PLACE) fails with MPI_ERR_BUFFER, at every rank (also when the
 *     send data is the rank's block of the receive buffer), and so does
 *     MPI_Reduce_local with inbuf == inoutbuf;
 *   - MPI_Type_get_name(MPI_C_COMPLEX) says MPI_C_COMPLEX;
 *   - a persistent send keeps its datatype: MPI_Start works after the
 *     handle was freed;
 *   - MPI_Mrecv truncation returns MPI_ERR_TRUNCATE through the handler of
 *     the message's communicator (MPI_ERRORS_RETURN set on it only);
 *   - MPI_Comm_idup on an intercommunicator returns before the other group
 *     calls it (the other group first waits for a message sent after it);
 *   - attributes on MPI_COMM_SELF are deleted last-set first at
 *     MPI_Finalize.
 */
#include "testutil.h"

static int deleted[8], ndeleted = 0;

static int record_delete(MPI_Comm comm, int keyval, void *val, void *extra)
{
    (void)comm, (void)keyval, (void)extra;
    if (ndeleted < 8)
        deleted[ndeleted++] = (int)(intptr_t)val;
    return MPI_SUCCESS;
}

int main(int argc, char **argv)
{
    /* Info before MPI_Init. */
    MPI_Info early = MPI_INFO_NULL;
    int rc = MPI_Info_create(&early);
    int early_ok = rc == MPI_SUCCESS && MPI_Info_set(early, "gridmpi_test", "yes") == MPI_SUCCESS;

    int size;
    int rank = test_init(&argc, &argv, &size);
    CHECK(early_ok, "MPI_Info_create/MPI_Info_set before MPI_Init failed (rc %d)", rc);
    if (early_ok) {
        char v[16];
        int flag = 0;
        CHECK_MPI(MPI_Info_get(early, "gridmpi_test", 15, v, &flag));
        CHECK(flag && strcmp(v, "yes") == 0, "an info made before MPI_Init lost its key");
        CHECK_MPI(MPI_Info_free(&early));
    }

    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);

    /* Large element counts. */
    {
        MPI_Status st;
        MPI_Count big = ((MPI_Count)1 << 62) + 5, got = 0;
        CHECK_MPI(MPI_Status_set_elements_x(&st, MPI_BYTE, big));
        CHECK_MPI(MPI_Get_elements_x(&st, MPI_BYTE, &got));
        CHECK(got == big, "MPI_Get_elements_x: %lld, set %lld", (long long)got, (long long)big);
        int cancelled = -1;
        CHECK_MPI(MPI_Status_set_cancelled(&st, 1));
        CHECK_MPI(MPI_Get_elements_x(&st, MPI_BYTE, &got));
        CHECK_MPI(MPI_Test_cancelled(&st, &cancelled));
        CHECK(got == big && cancelled == 1, "count %lld / cancelled %d after set_cancelled", (long long)got, cancelled);
    }

    /* MPI_Reduce_local with MPI_IN_PLACE: an error (it needs both buffers). */
    {
        MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
        int b = 2;
        rc = MPI_Reduce_local(MPI_IN_PLACE, &b, 1, MPI_INT, MPI_SUM);
        CHECK(rc != MPI_SUCCESS, "MPI_Reduce_local(MPI_IN_PLACE, ...) succeeded");
        MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_ARE_FATAL);
    }

    /* Aliased send and receive buffers. */
    {
        int x[4] = {1, 2, 3, 4};
        CHECK_ERR_CLASS(MPI_Allreduce(x, x, 4, MPI_INT, MPI_SUM, MPI_COMM_WORLD), MPI_ERR_BUFFER);
        int *blocks = calloc((size_t)size, sizeof(int));
        CHECK_ERR_CLASS(MPI_Alltoall(blocks, 1, MPI_INT, blocks, 1, MPI_INT, MPI_COMM_WORLD), MPI_ERR_BUFFER);
        int *ones = malloc((size_t)size * sizeof(int)), *displs = malloc((size_t)size * sizeof(int));
        MPI_Datatype *types = malloc((size_t)size * sizeof(MPI_Datatype));
        for (int i = 0; i < size; i++)
            ones[i] = 1, displs[i] = i, types[i] = MPI_INT;
        CHECK_ERR_CLASS(MPI_Alltoallv(blocks, ones, displs, MPI_INT, blocks, ones, displs, MPI_INT, MPI_COMM_WORLD), MPI_ERR_BUFFER);
        for (int i = 0; i < size; i++)
            displs[i] = i * (int)sizeof(int);
        CHECK_ERR_CLASS(MPI_Alltoallw(blocks, ones, displs, types, blocks, ones, displs, types, MPI_COMM_WORLD), MPI_ERR_BUFFER);
        /* Open MPI 5.0.11 reduces y into itself. */
        if (!TU_PEER_OPENMPI) {
            int y[2] = {1, 2};
            MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
            CHECK_ERR_CLASS(MPI_Reduce_local(y, y, 2, MPI_INT, MPI_SUM), MPI_ERR_BUFFER);
            MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_ARE_FATAL);
            CHECK(y[0] == 1 && y[1] == 2, "a failed MPI_Reduce_local changed its buffer: %d %d", y[0], y[1]);
        }
        /* The send data inside the receive buffer, not at its start on
         * ranks above 0: every rank must see the error (or the others
         * wait for it in the collective). */
        if (!TU_PEER_OPENMPI) {
            CHECK_ERR_CLASS(MPI_Allgather(&blocks[rank], 1, MPI_INT, blocks, 1, MPI_INT, MPI_COMM_WORLD), MPI_ERR_BUFFER);
            for (int i = 0; i < size; i++)
                displs[i] = i;
            CHECK_ERR_CLASS(MPI_Allgatherv(&blocks[rank], 1, MPI_INT, blocks, ones, displs, MPI_INT, MPI_COMM_WORLD), MPI_ERR_BUFFER);
        }
        free(ones), free(displs), free(types);
        free(blocks);
        /* In place is the way to say it. */
        CHECK_MPI(MPI_Allreduce(MPI_IN_PLACE, x, 4, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
        CHECK(x[3] == 4 * size, "in-place allreduce: %d, expected %d", x[3], 4 * size);
    }

    /* The name of MPI_C_COMPLEX (one handle with MPI_C_FLOAT_COMPLEX). */
    {
        char name[MPI_MAX_OBJECT_NAME];
        int len;
        CHECK_MPI(MPI_Type_get_name(MPI_C_COMPLEX, name, &len));
        CHECK_STR_EQ(name, "MPI_C_COMPLEX");
    }

    /* A persistent send outlives its datatype handle. */
    {
        MPI_Datatype pair;
        MPI_Request r;
        int out[2] = {5 + rank, 6 + rank}, in[2] = {0, 0};
        CHECK_MPI(MPI_Type_contiguous(2, MPI_INT, &pair));
        CHECK_MPI(MPI_Type_commit(&pair));
        CHECK_MPI(MPI_Send_init(out, 1, pair, rank, 7, MPI_COMM_WORLD, &r));
        CHECK_MPI(MPI_Type_free(&pair));
        for (int round = 0; round < 2; round++) {
            CHECK_MPI(MPI_Start(&r));
            CHECK_MPI(MPI_Recv(in, 2, MPI_INT, rank, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            CHECK_MPI(MPI_Wait(&r, MPI_STATUS_IGNORE));
            CHECK(in[0] == 5 + rank && in[1] == 6 + rank, "round %d: received %d %d", round, in[0], in[1]);
        }
        CHECK_MPI(MPI_Request_free(&r));
    }

    /* Mrecv truncation: an error code from the message's communicator
     * (MPICH 5.0.2 raises it on another communicator and aborts). */
    if (!TU_PEER_MPICH) {
        int two[2] = {1, 2}, one = 0;
        MPI_Message m;
        MPI_Status st;
        CHECK_MPI(MPI_Send(two, 2, MPI_INT, rank, 8, MPI_COMM_WORLD));
        CHECK_MPI(MPI_Mprobe(rank, 8, MPI_COMM_WORLD, &m, &st));
        CHECK_ERR_CLASS(MPI_Mrecv(&one, 1, MPI_INT, &m, &st), MPI_ERR_TRUNCATE);
    }

    /* Comm_idup on an intercommunicator does not wait for the other group. */
    if (size >= 2) {
        int low = rank < size / 2;
        MPI_Comm half, inter, dup;
        CHECK_MPI(MPI_Comm_split(MPI_COMM_WORLD, low, rank, &half));
        CHECK_MPI(MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, low ? size / 2 : 0, 99, &inter));
        MPI_Request r;
        int token = 0;
        if (low) {
            CHECK_MPI(MPI_Comm_idup(inter, &dup, &r));
            if (rank == 0)
                CHECK_MPI(MPI_Send(&token, 1, MPI_INT, size / 2, 42, MPI_COMM_WORLD));
        } else {
            if (rank == size / 2)
                CHECK_MPI(MPI_Recv(&token, 1, MPI_INT, 0, 42, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            CHECK_MPI(MPI_Barrier(half));
            CHECK_MPI(MPI_Comm_idup(inter, &dup, &r));
        }
        CHECK_MPI(MPI_Wait(&r, MPI_STATUS_IGNORE));
        /* The new intercommunicator works both ways. */
        int rsize = 0, sum = 0, mine = rank;
        CHECK_MPI(MPI_Comm_remote_size(dup, &rsize));
        CHECK_MPI(MPI_Allreduce(&mine, &sum, 1, MPI_INT, MPI_SUM, dup));
        int lo_n = size / 2, expect = low ? (size - 1 + lo_n) * (size - lo_n) / 2 : (lo_n - 1) * lo_n / 2;
        CHECK(rsize == (low ? size - lo_n : lo_n), "remote size %d", rsize);
        CHECK(sum == expect, "intercommunicator allreduce: %d, expected %d", sum, expect);
        CHECK_MPI(MPI_Comm_free(&dup));
        CHECK_MPI(MPI_Comm_free(&inter));
        CHECK_MPI(MPI_Comm_free(&half));
    }

    /* Attributes on MPI_COMM_SELF: deleted last-set first at MPI_Finalize. */
    int keys[3];
    for (int i = 0; i < 3; i++)
        CHECK_MPI(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, record_delete, &keys[i], NULL));
    /* Set in the order 2, 0, 1 (not keyval order), values 1, 2, 3. */
    CHECK_MPI(MPI_Comm_set_attr(MPI_COMM_SELF, keys[2], (void *)(intptr_t)1));
    CHECK_MPI(MPI_Comm_set_attr(MPI_COMM_SELF, keys[0], (void *)(intptr_t)2));
    CHECK_MPI(MPI_Comm_set_attr(MPI_COMM_SELF, keys[1], (void *)(intptr_t)3));
    MPI_Finalize();
    CHECK(ndeleted == 3 && deleted[0] == 3 && deleted[1] == 2 && deleted[2] == 1,
          "MPI_Finalize deleted %d attributes in the order %d %d %d (expected 3 2 1)", ndeleted, deleted[0], deleted[1], deleted[2]);
    return test_finish();
}
