/* gridmpi-test: ranks=1,3,4,8 timeout=60 */
/*
 * Making communicators from others: Comm_split (colors, keys reversing the
 * order, equal keys keep the parent order, MPI_UNDEFINED gives MPI_COMM_NULL),
 * Comm_split_type (MPI_COMM_TYPE_SHARED: every rank of a single-host job
 * shares; MPI_UNDEFINED gives MPI_COMM_NULL), Comm_create (members get a
 * communicator in group order, others MPI_COMM_NULL), Comm_create_group
 * (called by the members only); traffic on each new communicator.
 * Assumes all ranks run on one host (as the tests do).
 */
#include "testutil.h"

/* Ring exchange on comm; checks ranks come back as world ranks `wr`. */
static void ring_check(MPI_Comm comm, const char *what)
{
    int n, r, wr;
    MPI_Comm_size(comm, &n);
    MPI_Comm_rank(comm, &r);
    MPI_Comm_rank(MPI_COMM_WORLD, &wr);
    int right = (r + 1) % n, left = (r + n - 1) % n;
    int out[2] = {wr, r}, in[2] = {-1, -1};
    CHECK_MPI(MPI_Sendrecv(out, 2, MPI_INT, right, 1, in, 2, MPI_INT, left, 1, comm, MPI_STATUS_IGNORE));
    CHECK(in[1] == left, "%s: ring neighbour says its rank is %d, expected %d", what, in[1], left);
    /* The neighbour's world rank must agree with the group translation. */
    MPI_Group g, wg;
    MPI_Comm_group(comm, &g);
    MPI_Comm_group(MPI_COMM_WORLD, &wg);
    int lw;
    MPI_Group_translate_ranks(g, 1, &left, wg, &lw);
    CHECK(in[0] == lw, "%s: left neighbour is world rank %d, group says %d", what, in[0], lw);
    MPI_Group_free(&g);
    MPI_Group_free(&wg);
}

int main(int argc, char **argv)
{
    int size;
    int rank = test_init(&argc, &argv, &size);
    MPI_Comm c;
    int n, r;

    /* split: color = rank % 3, key = -rank: reversed within each color. */
    CHECK_MPI(MPI_Comm_split(MPI_COMM_WORLD, rank % 3, -rank, &c));
    MPI_Comm_size(c, &n);
    MPI_Comm_rank(c, &r);
    int expect_n = 0, expect_r = 0;
    for (int i = 0; i < size; i++)
        if (i % 3 == rank % 3) {
            expect_n++;
            if (i > rank)
                expect_r++;
        }
    CHECK(n == expect_n && r == expect_r, "split color %d: size %d rank %d, expected %d %d", rank % 3, n, r, expect_n,
          expect_r);
    ring_check(c, "split by rank % 3, reversed");
    MPI_Comm_free(&c);

    /* Equal keys: parent order. Rank 0 opts out with MPI_UNDEFINED. */
    CHECK_MPI(MPI_Comm_split(MPI_COMM_WORLD, rank == 0 ? MPI_UNDEFINED : 7, 0, &c));
    if (rank == 0) {
        CHECK(c == MPI_COMM_NULL, "MPI_UNDEFINED color did not give MPI_COMM_NULL");
    } else if (CHECK(c != MPI_COMM_NULL, "split gave MPI_COMM_NULL")) {
        MPI_Comm_size(c, &n);
        MPI_Comm_rank(c, &r);
        CHECK(n == size - 1 && r == rank - 1, "equal keys: size %d rank %d", n, r);
        ring_check(c, "split without rank 0");
        MPI_Comm_free(&c);
    }

    /* Key ties broken by parent rank, with mixed keys: key = rank / 2. */
    CHECK_MPI(MPI_Comm_split(MPI_COMM_WORLD, 1, (size - rank) / 2, &c));
    {
        /* Expected order: sort world ranks by ((size - i) / 2, i). */
        int pos = 0;
        for (int i = 0; i < size; i++) {
            int ki = (size - i) / 2, km = (size - rank) / 2;
            if (ki < km || (ki == km && i < rank))
                pos++;
        }
        MPI_Comm_rank(c, &r);
        CHECK(r == pos, "split with tied keys: rank %d, expected %d", r, pos);
        ring_check(c, "split with tied keys");
        MPI_Comm_free(&c);
    }

    /* split_type SHARED: all ranks on this host. */
    CHECK_MPI(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &c));
    if (CHECK(c != MPI_COMM_NULL, "split_type SHARED gave MPI_COMM_NULL")) {
        MPI_Comm_size(c, &n);
        MPI_Comm_rank(c, &r);
        CHECK(n == size && r == rank, "split_type SHARED on one host: size %d rank %d", n, r);
        ring_check(c, "split_type SHARED");
        MPI_Comm_free(&c);
    }
    CHECK_MPI(MPI_Comm_split_type(MPI_COMM_WORLD, rank % 2 ? MPI_UNDEFINED : MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &c));
    if (rank % 2) {
        CHECK(c == MPI_COMM_NULL, "split_type MPI_UNDEFINED did not give MPI_COMM_NULL");
    } else if (CHECK(c != MPI_COMM_NULL, "split_type gave MPI_COMM_NULL")) {
        MPI_Comm_size(c, &n);
        CHECK_INT_EQ(n, (size + 1) / 2);
        ring_check(c, "split_type SHARED of the even ranks");
        MPI_Comm_free(&c);
    }

    /* Comm_create: the even ranks, in reverse order. */
    MPI_Group wg, g;
    MPI_Comm_group(MPI_COMM_WORLD, &wg);
    int *ranks = tu_malloc(sizeof(int) * size), ne = 0;
    for (int i = size - 1; i >= 0; i--)
        if (i % 2 == 0)
            ranks[ne++] = i;
    MPI_Group_incl(wg, ne, ranks, &g);
    CHECK_MPI(MPI_Comm_create(MPI_COMM_WORLD, g, &c));
    if (rank % 2) {
        CHECK(c == MPI_COMM_NULL, "Comm_create gave a communicator to a non-member");
    } else if (CHECK(c != MPI_COMM_NULL, "Comm_create gave MPI_COMM_NULL to a member")) {
        MPI_Comm_size(c, &n);
        MPI_Comm_rank(c, &r);
        int gr;
        MPI_Group_rank(g, &gr);
        CHECK(n == ne && r == gr, "Comm_create: size %d rank %d, expected %d %d", n, r, ne, gr);
        MPI_Group cg;
        MPI_Comm_group(c, &cg);
        int res;
        MPI_Group_compare(cg, g, &res);
        CHECK_INT_EQ(res, MPI_IDENT);
        MPI_Group_free(&cg);
        ring_check(c, "Comm_create evens reversed");
        MPI_Comm_free(&c);
    }
    MPI_Group_free(&g);

    /* Comm_create_group: the odd ranks (only they call). */
    int no = 0;
    for (int i = 1; i < size; i += 2)
        ranks[no++] = i;
    if (rank % 2 == 1) {
        MPI_Group_incl(wg, no, ranks, &g);
        CHECK_MPI(MPI_Comm_create_group(MPI_COMM_WORLD, g, 99, &c));
        if (CHECK(c != MPI_COMM_NULL, "Comm_create_group gave MPI_COMM_NULL")) {
            MPI_Comm_size(c, &n);
            MPI_Comm_rank(c, &r);
            CHECK(n == no && r == rank / 2, "Comm_create_group: size %d rank %d", n, r);
            ring_check(c, "Comm_create_group odds");
            MPI_Comm_free(&c);
        }
        MPI_Group_free(&g);
    }
    /* Comm_create with the empty group: everyone gets MPI_COMM_NULL. */
    CHECK_MPI(MPI_Comm_create(MPI_COMM_WORLD, MPI_GROUP_EMPTY, &c));
    CHECK(c == MPI_COMM_NULL, "Comm_create(MPI_GROUP_EMPTY) gave a communicator");

    /* Splitting a split communicator. */
    MPI_Comm half, quarter;
    CHECK_MPI(MPI_Comm_split(MPI_COMM_WORLD, rank < size / 2, rank, &half));
    CHECK_MPI(MPI_Comm_split(half, rank % 2, 0, &quarter));
    ring_check(quarter, "split of a split");
    MPI_Comm_free(&quarter);
    MPI_Comm_free(&half);

    MPI_Group_free(&wg);
    free(ranks);
    MPI_Finalize();
    return test_finish();
}
