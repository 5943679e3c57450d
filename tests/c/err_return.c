/* gridmpi-test: ranks=2,3 min-ranks=2 timeout=30 */
/*
 * MPI_ERRORS_RETURN: erroneous calls return a code of the right error CLASS
 * (MPI_Error_class) and leave the library usable: invalid rank (dest = size,
 * negative), invalid tag (negative, > MPI_TAG_UB), invalid count (negative),
 * MPI_DATATYPE_NULL and an uncommitted datatype, MPI_COMM_NULL (raised on
 * MPI_COMM_SELF's handler since MPI 4.0: only that one is set to
 * ERRORS_RETURN here), truncation, invalid op (MPI_OP_NULL in
 * Reduce_local, and MPI_SUM on MPI_BYTE), invalid group (MPI_GROUP_NULL),
 * invalid rank in Group_incl, MPI_Start of MPI_REQUEST_NULL; Error_string
 * is non-empty for every predefined class, classes are distinct and within
 * 0..MPI_ERR_LASTCODE, and Error_class maps a class to itself. (Invalid
 * root is in coll_errors.c.)
 */
#include "testutil.h"

int main(int argc, char **argv)
{
    int size;
    int rank = test_init(&argc, &argv, &size);
    MPI_Comm comm;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    CHECK_MPI(MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN));
    int buf[4] = {1, 2, 3, 4}, rc;
    MPI_Request req;
    int *tag_ub, flag;
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &tag_ub, &flag);

    /* Invalid ranks. */
    rc = MPI_Send(buf, 1, MPI_INT, size, 0, comm);
    CHECK_ERR_CLASS(rc, MPI_ERR_RANK);
    rc = MPI_Send(buf, 1, MPI_INT, -5, 0, comm);
    CHECK_ERR_CLASS(rc, MPI_ERR_RANK);
    rc = MPI_Isend(buf, 1, MPI_INT, size + 3, 0, comm, &req);
    CHECK_ERR_CLASS(rc, MPI_ERR_RANK);
    rc = MPI_Recv(buf, 1, MPI_INT, size, 0, comm, MPI_STATUS_IGNORE);
    CHECK_ERR_CLASS(rc, MPI_ERR_RANK);
    rc = MPI_Irecv(buf, 1, MPI_INT, -7, 0, comm, &req);
    CHECK_ERR_CLASS(rc, MPI_ERR_RANK);
    rc = MPI_Probe(size, 0, comm, MPI_STATUS_IGNORE);
    CHECK_ERR_CLASS(rc, MPI_ERR_RANK);

    /* Invalid tags. */
    rc = MPI_Send(buf, 1, MPI_INT, (rank + 1) % size, -5, comm);
    CHECK_ERR_CLASS(rc, MPI_ERR_TAG);
    rc = MPI_Ssend(buf, 1, MPI_INT, (rank + 1) % size, MPI_ANY_TAG, comm);
    CHECK_ERR_CLASS(rc, MPI_ERR_TAG);
    rc = MPI_Irecv(buf, 1, MPI_INT, 0, -3, comm, &req);
    CHECK_ERR_CLASS(rc, MPI_ERR_TAG);
    if (*tag_ub < 2147483647) {
        rc = MPI_Send(buf, 1, MPI_INT, (rank + 1) % size, *tag_ub + 1, comm);
        CHECK_ERR_CLASS(rc, MPI_ERR_TAG);
    }

    /* Invalid count. */
    rc = MPI_Send(buf, -1, MPI_INT, (rank + 1) % size, 0, comm);
    CHECK_ERR_CLASS(rc, MPI_ERR_COUNT);
    rc = MPI_Irecv(buf, -4, MPI_INT, 0, 0, comm, &req);
    CHECK_ERR_CLASS(rc, MPI_ERR_COUNT);

    /* Invalid datatypes. */
    rc = MPI_Send(buf, 1, MPI_DATATYPE_NULL, (rank + 1) % size, 0, comm);
    CHECK_ERR_CLASS(rc, MPI_ERR_TYPE);
    MPI_Datatype unc;
    MPI_Type_contiguous(2, MPI_INT, &unc);
    rc = MPI_Send(buf, 1, unc, (rank + 1) % size, 0, comm);
    CHECK_ERR_CLASS(rc, MPI_ERR_TYPE);
    MPI_Type_free(&unc);

    /* Errors not tied to a communicator go to MPI_COMM_SELF's handler.
     * (Open MPI 5.0.11 raises them on MPI_COMM_WORLD.) */
    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN));
    if (TU_PEER_OPENMPI)
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    rc = MPI_Send(buf, 1, MPI_INT, 0, 0, MPI_COMM_NULL);
    CHECK_ERR_CLASS(rc, MPI_ERR_COMM);
    int s;
    rc = MPI_Comm_size(MPI_COMM_NULL, &s);
    CHECK_ERR_CLASS(rc, MPI_ERR_COMM);
    rc = MPI_Type_size(MPI_DATATYPE_NULL, &s);
    CHECK_ERR_CLASS(rc, MPI_ERR_TYPE);
    MPI_Datatype dnull = MPI_DATATYPE_NULL;
    rc = MPI_Type_commit(&dnull);
    CHECK_ERR_CLASS(rc, MPI_ERR_TYPE);
    rc = MPI_Type_contiguous(-1, MPI_INT, &unc);
    CHECK_ERR_CLASS(rc, MPI_ERR_COUNT);
    rc = MPI_Group_size(MPI_GROUP_NULL, &s);
    CHECK_ERR_CLASS(rc, MPI_ERR_GROUP);
    MPI_Group wg, ng;
    MPI_Comm_group(MPI_COMM_WORLD, &wg);
    int bad_rank = size;
    rc = MPI_Group_incl(wg, 1, &bad_rank, &ng);
    CHECK_ERR_CLASS(rc, MPI_ERR_RANK);
    int a[3] = {1, 2, 3}, b[3] = {1, 1, 1};
    rc = MPI_Reduce_local(a, b, 3, MPI_INT, MPI_OP_NULL);
    CHECK_ERR_CLASS(rc, MPI_ERR_OP);
    CHECK(b[0] == 1 && b[2] == 1, "failed Reduce_local modified inoutbuf");
    /* A predefined op on a type it is not defined for (Open MPI 5.0.11
     * accepts MPI_SUM on MPI_BYTE). */
    if (!TU_PEER_OPENMPI) {
        rc = MPI_Reduce_local(a, b, 3, MPI_BYTE, MPI_SUM);
        CHECK_ERR_CLASS(rc, MPI_ERR_OP);
    }
    MPI_Request rnull = MPI_REQUEST_NULL;
    rc = MPI_Start(&rnull);
    CHECK_ERR_CLASS(rc, MPI_ERR_REQUEST);

    /* Invalid group in a communicator call on comm (raised on comm). */
    MPI_Comm nc;
    rc = MPI_Comm_create(comm, MPI_GROUP_NULL, &nc);
    CHECK_ERR_CLASS(rc, MPI_ERR_GROUP);
    MPI_Group_free(&wg);

    /* Truncation. */
    {
        int big[8] = {0}, small[2];
        int right = (rank + 1) % size, left = (rank + size - 1) % size;
        CHECK_MPI(MPI_Isend(big, 8, MPI_INT, right, 40, comm, &req));
        rc = MPI_Recv(small, 2, MPI_INT, left, 40, comm, MPI_STATUS_IGNORE);
        CHECK_ERR_CLASS(rc, MPI_ERR_TRUNCATE);
        CHECK_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
    }

    /* The library still works. */
    {
        int out = rank, in = -1;
        int right = (rank + 1) % size, left = (rank + size - 1) % size;
        CHECK_MPI(MPI_Sendrecv(&out, 1, MPI_INT, right, 41, &in, 1, MPI_INT, left, 41, comm, MPI_STATUS_IGNORE));
        CHECK_INT_EQ(in, left);
    }

    /* Error classes and strings. */
    const int classes[] = {MPI_SUCCESS, MPI_ERR_BUFFER, MPI_ERR_COUNT, MPI_ERR_TYPE, MPI_ERR_TAG, MPI_ERR_COMM,
                           MPI_ERR_RANK, MPI_ERR_REQUEST, MPI_ERR_ROOT, MPI_ERR_GROUP, MPI_ERR_OP,
                           MPI_ERR_TOPOLOGY, MPI_ERR_DIMS, MPI_ERR_ARG, MPI_ERR_UNKNOWN, MPI_ERR_TRUNCATE,
                           MPI_ERR_OTHER, MPI_ERR_INTERN, MPI_ERR_IN_STATUS, MPI_ERR_PENDING, MPI_ERR_KEYVAL,
                           MPI_ERR_NO_MEM, MPI_ERR_BASE, MPI_ERR_INFO_KEY, MPI_ERR_INFO_VALUE,
                           MPI_ERR_INFO_NOKEY, MPI_ERR_SPAWN, MPI_ERR_PORT, MPI_ERR_SERVICE, MPI_ERR_NAME,
                           MPI_ERR_WIN, MPI_ERR_SIZE, MPI_ERR_DISP, MPI_ERR_INFO, MPI_ERR_LOCKTYPE,
                           MPI_ERR_ASSERT, MPI_ERR_RMA_CONFLICT, MPI_ERR_RMA_SYNC, MPI_ERR_FILE,
                           MPI_ERR_NOT_SAME, MPI_ERR_AMODE, MPI_ERR_UNSUPPORTED_DATAREP,
                           MPI_ERR_UNSUPPORTED_OPERATION, MPI_ERR_NO_SUCH_FILE, MPI_ERR_FILE_EXISTS,
                           MPI_ERR_BAD_FILE, MPI_ERR_ACCESS, MPI_ERR_NO_SPACE, MPI_ERR_QUOTA,
                           MPI_ERR_READ_ONLY, MPI_ERR_FILE_IN_USE, MPI_ERR_DUP_DATAREP, MPI_ERR_CONVERSION,
                           MPI_ERR_IO, MPI_ERR_RMA_RANGE, MPI_ERR_RMA_ATTACH, MPI_ERR_RMA_SHARED,
                           MPI_ERR_RMA_FLAVOR, MPI_ERR_SESSION, MPI_ERR_PROC_ABORTED, MPI_ERR_VALUE_TOO_LARGE,
#if !TU_PEER_OPENMPI /* MPI 4.1; not in Open MPI 5.0.11 */
                           MPI_ERR_ERRHANDLER,
#endif
                           };
    int nclasses = (int)(sizeof classes / sizeof classes[0]);
    for (int i = 0; i < nclasses; i++) {
        int cls = -1, len = -1;
        char str[MPI_MAX_ERROR_STRING];
        CHECK(classes[i] >= 0 && classes[i] <= MPI_ERR_LASTCODE, "class %d outside 0..MPI_ERR_LASTCODE", classes[i]);
        CHECK_MPI(MPI_Error_class(classes[i], &cls));
        CHECK(cls == classes[i], "Error_class(%d) = %d", classes[i], cls);
        str[0] = '\0';
        CHECK_MPI(MPI_Error_string(classes[i], str, &len));
        CHECK(len > 0 && len < MPI_MAX_ERROR_STRING && (int)strlen(str) == len, "Error_string(%d): len %d \"%s\"",
              classes[i], len, str);
        for (int j = 0; j < i; j++)
            CHECK(classes[i] != classes[j], "error classes %d and %d have the same value", i, j);
    }

    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_ARE_FATAL);
    MPI_Comm_free(&comm);
    MPI_Finalize();
    return test_finish();
}
