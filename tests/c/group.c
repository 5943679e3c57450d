/* gridmpi-test: ranks=1,3,4,8 timeout=30 */
/*
 * Every MPI_Group_* function: size, rank (MPI_UNDEFINED when not a member),
 * translate_ranks (MPI_UNDEFINED for non-members, MPI_PROC_NULL maps to
 * MPI_PROC_NULL), compare (IDENT, SIMILAR, UNEQUAL), union / intersection /
 * difference (with the standard's ordering rules), incl / excl, range_incl /
 * range_excl (positive and negative strides), free (handle set to
 * MPI_GROUP_NULL, a group stays valid after its communicator is freed), and
 * MPI_GROUP_EMPTY.
 */
#include "testutil.h"

static int gsize(MPI_Group g) { int s = -1; MPI_Group_size(g, &s); return s; }
static int grank(MPI_Group g) { int r = -2; MPI_Group_rank(g, &r); return r; }

/* World ranks of the members of g, in group order. */
static void members(MPI_Group world, MPI_Group g, int *out)
{
    int n = gsize(g);
    int *idx = tu_malloc(sizeof(int) * (n + 1));
    for (int i = 0; i < n; i++)
        idx[i] = i;
    MPI_Group_translate_ranks(g, n, idx, world, out);
    free(idx);
}

static void check_members(MPI_Group world, MPI_Group g, const int *expect, int n, int me, const char *what)
{
    CHECK(gsize(g) == n, "%s: size %d, expected %d", what, gsize(g), n);
    if (gsize(g) != n)
        return;
    int *m = tu_malloc(sizeof(int) * (n + 1));
    members(world, g, m);
    int myrank = MPI_UNDEFINED;
    for (int i = 0; i < n; i++) {
        CHECK(m[i] == expect[i], "%s: member %d is world rank %d, expected %d", what, i, m[i], expect[i]);
        if (expect[i] == me)
            myrank = i;
    }
    CHECK(grank(g) == myrank, "%s: Group_rank %d, expected %d", what, grank(g), myrank);
    free(m);
}

static int cmp(MPI_Group a, MPI_Group b) { int r = -1; MPI_Group_compare(a, b, &r); return r; }

int main(int argc, char **argv)
{
    int n;
    int me = test_init(&argc, &argv, &n);
    MPI_Group world, g, h, k;
    int *exp = tu_malloc(sizeof(int) * (2 * n + 2));
    int *ranks = tu_malloc(sizeof(int) * (2 * n + 2));
    int *out = tu_malloc(sizeof(int) * (2 * n + 2));

    CHECK_MPI(MPI_Comm_group(MPI_COMM_WORLD, &world));
    CHECK_INT_EQ(gsize(world), n);
    CHECK_INT_EQ(grank(world), me);
    CHECK_INT_EQ(cmp(world, world), MPI_IDENT);

    /* incl, reversed order. */
    for (int i = 0; i < n; i++)
        ranks[i] = exp[i] = n - 1 - i;
    CHECK_MPI(MPI_Group_incl(world, n, ranks, &g));
    check_members(world, g, exp, n, me, "incl reversed");
    CHECK_INT_EQ(cmp(world, g), n > 1 ? MPI_SIMILAR : MPI_IDENT);

    /* translate_ranks world -> reversed, with PROC_NULL. */
    for (int i = 0; i < n; i++)
        ranks[i] = i;
    ranks[n] = MPI_PROC_NULL;
    CHECK_MPI(MPI_Group_translate_ranks(world, n + 1, ranks, g, out));
    for (int i = 0; i < n; i++)
        CHECK(out[i] == n - 1 - i, "translate world %d -> reversed gave %d", i, out[i]);
    CHECK(out[n] == MPI_PROC_NULL, "translate of MPI_PROC_NULL gave %d", out[n]);

    /* excl the even ranks -> odd ranks in order; translation of an even rank is UNDEFINED. */
    int ne = 0, no = 0;
    for (int i = 0; i < n; i += 2)
        ranks[ne++] = i;
    for (int i = 1; i < n; i += 2)
        exp[no++] = i;
    CHECK_MPI(MPI_Group_excl(world, ne, ranks, &h));
    check_members(world, h, exp, no, me, "excl evens");
    int zero = 0, tz = -5;
    MPI_Group_translate_ranks(world, 1, &zero, h, &tz);
    CHECK(tz == MPI_UNDEFINED, "translate of a non-member gave %d", tz);

    /* range_incl {0, n-1, 2} = evens; range_excl the same = odds. */
    {
        int range[1][3] = {{0, n - 1, 2}};
        MPI_Group ev, od;
        CHECK_MPI(MPI_Group_range_incl(world, 1, range, &ev));
        int m = 0;
        for (int i = 0; i < n; i += 2)
            exp[m++] = i;
        check_members(world, ev, exp, m, me, "range_incl evens");
        CHECK_MPI(MPI_Group_range_excl(world, 1, range, &od));
        CHECK_INT_EQ(cmp(od, h), MPI_IDENT);
        /* Negative stride: {n-1, 0, -1} is the reversed group. */
        int rrange[1][3] = {{n - 1, 0, -1}};
        MPI_Group rev;
        CHECK_MPI(MPI_Group_range_incl(world, 1, rrange, &rev));
        CHECK_INT_EQ(cmp(rev, g), MPI_IDENT);
        MPI_Group_free(&rev);
        /* Two ranges. */
        if (n >= 4) {
            int r2[2][3] = {{n - 1, n - 2, -1}, {0, 1, 1}};
            CHECK_MPI(MPI_Group_range_incl(world, 2, r2, &rev));
            int e2[4] = {n - 1, n - 2, 0, 1};
            check_members(world, rev, e2, 4, me, "range_incl two ranges");
            MPI_Group_free(&rev);
            int x2[1][3] = {{1, n - 2, 1}};
            CHECK_MPI(MPI_Group_range_excl(world, 1, x2, &rev));
            int e3[2] = {0, n - 1};
            check_members(world, rev, e3, 2, me, "range_excl middle");
            MPI_Group_free(&rev);
        }

        /* union(odds, reversed world) = odds then evens in reversed-world order. */
        CHECK_MPI(MPI_Group_union(od, g, &k));
        m = 0;
        for (int i = 1; i < n; i += 2)
            exp[m++] = i;
        for (int i = n - 1; i >= 0; i--)
            if (i % 2 == 0)
                exp[m++] = i;
        check_members(world, k, exp, m, me, "union(odds, reversed)");
        MPI_Group_free(&k);
        /* intersection(reversed, evens): order of the first group. */
        CHECK_MPI(MPI_Group_intersection(g, ev, &k));
        m = 0;
        for (int i = n - 1; i >= 0; i--)
            if (i % 2 == 0)
                exp[m++] = i;
        check_members(world, k, exp, m, me, "intersection(reversed, evens)");
        MPI_Group_free(&k);
        /* difference(reversed, evens) = odds in reversed order. */
        CHECK_MPI(MPI_Group_difference(g, ev, &k));
        m = 0;
        for (int i = n - 1; i >= 0; i--)
            if (i % 2 == 1)
                exp[m++] = i;
        check_members(world, k, exp, m, me, "difference(reversed, evens)");
        MPI_Group_free(&k);
        /* intersection of disjoint groups compares IDENT with MPI_GROUP_EMPTY. */
        CHECK_MPI(MPI_Group_intersection(od, ev, &k));
        CHECK_INT_EQ(gsize(k), 0);
        CHECK_INT_EQ(cmp(k, MPI_GROUP_EMPTY), MPI_IDENT);
        MPI_Group_free(&k);
        /* difference of a group with itself is empty. */
        CHECK_MPI(MPI_Group_difference(world, g, &k));
        CHECK_INT_EQ(gsize(k), 0);
        CHECK_INT_EQ(grank(k), MPI_UNDEFINED);
        MPI_Group_free(&k);
        if (n > 1)
            CHECK_INT_EQ(cmp(od, ev), MPI_UNEQUAL);
        MPI_Group_free(&ev);
        MPI_Group_free(&od);
    }

    /* MPI_GROUP_EMPTY behaviours. */
    CHECK_INT_EQ(gsize(MPI_GROUP_EMPTY), 0);
    CHECK_INT_EQ(grank(MPI_GROUP_EMPTY), MPI_UNDEFINED);
    CHECK_MPI(MPI_Group_incl(world, 0, ranks, &k));
    CHECK_INT_EQ(cmp(k, MPI_GROUP_EMPTY), MPI_IDENT);
    MPI_Group_free(&k);
    CHECK_MPI(MPI_Group_union(MPI_GROUP_EMPTY, world, &k));
    CHECK_INT_EQ(cmp(k, world), MPI_IDENT);
    MPI_Group_free(&k);
    CHECK_MPI(MPI_Group_union(MPI_GROUP_EMPTY, MPI_GROUP_EMPTY, &k));
    CHECK_INT_EQ(gsize(k), 0);
    MPI_Group_free(&k);
    CHECK_MPI(MPI_Group_excl(world, 0, ranks, &k));
    CHECK_INT_EQ(cmp(k, world), MPI_IDENT);
    MPI_Group_free(&k);
    CHECK_MPI(MPI_Group_intersection(world, MPI_GROUP_EMPTY, &k));
    CHECK_INT_EQ(gsize(k), 0);
    MPI_Group_free(&k);
    CHECK_MPI(MPI_Group_difference(MPI_GROUP_EMPTY, world, &k));
    CHECK_INT_EQ(gsize(k), 0);
    MPI_Group_free(&k);
    CHECK_MPI(MPI_Group_translate_ranks(MPI_GROUP_EMPTY, 0, ranks, world, out));
    CHECK_INT_EQ(cmp(MPI_GROUP_EMPTY, world), MPI_UNEQUAL);

    /* Group of COMM_SELF, and a group outliving its communicator. */
    MPI_Group self;
    MPI_Comm_group(MPI_COMM_SELF, &self);
    int selfexp[1] = {me};
    check_members(world, self, selfexp, 1, me, "group of MPI_COMM_SELF");
    {
        MPI_Comm dup;
        MPI_Group dg;
        MPI_Comm_dup(MPI_COMM_WORLD, &dup);
        MPI_Comm_group(dup, &dg);
        MPI_Comm_free(&dup);
        CHECK_INT_EQ(cmp(dg, world), MPI_IDENT);
        MPI_Group_free(&dg);
    }

    CHECK_MPI(MPI_Group_free(&g));
    CHECK(g == MPI_GROUP_NULL, "Group_free did not set MPI_GROUP_NULL");
    MPI_Group_free(&h);
    MPI_Group_free(&self);
    MPI_Group_free(&world);
    free(exp);
    free(ranks);
    free(out);
    MPI_Finalize();
    return test_finish();
}
