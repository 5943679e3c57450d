/* gridmpi-test: ranks=1 timeout=30 */
/*
 * MPI_Type_get_envelope / MPI_Type_get_contents for every combiner the C
 * constructors produce: the number of integers, addresses and datatypes and
 * their values are those of the constructor call (MPI 4.1 table of
 * combiners); derived types returned by get_contents are new handles that are
 * freed; predefined ones are returned as-is. Each type is rebuilt from its
 * contents and must have the same size and extent.
 */
#include "testutil.h"

struct expect {
    int combiner;
    int ni, na, nd;
    const int *ints;
    const MPI_Aint *addrs;
    const MPI_Datatype *types;
    const char *name;
};

static int is_predefined(MPI_Datatype t)
{
    int ni, na, nd, comb;
    MPI_Type_get_envelope(t, &ni, &na, &nd, &comb);
    return comb == MPI_COMBINER_NAMED;
}

static MPI_Datatype rebuild(int comb, const int *iv, const MPI_Aint *av, const MPI_Datatype *tv)
{
    MPI_Datatype t = MPI_DATATYPE_NULL;
    switch (comb) {
    case MPI_COMBINER_DUP: MPI_Type_dup(tv[0], &t); break;
    case MPI_COMBINER_CONTIGUOUS: MPI_Type_contiguous(iv[0], tv[0], &t); break;
    case MPI_COMBINER_VECTOR: MPI_Type_vector(iv[0], iv[1], iv[2], tv[0], &t); break;
    case MPI_COMBINER_HVECTOR: MPI_Type_create_hvector(iv[0], iv[1], av[0], tv[0], &t); break;
    case MPI_COMBINER_INDEXED: MPI_Type_indexed(iv[0], iv + 1, iv + 1 + iv[0], tv[0], &t); break;
    case MPI_COMBINER_HINDEXED: MPI_Type_create_hindexed(iv[0], iv + 1, av, tv[0], &t); break;
    case MPI_COMBINER_INDEXED_BLOCK: MPI_Type_create_indexed_block(iv[0], iv[1], iv + 2, tv[0], &t); break;
    case MPI_COMBINER_HINDEXED_BLOCK: MPI_Type_create_hindexed_block(iv[0], iv[1], av, tv[0], &t); break;
    case MPI_COMBINER_STRUCT: MPI_Type_create_struct(iv[0], iv + 1, av, tv, &t); break;
    case MPI_COMBINER_SUBARRAY: {
        int nd = iv[0];
        MPI_Type_create_subarray(nd, iv + 1, iv + 1 + nd, iv + 1 + 2 * nd, iv[1 + 3 * nd], tv[0], &t);
        break;
    }
    case MPI_COMBINER_DARRAY: {
        int nd = iv[2];
        MPI_Type_create_darray(iv[0], iv[1], nd, iv + 3, iv + 3 + nd, iv + 3 + 2 * nd, iv + 3 + 3 * nd,
                               iv[3 + 4 * nd], tv[0], &t);
        break;
    }
    case MPI_COMBINER_RESIZED: MPI_Type_create_resized(tv[0], av[0], av[1], &t); break;
    }
    return t;
}

static void check_type(MPI_Datatype t, const struct expect *e)
{
    int ni = -1, na = -1, nd = -1, comb = -1;
    CHECK_MPI(MPI_Type_get_envelope(t, &ni, &na, &nd, &comb));
    if (!CHECK(comb == e->combiner && ni == e->ni && na == e->na && nd == e->nd,
               "%s: envelope combiner %d (%d ints, %d addrs, %d types), expected %d (%d, %d, %d)", e->name, comb, ni,
               na, nd, e->combiner, e->ni, e->na, e->nd))
        return;
    int *iv = tu_malloc(sizeof(int) * (ni + 1));
    MPI_Aint *av = tu_malloc(sizeof(MPI_Aint) * (na + 1));
    MPI_Datatype *tv = tu_malloc(sizeof(MPI_Datatype) * (nd + 1));
    CHECK_MPI(MPI_Type_get_contents(t, ni, na, nd, iv, av, tv));
    for (int i = 0; i < ni; i++)
        CHECK(iv[i] == e->ints[i], "%s: integer %d is %d, expected %d", e->name, i, iv[i], e->ints[i]);
    for (int i = 0; i < na; i++)
        CHECK(av[i] == e->addrs[i], "%s: address %d is %ld, expected %ld", e->name, i, (long)av[i], (long)e->addrs[i]);
    for (int i = 0; i < nd; i++) {
        if (is_predefined(e->types[i]))
            CHECK(tv[i] == e->types[i], "%s: datatype %d is not the predefined type passed in", e->name, i);
        else {
            /* A derived type comes back as a handle to an equivalent type. */
            int s1, s2;
            MPI_Type_size(tv[i], &s1);
            MPI_Type_size(e->types[i], &s2);
            CHECK(s1 == s2, "%s: datatype %d has size %d, expected %d", e->name, i, s1, s2);
        }
    }
    MPI_Datatype r = rebuild(comb, iv, av, tv);
    if (CHECK(r != MPI_DATATYPE_NULL, "%s: could not rebuild", e->name)) {
        int s1, s2;
        MPI_Aint lb1, ext1, lb2, ext2;
        MPI_Type_size(t, &s1);
        MPI_Type_size(r, &s2);
        MPI_Type_get_extent(t, &lb1, &ext1);
        MPI_Type_get_extent(r, &lb2, &ext2);
        CHECK(s1 == s2 && lb1 == lb2 && ext1 == ext2, "%s: rebuilt type differs (size %d/%d lb %ld/%ld extent %ld/%ld)",
              e->name, s1, s2, (long)lb1, (long)lb2, (long)ext1, (long)ext2);
        MPI_Type_free(&r);
    }
    for (int i = 0; i < nd; i++)
        if (!is_predefined(tv[i]))
            MPI_Type_free(&tv[i]);
    free(iv);
    free(av);
    free(tv);
}

int main(int argc, char **argv)
{
    test_init(&argc, &argv, NULL);
    MPI_Datatype t, inner;
    MPI_Type_vector(2, 1, 3, MPI_SHORT, &inner); /* a derived old type */

    {
        MPI_Type_dup(MPI_DOUBLE, &t);
        MPI_Datatype ty[] = {MPI_DOUBLE};
        struct expect e = {MPI_COMBINER_DUP, 0, 0, 1, NULL, NULL, ty, "dup"};
        check_type(t, &e);
        MPI_Type_free(&t);
    }
    {
        MPI_Type_contiguous(5, inner, &t);
        int iv[] = {5};
        MPI_Datatype ty[] = {inner};
        struct expect e = {MPI_COMBINER_CONTIGUOUS, 1, 0, 1, iv, NULL, ty, "contiguous of derived"};
        check_type(t, &e);
        MPI_Type_free(&t);
    }
    {
        MPI_Type_vector(3, 2, -4, MPI_INT, &t);
        int iv[] = {3, 2, -4};
        MPI_Datatype ty[] = {MPI_INT};
        struct expect e = {MPI_COMBINER_VECTOR, 3, 0, 1, iv, NULL, ty, "vector"};
        check_type(t, &e);
        MPI_Type_free(&t);
    }
    {
        MPI_Type_create_hvector(4, 1, 100, MPI_CHAR, &t);
        int iv[] = {4, 1};
        MPI_Aint av[] = {100};
        MPI_Datatype ty[] = {MPI_CHAR};
        struct expect e = {MPI_COMBINER_HVECTOR, 2, 1, 1, iv, av, ty, "hvector"};
        check_type(t, &e);
        MPI_Type_free(&t);
    }
    {
        int bl[] = {1, 3, 2}, d[] = {7, 0, 20};
        MPI_Type_indexed(3, bl, d, MPI_FLOAT, &t);
        int iv[] = {3, 1, 3, 2, 7, 0, 20};
        MPI_Datatype ty[] = {MPI_FLOAT};
        struct expect e = {MPI_COMBINER_INDEXED, 7, 0, 1, iv, NULL, ty, "indexed"};
        check_type(t, &e);
        MPI_Type_free(&t);
    }
    {
        int bl[] = {2, 1};
        MPI_Aint d[] = {64, -8};
        MPI_Type_create_hindexed(2, bl, d, inner, &t);
        int iv[] = {2, 2, 1};
        MPI_Datatype ty[] = {inner};
        struct expect e = {MPI_COMBINER_HINDEXED, 3, 2, 1, iv, d, ty, "hindexed"};
        check_type(t, &e);
        MPI_Type_free(&t);
    }
    {
        int d[] = {9, 3, 0, 12};
        MPI_Type_create_indexed_block(4, 2, d, MPI_LONG, &t);
        int iv[] = {4, 2, 9, 3, 0, 12};
        MPI_Datatype ty[] = {MPI_LONG};
        struct expect e = {MPI_COMBINER_INDEXED_BLOCK, 6, 0, 1, iv, NULL, ty, "indexed_block"};
        check_type(t, &e);
        MPI_Type_free(&t);
    }
    {
        MPI_Aint d[] = {16, 0, 48};
        MPI_Type_create_hindexed_block(3, 2, d, MPI_INT, &t);
        int iv[] = {3, 2};
        MPI_Datatype ty[] = {MPI_INT};
        struct expect e = {MPI_COMBINER_HINDEXED_BLOCK, 2, 3, 1, iv, d, ty, "hindexed_block"};
        check_type(t, &e);
        MPI_Type_free(&t);
    }
    {
        int bl[] = {1, 2, 1};
        MPI_Aint d[] = {0, 8, 32};
        MPI_Datatype ty[] = {MPI_CHAR, MPI_DOUBLE, inner};
        MPI_Type_create_struct(3, bl, d, ty, &t);
        int iv[] = {3, 1, 2, 1};
        struct expect e = {MPI_COMBINER_STRUCT, 4, 3, 3, iv, d, ty, "struct"};
        check_type(t, &e);
        MPI_Type_free(&t);
    }
    {
        int sz[] = {10, 20}, sub[] = {3, 4}, st[] = {1, 2};
        MPI_Type_create_subarray(2, sz, sub, st, MPI_ORDER_FORTRAN, MPI_DOUBLE, &t);
        int iv[] = {2, 10, 20, 3, 4, 1, 2, MPI_ORDER_FORTRAN};
        MPI_Datatype ty[] = {MPI_DOUBLE};
        struct expect e = {MPI_COMBINER_SUBARRAY, 8, 0, 1, iv, NULL, ty, "subarray"};
        check_type(t, &e);
        MPI_Type_free(&t);
    }
    {
        int g[] = {8, 9}, dist[] = {MPI_DISTRIBUTE_BLOCK, MPI_DISTRIBUTE_CYCLIC};
        int darg[] = {MPI_DISTRIBUTE_DFLT_DARG, 2}, ps[] = {2, 2};
        MPI_Type_create_darray(4, 3, 2, g, dist, darg, ps, MPI_ORDER_C, MPI_INT, &t);
        int iv[] = {4, 3, 2, 8, 9, MPI_DISTRIBUTE_BLOCK, MPI_DISTRIBUTE_CYCLIC, MPI_DISTRIBUTE_DFLT_DARG, 2, 2, 2, MPI_ORDER_C};
        MPI_Datatype ty[] = {MPI_INT};
        struct expect e = {MPI_COMBINER_DARRAY, 12, 0, 1, iv, NULL, ty, "darray"};
        check_type(t, &e);
        MPI_Type_free(&t);
    }
    {
        MPI_Type_create_resized(inner, -4, 40, &t);
        MPI_Aint av[] = {-4, 40};
        MPI_Datatype ty[] = {inner};
        struct expect e = {MPI_COMBINER_RESIZED, 0, 2, 1, NULL, av, ty, "resized"};
        check_type(t, &e);
        MPI_Type_free(&t);
    }
    /* Contents of a committed type, and of a type whose old type was freed. */
    {
        MPI_Datatype v;
        MPI_Type_vector(2, 2, 5, MPI_INT, &v);
        MPI_Type_contiguous(3, v, &t);
        MPI_Type_commit(&t);
        MPI_Type_free(&v);
        int ni, na, nd, comb;
        MPI_Type_get_envelope(t, &ni, &na, &nd, &comb);
        CHECK(comb == MPI_COMBINER_CONTIGUOUS && ni == 1 && nd == 1, "envelope after freeing the old type");
        int iv[1];
        MPI_Aint av[1];
        MPI_Datatype tv[1];
        CHECK_MPI(MPI_Type_get_contents(t, 1, 0, 1, iv, av, tv));
        int ni2, na2, nd2, comb2;
        MPI_Type_get_envelope(tv[0], &ni2, &na2, &nd2, &comb2);
        CHECK(comb2 == MPI_COMBINER_VECTOR, "the old type (freed by the user) still describes a vector: combiner %d", comb2);
        MPI_Type_free(&tv[0]);
        MPI_Type_free(&t);
    }
    MPI_Type_free(&inner);
    MPI_Finalize();
    return test_finish();
}
