/* gridmpi-test: ranks=1,2,3,4,8 timeout=60 */
/*
 * Sendrecv and Sendrecv_replace: periodic ring shifts in both directions
 * (including n = 1, a shift to self), a non-periodic shift where the ends use
 * MPI_PROC_NULL (status source PROC_NULL, tag ANY_TAG, count 0, buffer
 * untouched), Sendrecv_replace of a large message, different send and
 * receive types, and the nonblocking Isendrecv / Isendrecv_replace.
 */
#include "testutil.h"

#define BIG (64 * 1024 + 1) /* ints */

int main(int argc, char **argv)
{
    int size;
    int rank = test_init(&argc, &argv, &size);
    MPI_Comm comm = MPI_COMM_WORLD;
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    MPI_Status st;
    int count;
    int sbuf[100], rbuf[100];

    /* Periodic shift right then left. */
    fill_ints(sbuf, 100, rank);
    CHECK_MPI(MPI_Sendrecv(sbuf, 100, MPI_INT, right, 1, rbuf, 100, MPI_INT, left, 1, comm, &st));
    check_ints(rbuf, 100, left, "shift right");
    CHECK_INT_EQ(st.MPI_SOURCE, left);
    CHECK_INT_EQ(st.MPI_TAG, 1);
    MPI_Get_count(&st, MPI_INT, &count);
    CHECK_INT_EQ(count, 100);
    /* ANY_SOURCE/ANY_TAG on a communicator of its own, so no later traffic matches. */
    MPI_Comm anycomm;
    MPI_Comm_dup(comm, &anycomm);
    CHECK_MPI(MPI_Sendrecv(sbuf, 100, MPI_INT, left, 2, rbuf, 100, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, anycomm, &st));
    check_ints(rbuf, 100, right, "shift left");
    CHECK_INT_EQ(st.MPI_SOURCE, right);
    CHECK_INT_EQ(st.MPI_TAG, 2);
    MPI_Comm_free(&anycomm);

    /* Non-periodic shift: rank 0 receives from PROC_NULL, the last sends to it. */
    int nright = rank + 1 < size ? rank + 1 : MPI_PROC_NULL;
    int nleft = rank > 0 ? rank - 1 : MPI_PROC_NULL;
    for (int i = 0; i < 100; i++)
        rbuf[i] = -5;
    CHECK_MPI(MPI_Sendrecv(sbuf, 100, MPI_INT, nright, 3, rbuf, 100, MPI_INT, nleft, 3, comm, &st));
    MPI_Get_count(&st, MPI_INT, &count);
    if (nleft == MPI_PROC_NULL) {
        CHECK_INT_EQ(st.MPI_SOURCE, MPI_PROC_NULL);
        CHECK_INT_EQ(st.MPI_TAG, MPI_ANY_TAG);
        CHECK_INT_EQ(count, 0);
        CHECK(rbuf[0] == -5 && rbuf[99] == -5, "receive from PROC_NULL modified the buffer");
    } else {
        check_ints(rbuf, 100, nleft, "non-periodic shift");
        CHECK_INT_EQ(st.MPI_SOURCE, nleft);
        CHECK_INT_EQ(count, 100);
    }

    /* Sendrecv_replace, large, around the ring. */
    int *big = tu_malloc(sizeof(int) * BIG);
    fill_ints(big, BIG, 500 + rank);
    CHECK_MPI(MPI_Sendrecv_replace(big, BIG, MPI_INT, right, 4, left, 4, comm, &st));
    check_ints(big, BIG, 500 + left, "Sendrecv_replace large");
    CHECK_INT_EQ(st.MPI_SOURCE, left);
    MPI_Get_count(&st, MPI_INT, &count);
    CHECK_INT_EQ(count, BIG);
    /* Sendrecv_replace with PROC_NULL on both sides leaves the buffer alone. */
    CHECK_MPI(MPI_Sendrecv_replace(big, BIG, MPI_INT, MPI_PROC_NULL, 5, MPI_PROC_NULL, 5, comm, &st));
    check_ints(big, BIG, 500 + left, "Sendrecv_replace with PROC_NULL");
    CHECK_INT_EQ(st.MPI_SOURCE, MPI_PROC_NULL);

    /* Different but matching type signatures: send 50 x MPI_INT as
     * contiguous(50, MPI_INT), receive as 50 ints. */
    MPI_Datatype c50;
    MPI_Type_contiguous(50, MPI_INT, &c50);
    MPI_Type_commit(&c50);
    fill_ints(sbuf, 50, 700 + rank);
    CHECK_MPI(MPI_Sendrecv(sbuf, 1, c50, right, 6, rbuf, 100, MPI_INT, left, 6, comm, &st));
    check_ints(rbuf, 50, 700 + left, "Sendrecv with derived send type");
    MPI_Get_count(&st, MPI_INT, &count);
    CHECK_INT_EQ(count, 50);
    MPI_Type_free(&c50);

    /* Nonblocking variants (MPI 4.0). */
    MPI_Request req;
    fill_ints(sbuf, 100, 800 + rank);
    CHECK_MPI(MPI_Isendrecv(sbuf, 100, MPI_INT, left, 7, rbuf, 100, MPI_INT, right, 7, comm, &req));
    CHECK_MPI(MPI_Wait(&req, &st));
    check_ints(rbuf, 100, 800 + right, "Isendrecv");
    /* MPICH 5.0.2 returns a meaningless status (wrong source, tag and
     * count) from MPI_Isendrecv and MPI_Isendrecv_replace; the standard says
     * the status refers to the receive. */
    if (!TU_PEER_MPICH) {
        CHECK_INT_EQ(st.MPI_SOURCE, right);
        CHECK_INT_EQ(st.MPI_TAG, 7);
        MPI_Get_count(&st, MPI_INT, &count);
        CHECK_INT_EQ(count, 100);
    }
    fill_ints(big, BIG, 900 + rank);
    CHECK_MPI(MPI_Isendrecv_replace(big, BIG, MPI_INT, left, 8, right, 8, comm, &req));
    CHECK_MPI(MPI_Wait(&req, &st));
    check_ints(big, BIG, 900 + right, "Isendrecv_replace");
    if (!TU_PEER_MPICH) {
        CHECK_INT_EQ(st.MPI_SOURCE, right);
        CHECK_INT_EQ(st.MPI_TAG, 8);
    }

    free(big);
    MPI_Finalize();
    return test_finish();
}
