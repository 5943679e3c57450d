/* gridmpi-test: ranks=1 timeout=60 */
/*
 * Large-count (MPI_X_c, MPI 4.0) datatype, status, pack and operation
 * functions, with counts above INT_MAX where no memory is needed:
 *   - every MPI_Type_*_c constructor with counts or displacements beyond
 *     INT_MAX: size, extent and true extent through the _c, _x and classic
 *     queries (MPI_UNDEFINED in an int that cannot hold the size);
 *     MPI_Type_get_envelope_c / MPI_Type_get_contents_c give the arguments
 *     back (large counts, in the order of the constructor's C binding), the
 *     type rebuilt from them has the same size and bounds, and the classic
 *     MPI_Type_get_envelope / MPI_Type_get_contents refuse such a type;
 *   - a type from a classic constructor decodes through the _c functions
 *     with its counts as integers;
 *   - MPI_Status_set_elements_c / MPI_Get_count_c / MPI_Get_elements_c on
 *     statuses of more than INT_MAX elements (MPI_UNDEFINED for the int
 *     forms);
 *   - MPI_Pack_c / MPI_Unpack_c (also at positions beyond INT_MAX in a
 *     buffer that is only touched at its end), MPI_Pack_size_c, and the
 *     external32 forms;
 *   - MPI_Op_create_c (an MPI_User_function_c sees the whole MPI_Count
 *     length) and MPI_Reduce_local_c.
 */
#include "testutil.h"

#include <limits.h>

#define BIG ((MPI_Count)INT_MAX + 1024)

static MPI_Count size_c(MPI_Datatype t)
{
    MPI_Count s = -1;
    CHECK_MPI(MPI_Type_size_c(t, &s));
    return s;
}

/* Size and bounds of t through every binding. */
static void check_bounds(const char *what, MPI_Datatype t, MPI_Count size, MPI_Count lb, MPI_Count extent,
                         MPI_Count true_lb, MPI_Count true_extent)
{
    MPI_Count s = -1, l = -1, e = -1, tl = -1, te = -1;
    CHECK_MPI(MPI_Type_size_c(t, &s));
    CHECK_MPI(MPI_Type_get_extent_c(t, &l, &e));
    CHECK_MPI(MPI_Type_get_true_extent_c(t, &tl, &te));
    CHECK(s == size && l == lb && e == extent, "%s: size/lb/extent %lld/%lld/%lld, expected %lld/%lld/%lld", what, s, l, e,
          size, lb, extent);
    CHECK(tl == true_lb && te == true_extent, "%s: true lb/extent %lld/%lld, expected %lld/%lld", what, tl, te, true_lb,
          true_extent);
    MPI_Count sx = -1;
    CHECK_MPI(MPI_Type_size_x(t, &sx));
    CHECK(sx == size, "%s: MPI_Type_size_x %lld, expected %lld", what, sx, size);
    int si = 0;
    CHECK_MPI(MPI_Type_size(t, &si));
    if (size > INT_MAX)
        CHECK(si == MPI_UNDEFINED, "%s: MPI_Type_size gave %d, expected MPI_UNDEFINED", what, si);
    else
        CHECK(si == size, "%s: MPI_Type_size gave %d, expected %lld", what, si, size);
    MPI_Aint al = -1, ae = -1;
    CHECK_MPI(MPI_Type_get_extent(t, &al, &ae));
    CHECK(al == lb && ae == extent, "%s: MPI_Type_get_extent %ld/%ld", what, (long)al, (long)ae);
}

struct decoded {
    MPI_Count ni, na, nl, nd;
    int combiner;
    int ints[16];
    MPI_Aint addrs[16];
    MPI_Count large[16];
    MPI_Datatype types[16];
};

static void decode(const char *what, MPI_Datatype t, struct decoded *d)
{
    memset(d, 0, sizeof *d);
    CHECK_MPI(MPI_Type_get_envelope_c(t, &d->ni, &d->na, &d->nl, &d->nd, &d->combiner));
    if (!CHECK(d->ni <= 16 && d->na <= 16 && d->nl <= 16 && d->nd <= 16, "%s: envelope too large", what))
        return;
    CHECK_MPI(MPI_Type_get_contents_c(t, d->ni, d->na, d->nl, d->nd, d->ints, d->addrs, d->large, d->types));
}

static void free_decoded(struct decoded *d)
{
    for (int i = 0; i < d->nd; i++) {
        MPI_Count ni, na, nl, nd;
        int comb;
        MPI_Type_get_envelope_c(d->types[i], &ni, &na, &nl, &nd, &comb);
        if (comb != MPI_COMBINER_NAMED)
            MPI_Type_free(&d->types[i]);
    }
}

/* The envelope and contents of a type from a _c constructor. */
static void check_decoded(const char *what, const struct decoded *d, int combiner, int ni, const int *ints, int nl,
                          const MPI_Count *large, int nd, const MPI_Datatype *types)
{
    CHECK(d->combiner == combiner, "%s: combiner %d, expected %d", what, d->combiner, combiner);
    CHECK(d->ni == ni && d->na == 0 && d->nl == nl && d->nd == nd,
          "%s: envelope ni=%lld na=%lld nl=%lld nd=%lld, expected %d/0/%d/%d", what, d->ni, d->na, d->nl, d->nd, ni, nl, nd);
    if (d->ni != ni || d->nl != nl || d->nd != nd)
        return;
    for (int i = 0; i < ni; i++)
        CHECK(d->ints[i] == ints[i], "%s: integers[%d] = %d, expected %d", what, i, d->ints[i], ints[i]);
    for (int i = 0; i < nl; i++)
        CHECK(d->large[i] == large[i], "%s: large_counts[%d] = %lld, expected %lld", what, i, d->large[i], large[i]);
    for (int i = 0; i < nd; i++)
        CHECK(d->types[i] == types[i], "%s: datatypes[%d] is not the predefined type passed", what, i);
}

/* Rebuild a type from its large-count contents with the _c constructor. */
static MPI_Datatype rebuild(const struct decoded *d)
{
    const MPI_Count *l = d->large;
    MPI_Datatype t = MPI_DATATYPE_NULL;
    switch (d->combiner) {
    case MPI_COMBINER_CONTIGUOUS: MPI_Type_contiguous_c(l[0], d->types[0], &t); break;
    case MPI_COMBINER_VECTOR: MPI_Type_vector_c(l[0], l[1], l[2], d->types[0], &t); break;
    case MPI_COMBINER_HVECTOR: MPI_Type_create_hvector_c(l[0], l[1], l[2], d->types[0], &t); break;
    case MPI_COMBINER_INDEXED: MPI_Type_indexed_c(l[0], l + 1, l + 1 + l[0], d->types[0], &t); break;
    case MPI_COMBINER_HINDEXED: MPI_Type_create_hindexed_c(l[0], l + 1, l + 1 + l[0], d->types[0], &t); break;
    case MPI_COMBINER_INDEXED_BLOCK: MPI_Type_create_indexed_block_c(l[0], l[1], l + 2, d->types[0], &t); break;
    case MPI_COMBINER_HINDEXED_BLOCK: MPI_Type_create_hindexed_block_c(l[0], l[1], l + 2, d->types[0], &t); break;
    case MPI_COMBINER_STRUCT: MPI_Type_create_struct_c(l[0], l + 1, l + 1 + l[0], d->types, &t); break;
    case MPI_COMBINER_SUBARRAY: {
        int n = d->ints[0];
        MPI_Type_create_subarray_c(n, l, l + n, l + 2 * n, d->ints[1], d->types[0], &t);
        break;
    }
    case MPI_COMBINER_DARRAY: {
        const int *iv = d->ints;
        int n = iv[2];
        MPI_Type_create_darray_c(iv[0], iv[1], n, l, iv + 3, iv + 3 + n, iv + 3 + 2 * n, iv[3 + 3 * n], d->types[0], &t);
        break;
    }
    case MPI_COMBINER_RESIZED: MPI_Type_create_resized_c(d->types[0], l[0], l[1], &t); break;
    }
    return t;
}

/*
 * Everything about one type from a _c constructor with a count beyond
 * INT_MAX: its bounds, its contents, the classic decoding functions
 * refusing it, and a rebuilt copy with the same bounds and contents.
 */
static void check_type(const char *what, MPI_Datatype t, MPI_Count size, MPI_Count lb, MPI_Count extent, MPI_Count true_lb,
                       MPI_Count true_extent, int combiner, int ni, const int *ints, int nl, const MPI_Count *large, int nd,
                       const MPI_Datatype *types)
{
    check_bounds(what, t, size, lb, extent, true_lb, true_extent);
    struct decoded d;
    decode(what, t, &d);
    check_decoded(what, &d, combiner, ni, ints, nl, large, nd, types);

    int a, b, c, comb;
    int rc = MPI_Type_get_envelope(t, &a, &b, &c, &comb);
    CHECK(rc != MPI_SUCCESS, "%s: MPI_Type_get_envelope accepted a type with counts beyond INT_MAX", what);
    int iv[64];
    MPI_Aint av[64];
    MPI_Datatype tv[64];
    rc = MPI_Type_get_contents(t, 64, 64, 64, iv, av, tv);
    CHECK(rc != MPI_SUCCESS, "%s: MPI_Type_get_contents accepted a type with counts beyond INT_MAX", what);

    MPI_Datatype r = rebuild(&d);
    if (CHECK(r != MPI_DATATYPE_NULL, "%s: could not rebuild the type from its contents", what)) {
        char w[128];
        snprintf(w, sizeof w, "%s (rebuilt)", what);
        check_bounds(w, r, size, lb, extent, true_lb, true_extent);
        struct decoded d2;
        decode(w, r, &d2);
        check_decoded(w, &d2, combiner, ni, ints, nl, large, nd, types);
        free_decoded(&d2);
        MPI_Type_free(&r);
    }
    free_decoded(&d);

    /* A duplicate decodes as DUP of the type (no counts of its own). */
    MPI_Datatype dup;
    CHECK_MPI(MPI_Type_dup(t, &dup));
    MPI_Count ni2, na2, nl2, nd2;
    int comb2;
    CHECK_MPI(MPI_Type_get_envelope_c(dup, &ni2, &na2, &nl2, &nd2, &comb2));
    CHECK(comb2 == MPI_COMBINER_DUP && ni2 == 0 && na2 == 0 && nl2 == 0 && nd2 == 1, "%s: dup envelope %d %lld/%lld/%lld/%lld",
          what, comb2, ni2, na2, nl2, nd2);
    check_bounds(what, dup, size, lb, extent, true_lb, true_extent);
    MPI_Type_free(&dup);
}

static void test_constructors(void)
{
    MPI_Datatype t;
    MPI_Datatype byte[] = {MPI_BYTE}, intt[] = {MPI_INT};

    CHECK_MPI(MPI_Type_contiguous_c(BIG, MPI_BYTE, &t));
    {
        MPI_Count l[] = {BIG};
        check_type("contiguous_c", t, BIG, 0, BIG, 0, BIG, MPI_COMBINER_CONTIGUOUS, 0, NULL, 1, l, 1, byte);
    }
    MPI_Type_free(&t);

    CHECK_MPI(MPI_Type_vector_c(2, BIG, BIG + 8, MPI_BYTE, &t));
    {
        MPI_Count l[] = {2, BIG, BIG + 8};
        MPI_Count ext = (BIG + 8) + BIG;
        check_type("vector_c", t, 2 * BIG, 0, ext, 0, ext, MPI_COMBINER_VECTOR, 0, NULL, 3, l, 1, byte);
    }
    MPI_Type_free(&t);

    MPI_Count stride = 3 * BIG;
    CHECK_MPI(MPI_Type_create_hvector_c(2, BIG, stride, MPI_BYTE, &t));
    {
        MPI_Count l[] = {2, BIG, stride};
        check_type("hvector_c", t, 2 * BIG, 0, stride + BIG, 0, stride + BIG, MPI_COMBINER_HVECTOR, 0, NULL, 3, l, 1, byte);
    }
    MPI_Type_free(&t);

    {
        MPI_Count bl[] = {BIG, 1}, d[] = {0, BIG + 100};
        CHECK_MPI(MPI_Type_indexed_c(2, bl, d, MPI_INT, &t));
        MPI_Count l[] = {2, BIG, 1, 0, BIG + 100};
        MPI_Count ext = (BIG + 101) * 4;
        check_type("indexed_c", t, (BIG + 1) * 4, 0, ext, 0, ext, MPI_COMBINER_INDEXED, 0, NULL, 5, l, 1, intt);
        MPI_Type_free(&t);
    }
    {
        MPI_Count bl[] = {1, BIG}, d[] = {2 * BIG, 0};
        CHECK_MPI(MPI_Type_create_hindexed_c(2, bl, d, MPI_BYTE, &t));
        MPI_Count l[] = {2, 1, BIG, 2 * BIG, 0};
        check_type("hindexed_c", t, BIG + 1, 0, 2 * BIG + 1, 0, 2 * BIG + 1, MPI_COMBINER_HINDEXED, 0, NULL, 5, l, 1, byte);
        MPI_Type_free(&t);
    }
    {
        MPI_Count d[] = {0, BIG};
        CHECK_MPI(MPI_Type_create_indexed_block_c(2, BIG, d, MPI_BYTE, &t));
        MPI_Count l[] = {2, BIG, 0, BIG};
        check_type("indexed_block_c", t, 2 * BIG, 0, 2 * BIG, 0, 2 * BIG, MPI_COMBINER_INDEXED_BLOCK, 0, NULL, 4, l, 1, byte);
        MPI_Type_free(&t);
    }
    {
        MPI_Count d[] = {0, BIG + 5};
        CHECK_MPI(MPI_Type_create_hindexed_block_c(2, BIG, d, MPI_BYTE, &t));
        MPI_Count l[] = {2, BIG, 0, BIG + 5};
        MPI_Count ext = 2 * BIG + 5;
        check_type("hindexed_block_c", t, 2 * BIG, 0, ext, 0, ext, MPI_COMBINER_HINDEXED_BLOCK, 0, NULL, 4, l, 1, byte);
        MPI_Type_free(&t);
    }
    {
        /* A struct of bytes only: no alignment padding of the extent. */
        MPI_Count bl[] = {BIG, 2}, d[] = {0, BIG + 8};
        MPI_Datatype ts[] = {MPI_BYTE, MPI_CHAR};
        CHECK_MPI(MPI_Type_create_struct_c(2, bl, d, ts, &t));
        MPI_Count l[] = {2, BIG, 2, 0, BIG + 8};
        MPI_Count ext = BIG + 10;
        check_type("struct_c", t, BIG + 2, 0, ext, 0, ext, MPI_COMBINER_STRUCT, 0, NULL, 5, l, 2, ts);
        MPI_Type_free(&t);
    }
    {
        MPI_Count sizes[] = {BIG, 4}, subsizes[] = {BIG - 1, 2}, starts[] = {1, 1};
        CHECK_MPI(MPI_Type_create_subarray_c(2, sizes, subsizes, starts, MPI_ORDER_C, MPI_BYTE, &t));
        int iv[] = {2, MPI_ORDER_C};
        MPI_Count l[] = {BIG, 4, BIG - 1, 2, 1, 1};
        /* Rows 1..BIG-1, columns 1..2 of a BIG x 4 byte array. */
        check_type("subarray_c", t, (BIG - 1) * 2, 0, BIG * 4, 4 + 1, (BIG - 2) * 4 + 2, MPI_COMBINER_SUBARRAY, 2, iv, 6, l, 1,
                   byte);
        MPI_Type_free(&t);
    }
    {
        MPI_Count gsizes[] = {BIG};
        int distribs[] = {MPI_DISTRIBUTE_BLOCK}, dargs[] = {MPI_DISTRIBUTE_DFLT_DARG}, psizes[] = {1};
        CHECK_MPI(MPI_Type_create_darray_c(1, 0, 1, gsizes, distribs, dargs, psizes, MPI_ORDER_C, MPI_BYTE, &t));
        int iv[] = {1, 0, 1, MPI_DISTRIBUTE_BLOCK, MPI_DISTRIBUTE_DFLT_DARG, 1, MPI_ORDER_C};
        MPI_Count l[] = {BIG};
        check_type("darray_c", t, BIG, 0, BIG, 0, BIG, MPI_COMBINER_DARRAY, 7, iv, 1, l, 1, byte);
        MPI_Type_free(&t);
    }
    CHECK_MPI(MPI_Type_create_resized_c(MPI_INT, -BIG, 3 * BIG, &t));
    {
        MPI_Count l[] = {-BIG, 3 * BIG};
        check_type("resized_c", t, 4, -BIG, 3 * BIG, 0, 4, MPI_COMBINER_RESIZED, 0, NULL, 2, l, 1, intt);
    }
    MPI_Type_free(&t);

    /* Negative counts are errors in the large-count binding too. */
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    t = MPI_DATATYPE_NULL;
    CHECK(MPI_Type_contiguous_c(-1, MPI_BYTE, &t) != MPI_SUCCESS, "MPI_Type_contiguous_c accepted count -1");
    MPI_Count bl[] = {1, -2}, d[] = {0, 8};
    CHECK(MPI_Type_indexed_c(2, bl, d, MPI_BYTE, &t) != MPI_SUCCESS, "MPI_Type_indexed_c accepted blocklength -2");
}

/* Types from the classic constructors decode through the _c functions with integers. */
static void test_classic_decoded_c(void)
{
    MPI_Datatype t;
    CHECK_MPI(MPI_Type_vector(3, 2, 5, MPI_INT, &t));
    struct decoded d;
    decode("classic vector", t, &d);
    CHECK(d.combiner == MPI_COMBINER_VECTOR && d.ni == 3 && d.na == 0 && d.nl == 0 && d.nd == 1,
          "classic vector: envelope_c %d %lld/%lld/%lld/%lld", d.combiner, d.ni, d.na, d.nl, d.nd);
    CHECK(d.ints[0] == 3 && d.ints[1] == 2 && d.ints[2] == 5 && d.types[0] == MPI_INT, "classic vector: contents_c %d %d %d",
          d.ints[0], d.ints[1], d.ints[2]);
    MPI_Type_free(&t);

    MPI_Aint disp[] = {0, 64};
    int bl[] = {1, 3};
    CHECK_MPI(MPI_Type_create_hindexed(2, bl, disp, MPI_DOUBLE, &t));
    decode("classic hindexed", t, &d);
    CHECK(d.combiner == MPI_COMBINER_HINDEXED && d.ni == 3 && d.na == 2 && d.nl == 0 && d.nd == 1,
          "classic hindexed: envelope_c %d %lld/%lld/%lld/%lld", d.combiner, d.ni, d.na, d.nl, d.nd);
    CHECK(d.ints[0] == 2 && d.ints[1] == 1 && d.ints[2] == 3 && d.addrs[0] == 0 && d.addrs[1] == 64,
          "classic hindexed: contents_c");
    MPI_Type_free(&t);

    /* A predefined type is NAMED with nothing to decode. */
    MPI_Count ni, na, nl, nd;
    int comb;
    CHECK_MPI(MPI_Type_get_envelope_c(MPI_DOUBLE, &ni, &na, &nl, &nd, &comb));
    CHECK(comb == MPI_COMBINER_NAMED && ni == 0 && na == 0 && nl == 0 && nd == 0, "MPI_DOUBLE: envelope_c %d", comb);

    /* Small counts through a _c constructor: the contents rebuild the type. */
    CHECK_MPI(MPI_Type_contiguous_c(5, MPI_INT, &t));
    decode("small contiguous_c", t, &d);
    CHECK(d.combiner == MPI_COMBINER_CONTIGUOUS && d.nd == 1 && d.types[0] == MPI_INT && d.ni + d.nl == 1,
          "small contiguous_c: envelope_c %d %lld/%lld/%lld", d.combiner, d.ni, d.nl, d.nd);
    MPI_Count n = d.nl ? d.large[0] : d.ints[0];
    CHECK(n == 5, "small contiguous_c: count %lld", n);
    CHECK(size_c(t) == 20, "small contiguous_c: size %lld", size_c(t));
    MPI_Type_free(&t);
}

static void test_status(void)
{
    MPI_Status st;
    int c = 0;
    MPI_Count cc = 0;
    CHECK_MPI(MPI_Status_set_elements_c(&st, MPI_BYTE, BIG));
    CHECK_MPI(MPI_Get_count(&st, MPI_BYTE, &c));
    CHECK(c == MPI_UNDEFINED, "MPI_Get_count of %lld bytes gave %d, expected MPI_UNDEFINED", BIG, c);
    CHECK_MPI(MPI_Get_elements(&st, MPI_BYTE, &c));
    CHECK(c == MPI_UNDEFINED, "MPI_Get_elements of %lld bytes gave %d, expected MPI_UNDEFINED", BIG, c);
    CHECK_MPI(MPI_Get_count_c(&st, MPI_BYTE, &cc));
    CHECK(cc == BIG, "MPI_Get_count_c gave %lld, expected %lld", cc, BIG);
    CHECK_MPI(MPI_Get_elements_c(&st, MPI_BYTE, &cc));
    CHECK(cc == BIG, "MPI_Get_elements_c gave %lld, expected %lld", cc, BIG);
    CHECK_MPI(MPI_Get_elements_x(&st, MPI_BYTE, &cc));
    CHECK(cc == BIG, "MPI_Get_elements_x gave %lld, expected %lld", cc, BIG);

    /* BIG ints: BIG items of MPI_INT, 4 * BIG bytes, one item of a BIG-int type. */
    CHECK_MPI(MPI_Status_set_elements_c(&st, MPI_INT, BIG));
    CHECK_MPI(MPI_Get_count_c(&st, MPI_INT, &cc));
    CHECK(cc == BIG, "MPI_Get_count_c(MPI_INT) gave %lld, expected %lld", cc, BIG);
    CHECK_MPI(MPI_Get_count_c(&st, MPI_BYTE, &cc));
    CHECK(cc == 4 * BIG, "MPI_Get_count_c(MPI_BYTE) gave %lld, expected %lld", cc, 4 * BIG);
    MPI_Datatype t;
    CHECK_MPI(MPI_Type_contiguous_c(BIG, MPI_INT, &t));
    CHECK_MPI(MPI_Type_commit(&t));
    CHECK_MPI(MPI_Get_count_c(&st, t, &cc));
    CHECK(cc == 1, "MPI_Get_count_c(BIG ints) gave %lld, expected 1", cc);
    CHECK_MPI(MPI_Get_count(&st, t, &c));
    CHECK(c == 1, "MPI_Get_count(BIG ints) gave %d, expected 1", c);
    CHECK_MPI(MPI_Get_elements_c(&st, t, &cc));
    CHECK(cc == BIG, "MPI_Get_elements_c(BIG ints) gave %lld, expected %lld", cc, BIG);
    /* Half of it: not a whole item. */
    CHECK_MPI(MPI_Status_set_elements_c(&st, MPI_INT, BIG / 2));
    CHECK_MPI(MPI_Get_count_c(&st, t, &cc));
    CHECK(cc == MPI_UNDEFINED, "MPI_Get_count_c of half an item gave %lld", cc);
    CHECK_MPI(MPI_Get_elements_c(&st, t, &cc));
    CHECK(cc == BIG / 2, "MPI_Get_elements_c of half an item gave %lld", cc);
    MPI_Type_free(&t);

    CHECK(MPI_Status_set_elements_c(&st, MPI_BYTE, -1) != MPI_SUCCESS, "MPI_Status_set_elements_c accepted -1");
}

static void test_pack(void)
{
    /* Every other int of 16, packed and unpacked with MPI_Count positions. */
    int src[16], dst[8];
    for (int i = 0; i < 16; i++)
        src[i] = 100 + i;
    for (int i = 0; i < 8; i++)
        dst[i] = -1;
    MPI_Datatype vec, every2;
    CHECK_MPI(MPI_Type_vector_c(4, 1, 2, MPI_INT, &vec));
    CHECK_MPI(MPI_Type_create_resized_c(vec, 0, 8 * sizeof(int), &every2));
    CHECK_MPI(MPI_Type_commit(&every2));
    MPI_Type_free(&vec);
    MPI_Count need = 0;
    CHECK_MPI(MPI_Pack_size_c(2, every2, MPI_COMM_SELF, &need));
    CHECK(need >= 32, "MPI_Pack_size_c of 8 ints gave %lld", need);
    char packed[256];
    MPI_Count pos = 3;
    CHECK_MPI(MPI_Pack_c(src, 2, every2, packed, sizeof packed, &pos, MPI_COMM_SELF));
    CHECK(pos > 3 && pos <= 3 + need, "MPI_Pack_c position %lld", pos);
    MPI_Count end = pos;
    pos = 3;
    CHECK_MPI(MPI_Unpack_c(packed, end, &pos, dst, 8, MPI_INT, MPI_COMM_SELF));
    CHECK(pos == end, "MPI_Unpack_c position %lld, expected %lld", pos, end);
    for (int i = 0; i < 8; i++)
        CHECK(dst[i] == 100 + 2 * i, "unpacked[%d] = %d, expected %d", i, dst[i], 100 + 2 * i);
    MPI_Type_free(&every2);

    /* Pack_size: MPI_UNDEFINED where an int cannot hold it. */
    int s = 0;
    CHECK_MPI(MPI_Pack_size(INT_MAX, MPI_INT, MPI_COMM_SELF, &s));
    CHECK(s == MPI_UNDEFINED, "MPI_Pack_size of INT_MAX ints gave %d, expected MPI_UNDEFINED", s);
    CHECK_MPI(MPI_Pack_size_c(BIG, MPI_INT, MPI_COMM_SELF, &need));
    CHECK(need >= 4 * BIG, "MPI_Pack_size_c of %lld ints gave %lld", BIG, need);

    /* Positions beyond INT_MAX: a buffer of BIG + 64 bytes only touched at its end. */
    char *huge = malloc((size_t)BIG + 64);
    if (huge) {
        int v[4] = {1, 2, 3, 4}, w[4] = {0, 0, 0, 0};
        pos = BIG;
        CHECK_MPI(MPI_Pack_c(v, 4, MPI_INT, huge, BIG + 64, &pos, MPI_COMM_SELF));
        CHECK(pos == BIG + 16, "MPI_Pack_c at %lld: position %lld", BIG, pos);
        pos = BIG;
        CHECK_MPI(MPI_Unpack_c(huge, BIG + 64, &pos, w, 4, MPI_INT, MPI_COMM_SELF));
        CHECK(pos == BIG + 16 && w[0] == 1 && w[3] == 4, "MPI_Unpack_c at %lld: position %lld, %d..%d", BIG, pos, w[0], w[3]);
        free(huge);
    }

    /* external32: big-endian 4-byte ints. */
    int x[2] = {0x01020304, -2};
    unsigned char ext[16];
    MPI_Count esize = 0;
    CHECK_MPI(MPI_Pack_external_size_c("external32", 2, MPI_INT, &esize));
    CHECK(esize == 8, "MPI_Pack_external_size_c gave %lld", esize);
    CHECK_MPI(MPI_Pack_external_size_c("external32", BIG, MPI_INT, &esize));
    CHECK(esize == 4 * BIG, "MPI_Pack_external_size_c of %lld ints gave %lld", BIG, esize);
    pos = 0;
    CHECK_MPI(MPI_Pack_external_c("external32", x, 2, MPI_INT, ext, sizeof ext, &pos));
    CHECK(pos == 8 && ext[0] == 1 && ext[1] == 2 && ext[2] == 3 && ext[3] == 4 && ext[4] == 0xff && ext[7] == 0xfe,
          "MPI_Pack_external_c: position %lld, bytes %02x %02x %02x %02x %02x", pos, ext[0], ext[1], ext[2], ext[3], ext[7]);
    int y[2] = {0, 0};
    pos = 0;
    CHECK_MPI(MPI_Unpack_external_c("external32", ext, 8, &pos, y, 2, MPI_INT));
    CHECK(pos == 8 && y[0] == x[0] && y[1] == x[1], "MPI_Unpack_external_c: position %lld, %x %d", pos, y[0], y[1]);
}

/* A large-count user function on MPI_INT or pairs of ints (pair_type):
 * sums them and records the length it was given. */
static MPI_Count last_len = -1;
static MPI_Datatype pair_type = MPI_DATATYPE_NULL;
static void sum_c(void *in, void *inout, MPI_Count *len, MPI_Datatype *dt)
{
    last_len = *len;
    MPI_Count n = *dt == pair_type ? 2 * *len : *len;
    const int *a = in;
    int *b = inout;
    for (MPI_Count i = 0; i < n; i++)
        b[i] += a[i];
}

static void sum_int(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    const int *a = in;
    int *b = inout;
    for (int i = 0; i < *len; i++)
        b[i] += a[i];
}

static void test_ops(void)
{
    enum { N = 1000 };
    static int a[N], b[N];
    for (int i = 0; i < N; i++) {
        a[i] = i;
        b[i] = 2 * i;
    }
    MPI_Op op;
    CHECK_MPI(MPI_Op_create_c(sum_c, 1, &op));
    int commute = 0;
    CHECK_MPI(MPI_Op_commutative(op, &commute));
    CHECK(commute == 1, "MPI_Op_commutative of a commutative MPI_Op_create_c op gave %d", commute);
    CHECK_MPI(MPI_Reduce_local_c(a, b, N, MPI_INT, op));
    CHECK(last_len == N, "the MPI_User_function_c was called with length %lld, expected %d", last_len, N);
    int bad = 0;
    for (int i = 0; i < N; i++)
        bad += b[i] != 3 * i;
    CHECK(bad == 0, "MPI_Reduce_local_c with a user op: %d wrong values", bad);
    /* Through a derived type: the function sees the number of items. */
    CHECK_MPI(MPI_Type_contiguous_c(2, MPI_INT, &pair_type));
    CHECK_MPI(MPI_Type_commit(&pair_type));
    CHECK_MPI(MPI_Reduce_local_c(a, b, N / 2, pair_type, op));
    CHECK(last_len == N / 2, "the MPI_User_function_c was called with length %lld, expected %d", last_len, N / 2);
    bad = 0;
    for (int i = 0; i < N; i++)
        bad += b[i] != 4 * i;
    CHECK(bad == 0, "MPI_Reduce_local_c with a user op on pairs: %d wrong values", bad);
    MPI_Type_free(&pair_type);
    CHECK_MPI(MPI_Op_free(&op));

    /* A classic user op through MPI_Reduce_local_c. */

    CHECK_MPI(MPI_Op_create(sum_int, 1, &op));
    CHECK_MPI(MPI_Reduce_local_c(a, b, N, MPI_INT, op));
    bad = 0;
    for (int i = 0; i < N; i++)
        bad += b[i] != 5 * i;
    CHECK(bad == 0, "MPI_Reduce_local_c with an MPI_Op_create op: %d wrong values", bad);
    CHECK_MPI(MPI_Op_free(&op));

    CHECK_MPI(MPI_Reduce_local_c(b, a, N, MPI_INT, MPI_MAX));
    bad = 0;
    for (int i = 0; i < N; i++)
        bad += a[i] != 5 * i;
    CHECK(bad == 0, "MPI_Reduce_local_c(MPI_MAX): %d wrong values", bad);
}

int main(int argc, char **argv)
{
    test_init(&argc, &argv, NULL);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    test_constructors();
    test_classic_decoded_c();
    test_status();
    test_pack();
    test_ops();
    MPI_Finalize();
    return test_finish();
}
