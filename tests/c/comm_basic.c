/* gridmpi-test: ranks=1,2,4,8 timeout=60 */
/*
 * Communicator basics: size/rank, dup / dup_with_info / idup, compare (IDENT,
 * CONGRUENT, SIMILAR, UNEQUAL), free (handle MPI_COMM_NULL), test_inter on an
 * intracommunicator, names (MPI_COMM_WORLD / MPI_COMM_SELF predefined, set and
 * get on a duplicate), get_info / set_info, isolation: traffic on a
 * duplicate never matches traffic on its parent with the same tag and
 * source, even with wildcards, and many dup/free cycles keep that true.
 */
#include "testutil.h"

static int cmp(MPI_Comm a, MPI_Comm b) { int r = -1; MPI_Comm_compare(a, b, &r); return r; }

int main(int argc, char **argv)
{
    int size;
    int rank = test_init(&argc, &argv, &size);
    int s, r, flag;
    MPI_Comm dup, dup2, split;

    MPI_Comm_size(MPI_COMM_SELF, &s);
    MPI_Comm_rank(MPI_COMM_SELF, &r);
    CHECK(s == 1 && r == 0, "MPI_COMM_SELF size %d rank %d", s, r);

    char name[MPI_MAX_OBJECT_NAME];
    int len;
    CHECK_MPI(MPI_Comm_get_name(MPI_COMM_WORLD, name, &len));
    CHECK_STR_EQ(name, "MPI_COMM_WORLD");
    CHECK_INT_EQ(len, 14);
    CHECK_MPI(MPI_Comm_get_name(MPI_COMM_SELF, name, &len));
    CHECK_STR_EQ(name, "MPI_COMM_SELF");

    CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
    MPI_Comm_size(dup, &s);
    MPI_Comm_rank(dup, &r);
    CHECK(s == size && r == rank, "dup: size %d rank %d", s, r);
    CHECK_INT_EQ(cmp(MPI_COMM_WORLD, MPI_COMM_WORLD), MPI_IDENT);
    CHECK_INT_EQ(cmp(dup, dup), MPI_IDENT);
    CHECK_INT_EQ(cmp(MPI_COMM_WORLD, dup), MPI_CONGRUENT);
    CHECK_INT_EQ(cmp(MPI_COMM_SELF, MPI_COMM_WORLD), size == 1 ? MPI_CONGRUENT : MPI_UNEQUAL);
    flag = -1;
    CHECK_MPI(MPI_Comm_test_inter(dup, &flag));
    CHECK_INT_EQ(flag, 0);

    /* Reversed order: SIMILAR. */
    CHECK_MPI(MPI_Comm_split(MPI_COMM_WORLD, 0, size - rank, &split));
    MPI_Comm_rank(split, &r);
    CHECK_INT_EQ(r, size - 1 - rank);
    CHECK_INT_EQ(cmp(MPI_COMM_WORLD, split), size > 1 ? MPI_SIMILAR : MPI_CONGRUENT);

    /* Names: set on the dup, world keeps its own; a new communicator has an empty name. */
    CHECK_MPI(MPI_Comm_get_name(split, name, &len));
    CHECK(len == 0 && name[0] == '\0', "a new communicator is named \"%s\"", name);
    CHECK_MPI(MPI_Comm_set_name(dup, "my duplicate"));
    CHECK_MPI(MPI_Comm_get_name(dup, name, &len));
    CHECK_STR_EQ(name, "my duplicate");
    CHECK_INT_EQ(len, 12);
    CHECK_MPI(MPI_Comm_get_name(MPI_COMM_WORLD, name, &len));
    CHECK_STR_EQ(name, "MPI_COMM_WORLD");

    /* dup_with_info, get_info, set_info. */
    MPI_Info info, used;
    MPI_Info_create(&info);
    MPI_Info_set(info, "mpi_assert_no_any_tag", "false");
    CHECK_MPI(MPI_Comm_dup_with_info(MPI_COMM_WORLD, info, &dup2));
    CHECK_INT_EQ(cmp(MPI_COMM_WORLD, dup2), MPI_CONGRUENT);
    CHECK_MPI(MPI_Comm_get_info(dup2, &used));
    CHECK(used != MPI_INFO_NULL, "Comm_get_info returned MPI_INFO_NULL");
    int nkeys = -1;
    CHECK_MPI(MPI_Info_get_nkeys(used, &nkeys));
    CHECK(nkeys >= 0, "nkeys %d", nkeys);
    MPI_Info_free(&used);
    CHECK_MPI(MPI_Comm_set_info(dup2, info));
    MPI_Info_free(&info);
    CHECK_MPI(MPI_Comm_free(&dup2));
    CHECK(dup2 == MPI_COMM_NULL, "Comm_free did not set MPI_COMM_NULL");

    /* idup */
    MPI_Request req;
    CHECK_MPI(MPI_Comm_idup(MPI_COMM_WORLD, &dup2, &req));
    CHECK_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
    CHECK_INT_EQ(cmp(MPI_COMM_WORLD, dup2), MPI_CONGRUENT);

    /* Isolation: rank i sends to i+1 one message with the same tag on each
     * of world, dup and dup2, posted in the order dup2, dup, world; the
     * receiver takes them in the order world, dup, dup2 with ANY_SOURCE /
     * ANY_TAG and checks each payload names its communicator. */
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    MPI_Comm comms[3] = {MPI_COMM_WORLD, dup, dup2};
    int payload[3], got;
    MPI_Request sreqs[3];
    for (int c = 2; c >= 0; c--) {
        payload[c] = 1000 * rank + c;
        CHECK_MPI(MPI_Isend(&payload[c], 1, MPI_INT, right, 5, comms[c], &sreqs[c]));
    }
    for (int c = 0; c < 3; c++) {
        MPI_Status st;
        CHECK_MPI(MPI_Recv(&got, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, comms[c], &st));
        CHECK(got == 1000 * left + c, "communicator %d received %d, expected %d (cross-communicator match)", c, got,
              1000 * left + c);
    }
    CHECK_MPI(MPI_Waitall(3, sreqs, MPI_STATUSES_IGNORE));

    /* Unmatched traffic on a parent is not seen on a child. */
    if (size > 1) {
        if (rank == 0) {
            int v = 1;
            CHECK_MPI(MPI_Send(&v, 1, MPI_INT, 1, 9, MPI_COMM_WORLD));
            CHECK_MPI(MPI_Send(&v, 1, MPI_INT, 1, 10, dup));
        } else if (rank == 1) {
            int v;
            CHECK_MPI(MPI_Recv(&v, 1, MPI_INT, 0, 10, dup, MPI_STATUS_IGNORE));
            CHECK_MPI(MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, dup, &flag, MPI_STATUS_IGNORE));
            CHECK(!flag, "a message on MPI_COMM_WORLD is visible on its duplicate");
            CHECK_MPI(MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, dup2, &flag, MPI_STATUS_IGNORE));
            CHECK(!flag, "a message on MPI_COMM_WORLD is visible on its idup");
            CHECK_MPI(MPI_Recv(&v, 1, MPI_INT, 0, 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        }
    }

    /* Many dup/free cycles: a message on the i-th communicator arrives on it
     * even if an earlier one (freed) used the same internal context. */
    for (int i = 0; i < 50; i++) {
        MPI_Comm c;
        CHECK_MPI(MPI_Comm_dup(dup, &c));
        int out = i * 7 + rank, in = -1;
        CHECK_MPI(MPI_Sendrecv(&out, 1, MPI_INT, right, 0, &in, 1, MPI_INT, left, 0, c, MPI_STATUS_IGNORE));
        if (!CHECK(in == i * 7 + left, "dup cycle %d: got %d", i, in))
            break;
        CHECK_MPI(MPI_Comm_free(&c));
    }

    MPI_Comm_free(&dup);
    MPI_Comm_free(&dup2);
    MPI_Comm_free(&split);
    MPI_Finalize();
    return test_finish();
}
