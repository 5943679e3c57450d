/* gridmpi-test: ranks=2,3,4,5 min-ranks=2 timeout=60 */
/*
 * Communicators made from groups without a parent (MPI 4.0):
 * MPI_Comm_create_from_group called at once by two disjoint groups with the
 * same string tag (evens and odds), then MPI_Intercomm_create_from_groups
 * joining them (leaders chosen away from rank 0 to catch a leader mix-up),
 * twice in a row with different string tags; traffic across, merge, the
 * error handler given is the one attached; MPI_Comm_split_type on the
 * intercommunicator (MPI 4.0 allows it: all processes of this test share one
 * host, so the result joins the whole of both groups).
 */
#include "testutil.h"

int main(int argc, char **argv)
{
    int size;
    int rank = test_init(&argc, &argv, &size);
    int even = rank % 2 == 0;
    int neven = (size + 1) / 2, nodd = size / 2;
    MPI_Group world, evens, odds, mine, other;
    int range_e[1][3] = {{0, size - 1, 2}}, range_o[1][3] = {{1, size - 1, 2}};

    MPI_Comm_group(MPI_COMM_WORLD, &world);
    MPI_Group_range_incl(world, 1, range_e, &evens);
    MPI_Group_range_incl(world, 1, range_o, &odds);
    mine = even ? evens : odds;
    other = even ? odds : evens;

    /* Two disjoint groups, one string tag. */
    MPI_Comm half;
    CHECK_MPI(MPI_Comm_create_from_group(mine, "gridmpi.test.half", MPI_INFO_NULL, MPI_ERRORS_RETURN, &half));
    int n, r, sum = 0, v = rank;
    MPI_Comm_size(half, &n);
    MPI_Comm_rank(half, &r);
    CHECK_INT_EQ(n, even ? neven : nodd);
    CHECK_INT_EQ(r, rank / 2);
    CHECK_MPI(MPI_Allreduce(&v, &sum, 1, MPI_INT, MPI_SUM, half));
    int expect = 0;
    for (int i = even ? 0 : 1; i < size; i += 2)
        expect += i;
    CHECK_INT_EQ(sum, expect);
    MPI_Errhandler eh;
    MPI_Comm_get_errhandler(half, &eh);
    CHECK(eh == MPI_ERRORS_RETURN, "the error handler given is not attached");
    MPI_Errhandler_free(&eh);

    for (int round = 0; round < 2; round++) {
        /* Round 0: leaders are the last member of each group; round 1: the first. */
        int lleader = round == 0 ? (even ? neven : nodd) - 1 : 0;
        int rleader = round == 0 ? (even ? nodd : neven) - 1 : 0;
        const char *tag = round == 0 ? "gridmpi.test.inter.a" : "gridmpi.test.inter.b";
        MPI_Comm inter;
        CHECK_MPI(MPI_Intercomm_create_from_groups(mine, lleader, other, rleader, tag, MPI_INFO_NULL, MPI_ERRORS_RETURN, &inter));
        int flag, rs;
        MPI_Comm_test_inter(inter, &flag);
        CHECK_INT_EQ(flag, 1);
        MPI_Comm_size(inter, &n);
        MPI_Comm_remote_size(inter, &rs);
        MPI_Comm_rank(inter, &r);
        CHECK_INT_EQ(n, even ? neven : nodd);
        CHECK_INT_EQ(rs, even ? nodd : neven);
        CHECK_INT_EQ(r, rank / 2);

        /* Remote group, translated to world ranks, is the other parity. */
        MPI_Group rg;
        MPI_Comm_remote_group(inter, &rg);
        for (int i = 0; i < rs; i++) {
            int w;
            MPI_Group_translate_ranks(rg, 1, &i, world, &w);
            CHECK_INT_EQ(w, 2 * i + (even ? 1 : 0));
        }
        MPI_Group_free(&rg);

        /* Every rank sends its world rank to every remote rank. */
        MPI_Request reqs[16];
        int in[8], out = rank * 10 + round;
        int nreq = 0;
        for (int i = 0; i < rs && i < 8; i++) {
            MPI_Irecv(&in[i], 1, MPI_INT, i, 7, inter, &reqs[nreq++]);
            MPI_Isend(&out, 1, MPI_INT, i, 7, inter, &reqs[nreq++]);
        }
        CHECK_MPI(MPI_Waitall(nreq, reqs, MPI_STATUSES_IGNORE));
        for (int i = 0; i < rs && i < 8; i++)
            CHECK_INT_EQ(in[i], (2 * i + (even ? 1 : 0)) * 10 + round);

        /* A collective across: the sum of the remote group's world ranks. */
        int rsum = 0, rexpect = 0;
        CHECK_MPI(MPI_Allreduce(&v, &rsum, 1, MPI_INT, MPI_SUM, inter));
        for (int i = even ? 1 : 0; i < size; i += 2)
            rexpect += i;
        CHECK_INT_EQ(rsum, rexpect);

        /* Split by shared memory: everything is on this host. */
        MPI_Comm shared;
        CHECK_MPI(MPI_Comm_split_type(inter, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &shared));
        CHECK(shared != MPI_COMM_NULL, "split_type on the intercommunicator gave MPI_COMM_NULL");
        if (shared != MPI_COMM_NULL) {
            MPI_Comm_test_inter(shared, &flag);
            CHECK_INT_EQ(flag, 1);
            MPI_Comm_remote_size(shared, &n);
            CHECK_INT_EQ(n, rs);
            int b = rank, bsum = 0;
            CHECK_MPI(MPI_Allreduce(&b, &bsum, 1, MPI_INT, MPI_SUM, shared));
            CHECK_INT_EQ(bsum, rexpect);
            MPI_Comm_free(&shared);
        }

        /* Merge: evens first (they pass high = 0). */
        MPI_Comm merged;
        CHECK_MPI(MPI_Intercomm_merge(inter, even ? 0 : 1, &merged));
        MPI_Comm_rank(merged, &r);
        CHECK_INT_EQ(r, even ? rank / 2 : neven + rank / 2);
        MPI_Comm_free(&merged);
        MPI_Comm_free(&inter);
    }

    MPI_Comm_free(&half);
    MPI_Group_free(&evens);
    MPI_Group_free(&odds);
    MPI_Group_free(&world);
    MPI_Finalize();
    return test_finish();
}
