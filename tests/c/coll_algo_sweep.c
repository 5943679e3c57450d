/* gridmpi-test: ranks=1,2,3,4,5,6,7,8 timeout=180 */
/*
 * Every intracommunicator collective, in its three forms (blocking, I-form
 * completed by MPI_Wait, persistent *_init started twice), on counts 0, 1,
 * 5, 64, 1031 and 20000 items, for three datatypes: MPI_INT, a vector type
 * with a hole in every item (the holes must stay untouched; reduced with a
 * commutative user sum), and a pair of unsigned ints reduced with a
 * non-commutative user operation (composition of affine maps, so any
 * operand out of rank order shows); MPI_IN_PLACE
 * wherever the standard allows it; roots 0 and size-1; the v forms with
 * counts that vary (zeros included) and blocks out of order with gaps.
 * Also: Allreduce of doubles gives bit-identical results on every rank and
 * on every repetition.
 *
 * The coll_algo_*.c files include this file with GRIDMPI_COLL_* settings
 * forcing each algorithm in turn.
 */
#include "testutil.h"

enum { T_INT, T_HOLEY, T_PAIR, NTYPES };
static MPI_Datatype types[NTYPES];
static const char *type_names[NTYPES] = {"int", "holey", "pair"};
/* Ints per item (extent) and data elements per item. */
static const int ext_of[NTYPES] = {1, 3, 2};
static const int epi_of[NTYPES] = {1, 2, 2};
static MPI_Op affine_op;
static int rank, size;
static MPI_Comm comm;

#define SENT (-7777)

/* Int index of data element e of a buffer of type t. */
static size_t pos(int t, size_t e)
{
    return t == T_HOLEY ? 3 * (e / 2) + 2 * (e % 2) : e;
}

/* Element e of rank r's input for a given salt. */
static unsigned in_elem(int t, int r, size_t e, int salt)
{
    unsigned v = (unsigned)(r + 1) * 100000u + (unsigned)(e % 40000) * 2u + (unsigned)salt;
    if (t == T_PAIR && e % 2 == 0)
        return 2u * (v + (unsigned)e) + 1u; /* odd multipliers */
    return v;
}

/* A buffer of n items of type t, all sentinel. */
static int *mk(int t, size_t n)
{
    size_t ints = n * ext_of[t] + 4;
    int *b = tu_malloc(ints * sizeof(int));
    for (size_t i = 0; i < ints; i++)
        b[i] = SENT;
    return b;
}

/* Persistent runs refill the buffers they were initialised with. */
static int keep;

/* *slot := n items of type t, all sentinel (the same memory when keep). */
static int *buffer(int **slot, int t, size_t n)
{
    size_t ints = n * ext_of[t] + 4;
    if (!keep || !*slot) {
        free(*slot);
        *slot = tu_malloc(ints * sizeof(int));
    }
    for (size_t i = 0; i < ints; i++)
        (*slot)[i] = SENT;
    return *slot;
}

static size_t ints_of(int t, size_t n)
{
    return n * ext_of[t] + 4;
}

/* Items [at, at+n) of buf get rank r's elements [from, from + n*epi). */
static void put(int *buf, int t, size_t at, size_t n, int r, int salt, size_t from)
{
    size_t e0 = at * epi_of[t];
    for (size_t e = 0; e < n * epi_of[t]; e++)
        buf[pos(t, e0 + e)] = (int)in_elem(t, r, from + e, salt);
}

static int cmp(const int *got, const int *exp, size_t ints, const char *what, int t, int count)
{
    for (size_t i = 0; i < ints; i++) {
        if (got[i] != exp[i]) {
            CHECK(0, "%s (type %s, count %d): int %zu is %d, expected %d", what, type_names[t], count, i, got[i], exp[i]);
            return 0;
        }
    }
    return 1;
}

/* The reduction (op of type t: sum, or affine composition for pairs) of
 * element e over ranks [r0, r1]. */
static unsigned red_elem(int t, int r0, int r1, size_t e, int salt)
{
    if (t != T_PAIR) {
        unsigned s = 0;
        for (int r = r0; r <= r1; r++)
            s += in_elem(t, r, e, salt);
        return s;
    }
    size_t k = e / 2;
    unsigned a = in_elem(t, r0, 2 * k, salt), b = in_elem(t, r0, 2 * k + 1, salt);
    for (int r = r0 + 1; r <= r1; r++) {
        unsigned a2 = in_elem(t, r, 2 * k, salt), b2 = in_elem(t, r, 2 * k + 1, salt);
        b = a2 * b + b2;
        a = a * a2;
    }
    return e % 2 == 0 ? a : b;
}

/* Items [at, at+n) of buf get the reduction over ranks [r0, r1] of elements [from...). */
static void put_red(int *buf, int t, size_t at, size_t n, int r0, int r1, int salt, size_t from)
{
    size_t e0 = at * epi_of[t];
    for (size_t e = 0; e < n * epi_of[t]; e++)
        buf[pos(t, e0 + e)] = (int)red_elem(t, r0, r1, from + e, salt);
}

static void affine_fn(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    unsigned *x = in, *y = inout;
    for (int i = 0; i < *len; i++) {
        unsigned a1 = x[2 * i], b1 = x[2 * i + 1], a2 = y[2 * i], b2 = y[2 * i + 1];
        y[2 * i] = a1 * a2;
        y[2 * i + 1] = a2 * b1 + b2;
    }
}

/* Commutative user sum on the holey type (two ints per 3-int item). */
static void holey_sum_fn(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    unsigned *x = in, *y = inout;
    for (int i = 0; i < *len; i++) {
        y[3 * i] += x[3 * i];
        y[3 * i + 2] += x[3 * i + 2];
    }
}

static MPI_Op holey_sum_op;

/* Reductions: MPI_SUM on ints, a commutative user op on the holey type, a
 * non-commutative one on pairs. */
static MPI_Op op_of(int t)
{
    return t == T_PAIR ? affine_op : t == T_HOLEY ? holey_sum_op : MPI_SUM;
}

/* ---- running one collective in its three forms ------------------------ */

/* A collective under test: setup() fills the buffers for a run, start()
 * runs it in form `form` (0 blocking, 1 I-form: *req set, 2 init: *req set),
 * check() verifies. */
typedef struct {
    const char *name;
    void (*setup)(void);
    int (*start)(int form, MPI_Request *req);
    void (*check)(const char *what);
} coll_t;

static void run3(const coll_t *c)
{
    char what[160];
    MPI_Request req;
    c->setup();
    CHECK_MPI(c->start(0, &req));
    snprintf(what, sizeof what, "%s (blocking)", c->name);
    c->check(what);

    c->setup();
    if (CHECK_MPI(c->start(1, &req)))
        CHECK_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
    snprintf(what, sizeof what, "%s (nonblocking)", c->name);
    c->check(what);

    c->setup();
    if (!CHECK_MPI(c->start(2, &req)))
        return;
    for (int it = 0; it < 2; it++) {
        if (it > 0) {
            keep = 1;
            c->setup();
            keep = 0;
        }
        CHECK_MPI(MPI_Start(&req));
        CHECK_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
        snprintf(what, sizeof what, "%s (persistent, start %d)", c->name, it + 1);
        c->check(what);
    }
    CHECK_MPI(MPI_Request_free(&req));
}

/* Parameters of the current case. */
static int T, COUNT, ROOT, INPLACE, SALT;
static int *sbuf, *rbuf, *expect;
static size_t sints, rints;
static int *counts, *displs, *scounts, *sdispls;
static MPI_Datatype *wtypes;

static void reset(void)
{
    SALT++;
}

/* ---- bcast ----------------------------------------------------------- */

static void bcast_setup(void)
{
    reset();
    buffer(&rbuf, T, COUNT);
    rints = ints_of(T, COUNT);
    if (rank == ROOT)
        put(rbuf, T, 0, COUNT, ROOT, SALT, 0);
    buffer(&expect, T, COUNT);
    put(expect, T, 0, COUNT, ROOT, SALT, 0);
}
static int bcast_start(int f, MPI_Request *q)
{
    MPI_Datatype d = types[T];
    return f == 0 ? MPI_Bcast(rbuf, COUNT, d, ROOT, comm)
         : f == 1 ? MPI_Ibcast(rbuf, COUNT, d, ROOT, comm, q)
                  : MPI_Bcast_init(rbuf, COUNT, d, ROOT, comm, MPI_INFO_NULL, q);
}
static void rcheck(const char *what)
{
    cmp(rbuf, expect, rints, what, T, COUNT);
}

/* ---- gather / gatherv ------------------------------------------------------ */

static int vcount(int r)
{
    return r % 3 == 1 ? 0 : COUNT + r;
}

/* Block displacements in reverse rank order with a one-item gap each. */
static int vlayout(int *cnt, int *dsp, int (*cf)(int))
{
    int at = 0;
    for (int r = size - 1; r >= 0; r--) {
        cnt[r] = cf(r);
        dsp[r] = at;
        at += cnt[r] + 1;
    }
    return at;
}

static int gv; /* 1: the v form */

static int same_count(int r)
{
    (void)r;
    return COUNT;
}

static void gather_setup(void)
{
    reset();
    int total = vlayout(counts, displs, gv ? vcount : same_count);
    buffer(&sbuf, T, counts[rank]);
    put(sbuf, T, 0, counts[rank], rank, SALT, 0);
    buffer(&rbuf, T, total);
    rints = ints_of(T, total);
    buffer(&expect, T, total);
    if (rank == ROOT) {
        if (INPLACE)
            put(rbuf, T, displs[rank], counts[rank], rank, SALT, 0);
        for (int r = 0; r < size; r++)
            put(expect, T, displs[r], counts[r], r, SALT, 0);
    }
}
static int gather_start(int f, MPI_Request *q)
{
    MPI_Datatype d = types[T];
    const void *s = INPLACE && rank == ROOT ? MPI_IN_PLACE : sbuf;
    if (gv)
        return f == 0 ? MPI_Gatherv(s, counts[rank], d, rbuf, counts, displs, d, ROOT, comm)
             : f == 1 ? MPI_Igatherv(s, counts[rank], d, rbuf, counts, displs, d, ROOT, comm, q)
                      : MPI_Gatherv_init(s, counts[rank], d, rbuf, counts, displs, d, ROOT, comm, MPI_INFO_NULL, q);
    /* Plain gather: blocks in rank order (displs from same_count are reversed). */
    void *r = rbuf;
    return f == 0 ? MPI_Gather(s, COUNT, d, r, COUNT, d, ROOT, comm)
         : f == 1 ? MPI_Igather(s, COUNT, d, r, COUNT, d, ROOT, comm, q)
                  : MPI_Gather_init(s, COUNT, d, r, COUNT, d, ROOT, comm, MPI_INFO_NULL, q);
}

/* Plain gather/scatter/allgather/alltoall use rank order without gaps. */
static int plain_layout(void)
{
    for (int r = 0; r < size; r++) {
        counts[r] = COUNT;
        displs[r] = r * COUNT;
    }
    return size * COUNT;
}

static void gather_plain_setup(void)
{
    reset();
    int total = plain_layout();
    buffer(&sbuf, T, COUNT);
    put(sbuf, T, 0, COUNT, rank, SALT, 0);
    buffer(&rbuf, T, total);
    rints = ints_of(T, total);
    buffer(&expect, T, total);
    if (rank == ROOT) {
        if (INPLACE)
            put(rbuf, T, displs[rank], COUNT, rank, SALT, 0);
        for (int r = 0; r < size; r++)
            put(expect, T, displs[r], COUNT, r, SALT, 0);
    }
}

/* ---- scatter / scatterv ------------------------------------------------------ */

static void scatter_setup(void)
{
    reset();
    int total = gv ? vlayout(counts, displs, vcount) : plain_layout();
    buffer(&sbuf, T, total);
    sints = ints_of(T, total);
    if (rank == ROOT)
        for (int r = 0; r < size; r++)
            put(sbuf, T, displs[r], counts[r], ROOT, SALT, (size_t)r * 1000 * epi_of[T]);
    buffer(&rbuf, T, counts[rank]);
    rints = ints_of(T, counts[rank]);
    buffer(&expect, T, counts[rank]);
    put(expect, T, 0, counts[rank], ROOT, SALT, (size_t)rank * 1000 * epi_of[T]);
    if (INPLACE && rank == ROOT) /* the root's block stays in sendbuf */
        memcpy(expect, rbuf, rints * sizeof(int));
}
static int scatter_start(int f, MPI_Request *q)
{
    MPI_Datatype d = types[T];
    void *r = INPLACE && rank == ROOT ? MPI_IN_PLACE : rbuf;
    if (gv)
        return f == 0 ? MPI_Scatterv(sbuf, counts, displs, d, r, counts[rank], d, ROOT, comm)
             : f == 1 ? MPI_Iscatterv(sbuf, counts, displs, d, r, counts[rank], d, ROOT, comm, q)
                      : MPI_Scatterv_init(sbuf, counts, displs, d, r, counts[rank], d, ROOT, comm, MPI_INFO_NULL, q);
    return f == 0 ? MPI_Scatter(sbuf, COUNT, d, r, COUNT, d, ROOT, comm)
         : f == 1 ? MPI_Iscatter(sbuf, COUNT, d, r, COUNT, d, ROOT, comm, q)
                  : MPI_Scatter_init(sbuf, COUNT, d, r, COUNT, d, ROOT, comm, MPI_INFO_NULL, q);
}
static void scatter_check(const char *what)
{
    cmp(rbuf, expect, rints, what, T, COUNT);
    if (rank == ROOT) {
        int *orig = mk(T, sints / ext_of[T]);
        for (int r = 0; r < size; r++)
            put(orig, T, displs[r], counts[r], ROOT, SALT, (size_t)r * 1000 * epi_of[T]);
        cmp(sbuf, orig, sints, "scatter's send buffer", T, COUNT);
        free(orig);
    }
}

/* ---- allgather / allgatherv ------------------------------------------------ */

static void allgather_setup(void)
{
    reset();
    int total = gv ? vlayout(counts, displs, vcount) : plain_layout();
    buffer(&sbuf, T, counts[rank]);
    put(sbuf, T, 0, counts[rank], rank, SALT, 0);
    buffer(&rbuf, T, total);
    rints = ints_of(T, total);
    if (INPLACE)
        put(rbuf, T, displs[rank], counts[rank], rank, SALT, 0);
    buffer(&expect, T, total);
    for (int r = 0; r < size; r++)
        put(expect, T, displs[r], counts[r], r, SALT, 0);
}
static int allgather_start(int f, MPI_Request *q)
{
    MPI_Datatype d = types[T];
    const void *s = INPLACE ? MPI_IN_PLACE : sbuf;
    if (gv)
        return f == 0 ? MPI_Allgatherv(s, counts[rank], d, rbuf, counts, displs, d, comm)
             : f == 1 ? MPI_Iallgatherv(s, counts[rank], d, rbuf, counts, displs, d, comm, q)
                      : MPI_Allgatherv_init(s, counts[rank], d, rbuf, counts, displs, d, comm, MPI_INFO_NULL, q);
    return f == 0 ? MPI_Allgather(s, COUNT, d, rbuf, COUNT, d, comm)
         : f == 1 ? MPI_Iallgather(s, COUNT, d, rbuf, COUNT, d, comm, q)
                  : MPI_Allgather_init(s, COUNT, d, rbuf, COUNT, d, comm, MPI_INFO_NULL, q);
}

/* ---- alltoall / v / w ---------------------------------------------------------- */

static int a2a_form; /* 0 alltoall, 1 v, 2 w */

/* Items rank s sends rank d in the v and w forms (symmetric in place). */
static int pair_count(int s, int d)
{
    return (s + d) % 4 == 1 ? 0 : COUNT + (INPLACE ? s + d : s + 2 * d) % 5;
}

static void a2a_layout(int *cnt, int *dsp, int me, int sending)
{
    int at = 0;
    for (int k = 0; k < size; k++) {
        int r = a2a_form ? size - 1 - k : k;
        cnt[r] = a2a_form == 0 ? COUNT : sending ? pair_count(me, r) : pair_count(r, me);
        dsp[r] = at;
        at += cnt[r] + (a2a_form ? 1 : 0);
    }
}

static int layout_total(const int *cnt, const int *dsp)
{
    int m = 0;
    for (int r = 0; r < size; r++)
        if (dsp[r] + cnt[r] > m)
            m = dsp[r] + cnt[r];
    return m;
}

static void a2a_setup(void)
{
    reset();
    a2a_layout(scounts, sdispls, rank, 1);
    a2a_layout(counts, displs, rank, 0);
    int stot = layout_total(scounts, sdispls), rtot = layout_total(counts, displs);
    buffer(&sbuf, T, stot);
    for (int d = 0; d < size; d++) /* element offset d*100000: the block for d */
        put(sbuf, T, sdispls[d], scounts[d], rank, SALT, (size_t)d * 100000);
    buffer(&rbuf, T, rtot);
    rints = ints_of(T, rtot);
    if (INPLACE)
        for (int d = 0; d < size; d++)
            put(rbuf, T, displs[d], counts[d], rank, SALT, (size_t)d * 100000);
    buffer(&expect, T, rtot);
    for (int s = 0; s < size; s++)
        put(expect, T, displs[s], counts[s], s, SALT, (size_t)rank * 100000);
    for (int r = 0; r < size; r++) /* byte displacements for the w form */
        wtypes[r] = types[T];
}
static int a2a_start(int f, MPI_Request *q)
{
    MPI_Datatype d = types[T];
    const void *s = INPLACE ? MPI_IN_PLACE : sbuf;
    if (a2a_form == 0)
        return f == 0 ? MPI_Alltoall(s, COUNT, d, rbuf, COUNT, d, comm)
             : f == 1 ? MPI_Ialltoall(s, COUNT, d, rbuf, COUNT, d, comm, q)
                      : MPI_Alltoall_init(s, COUNT, d, rbuf, COUNT, d, comm, MPI_INFO_NULL, q);
    if (a2a_form == 1)
        return f == 0 ? MPI_Alltoallv(s, scounts, sdispls, d, rbuf, counts, displs, d, comm)
             : f == 1 ? MPI_Ialltoallv(s, scounts, sdispls, d, rbuf, counts, displs, d, comm, q)
                      : MPI_Alltoallv_init(s, scounts, sdispls, d, rbuf, counts, displs, d, comm, MPI_INFO_NULL, q);
    int sb[64], rb[64];
    MPI_Aint ext = (MPI_Aint)ext_of[T] * (MPI_Aint)sizeof(int);
    for (int r = 0; r < size; r++) {
        sb[r] = (int)(sdispls[r] * ext);
        rb[r] = (int)(displs[r] * ext);
    }
    return f == 0 ? MPI_Alltoallw(s, scounts, sb, wtypes, rbuf, counts, rb, wtypes, comm)
         : f == 1 ? MPI_Ialltoallw(s, scounts, sb, wtypes, rbuf, counts, rb, wtypes, comm, q)
                  : MPI_Alltoallw_init(s, scounts, sb, wtypes, rbuf, counts, rb, wtypes, comm, MPI_INFO_NULL, q);
}

/* ---- reductions ------------------------------------------------------------ */

static void reduce_setup(void)
{
    reset();
    buffer(&sbuf, T, COUNT);
    put(sbuf, T, 0, COUNT, rank, SALT, 0);
    buffer(&rbuf, T, COUNT);
    rints = ints_of(T, COUNT);
    if (INPLACE && rank == ROOT)
        put(rbuf, T, 0, COUNT, rank, SALT, 0);
    buffer(&expect, T, COUNT);
    if (rank == ROOT)
        put_red(expect, T, 0, COUNT, 0, size - 1, SALT, 0);
}
static int reduce_start(int f, MPI_Request *q)
{
    MPI_Datatype d = types[T];
    const void *s = INPLACE && rank == ROOT ? MPI_IN_PLACE : sbuf;
    return f == 0 ? MPI_Reduce(s, rbuf, COUNT, d, op_of(T), ROOT, comm)
         : f == 1 ? MPI_Ireduce(s, rbuf, COUNT, d, op_of(T), ROOT, comm, q)
                  : MPI_Reduce_init(s, rbuf, COUNT, d, op_of(T), ROOT, comm, MPI_INFO_NULL, q);
}

static void allreduce_setup(void)
{
    reset();
    buffer(&sbuf, T, COUNT);
    put(sbuf, T, 0, COUNT, rank, SALT, 0);
    buffer(&rbuf, T, COUNT);
    rints = ints_of(T, COUNT);
    if (INPLACE)
        put(rbuf, T, 0, COUNT, rank, SALT, 0);
    buffer(&expect, T, COUNT);
    put_red(expect, T, 0, COUNT, 0, size - 1, SALT, 0);
}
static int allreduce_start(int f, MPI_Request *q)
{
    MPI_Datatype d = types[T];
    const void *s = INPLACE ? MPI_IN_PLACE : sbuf;
    return f == 0 ? MPI_Allreduce(s, rbuf, COUNT, d, op_of(T), comm)
         : f == 1 ? MPI_Iallreduce(s, rbuf, COUNT, d, op_of(T), comm, q)
                  : MPI_Allreduce_init(s, rbuf, COUNT, d, op_of(T), comm, MPI_INFO_NULL, q);
}

static int rs_block; /* 1: Reduce_scatter_block */

static int rs_count(int r)
{
    return rs_block ? COUNT : (r % 3 == 2 ? 0 : COUNT + r % 4);
}

static void rs_setup(void)
{
    reset();
    int total = 0, mine = 0;
    for (int r = 0; r < size; r++) {
        counts[r] = rs_count(r);
        displs[r] = total;
        total += counts[r];
    }
    mine = counts[rank];
    buffer(&sbuf, T, total);
    put(sbuf, T, 0, total, rank, SALT, 0);
    /* In place the receive buffer holds the whole input vector; only the
     * result part is defined afterwards. */
    buffer(&rbuf, T, INPLACE ? total : mine);
    rints = INPLACE ? (size_t)mine * ext_of[T] : ints_of(T, mine);
    if (INPLACE)
        put(rbuf, T, 0, total, rank, SALT, 0);
    buffer(&expect, T, INPLACE ? total : mine);
    put_red(expect, T, 0, mine, 0, size - 1, SALT, (size_t)displs[rank] * epi_of[T]);
}
static int rs_start(int f, MPI_Request *q)
{
    MPI_Datatype d = types[T];
    const void *s = INPLACE ? MPI_IN_PLACE : sbuf;
    if (rs_block)
        return f == 0 ? MPI_Reduce_scatter_block(s, rbuf, COUNT, d, op_of(T), comm)
             : f == 1 ? MPI_Ireduce_scatter_block(s, rbuf, COUNT, d, op_of(T), comm, q)
                      : MPI_Reduce_scatter_block_init(s, rbuf, COUNT, d, op_of(T), comm, MPI_INFO_NULL, q);
    return f == 0 ? MPI_Reduce_scatter(s, rbuf, counts, d, op_of(T), comm)
         : f == 1 ? MPI_Ireduce_scatter(s, rbuf, counts, d, op_of(T), comm, q)
                  : MPI_Reduce_scatter_init(s, rbuf, counts, d, op_of(T), comm, MPI_INFO_NULL, q);
}

static int exclusive;

static void scan_setup(void)
{
    reset();
    buffer(&sbuf, T, COUNT);
    put(sbuf, T, 0, COUNT, rank, SALT, 0);
    buffer(&rbuf, T, COUNT);
    rints = ints_of(T, COUNT);
    if (INPLACE)
        put(rbuf, T, 0, COUNT, rank, SALT, 0);
    buffer(&expect, T, COUNT);
    if (!exclusive)
        put_red(expect, T, 0, COUNT, 0, rank, SALT, 0);
    else if (rank > 0)
        put_red(expect, T, 0, COUNT, 0, rank - 1, SALT, 0);
}
static int scan_start(int f, MPI_Request *q)
{
    MPI_Datatype d = types[T];
    const void *s = INPLACE ? MPI_IN_PLACE : sbuf;
    if (exclusive)
        return f == 0 ? MPI_Exscan(s, rbuf, COUNT, d, op_of(T), comm)
             : f == 1 ? MPI_Iexscan(s, rbuf, COUNT, d, op_of(T), comm, q)
                      : MPI_Exscan_init(s, rbuf, COUNT, d, op_of(T), comm, MPI_INFO_NULL, q);
    return f == 0 ? MPI_Scan(s, rbuf, COUNT, d, op_of(T), comm)
         : f == 1 ? MPI_Iscan(s, rbuf, COUNT, d, op_of(T), comm, q)
                  : MPI_Scan_init(s, rbuf, COUNT, d, op_of(T), comm, MPI_INFO_NULL, q);
}
static void scan_check(const char *what)
{
    if (exclusive && rank == 0)
        return; /* undefined */
    cmp(rbuf, expect, rints, what, T, COUNT);
}

/* ---- barrier ------------------------------------------------------------------ */

static void nothing(void) {}
static void nocheck(const char *w) { (void)w; }
static int barrier_start(int f, MPI_Request *q)
{
    return f == 0 ? MPI_Barrier(comm) : f == 1 ? MPI_Ibarrier(comm, q) : MPI_Barrier_init(comm, MPI_INFO_NULL, q);
}

/* ---- determinism ---------------------------------------------------------------- */

/* Doubles whose sum depends on the order of addition: every rank must get
 * the same bits, and so must every repetition. */
static void check_determinism(void)
{
    enum { N = 3000 };
    double *in = tu_malloc(N * sizeof(double)), *a = tu_malloc(N * sizeof(double)), *b = tu_malloc(N * sizeof(double));
    for (int i = 0; i < N; i++)
        in[i] = (rank % 2 ? 1e16 : 1.0) * (1.0 + i * 1e-3) / (rank + 1) + (rank == 3 ? -1e16 : 0.0);
    MPI_Allreduce(in, a, N, MPI_DOUBLE, MPI_SUM, comm);
    for (int rep = 0; rep < 3; rep++) {
        MPI_Allreduce(in, b, N, MPI_DOUBLE, MPI_SUM, comm);
        CHECK(memcmp(a, b, N * sizeof(double)) == 0, "Allreduce of doubles differs between repetitions");
        /* GridMPI: the I-form is the same schedule, so the same bits
         * (MPICH 5.0.2 picks another algorithm for it). */
        MPI_Request q;
        MPI_Iallreduce(in, b, N, MPI_DOUBLE, MPI_SUM, comm, &q);
        MPI_Wait(&q, MPI_STATUS_IGNORE);
        if (!TU_PEER_MPICH)
            CHECK(memcmp(a, b, N * sizeof(double)) == 0, "Iallreduce of doubles differs from Allreduce");
    }
    /* Everyone has rank 0's bits. */
    memcpy(b, a, N * sizeof(double));
    MPI_Bcast(b, N * (int)sizeof(double), MPI_BYTE, 0, comm);
    CHECK(memcmp(a, b, N * sizeof(double)) == 0, "Allreduce of doubles differs between ranks");
    free(in);
    free(a);
    free(b);
}

int main(int argc, char **argv)
{
    rank = test_init(&argc, &argv, &size);
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    types[T_INT] = MPI_INT;
    MPI_Type_vector(2, 1, 2, MPI_INT, &types[T_HOLEY]);
    MPI_Type_commit(&types[T_HOLEY]);
    MPI_Type_contiguous(2, MPI_UNSIGNED, &types[T_PAIR]);
    MPI_Type_commit(&types[T_PAIR]);
    MPI_Op_create(affine_fn, 0, &affine_op);
    MPI_Op_create(holey_sum_fn, 1, &holey_sum_op);
    counts = tu_malloc(size * sizeof(int));
    displs = tu_malloc(size * sizeof(int));
    scounts = tu_malloc(size * sizeof(int));
    sdispls = tu_malloc(size * sizeof(int));
    wtypes = tu_malloc(size * sizeof(MPI_Datatype));

    const coll_t barrier = {"Barrier", nothing, barrier_start, nocheck};
    const coll_t bcast = {"Bcast", bcast_setup, bcast_start, rcheck};
    const coll_t gather = {"Gather", gather_plain_setup, gather_start, rcheck};
    const coll_t gatherv = {"Gatherv", gather_setup, gather_start, rcheck};
    const coll_t scatter = {"Scatter", scatter_setup, scatter_start, scatter_check};
    const coll_t scatterv = {"Scatterv", scatter_setup, scatter_start, scatter_check};
    const coll_t allgather = {"Allgather", allgather_setup, allgather_start, rcheck};
    const coll_t allgatherv = {"Allgatherv", allgather_setup, allgather_start, rcheck};
    const coll_t a2a[3] = {{"Alltoall", a2a_setup, a2a_start, rcheck},
                           {"Alltoallv", a2a_setup, a2a_start, rcheck},
                           {"Alltoallw", a2a_setup, a2a_start, rcheck}};
    const coll_t reduce = {"Reduce", reduce_setup, reduce_start, rcheck};
    const coll_t allreduce = {"Allreduce", allreduce_setup, allreduce_start, rcheck};
    const coll_t rs[2] = {{"Reduce_scatter", rs_setup, rs_start, rcheck},
                          {"Reduce_scatter_block", rs_setup, rs_start, rcheck}};
    const coll_t scans[2] = {{"Scan", scan_setup, scan_start, scan_check},
                             {"Exscan", scan_setup, scan_start, scan_check}};

    run3(&barrier);
    const int sizes[] = {0, 1, 5, 64, 1031, 20000};
    for (unsigned si = 0; si < sizeof sizes / sizeof *sizes; si++) {
        COUNT = sizes[si];
        for (T = 0; T < NTYPES; T++) {
            int big = COUNT >= 20000;
            for (INPLACE = 0; INPLACE < 2; INPLACE++) {
                int roots[2] = {0, size - 1};
                for (int ri = 0; ri < (size > 1 && !big ? 2 : 1); ri++) {
                    ROOT = roots[ri];
                    if (T != T_PAIR) {
                        if (!INPLACE)
                            run3(&bcast);
                        gv = 0;
                        run3(&gather);
                        run3(&scatter);
                        gv = 1;
                        run3(&gatherv);
                        run3(&scatterv);
                    }
                    run3(&reduce);
                }
                if (T != T_PAIR) {
                    gv = 0;
                    run3(&allgather);
                    gv = 1;
                    run3(&allgatherv);
                    for (a2a_form = 0; a2a_form < 3; a2a_form++)
                        if (!big || a2a_form == 0)
                            run3(&a2a[a2a_form]);
                }
                run3(&allreduce);
                for (rs_block = 0; rs_block < 2; rs_block++)
                    run3(&rs[rs_block]);
                for (exclusive = 0; exclusive < 2; exclusive++)
                    run3(&scans[exclusive]);
            }
        }
    }
    check_determinism();

    MPI_Op_free(&affine_op);
    MPI_Op_free(&holey_sum_op);
    MPI_Type_free(&types[T_HOLEY]);
    MPI_Type_free(&types[T_PAIR]);
    MPI_Comm_free(&comm);
    reset();
    MPI_Finalize();
    return test_finish();
}
