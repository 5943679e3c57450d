/* gridmpi-test: ranks=1,2 timeout=30 */
/*
 * Predefined datatypes: for every C basic type and the pair types, size and
 * extent agree with the C compiler (pairs: size = sum of the members, extent
 * = sizeof the C struct, true extent ends after the int), lb 0, combiner
 * MPI_COMBINER_NAMED, the predefined name ("MPI_INT"...); each is sent to the
 * next rank and arrives bit-identical; Type_match_size; Type_get_value_index.
 */
#include "testutil.h"
#include <complex.h>
#include <stdbool.h>
#include <wchar.h>

struct tinfo {
    MPI_Datatype type;
    const char *name;
    const char *alt_name; /* an equivalent alias's name, or NULL */
    size_t size;          /* MPI_Type_size */
    size_t extent;        /* sizeof the C type */
    size_t true_extent;
};

#define BASIC(t, ctype) {t, #t, NULL, sizeof(ctype), sizeof(ctype), sizeof(ctype)}
#define ALIAS(t, ctype, alt) {t, #t, alt, sizeof(ctype), sizeof(ctype), sizeof(ctype)}
#define PAIR(t, a, b)                                                                             \
    {t, #t, NULL, sizeof(a) + sizeof(b), sizeof(struct { a x; b y; }),                            \
     offsetof(struct { a x; b y; }, y) + sizeof(b)}

int main(int argc, char **argv)
{
    int size;
    int rank = test_init(&argc, &argv, &size);
    struct tinfo types[] = {
        BASIC(MPI_CHAR, char),
        BASIC(MPI_SIGNED_CHAR, signed char),
        BASIC(MPI_UNSIGNED_CHAR, unsigned char),
        BASIC(MPI_BYTE, unsigned char),
        BASIC(MPI_SHORT, short),
        BASIC(MPI_UNSIGNED_SHORT, unsigned short),
        BASIC(MPI_INT, int),
        BASIC(MPI_UNSIGNED, unsigned),
        BASIC(MPI_LONG, long),
        BASIC(MPI_UNSIGNED_LONG, unsigned long),
        ALIAS(MPI_LONG_LONG_INT, long long, "MPI_LONG_LONG"),
        ALIAS(MPI_LONG_LONG, long long, "MPI_LONG_LONG_INT"),
        BASIC(MPI_UNSIGNED_LONG_LONG, unsigned long long),
        BASIC(MPI_FLOAT, float),
        BASIC(MPI_DOUBLE, double),
        BASIC(MPI_LONG_DOUBLE, long double),
        BASIC(MPI_WCHAR, wchar_t),
        BASIC(MPI_C_BOOL, bool),
        BASIC(MPI_INT8_T, int8_t),
        BASIC(MPI_INT16_T, int16_t),
        BASIC(MPI_INT32_T, int32_t),
        BASIC(MPI_INT64_T, int64_t),
        BASIC(MPI_UINT8_T, uint8_t),
        BASIC(MPI_UINT16_T, uint16_t),
        BASIC(MPI_UINT32_T, uint32_t),
        BASIC(MPI_UINT64_T, uint64_t),
        ALIAS(MPI_C_COMPLEX, float _Complex, "MPI_C_FLOAT_COMPLEX"),
        ALIAS(MPI_C_FLOAT_COMPLEX, float _Complex, "MPI_C_COMPLEX"),
        BASIC(MPI_C_DOUBLE_COMPLEX, double _Complex),
        BASIC(MPI_C_LONG_DOUBLE_COMPLEX, long double _Complex),
        BASIC(MPI_AINT, MPI_Aint),
        BASIC(MPI_OFFSET, MPI_Offset),
        BASIC(MPI_COUNT, MPI_Count),
        PAIR(MPI_FLOAT_INT, float, int),
        PAIR(MPI_DOUBLE_INT, double, int),
        PAIR(MPI_LONG_INT, long, int),
        PAIR(MPI_2INT, int, int),
        PAIR(MPI_SHORT_INT, short, int),
        PAIR(MPI_LONG_DOUBLE_INT, long double, int),
    };
    int ntypes = (int)(sizeof types / sizeof types[0]);
    int right = (rank + 1) % size, left = (rank + size - 1) % size;

    for (int t = 0; t < ntypes; t++) {
        struct tinfo *ti = &types[t];
        int sz = -1;
        MPI_Count szx = -1;
        MPI_Aint lb = -1, ext = -1, tlb = -1, text = -1;
        MPI_Count lbx = -1, extx = -1, tlbx = -1, textx = -1;
        CHECK_MPI(MPI_Type_size(ti->type, &sz));
        CHECK(sz == (int)ti->size, "%s: size %d, expected %zu", ti->name, sz, ti->size);
        CHECK_MPI(MPI_Type_size_x(ti->type, &szx));
        CHECK(szx == (MPI_Count)ti->size, "%s: size_x %lld", ti->name, (long long)szx);
        CHECK_MPI(MPI_Type_get_extent(ti->type, &lb, &ext));
        CHECK(lb == 0 && ext == (MPI_Aint)ti->extent, "%s: lb %ld extent %ld, expected 0 and %zu", ti->name,
              (long)lb, (long)ext, ti->extent);
        CHECK_MPI(MPI_Type_get_extent_x(ti->type, &lbx, &extx));
        CHECK(lbx == 0 && extx == (MPI_Count)ti->extent, "%s: extent_x %lld", ti->name, (long long)extx);
        CHECK_MPI(MPI_Type_get_true_extent(ti->type, &tlb, &text));
        CHECK(tlb == 0 && text == (MPI_Aint)ti->true_extent, "%s: true lb %ld true extent %ld, expected 0 and %zu",
              ti->name, (long)tlb, (long)text, ti->true_extent);
        CHECK_MPI(MPI_Type_get_true_extent_x(ti->type, &tlbx, &textx));
        CHECK(tlbx == 0 && textx == (MPI_Count)ti->true_extent, "%s: true extent_x %lld", ti->name, (long long)textx);

        int ni, na, nd, comb;
        CHECK_MPI(MPI_Type_get_envelope(ti->type, &ni, &na, &nd, &comb));
        CHECK(comb == MPI_COMBINER_NAMED && ni == 0 && na == 0 && nd == 0,
              "%s: envelope combiner %d (%d,%d,%d), expected MPI_COMBINER_NAMED", ti->name, comb, ni, na, nd);

        char name[MPI_MAX_OBJECT_NAME];
        int len = -1;
        CHECK_MPI(MPI_Type_get_name(ti->type, name, &len));
        CHECK(strcmp(name, ti->name) == 0 || (ti->alt_name && strcmp(name, ti->alt_name) == 0),
              "%s: Type_get_name gave \"%s\"", ti->name, name);
        CHECK(len == (int)strlen(name), "%s: name length %d for \"%s\"", ti->name, len, name);

        /* Ring transfer of 7 elements, bytes compared. */
        size_t nbytes = 7 * ti->extent;
        unsigned char *out = tu_malloc(nbytes), *in = tu_malloc(nbytes);
        fill_pattern(out, nbytes, t + 1);
        /* Keep values meaningful where the type has invalid bit patterns or padding. */
        if (ti->type == MPI_C_BOOL)
            for (size_t i = 0; i < nbytes; i++)
                out[i] &= 1;
        if (ti->type == MPI_FLOAT || ti->type == MPI_DOUBLE || ti->type == MPI_LONG_DOUBLE ||
            ti->type == MPI_C_COMPLEX || ti->type == MPI_C_FLOAT_COMPLEX || ti->type == MPI_C_DOUBLE_COMPLEX ||
            ti->type == MPI_C_LONG_DOUBLE_COMPLEX || ti->size != ti->extent) {
            /* Padding bytes are not transferred: compare values, not memory. */
            memset(out, 0, nbytes);
            for (int k = 0; k < 7; k++) {
                unsigned char *e = out + k * ti->extent;
                if (ti->type == MPI_FLOAT) *(float *)e = k * 1.5f - 3;
                else if (ti->type == MPI_DOUBLE) *(double *)e = k * 2.25 - 1e10;
                else if (ti->type == MPI_LONG_DOUBLE) *(long double *)e = k * 0.5L - 7;
                else if (ti->type == MPI_C_COMPLEX || ti->type == MPI_C_FLOAT_COMPLEX) *(float _Complex *)e = k + 2.0f * I;
                else if (ti->type == MPI_C_DOUBLE_COMPLEX) *(double _Complex *)e = -k + 0.5 * I;
                else if (ti->type == MPI_C_LONG_DOUBLE_COMPLEX) *(long double _Complex *)e = k * 3.0L - 1.0L * I;
                else if (ti->type == MPI_FLOAT_INT) { struct { float x; int y; } *p = (void *)e; p->x = k + 0.5f; p->y = -k; }
                else if (ti->type == MPI_DOUBLE_INT) { struct { double x; int y; } *p = (void *)e; p->x = k + 0.5; p->y = -k; }
                else if (ti->type == MPI_LONG_INT) { struct { long x; int y; } *p = (void *)e; p->x = 1L << 40 | k; p->y = -k; }
                else if (ti->type == MPI_SHORT_INT) { struct { short x; int y; } *p = (void *)e; p->x = (short)(k - 3); p->y = 1 << 20 | k; }
                else if (ti->type == MPI_LONG_DOUBLE_INT) { struct { long double x; int y; } *p = (void *)e; p->x = k / 4.0L; p->y = k * 7; }
            }
        }
        memset(in, 0, nbytes);
        CHECK_MPI(MPI_Sendrecv(out, 7, ti->type, right, t, in, 7, ti->type, left, t, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        int bad = 0;
        for (int k = 0; k < 7 && !bad; k++) {
            unsigned char *a = out + k * ti->extent, *b = in + k * ti->extent;
            if (ti->type == MPI_LONG_DOUBLE || ti->type == MPI_C_LONG_DOUBLE_COMPLEX) {
                /* x87 long double has 6 padding bytes: compare values. */
                if (ti->type == MPI_LONG_DOUBLE)
                    bad = *(long double *)a != *(long double *)b;
                else
                    bad = *(long double _Complex *)a != *(long double _Complex *)b;
            } else if (ti->type == MPI_LONG_DOUBLE_INT) {
                struct { long double x; int y; } *p = (void *)a, *q = (void *)b;
                bad = p->x != q->x || p->y != q->y;
            } else if (ti->size != ti->extent) {
                /* pair with padding: compare the two members */
                size_t off = ti->true_extent - sizeof(int);
                size_t first = ti->size - sizeof(int);
                bad = memcmp(a, b, first) != 0 || memcmp(a + off, b + off, sizeof(int)) != 0;
            } else {
                bad = memcmp(a, b, ti->extent) != 0;
            }
        }
        CHECK(!bad, "%s: data changed in transfer", ti->name);
        free(out);
        free(in);
    }

    /* MPI_PACKED, MPI_BYTE sizes. */
    int sz;
    MPI_Type_size(MPI_PACKED, &sz);
    CHECK_INT_EQ(sz, 1);

    /* Type_match_size. */
    MPI_Datatype m;
    CHECK_MPI(MPI_Type_match_size(MPI_TYPECLASS_INTEGER, 4, &m));
    MPI_Type_size(m, &sz);
    CHECK(sz == 4, "Type_match_size(INTEGER, 4) gave a type of size %d", sz);
    CHECK_MPI(MPI_Type_match_size(MPI_TYPECLASS_REAL, 8, &m));
    MPI_Type_size(m, &sz);
    CHECK(sz == 8, "Type_match_size(REAL, 8) gave a type of size %d", sz);
    CHECK_MPI(MPI_Type_match_size(MPI_TYPECLASS_COMPLEX, 16, &m));
    MPI_Type_size(m, &sz);
    CHECK(sz == 16, "Type_match_size(COMPLEX, 16) gave a type of size %d", sz);

    /* Type_get_value_index (MPI 4.1): the predefined pair types. Open MPI
     * 5.0.11 does not have it. */
#if !TU_PEER_OPENMPI
    MPI_Datatype p = MPI_DATATYPE_NULL;
    CHECK_MPI(MPI_Type_get_value_index(MPI_DOUBLE, MPI_INT, &p));
    CHECK(p == MPI_DOUBLE_INT, "Type_get_value_index(DOUBLE, INT) is not MPI_DOUBLE_INT");
    CHECK_MPI(MPI_Type_get_value_index(MPI_INT, MPI_INT, &p));
    CHECK(p == MPI_2INT, "Type_get_value_index(INT, INT) is not MPI_2INT");
    CHECK_MPI(MPI_Type_get_value_index(MPI_SHORT, MPI_INT, &p));
    CHECK(p == MPI_SHORT_INT, "Type_get_value_index(SHORT, INT) is not MPI_SHORT_INT");
#endif

    MPI_Finalize();
    return test_finish();
}
