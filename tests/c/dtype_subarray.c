/* gridmpi-test: ranks=1 timeout=30 */
/*
 * Subarray (C and Fortran order, 2-D and 3-D) and darray (BLOCK, CYCLIC,
 * CYCLIC(k), BLOCK(k), NONE; C and Fortran order) datatypes: the typemap is
 * checked element by element (gather through a self-send into contiguous
 * ints), the extent is the whole global array, and for darray the pieces of
 * all process-grid ranks cover every element exactly once.
 */
#include "testutil.h"

#define MAXN 512

/* Indices (into a global int array holding 0..n-1) the type selects, in typemap order. */
static int gather(MPI_Datatype t, int *out)
{
    int src[MAXN];
    for (int i = 0; i < MAXN; i++)
        src[i] = i;
    MPI_Status st;
    CHECK_MPI(MPI_Sendrecv(src, 1, t, 0, 0, out, MAXN, MPI_INT, 0, 0, MPI_COMM_SELF, &st));
    int c = -1;
    MPI_Get_count(&st, MPI_INT, &c);
    return c;
}

static void check_seq(const int *got, int ngot, const int *exp, int nexp, const char *what)
{
    CHECK(ngot == nexp, "%s: %d elements, expected %d", what, ngot, nexp);
    for (int k = 0; k < ngot && k < nexp; k++)
        if (!CHECK(got[k] == exp[k], "%s: element %d is global index %d, expected %d", what, k, got[k], exp[k]))
            break;
}

static void check_full_extent(MPI_Datatype t, int nglobal, const char *what)
{
    MPI_Aint lb, ext;
    MPI_Type_get_extent(t, &lb, &ext);
    CHECK(lb == 0 && ext == (MPI_Aint)(nglobal * sizeof(int)), "%s: lb %ld extent %ld, expected 0 and %zu", what,
          (long)lb, (long)ext, nglobal * sizeof(int));
}

/* Owner coordinate and local order of global index g along one dimension. */
static int owns(int distrib, int darg, int gsize, int psize, int p, int g)
{
    if (distrib == MPI_DISTRIBUTE_NONE)
        return 1;
    if (distrib == MPI_DISTRIBUTE_BLOCK) {
        int b = darg == MPI_DISTRIBUTE_DFLT_DARG ? (gsize + psize - 1) / psize : darg;
        return g / b == p;
    }
    int k = darg == MPI_DISTRIBUTE_DFLT_DARG ? 1 : darg;
    return (g / k) % psize == p;
}

static void darray_case(int ndims, const int *gsizes, const int *distribs, const int *dargs, const int *psizes,
                        int order, const char *name)
{
    int nprocs = 1, nglobal = 1;
    for (int d = 0; d < ndims; d++) {
        nprocs *= psizes[d];
        nglobal *= gsizes[d];
    }
    int *cover = calloc(nglobal, sizeof(int));
    for (int r = 0; r < nprocs; r++) {
        /* Process grid coordinates: row-major over psizes (as MPI_Cart). */
        int coords[3], rem = r;
        for (int d = ndims - 1; d >= 0; d--) {
            coords[d] = rem % psizes[d];
            rem /= psizes[d];
        }
        MPI_Datatype t;
        CHECK_MPI(MPI_Type_create_darray(nprocs, r, ndims, gsizes, distribs, dargs, psizes, order, MPI_INT, &t));
        MPI_Type_commit(&t);
        char what[96];
        snprintf(what, sizeof what, "darray %s rank %d", name, r);
        check_full_extent(t, nglobal, what);
        /* Expected: owned elements in array-storage order (C: last index
         * fastest; Fortran: first index fastest). Global linear index uses
         * the same storage order. */
        int exp[MAXN], n = 0, got[MAXN];
        for (int lin = 0; lin < nglobal; lin++) {
            int idx[3], rem2 = lin;
            if (order == MPI_ORDER_C) {
                for (int d = ndims - 1; d >= 0; d--) {
                    idx[d] = rem2 % gsizes[d];
                    rem2 /= gsizes[d];
                }
            } else {
                for (int d = 0; d < ndims; d++) {
                    idx[d] = rem2 % gsizes[d];
                    rem2 /= gsizes[d];
                }
            }
            int mine = 1;
            for (int d = 0; d < ndims; d++)
                mine = mine && owns(distribs[d], dargs[d], gsizes[d], psizes[d], coords[d], idx[d]);
            if (mine)
                exp[n++] = lin;
        }
        int ng = gather(t, got);
        check_seq(got, ng, exp, n, what);
        for (int k = 0; k < ng && k < MAXN; k++)
            if (got[k] >= 0 && got[k] < nglobal)
                cover[got[k]]++;
        MPI_Type_free(&t);
    }
    for (int i = 0; i < nglobal; i++)
        if (!CHECK(cover[i] == 1, "darray %s: global element %d covered %d times", name, i, cover[i]))
            break;
    free(cover);
}

int main(int argc, char **argv)
{
    test_init(&argc, &argv, NULL);
    MPI_Datatype t;
    int got[MAXN], exp[MAXN], n;

    /* 2-D subarray, C order: 4x6, sub 2x3 at (1,2). */
    {
        int sizes[] = {4, 6}, sub[] = {2, 3}, starts[] = {1, 2};
        MPI_Type_create_subarray(2, sizes, sub, starts, MPI_ORDER_C, MPI_INT, &t);
        MPI_Type_commit(&t);
        check_full_extent(t, 24, "subarray C 2-D");
        n = 0;
        for (int i = 1; i < 3; i++)
            for (int j = 2; j < 5; j++)
                exp[n++] = i * 6 + j;
        check_seq(got, gather(t, got), exp, n, "subarray C 2-D");
        int sz;
        MPI_Type_size(t, &sz);
        CHECK_INT_EQ(sz, 6 * (int)sizeof(int));
        MPI_Type_free(&t);
    }
    /* Same in Fortran order: dim 0 is fastest: element (i,j) at i + 4*j. */
    {
        int sizes[] = {4, 6}, sub[] = {2, 3}, starts[] = {1, 2};
        MPI_Type_create_subarray(2, sizes, sub, starts, MPI_ORDER_FORTRAN, MPI_INT, &t);
        MPI_Type_commit(&t);
        check_full_extent(t, 24, "subarray Fortran 2-D");
        n = 0;
        for (int j = 2; j < 5; j++)
            for (int i = 1; i < 3; i++)
                exp[n++] = i + 4 * j;
        check_seq(got, gather(t, got), exp, n, "subarray Fortran 2-D");
        MPI_Type_free(&t);
    }
    /* 3-D, C order: 3x4x5, sub 2x2x3 at (1,1,2). */
    {
        int sizes[] = {3, 4, 5}, sub[] = {2, 2, 3}, starts[] = {1, 1, 2};
        MPI_Type_create_subarray(3, sizes, sub, starts, MPI_ORDER_C, MPI_INT, &t);
        MPI_Type_commit(&t);
        check_full_extent(t, 60, "subarray C 3-D");
        n = 0;
        for (int i = 1; i < 3; i++)
            for (int j = 1; j < 3; j++)
                for (int k = 2; k < 5; k++)
                    exp[n++] = (i * 4 + j) * 5 + k;
        check_seq(got, gather(t, got), exp, n, "subarray C 3-D");
        /* Two consecutive subarrays: the second one is one whole array later. */
        int src[2 * 60], two[2 * 60];
        for (int i = 0; i < 120; i++)
            src[i] = i;
        MPI_Sendrecv(src, 2, t, 0, 1, two, 120, MPI_INT, 0, 1, MPI_COMM_SELF, MPI_STATUS_IGNORE);
        for (int k = 0; k < n; k++)
            if (!CHECK(two[n + k] == exp[k] + 60, "second subarray element %d is %d", k, two[n + k]))
                break;
        MPI_Type_free(&t);
    }
    /* 3-D, Fortran order over a derived old type (pairs of ints). */
    {
        MPI_Datatype pair;
        MPI_Type_contiguous(2, MPI_INT, &pair);
        int sizes[] = {3, 2, 4}, sub[] = {1, 2, 2}, starts[] = {2, 0, 1};
        MPI_Type_create_subarray(3, sizes, sub, starts, MPI_ORDER_FORTRAN, pair, &t);
        MPI_Type_commit(&t);
        check_full_extent(t, 48, "subarray Fortran 3-D of pairs");
        n = 0;
        for (int k = 1; k < 3; k++)
            for (int j = 0; j < 2; j++)
                for (int i = 2; i < 3; i++) {
                    int e = i + 3 * (j + 2 * k);
                    exp[n++] = 2 * e;
                    exp[n++] = 2 * e + 1;
                }
        check_seq(got, gather(t, got), exp, n, "subarray Fortran 3-D of pairs");
        MPI_Type_free(&t);
        MPI_Type_free(&pair);
    }

    /* darrays */
    {
        int g[] = {8, 6}, dist[] = {MPI_DISTRIBUTE_BLOCK, MPI_DISTRIBUTE_CYCLIC};
        int darg[] = {MPI_DISTRIBUTE_DFLT_DARG, MPI_DISTRIBUTE_DFLT_DARG}, ps[] = {2, 3};
        darray_case(2, g, dist, darg, ps, MPI_ORDER_C, "BLOCK x CYCLIC, C");
        darray_case(2, g, dist, darg, ps, MPI_ORDER_FORTRAN, "BLOCK x CYCLIC, Fortran");
    }
    {
        int g[] = {9, 10}, dist[] = {MPI_DISTRIBUTE_CYCLIC, MPI_DISTRIBUTE_BLOCK};
        int darg[] = {2, 4}, ps[] = {2, 3};
        darray_case(2, g, dist, darg, ps, MPI_ORDER_C, "CYCLIC(2) x BLOCK(4), C");
    }
    {
        int g[] = {5, 4, 6}, dist[] = {MPI_DISTRIBUTE_BLOCK, MPI_DISTRIBUTE_NONE, MPI_DISTRIBUTE_CYCLIC};
        int darg[] = {MPI_DISTRIBUTE_DFLT_DARG, MPI_DISTRIBUTE_DFLT_DARG, 2}, ps[] = {2, 1, 2};
        darray_case(3, g, dist, darg, ps, MPI_ORDER_C, "BLOCK x NONE x CYCLIC(2), C");
        darray_case(3, g, dist, darg, ps, MPI_ORDER_FORTRAN, "BLOCK x NONE x CYCLIC(2), Fortran");
    }

    MPI_Finalize();
    return test_finish();
}
