/* gridmpi-test: ranks=1 timeout=30 */
/*
 * Status queries: Get_count and Get_elements / Get_elements_x for basic and
 * derived receive types, MPI_UNDEFINED when the message is not a whole
 * number of receive-type elements, zero-byte messages;
 * Status_set_elements / Status_set_elements_x and what Get_count /
 * Get_elements then report, including a count too large for an int;
 * Status_set/get_source, _tag, _error.
 */
#include "testutil.h"

int main(int argc, char **argv)
{
    test_init(&argc, &argv, NULL);
    MPI_Comm comm = MPI_COMM_SELF;
    MPI_Status st;
    int count;
    MPI_Count xcount;
    MPI_Request req;

    /* 5 ints received as MPI_INT. */
    int out[8] = {1, 2, 3, 4, 5, 6, 7, 8}, in[8];
    MPI_Isend(out, 5, MPI_INT, 0, 1, comm, &req);
    CHECK_MPI(MPI_Recv(in, 8, MPI_INT, 0, 1, comm, &st));
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    MPI_Get_count(&st, MPI_INT, &count);
    CHECK_INT_EQ(count, 5);
    MPI_Get_elements(&st, MPI_INT, &count);
    CHECK_INT_EQ(count, 5);
    MPI_Get_elements_x(&st, MPI_INT, &xcount);
    CHECK_INT_EQ(xcount, 5);
    MPI_Get_count(&st, MPI_SHORT, &count);
    CHECK_INT_EQ(count, 10);

    /* 5 ints received as contiguous(2, MPI_INT): 2.5 elements. */
    MPI_Datatype pair;
    MPI_Type_contiguous(2, MPI_INT, &pair);
    MPI_Type_commit(&pair);
    MPI_Isend(out, 5, MPI_INT, 0, 2, comm, &req);
    CHECK_MPI(MPI_Recv(in, 4, pair, 0, 2, comm, &st));
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    MPI_Get_count(&st, pair, &count);
    CHECK_INT_EQ(count, MPI_UNDEFINED);
    MPI_Get_elements(&st, pair, &count);
    CHECK_INT_EQ(count, 5);
    MPI_Get_elements_x(&st, pair, &xcount);
    CHECK_INT_EQ(xcount, 5);
    CHECK(in[0] == 1 && in[4] == 5, "partial derived receive data");

    /* struct {int; double} received as 2 structs, sender sends int,double,int. */
    struct id { int i; double d; };
    MPI_Datatype sid, three;
    int bl[2] = {1, 1};
    MPI_Aint disp[2] = {offsetof(struct id, i), offsetof(struct id, d)};
    MPI_Datatype types[2] = {MPI_INT, MPI_DOUBLE};
    MPI_Type_create_struct(2, bl, disp, types, &sid);
    MPI_Type_commit(&sid);
    struct { int a; double b; int c; } sbuf = {7, 2.5, 9};
    int bl3[3] = {1, 1, 1};
    MPI_Aint d3[3];
    MPI_Aint base;
    MPI_Get_address(&sbuf, &base);
    MPI_Get_address(&sbuf.a, &d3[0]);
    MPI_Get_address(&sbuf.b, &d3[1]);
    MPI_Get_address(&sbuf.c, &d3[2]);
    for (int i = 0; i < 3; i++)
        d3[i] = MPI_Aint_diff(d3[i], base);
    MPI_Datatype t3[3] = {MPI_INT, MPI_DOUBLE, MPI_INT};
    MPI_Type_create_struct(3, bl3, d3, t3, &three);
    MPI_Type_commit(&three);
    struct id rs[2];
    MPI_Isend(&sbuf, 1, three, 0, 3, comm, &req);
    CHECK_MPI(MPI_Recv(rs, 2, sid, 0, 3, comm, &st));
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    MPI_Get_count(&st, sid, &count);
    CHECK_INT_EQ(count, MPI_UNDEFINED);
    MPI_Get_elements(&st, sid, &count);
    CHECK_INT_EQ(count, 3);
    MPI_Get_elements_x(&st, sid, &xcount);
    CHECK_INT_EQ(xcount, 3);
    CHECK(rs[0].i == 7 && rs[0].d == 2.5 && rs[1].i == 9, "struct receive data");

    /* Zero-length message. */
    MPI_Isend(out, 0, MPI_INT, 0, 4, comm, &req);
    CHECK_MPI(MPI_Recv(in, 4, pair, 0, 4, comm, &st));
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    MPI_Get_count(&st, pair, &count);
    CHECK_INT_EQ(count, 0);
    MPI_Get_elements(&st, pair, &count);
    CHECK_INT_EQ(count, 0);

    /* Status_set_elements: the count is in basic elements of the datatype,
     * and later queries use a datatype with the same type signature. */
    MPI_Status us;
    memset(&us, 0, sizeof us);
    CHECK_MPI(MPI_Status_set_elements(&us, MPI_INT, 7));
    MPI_Get_count(&us, MPI_INT, &count);
    CHECK_INT_EQ(count, 7);
    MPI_Get_elements(&us, MPI_INT, &count);
    CHECK_INT_EQ(count, 7);
    MPI_Get_elements_x(&us, MPI_INT, &xcount);
    CHECK_INT_EQ(xcount, 7);
    CHECK_MPI(MPI_Status_set_elements(&us, pair, 3));
    MPI_Get_count(&us, pair, &count);
    CHECK_INT_EQ(count, MPI_UNDEFINED);
    MPI_Get_elements(&us, pair, &count);
    CHECK_INT_EQ(count, 3);
    CHECK_MPI(MPI_Status_set_elements(&us, pair, 4));
    MPI_Get_count(&us, pair, &count);
    CHECK_INT_EQ(count, 2);
    MPI_Get_elements(&us, pair, &count);
    CHECK_INT_EQ(count, 4);
    CHECK_MPI(MPI_Status_set_elements_x(&us, MPI_INT, 11));
    MPI_Get_elements_x(&us, MPI_INT, &xcount);
    CHECK_INT_EQ(xcount, 11);
    MPI_Get_count(&us, MPI_INT, &count);
    CHECK_INT_EQ(count, 11);
    CHECK_MPI(MPI_Status_set_elements(&us, MPI_INT, 0));
    MPI_Get_count(&us, MPI_INT, &count);
    CHECK_INT_EQ(count, 0);

    /* More elements than an int can count. */
    MPI_Count big = (MPI_Count)3 << 30; /* 3 Gi */
    CHECK_MPI(MPI_Status_set_elements_x(&us, MPI_BYTE, big));
    MPI_Get_elements_x(&us, MPI_BYTE, &xcount);
    CHECK(xcount == big, "Get_elements_x after set_elements_x(3 GiB) gave %lld", (long long)xcount);
    count = 0;
    MPI_Get_count(&us, MPI_BYTE, &count);
    CHECK_INT_EQ(count, MPI_UNDEFINED);
    count = 0;
    MPI_Get_elements(&us, MPI_BYTE, &count);
    CHECK_INT_EQ(count, MPI_UNDEFINED);

    /* Status_set/get accessors (source, tag, error); not in Open MPI 5.0.11. */
#if !TU_PEER_OPENMPI
    CHECK_MPI(MPI_Status_set_source(&us, 5));
    CHECK_MPI(MPI_Status_set_tag(&us, 77));
    CHECK_MPI(MPI_Status_set_error(&us, MPI_ERR_TAG));
    CHECK_INT_EQ(us.MPI_SOURCE, 5);
    CHECK_INT_EQ(us.MPI_TAG, 77);
    CHECK_INT_EQ(us.MPI_ERROR, MPI_ERR_TAG);
    int v = -1;
    CHECK_MPI(MPI_Status_get_source(&us, &v));
    CHECK_INT_EQ(v, 5);
    CHECK_MPI(MPI_Status_get_tag(&us, &v));
    CHECK_INT_EQ(v, 77);
    CHECK_MPI(MPI_Status_get_error(&us, &v));
    CHECK_INT_EQ(v, MPI_ERR_TAG);
#endif

    MPI_Type_free(&pair);
    MPI_Type_free(&sid);
    MPI_Type_free(&three);
    MPI_Finalize();
    return test_finish();
}
