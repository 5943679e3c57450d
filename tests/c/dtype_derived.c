/* gridmpi-test: ranks=1 timeout=30 */
/*
 * Derived datatype constructors and their extents, checked against the
 * typemap the standard defines: contiguous, vector (also negative stride),
 * hvector, indexed, hindexed, indexed_block, hindexed_block, struct (extent
 * padded to the strictest alignment), resized, dup; size(_x), get_extent(_x),
 * get_true_extent(_x). The typemap itself is checked by sending with the type
 * to oneself and receiving contiguous ints (gather), and the reverse
 * (scatter, gaps untouched). Freeing a type used to build another does not
 * break the new one; Type_free sets the handle to MPI_DATATYPE_NULL.
 */
#include "testutil.h"

#define BUFN 512

/* Expected typemap of `count` copies of `type` over an int array, given as
 * int indices (relative to the buffer origin `origin`). */
static void check_layout(MPI_Datatype type, int count, int origin, const int *idx, int n, const char *what)
{
    int src[BUFN], dst[BUFN], got[BUFN];
    for (int i = 0; i < BUFN; i++)
        src[i] = i;
    /* gather */
    for (int i = 0; i < BUFN; i++)
        got[i] = -1;
    MPI_Status st;
    CHECK_MPI(MPI_Sendrecv(src + origin, count, type, 0, 0, got, BUFN, MPI_INT, 0, 0, MPI_COMM_SELF, &st));
    int c = -1;
    MPI_Get_count(&st, MPI_INT, &c);
    CHECK(c == n, "%s: gathered %d ints, expected %d", what, c, n);
    for (int k = 0; k < n && k < c; k++)
        if (!CHECK(got[k] == idx[k], "%s: element %d came from index %d, expected %d", what, k, got[k], idx[k]))
            break;
    /* scatter */
    for (int i = 0; i < BUFN; i++)
        dst[i] = -1;
    int vals[BUFN];
    for (int k = 0; k < n; k++)
        vals[k] = 1000 + k;
    CHECK_MPI(MPI_Sendrecv(vals, n, MPI_INT, 0, 1, dst + origin, count, type, 0, 1, MPI_COMM_SELF, &st));
    int expect[BUFN];
    for (int i = 0; i < BUFN; i++)
        expect[i] = -1;
    for (int k = 0; k < n; k++)
        expect[idx[k]] = 1000 + k;
    for (int i = 0; i < BUFN; i++)
        if (!CHECK(dst[i] == expect[i], "%s: scatter wrote %d at index %d, expected %d", what, dst[i], i, expect[i]))
            break;
}

static void check_extents(MPI_Datatype t, long size, long lb, long extent, long tlb, long textent, const char *what)
{
    int s;
    MPI_Count sx, lbx, extx, tlbx, textx;
    MPI_Aint alb, aext, atlb, atext;
    MPI_Type_size(t, &s);
    MPI_Type_size_x(t, &sx);
    MPI_Type_get_extent(t, &alb, &aext);
    MPI_Type_get_extent_x(t, &lbx, &extx);
    MPI_Type_get_true_extent(t, &atlb, &atext);
    MPI_Type_get_true_extent_x(t, &tlbx, &textx);
    CHECK(s == size && sx == size, "%s: size %d / %lld, expected %ld", what, s, (long long)sx, size);
    CHECK(alb == lb && aext == extent, "%s: lb %ld extent %ld, expected %ld %ld", what, (long)alb, (long)aext, lb, extent);
    CHECK(lbx == lb && extx == extent, "%s: lb_x %lld extent_x %lld", what, (long long)lbx, (long long)extx);
    CHECK(atlb == tlb && atext == textent, "%s: true lb %ld true extent %ld, expected %ld %ld", what, (long)atlb,
          (long)atext, tlb, textent);
    CHECK(tlbx == tlb && textx == textent, "%s: true lb_x %lld true extent_x %lld", what, (long long)tlbx, (long long)textx);
}

int main(int argc, char **argv)
{
    test_init(&argc, &argv, NULL);
    const long I = sizeof(int);
    MPI_Datatype t, t2;

    /* contiguous(3, INT), count 2 */
    MPI_Type_contiguous(3, MPI_INT, &t);
    MPI_Type_commit(&t);
    check_extents(t, 3 * I, 0, 3 * I, 0, 3 * I, "contiguous");
    {
        int idx[] = {0, 1, 2, 3, 4, 5};
        check_layout(t, 2, 0, idx, 6, "contiguous x2");
    }
    MPI_Type_free(&t);
    CHECK(t == MPI_DATATYPE_NULL, "Type_free did not set MPI_DATATYPE_NULL");

    /* vector(3, 2, 4, INT): blocks at 0,4,8 of length 2; extent 10 ints. */
    MPI_Type_vector(3, 2, 4, MPI_INT, &t);
    MPI_Type_commit(&t);
    check_extents(t, 6 * I, 0, 10 * I, 0, 10 * I, "vector");
    {
        /* Two copies: the second starts at extent = 10 ints. */
        int idx[] = {0, 1, 4, 5, 8, 9, 10, 11, 14, 15, 18, 19};
        check_layout(t, 2, 0, idx, 12, "vector x2");
    }
    MPI_Type_free(&t);

    /* vector with negative stride: vector(3, 1, -2, INT): elements at 0,-2,-4. */
    MPI_Type_vector(3, 1, -2, MPI_INT, &t);
    MPI_Type_commit(&t);
    check_extents(t, 3 * I, -4 * I, 5 * I, -4 * I, 5 * I, "negative-stride vector");
    {
        int idx[] = {100, 98, 96};
        check_layout(t, 1, 100, idx, 3, "negative-stride vector");
    }
    MPI_Type_free(&t);

    /* hvector(2, 3, 7 ints in bytes, INT) */
    MPI_Type_create_hvector(2, 3, 7 * I, MPI_INT, &t);
    MPI_Type_commit(&t);
    check_extents(t, 6 * I, 0, 10 * I, 0, 10 * I, "hvector");
    {
        int idx[] = {0, 1, 2, 7, 8, 9, 10, 11, 12, 17, 18, 19};
        check_layout(t, 2, 0, idx, 12, "hvector x2");
    }
    MPI_Type_free(&t);

    /* indexed: blocks (2 @ 5), (1 @ 0), (3 @ 10): order of the typemap is
     * block order, not address order. lb 0, ub 13 ints. */
    {
        int bl[] = {2, 1, 3}, disp[] = {5, 0, 10};
        MPI_Type_indexed(3, bl, disp, MPI_INT, &t);
        MPI_Type_commit(&t);
        check_extents(t, 6 * I, 0, 13 * I, 0, 13 * I, "indexed");
        int idx[] = {5, 6, 0, 10, 11, 12, 18, 19, 13, 23, 24, 25};
        check_layout(t, 2, 0, idx, 12, "indexed x2");
        MPI_Type_free(&t);
        /* Zero-length blocks do not count toward lb/ub. */
        int bl0[] = {0, 2, 0}, disp0[] = {-5, 3, 40};
        MPI_Type_indexed(3, bl0, disp0, MPI_INT, &t);
        MPI_Type_commit(&t);
        check_extents(t, 2 * I, 3 * I, 2 * I, 3 * I, 2 * I, "indexed with empty blocks");
        MPI_Type_free(&t);
    }

    /* hindexed: byte displacements. */
    {
        int bl[] = {1, 2};
        MPI_Aint disp[] = {8 * I, 2 * I};
        MPI_Type_create_hindexed(2, bl, disp, MPI_INT, &t);
        MPI_Type_commit(&t);
        check_extents(t, 3 * I, 2 * I, 7 * I, 2 * I, 7 * I, "hindexed");
        /* second copy starts at extent 7: 15, 9, 10 */
        int idx[] = {8, 2, 3, 15, 9, 10};
        check_layout(t, 2, 0, idx, 6, "hindexed x2");
        MPI_Type_free(&t);
    }

    /* indexed_block(3, 2, {4, 0, 8}) */
    {
        int disp[] = {4, 0, 8};
        MPI_Type_create_indexed_block(3, 2, disp, MPI_INT, &t);
        MPI_Type_commit(&t);
        check_extents(t, 6 * I, 0, 10 * I, 0, 10 * I, "indexed_block");
        int idx[] = {4, 5, 0, 1, 8, 9};
        check_layout(t, 1, 0, idx, 6, "indexed_block");
        MPI_Type_free(&t);
    }

    /* hindexed_block(2, 3, {12 ints, 1 int} in bytes) */
    {
        MPI_Aint disp[] = {12 * I, 1 * I};
        MPI_Type_create_hindexed_block(2, 3, disp, MPI_INT, &t);
        MPI_Type_commit(&t);
        check_extents(t, 6 * I, 1 * I, 14 * I, 1 * I, 14 * I, "hindexed_block");
        int idx[] = {12, 13, 14, 1, 2, 3};
        check_layout(t, 1, 0, idx, 6, "hindexed_block");
        MPI_Type_free(&t);
    }

    /* struct {double d; char c;}: size 9, extent padded to 16 (alignment of
     * double), true extent 9. */
    {
        struct dc { double d; char c; };
        int bl[] = {1, 1};
        MPI_Aint disp[] = {offsetof(struct dc, d), offsetof(struct dc, c)};
        MPI_Datatype ty[] = {MPI_DOUBLE, MPI_CHAR};
        MPI_Type_create_struct(2, bl, disp, ty, &t);
        MPI_Type_commit(&t);
        check_extents(t, 9, 0, sizeof(struct dc), 0, 9, "struct {double; char}");
        MPI_Type_free(&t);
        /* struct {char c; int i[2]; short s;} */
        struct cis { char c; int i[2]; short s; };
        int bl2[] = {1, 2, 1};
        MPI_Aint disp2[] = {offsetof(struct cis, c), offsetof(struct cis, i), offsetof(struct cis, s)};
        MPI_Datatype ty2[] = {MPI_CHAR, MPI_INT, MPI_SHORT};
        MPI_Type_create_struct(3, bl2, disp2, ty2, &t);
        MPI_Type_commit(&t);
        check_extents(t, 1 + 2 * I + 2, 0, sizeof(struct cis), 0, offsetof(struct cis, s) + 2, "struct {char; int[2]; short}");
        /* Send 3 of them to self and receive as the same struct type. */
        struct cis a[3], b[3];
        memset(b, 0, sizeof b);
        for (int k = 0; k < 3; k++) {
            a[k].c = (char)('a' + k);
            a[k].i[0] = k * 10;
            a[k].i[1] = -k;
            a[k].s = (short)(k + 300);
        }
        CHECK_MPI(MPI_Sendrecv(a, 3, t, 0, 5, b, 3, t, 0, 5, MPI_COMM_SELF, MPI_STATUS_IGNORE));
        for (int k = 0; k < 3; k++)
            CHECK(b[k].c == a[k].c && b[k].i[0] == a[k].i[0] && b[k].i[1] == a[k].i[1] && b[k].s == a[k].s,
                  "struct array element %d differs", k);
        MPI_Type_free(&t);
        /* struct of int at 0 and 2, plus an int at -3: lb negative. */
        int bl3[] = {1, 1, 1};
        MPI_Aint d3[] = {0, 2 * I, -3 * I};
        MPI_Datatype ty3[] = {MPI_INT, MPI_INT, MPI_INT};
        MPI_Type_create_struct(3, bl3, d3, ty3, &t);
        MPI_Type_commit(&t);
        check_extents(t, 3 * I, -3 * I, 6 * I, -3 * I, 6 * I, "struct with negative displacement");
        int idx[] = {50, 52, 47};
        check_layout(t, 1, 50, idx, 3, "struct with negative displacement");
        MPI_Type_free(&t);
    }

    /* resized(INT, lb -1 int, extent 3 ints): count 3 lands at 0, 3, 6. */
    {
        MPI_Type_create_resized(MPI_INT, -1 * I, 3 * I, &t);
        MPI_Type_commit(&t);
        check_extents(t, I, -1 * I, 3 * I, 0, I, "resized int");
        int idx[] = {10, 13, 16};
        check_layout(t, 3, 10, idx, 3, "resized int x3");
        /* vector of resized elements uses the resized extent as unit. */
        MPI_Type_vector(2, 2, 3, t, &t2);
        MPI_Type_commit(&t2);
        /* elements: block0 at 0,3 ; block1 at 9,12 (stride 3 * extent 3) */
        int idx2[] = {20, 23, 29, 32};
        check_layout(t2, 1, 20, idx2, 4, "vector of resized");
        /* Free the inner type first: the outer one must keep working. */
        MPI_Type_free(&t);
        check_layout(t2, 1, 20, idx2, 4, "vector of resized after freeing the resized type");
        MPI_Type_free(&t2);
    }

    /* dup: same layout; contents DUP. */
    {
        MPI_Type_vector(2, 1, 3, MPI_INT, &t);
        MPI_Type_dup(t, &t2);
        MPI_Type_free(&t);
        /* A dup of a committed type is committed; t was not committed, so commit. */
        MPI_Type_commit(&t2);
        check_extents(t2, 2 * I, 0, 4 * I, 0, 4 * I, "dup of vector");
        int idx[] = {0, 3};
        check_layout(t2, 1, 0, idx, 2, "dup of vector");
        MPI_Type_free(&t2);
        /* dup of a committed type is usable without commit */
        MPI_Type_contiguous(2, MPI_INT, &t);
        MPI_Type_commit(&t);
        MPI_Type_dup(t, &t2);
        int idx2[] = {0, 1, 2, 3};
        check_layout(t2, 2, 0, idx2, 4, "dup of committed contiguous (not committed again)");
        MPI_Type_free(&t);
        MPI_Type_free(&t2);
    }

    /* Nesting: contiguous(2, vector(2, 1, 2, INT)): vector extent 3, so
     * elements 0,2 | 3,5. */
    {
        MPI_Datatype v;
        MPI_Type_vector(2, 1, 2, MPI_INT, &v);
        MPI_Type_contiguous(2, v, &t);
        MPI_Type_free(&v);
        MPI_Type_commit(&t);
        check_extents(t, 4 * I, 0, 6 * I, 0, 6 * I, "contiguous of vector");
        int idx[] = {0, 2, 3, 5};
        check_layout(t, 1, 0, idx, 4, "contiguous of vector");
        MPI_Type_free(&t);
    }

    /* Zero-count types: size 0, extent 0. */
    MPI_Type_contiguous(0, MPI_INT, &t);
    MPI_Type_commit(&t);
    check_extents(t, 0, 0, 0, 0, 0, "contiguous(0)");
    MPI_Type_free(&t);

    MPI_Finalize();
    return test_finish();
}
