/* gridmpi-test: ranks=1,2,3,8 timeout=60 */
/*
 * Every predefined reduction operation on every C type class it is defined
 * for (MPI 4.1, 6.9.2): MAX/MIN (C integer, floating point, multi-language
 * types), SUM/PROD (also complex), LAND/LOR/LXOR (C integer, logical),
 * BAND/BOR/BXOR (C integer, byte, multi-language types), MINLOC/MAXLOC on
 * every pair type (ties resolve to the smallest index). Each through
 * MPI_Allreduce, and for a few types also MPI_Reduce (root = last rank) and
 * MPI_Allreduce with MPI_IN_PLACE, with 11 elements (not a power of two);
 * inputs are chosen so the results are exact; plus a zero-count Allreduce
 * and a large one.
 */
#include "testutil.h"
#include <complex.h>
#include <stdbool.h>

#define CNT 11
static int g_rank, g_size;

enum { SUM, PROD, MAX, MIN, LAND, LOR, LXOR, BAND, BOR, BXOR, NOPS };
static const MPI_Op ops[NOPS] = {MPI_SUM, MPI_PROD, MPI_MAX, MPI_MIN, MPI_LAND, MPI_LOR, MPI_LXOR, MPI_BAND, MPI_BOR, MPI_BXOR};
static const char *opnames[NOPS] = {"SUM", "PROD", "MAX", "MIN", "LAND", "LOR", "LXOR", "BAND", "BOR", "BXOR"};

/* Input of rank r, element i, for op; fits every integer type used. */
static long long input(int op, int r, int i, int is_signed)
{
    switch (op) {
    case SUM: return (r + i) % 3;
    case PROD: return ((r + i) % g_size == 0) ? 2 : 1;
    case MAX:
    case MIN: return is_signed ? (r * 7 + i) % 11 - 5 : (r * 7 + i) % 11;
    case LAND: return (r + i) % 4 != 0 || i % 2;
    case LOR: return (r + i) % 5 == 0 && i % 3;
    case LXOR: return (r * 3 + i) % 2;
    default: return (1LL << ((r + i) % 7)) | (i & 1) | (r == 0 ? 0x40 : 0);
    }
}

static long long combine(int op, long long a, long long b)
{
    switch (op) {
    case SUM: return a + b;
    case PROD: return a * b;
    case MAX: return a > b ? a : b;
    case MIN: return a < b ? a : b;
    case LAND: return (a != 0) && (b != 0);
    case LOR: return (a != 0) || (b != 0);
    case LXOR: return (a != 0) != (b != 0);
    case BAND: return a & b;
    case BOR: return a | b;
    default: return a ^ b;
    }
}

static long long expected(int op, int i, int is_signed)
{
    long long acc = input(op, 0, i, is_signed);
    for (int r = 1; r < g_size; r++)
        acc = combine(op, acc, input(op, r, i, is_signed));
    return acc;
}

#define DEF_TEST(fname, T, CONV_IN, CONV_OUT)                                                                  \
    static void fname(MPI_Datatype dt, const char *tname, const int *opset, int nops, int is_signed)         \
    {                                                                                                        \
        /* Reduce and IN_PLACE for a few types only, to keep the run short. */                               \
        int all_variants = dt == MPI_INT || dt == MPI_DOUBLE || dt == MPI_UINT8_T || dt == MPI_C_BOOL;         \
        T in[CNT], out[CNT], inplace[CNT];                                                                  \
        for (int k = 0; k < nops; k++) {                                                                     \
            int op = opset[k];                                                                               \
            for (int i = 0; i < CNT; i++) {                                                                  \
                in[i] = CONV_IN(input(op, g_rank, i, is_signed));                                            \
                out[i] = CONV_IN(99);                                                                         \
                inplace[i] = in[i];                                                                          \
            }                                                                                                \
            for (int variant = all_variants ? 0 : 1; variant < (all_variants ? 3 : 2); variant++) {          \
                const char *vname = variant == 0 ? "Reduce" : variant == 1 ? "Allreduce" : "Allreduce IN_PLACE"; \
                T *res = out;                                                                                \
                if (variant == 0)                                                                            \
                    CHECK_MPI(MPI_Reduce(in, out, CNT, dt, ops[op], g_size - 1, MPI_COMM_WORLD));            \
                else if (variant == 1)                                                                       \
                    CHECK_MPI(MPI_Allreduce(in, out, CNT, dt, ops[op], MPI_COMM_WORLD));                     \
                else {                                                                                       \
                    CHECK_MPI(MPI_Allreduce(MPI_IN_PLACE, inplace, CNT, dt, ops[op], MPI_COMM_WORLD));       \
                    res = inplace;                                                                           \
                }                                                                                            \
                if (variant == 0 && g_rank != g_size - 1)                                                    \
                    continue;                                                                                \
                for (int i = 0; i < CNT; i++) {                                                              \
                    long long e = expected(op, i, is_signed);                                                \
                    long long g = CONV_OUT(res[i]);                                                          \
                    if (!CHECK(g == e, "%s %s on %s: element %d = %lld, expected %lld", vname, opnames[op],   \
                               tname, i, g, e))                                                              \
                        break;                                                                               \
                }                                                                                            \
            }                                                                                                \
        }                                                                                                    \
    }

#define ID(x) (x)
#define TO_LL(x) ((long long)(x))
#define BOOL_IN(x) ((bool)((x) != 0))
#define CPLX_IN(x) ((x) + 0.0 * I)
#define CPLX_OUT(x) ((long long)creal(x) + (cimag(x) != 0.0 ? 1000000 : 0))

DEF_TEST(t_schar, signed char, ID, TO_LL)
DEF_TEST(t_uchar, unsigned char, ID, TO_LL)
DEF_TEST(t_short, short, ID, TO_LL)
DEF_TEST(t_ushort, unsigned short, ID, TO_LL)
DEF_TEST(t_int, int, ID, TO_LL)
DEF_TEST(t_uint, unsigned, ID, TO_LL)
DEF_TEST(t_long, long, ID, TO_LL)
DEF_TEST(t_ulong, unsigned long, ID, TO_LL)
DEF_TEST(t_ll, long long, ID, TO_LL)
DEF_TEST(t_ull, unsigned long long, ID, TO_LL)
DEF_TEST(t_i8, int8_t, ID, TO_LL)
DEF_TEST(t_i16, int16_t, ID, TO_LL)
DEF_TEST(t_i32, int32_t, ID, TO_LL)
DEF_TEST(t_i64, int64_t, ID, TO_LL)
DEF_TEST(t_u8, uint8_t, ID, TO_LL)
DEF_TEST(t_u16, uint16_t, ID, TO_LL)
DEF_TEST(t_u32, uint32_t, ID, TO_LL)
DEF_TEST(t_u64, uint64_t, ID, TO_LL)
DEF_TEST(t_aint, MPI_Aint, ID, TO_LL)
DEF_TEST(t_offset, MPI_Offset, ID, TO_LL)
DEF_TEST(t_count, MPI_Count, ID, TO_LL)
DEF_TEST(t_float, float, ID, TO_LL)
DEF_TEST(t_double, double, ID, TO_LL)
DEF_TEST(t_ldouble, long double, ID, TO_LL)
DEF_TEST(t_bool, bool, BOOL_IN, TO_LL)
DEF_TEST(t_byte, unsigned char, ID, TO_LL)
DEF_TEST(t_fcplx, float _Complex, CPLX_IN, CPLX_OUT)
DEF_TEST(t_dcplx, double _Complex, CPLX_IN, CPLX_OUT)
DEF_TEST(t_ldcplx, long double _Complex, CPLX_IN, CPLX_OUT)

/* MINLOC / MAXLOC on pair types. */
#define DEF_LOC(fname, VT)                                                                                    \
    static void fname(MPI_Datatype dt, const char *tname)                                                     \
    {                                                                                                         \
        struct { VT v; int idx; } in[CNT], out[CNT];                                                          \
        for (int which = 0; which < 2; which++) {                                                             \
            MPI_Op op = which ? MPI_MAXLOC : MPI_MINLOC;                                                      \
            for (int i = 0; i < CNT; i++) {                                                                   \
                in[i].v = (VT)((g_rank * 3 + i) % 5);                                                         \
                in[i].idx = (g_rank * 5 + i) % 7 + 10 * g_rank;                                              \
            }                                                                                                 \
            CHECK_MPI(MPI_Allreduce(in, out, CNT, dt, op, MPI_COMM_WORLD));                                   \
            for (int i = 0; i < CNT; i++) {                                                                   \
                long long best = -1;                                                                          \
                int bidx = 0;                                                                                 \
                for (int r = 0; r < g_size; r++) {                                                            \
                    long long v = (r * 3 + i) % 5;                                                            \
                    int idx = (r * 5 + i) % 7 + 10 * r;                                                      \
                    if (r == 0 || (which ? v > best : v < best) || (v == best && idx < bidx)) {               \
                        best = v;                                                                             \
                        bidx = idx;                                                                           \
                    }                                                                                         \
                }                                                                                             \
                if (!CHECK((long long)out[i].v == best && out[i].idx == bidx, "%s on %s: element %d = (%lld, %d), expected (%lld, %d)", \
                           which ? "MAXLOC" : "MINLOC", tname, i, (long long)out[i].v, out[i].idx, best, bidx))   \
                    break;                                                                                    \
            }                                                                                                 \
        }                                                                                                     \
    }

DEF_LOC(l_float, float)
DEF_LOC(l_double, double)
DEF_LOC(l_long, long)
DEF_LOC(l_int, int)
DEF_LOC(l_short, short)
DEF_LOC(l_ldouble, long double)

int main(int argc, char **argv)
{
    g_rank = test_init(&argc, &argv, &g_size);
    const int intops[] = {SUM, PROD, MAX, MIN, LAND, LOR, LXOR, BAND, BOR, BXOR};
    const int floatops[] = {SUM, PROD, MAX, MIN};
    const int logops[] = {LAND, LOR, LXOR};
    const int bitops[] = {BAND, BOR, BXOR};
    const int cplxops[] = {SUM, PROD};
    const int multiops[] = {SUM, PROD, MAX, MIN, BAND, BOR, BXOR};

    t_schar(MPI_SIGNED_CHAR, "MPI_SIGNED_CHAR", intops, 10, 1);
    t_uchar(MPI_UNSIGNED_CHAR, "MPI_UNSIGNED_CHAR", intops, 10, 0);
    t_short(MPI_SHORT, "MPI_SHORT", intops, 10, 1);
    t_ushort(MPI_UNSIGNED_SHORT, "MPI_UNSIGNED_SHORT", intops, 10, 0);
    t_int(MPI_INT, "MPI_INT", intops, 10, 1);
    t_uint(MPI_UNSIGNED, "MPI_UNSIGNED", intops, 10, 0);
    t_long(MPI_LONG, "MPI_LONG", intops, 10, 1);
    t_ulong(MPI_UNSIGNED_LONG, "MPI_UNSIGNED_LONG", intops, 10, 0);
    t_ll(MPI_LONG_LONG, "MPI_LONG_LONG", intops, 10, 1);
    t_ull(MPI_UNSIGNED_LONG_LONG, "MPI_UNSIGNED_LONG_LONG", intops, 10, 0);
    t_i8(MPI_INT8_T, "MPI_INT8_T", intops, 10, 1);
    t_i16(MPI_INT16_T, "MPI_INT16_T", intops, 10, 1);
    t_i32(MPI_INT32_T, "MPI_INT32_T", intops, 10, 1);
    t_i64(MPI_INT64_T, "MPI_INT64_T", intops, 10, 1);
    t_u8(MPI_UINT8_T, "MPI_UINT8_T", intops, 10, 0);
    t_u16(MPI_UINT16_T, "MPI_UINT16_T", intops, 10, 0);
    t_u32(MPI_UINT32_T, "MPI_UINT32_T", intops, 10, 0);
    t_u64(MPI_UINT64_T, "MPI_UINT64_T", intops, 10, 0);
    t_aint(MPI_AINT, "MPI_AINT", multiops, 7, 1);
    /* Open MPI 5.0.11 compares MPI_OFFSET values as unsigned in MAX/MIN:
     * give it non-negative inputs only. */
    t_offset(MPI_OFFSET, "MPI_OFFSET", multiops, 7, !TU_PEER_OPENMPI);
    t_count(MPI_COUNT, "MPI_COUNT", multiops, 7, 1);
    t_float(MPI_FLOAT, "MPI_FLOAT", floatops, 4, 1);
    t_double(MPI_DOUBLE, "MPI_DOUBLE", floatops, 4, 1);
    t_ldouble(MPI_LONG_DOUBLE, "MPI_LONG_DOUBLE", floatops, 4, 1);
    t_bool(MPI_C_BOOL, "MPI_C_BOOL", logops, 3, 0);
    t_byte(MPI_BYTE, "MPI_BYTE", bitops, 3, 0);
    t_fcplx(MPI_C_FLOAT_COMPLEX, "MPI_C_FLOAT_COMPLEX", cplxops, 2, 1);
    t_dcplx(MPI_C_DOUBLE_COMPLEX, "MPI_C_DOUBLE_COMPLEX", cplxops, 2, 1);
    t_ldcplx(MPI_C_LONG_DOUBLE_COMPLEX, "MPI_C_LONG_DOUBLE_COMPLEX", cplxops, 2, 1);

    l_float(MPI_FLOAT_INT, "MPI_FLOAT_INT");
    l_double(MPI_DOUBLE_INT, "MPI_DOUBLE_INT");
    l_long(MPI_LONG_INT, "MPI_LONG_INT");
    l_int(MPI_2INT, "MPI_2INT");
    l_short(MPI_SHORT_INT, "MPI_SHORT_INT");
    l_ldouble(MPI_LONG_DOUBLE_INT, "MPI_LONG_DOUBLE_INT");

    /* Zero elements. */
    int dummy_in = 5, dummy_out = 7;
    CHECK_MPI(MPI_Allreduce(&dummy_in, &dummy_out, 0, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    CHECK(dummy_out == 7, "zero-count Allreduce modified the buffer");
    CHECK_MPI(MPI_Reduce(&dummy_in, &dummy_out, 0, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD));

    /* A large count that is not a power of two. (Predefined operations
     * are defined on predefined types only; derived types need user ops,
     * see coll_userop.c.) */
    {
        const int n = 100003;
        int *a = tu_malloc(sizeof(int) * n), *b = tu_malloc(sizeof(int) * n);
        for (int i = 0; i < n; i++)
            a[i] = g_rank + i % 13;
        CHECK_MPI(MPI_Allreduce(a, b, n, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
        int bad = 0;
        for (int i = 0; i < n; i++)
            bad += b[i] != g_size * (g_size - 1) / 2 + g_size * (i % 13);
        CHECK(bad == 0, "Allreduce SUM of %d ints: %d wrong", n, bad);
        free(a);
        free(b);
    }

    MPI_Finalize();
    return test_finish();
}
