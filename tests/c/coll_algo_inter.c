/* gridmpi-test: ranks=2,3,4,5,6,7,8 min-ranks=2 timeout=120 */
/*
 * Intercommunicator collectives between two groups of different sizes (the
 * low third of the world and the rest), each in its three forms (blocking,
 * I-form, persistent started twice), in both directions where rooted:
 * Barrier, Gatherv and Scatterv (MPI_ROOT / MPI_PROC_NULL / remote root,
 * varying counts with zeros, blocks out of order with gaps), Allgatherv,
 * Alltoallv, Alltoallw, Reduce and Allreduce with a non-commutative user
 * operation (the remote group's operands must be combined in its rank
 * order), Reduce_scatter and Reduce_scatter_block (the two groups' vectors
 * have the same length, split differently).
 */
#include "testutil.h"

static int wrank, wsize, nlow, low, lsize, rsize, lrank;
static MPI_Comm inter;
static MPI_Datatype pair_t;
static MPI_Op affine_op;
static int salt;

#define SENT (-5555)

/* World rank of remote rank j, and of local rank j. */
static int remote_world(int j) { return low ? nlow + j : j; }
static int local_world(int j) { return low ? j : nlow + j; }

static int val(int w, int i) { return w * 100000 + i * 7 + salt; }

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

/* Pair element i of world rank w, and the ordered composition over the
 * remote group (remote ranks 0..rsize-1). */
static void pair_of(int w, int i, unsigned *a, unsigned *b)
{
    *a = 2u * (unsigned)val(w, i) + 1u;
    *b = (unsigned)val(w, i + 50000);
}
static void remote_affine(int i, unsigned *a, unsigned *b)
{
    pair_of(remote_world(0), i, a, b);
    for (int j = 1; j < rsize; j++) {
        unsigned a2, b2;
        pair_of(remote_world(j), i, &a2, &b2);
        *b = a2 * *b + b2;
        *a = *a * a2;
    }
}
static int remote_sum(int i)
{
    int s = 0;
    for (int j = 0; j < rsize; j++)
        s += val(remote_world(j), i);
    return s;
}

static int *ints(size_t n)
{
    int *p = tu_malloc((n + 4) * sizeof(int));
    for (size_t i = 0; i < n + 4; i++)
        p[i] = SENT;
    return p;
}

/* Persistent runs refill the buffers they were initialised with. */
static int keep;

/* *slot := n + 4 ints, all sentinel (the same memory when keep). */
static void slot(int **p, size_t n)
{
    if (!keep || !*p) {
        free(*p);
        *p = tu_malloc((n + 4) * sizeof(int));
    }
    for (size_t i = 0; i < n + 4; i++)
        (*p)[i] = SENT;
}

/* Run a collective in its three forms. START(f, req) starts it (f: 0
 * blocking, 1 I-form, 2 init); SETUP and VERIFY refill and check. */
#define FORMS(SETUP, START, VERIFY)                                                  \
    do {                                                                             \
        MPI_Request q_;                                                              \
        SETUP;                                                                       \
        CHECK_MPI(START(0, &q_));                                                    \
        VERIFY;                                                                      \
        SETUP;                                                                       \
        if (CHECK_MPI(START(1, &q_)))                                                \
            CHECK_MPI(MPI_Wait(&q_, MPI_STATUS_IGNORE));                             \
        VERIFY;                                                                      \
        SETUP;                                                                       \
        if (CHECK_MPI(START(2, &q_))) {                                              \
            for (int it_ = 0; it_ < 2; it_++) {                                      \
                if (it_) {                                                           \
                    keep = 1;                                                        \
                    SETUP;                                                           \
                    keep = 0;                                                        \
                }                                                                    \
                CHECK_MPI(MPI_Start(&q_));                                           \
                CHECK_MPI(MPI_Wait(&q_, MPI_STATUS_IGNORE));                         \
                VERIFY;                                                              \
            }                                                                        \
            MPI_Request_free(&q_);                                                   \
        }                                                                            \
    } while (0)

/* ---- gatherv / scatterv ------------------------------------------------------ */

static int C; /* base count */
static int root_low, root_lrank; /* which group holds the root, and its local rank */
static int rootarg;
static int *sb, *rb, cnt[64], dsp[64], total;

static int vc(int w) { return w % 3 == 1 ? 0 : C + w % 4; }

/* Remote-group layout (at the root): reverse order, one-int gaps. */
static void remote_layout(void)
{
    total = 0;
    for (int j = rsize - 1; j >= 0; j--) {
        cnt[j] = vc(remote_world(j));
        dsp[j] = total;
        total += cnt[j] + 1;
    }
}

static void rooted_setup(void)
{
    salt++;
    int in_root_group = low == root_low;
    if (in_root_group)
        rootarg = lrank == root_lrank ? MPI_ROOT : MPI_PROC_NULL;
    else
        rootarg = root_lrank;
    remote_layout();
}

static void gatherv_setup(void)
{
    rooted_setup();
    slot(&sb, vc(wrank));
    for (int i = 0; i < vc(wrank); i++)
        sb[i] = val(wrank, i);
    slot(&rb, total);
}
static int gatherv_start(int f, MPI_Request *q)
{
    int n = vc(wrank);
    return f == 0 ? MPI_Gatherv(sb, n, MPI_INT, rb, cnt, dsp, MPI_INT, rootarg, inter)
         : f == 1 ? MPI_Igatherv(sb, n, MPI_INT, rb, cnt, dsp, MPI_INT, rootarg, inter, q)
                  : MPI_Gatherv_init(sb, n, MPI_INT, rb, cnt, dsp, MPI_INT, rootarg, inter, MPI_INFO_NULL, q);
}
static void gatherv_verify(void)
{
    if (rootarg != MPI_ROOT)
        return;
    int *e = ints(total);
    for (int j = 0; j < rsize; j++)
        for (int i = 0; i < cnt[j]; i++)
            e[dsp[j] + i] = val(remote_world(j), i);
    CHECK(memcmp(e, rb, (total + 4) * sizeof(int)) == 0, "Gatherv on the intercommunicator (C %d, root group %s)", C, root_low ? "low" : "high");
    free(e);
}

static void scatterv_setup(void)
{
    rooted_setup();
    slot(&sb, total);
    if (rootarg == MPI_ROOT)
        for (int j = 0; j < rsize; j++)
            for (int i = 0; i < cnt[j]; i++)
                sb[dsp[j] + i] = val(remote_world(j), i) + 3;
    slot(&rb, vc(wrank));
}
static int scatterv_start(int f, MPI_Request *q)
{
    int n = vc(wrank);
    return f == 0 ? MPI_Scatterv(sb, cnt, dsp, MPI_INT, rb, n, MPI_INT, rootarg, inter)
         : f == 1 ? MPI_Iscatterv(sb, cnt, dsp, MPI_INT, rb, n, MPI_INT, rootarg, inter, q)
                  : MPI_Scatterv_init(sb, cnt, dsp, MPI_INT, rb, n, MPI_INT, rootarg, inter, MPI_INFO_NULL, q);
}
static void scatterv_verify(void)
{
    if (low == root_low)
        return;
    int n = vc(wrank), bad = 0;
    for (int i = 0; i < n; i++)
        bad += rb[i] != val(wrank, i) + 3;
    for (int i = n; i < n + 4; i++)
        bad += rb[i] != SENT;
    CHECK(!bad, "Scatterv on the intercommunicator (C %d): %d ints wrong", C, bad);
}

/* ---- allgatherv, alltoallv, alltoallw --------------------------------------- */

static void allgatherv_setup(void)
{
    salt++;
    remote_layout();
    slot(&sb, vc(wrank));
    for (int i = 0; i < vc(wrank); i++)
        sb[i] = val(wrank, i);
    slot(&rb, total);
}
static int allgatherv_start(int f, MPI_Request *q)
{
    int n = vc(wrank);
    return f == 0 ? MPI_Allgatherv(sb, n, MPI_INT, rb, cnt, dsp, MPI_INT, inter)
         : f == 1 ? MPI_Iallgatherv(sb, n, MPI_INT, rb, cnt, dsp, MPI_INT, inter, q)
                  : MPI_Allgatherv_init(sb, n, MPI_INT, rb, cnt, dsp, MPI_INT, inter, MPI_INFO_NULL, q);
}
static void allgatherv_verify(void)
{
    int *e = ints(total);
    for (int j = 0; j < rsize; j++)
        for (int i = 0; i < cnt[j]; i++)
            e[dsp[j] + i] = val(remote_world(j), i);
    CHECK(memcmp(e, rb, (total + 4) * sizeof(int)) == 0, "Allgatherv on the intercommunicator (C %d)", C);
    free(e);
}

/* Items world rank s sends world rank d. */
static int pc(int s, int d) { return (s + d) % 3 == 0 ? 0 : C + (s + 2 * d) % 5; }
static int scnt[64], sdsp[64], stotal, rtotal, sbytes[64], rbytes[64];
static MPI_Datatype wt[64];

static void a2a_setup(void)
{
    salt++;
    stotal = rtotal = 0;
    for (int j = rsize - 1; j >= 0; j--) {
        scnt[j] = pc(wrank, remote_world(j));
        sdsp[j] = stotal;
        stotal += scnt[j] + 2;
        cnt[j] = pc(remote_world(j), wrank);
        dsp[j] = rtotal;
        rtotal += cnt[j] + 1;
    }
    for (int j = 0; j < rsize; j++) {
        sbytes[j] = sdsp[j] * (int)sizeof(int);
        rbytes[j] = dsp[j] * (int)sizeof(int);
        wt[j] = MPI_INT;
    }
    slot(&sb, stotal);
    for (int j = 0; j < rsize; j++)
        for (int i = 0; i < scnt[j]; i++)
            sb[sdsp[j] + i] = val(wrank, remote_world(j) * 1000 + i);
    slot(&rb, rtotal);
}
static int a2av_start(int f, MPI_Request *q)
{
    return f == 0 ? MPI_Alltoallv(sb, scnt, sdsp, MPI_INT, rb, cnt, dsp, MPI_INT, inter)
         : f == 1 ? MPI_Ialltoallv(sb, scnt, sdsp, MPI_INT, rb, cnt, dsp, MPI_INT, inter, q)
                  : MPI_Alltoallv_init(sb, scnt, sdsp, MPI_INT, rb, cnt, dsp, MPI_INT, inter, MPI_INFO_NULL, q);
}
static int a2aw_start(int f, MPI_Request *q)
{
    return f == 0 ? MPI_Alltoallw(sb, scnt, sbytes, wt, rb, cnt, rbytes, wt, inter)
         : f == 1 ? MPI_Ialltoallw(sb, scnt, sbytes, wt, rb, cnt, rbytes, wt, inter, q)
                  : MPI_Alltoallw_init(sb, scnt, sbytes, wt, rb, cnt, rbytes, wt, inter, MPI_INFO_NULL, q);
}
static void a2a_verify(void)
{
    int *e = ints(rtotal);
    for (int j = 0; j < rsize; j++)
        for (int i = 0; i < cnt[j]; i++)
            e[dsp[j] + i] = val(remote_world(j), wrank * 1000 + i);
    CHECK(memcmp(e, rb, (rtotal + 4) * sizeof(int)) == 0, "Alltoallv/w on the intercommunicator (C %d)", C);
    free(e);
}

/* ---- reductions ------------------------------------------------------------------ */

static unsigned *pin, *pout;

static void pairs_setup(void)
{
    salt++;
    if (!keep) {
        free(pin);
        free(pout);
        pin = tu_malloc((2 * C + 2) * sizeof(unsigned));
        pout = tu_malloc((2 * C + 2) * sizeof(unsigned));
    }
    for (int i = 0; i < C; i++)
        pair_of(wrank, i, &pin[2 * i], &pin[2 * i + 1]);
    for (int i = 0; i < 2 * C + 2; i++)
        pout[i] = 12345u;
}
static void rooted_pairs_setup(void)
{
    rooted_setup();
    pairs_setup();
}
static int reduce_start(int f, MPI_Request *q)
{
    return f == 0 ? MPI_Reduce(pin, pout, C, pair_t, affine_op, rootarg, inter)
         : f == 1 ? MPI_Ireduce(pin, pout, C, pair_t, affine_op, rootarg, inter, q)
                  : MPI_Reduce_init(pin, pout, C, pair_t, affine_op, rootarg, inter, MPI_INFO_NULL, q);
}
static int allreduce_start(int f, MPI_Request *q)
{
    return f == 0 ? MPI_Allreduce(pin, pout, C, pair_t, affine_op, inter)
         : f == 1 ? MPI_Iallreduce(pin, pout, C, pair_t, affine_op, inter, q)
                  : MPI_Allreduce_init(pin, pout, C, pair_t, affine_op, inter, MPI_INFO_NULL, q);
}
static void pairs_verify(int active, const char *what)
{
    int bad = 0;
    for (int i = 0; i < C; i++) {
        unsigned a, b;
        remote_affine(i, &a, &b);
        if (active)
            bad += pout[2 * i] != a || pout[2 * i + 1] != b;
        else
            bad += pout[2 * i] != 12345u || pout[2 * i + 1] != 12345u;
    }
    bad += pout[2 * C] != 12345u;
    CHECK(!bad, "%s on the intercommunicator (C %d): %d pairs wrong", what, C, bad);
}

/* Reduce_scatter(_block): both groups' vectors have N items. */
static int N, rcnt[64], rdsp[64];
static int rs_block;

static void rs_setup(void)
{
    salt++;
    if (rs_block) {
        /* recvcount * group size is the same on both sides. */
        int rc = C * rsize;
        N = rc * lsize;
        for (int j = 0; j < lsize; j++)
            rcnt[j] = rc;
    } else {
        N = 12 * C + 5;
        for (int j = 0; j < lsize; j++)
            rcnt[j] = N / lsize + (j < N % lsize);
    }
    int at = 0;
    for (int j = 0; j < lsize; j++) {
        rdsp[j] = at;
        at += rcnt[j];
    }
    slot(&sb, N);
    for (int i = 0; i < N; i++)
        sb[i] = val(wrank, i);
    slot(&rb, rcnt[lrank]);
}
static int rs_start(int f, MPI_Request *q)
{
    if (rs_block)
        return f == 0 ? MPI_Reduce_scatter_block(sb, rb, rcnt[0], MPI_INT, MPI_SUM, inter)
             : f == 1 ? MPI_Ireduce_scatter_block(sb, rb, rcnt[0], MPI_INT, MPI_SUM, inter, q)
                      : MPI_Reduce_scatter_block_init(sb, rb, rcnt[0], MPI_INT, MPI_SUM, inter, MPI_INFO_NULL, q);
    return f == 0 ? MPI_Reduce_scatter(sb, rb, rcnt, MPI_INT, MPI_SUM, inter)
         : f == 1 ? MPI_Ireduce_scatter(sb, rb, rcnt, MPI_INT, MPI_SUM, inter, q)
                  : MPI_Reduce_scatter_init(sb, rb, rcnt, MPI_INT, MPI_SUM, inter, MPI_INFO_NULL, q);
}
static void rs_verify(void)
{
    int bad = 0;
    for (int i = 0; i < rcnt[lrank]; i++)
        bad += rb[i] != remote_sum(rdsp[lrank] + i);
    for (int i = rcnt[lrank]; i < rcnt[lrank] + 4; i++)
        bad += rb[i] != SENT;
    CHECK(!bad, "%s on the intercommunicator (C %d): %d ints wrong", rs_block ? "Reduce_scatter_block" : "Reduce_scatter", C, bad);
}

static int barrier_start(int f, MPI_Request *q)
{
    return f == 0 ? MPI_Barrier(inter) : f == 1 ? MPI_Ibarrier(inter, q) : MPI_Barrier_init(inter, MPI_INFO_NULL, q);
}

int main(int argc, char **argv)
{
    wrank = test_init(&argc, &argv, &wsize);
    nlow = wsize / 3 > 0 ? wsize / 3 : 1;
    low = wrank < nlow;
    MPI_Comm local;
    MPI_Comm_split(MPI_COMM_WORLD, low, wrank, &local);
    MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, low ? nlow : 0, 77, &inter);
    MPI_Comm_size(inter, &lsize);
    MPI_Comm_remote_size(inter, &rsize);
    MPI_Comm_rank(inter, &lrank);
    CHECK_INT_EQ(local_world(lrank), wrank);
    MPI_Type_contiguous(2, MPI_UNSIGNED, &pair_t);
    MPI_Type_commit(&pair_t);
    MPI_Op_create(affine_fn, 0, &affine_op);

    FORMS((void)0, barrier_start, (void)0);
    const int counts[] = {0, 1, 6, 2000};
    for (unsigned ci = 0; ci < sizeof counts / sizeof *counts; ci++) {
        C = counts[ci];
        for (root_low = 0; root_low < 2; root_low++) {
            int nroot = root_low ? nlow : wsize - nlow;
            for (root_lrank = 0; root_lrank < nroot; root_lrank += nroot > 1 ? nroot - 1 : 1) {
                FORMS(gatherv_setup(), gatherv_start, gatherv_verify());
                FORMS(scatterv_setup(), scatterv_start, scatterv_verify());
                FORMS(rooted_pairs_setup(), reduce_start, pairs_verify(rootarg == MPI_ROOT, "Reduce"));
            }
        }
        FORMS(allgatherv_setup(), allgatherv_start, allgatherv_verify());
        FORMS(a2a_setup(), a2av_start, a2a_verify());
        FORMS(a2a_setup(), a2aw_start, a2a_verify());
        FORMS(pairs_setup(), allreduce_start, pairs_verify(1, "Allreduce"));
        for (rs_block = 0; rs_block < 2; rs_block++)
            FORMS(rs_setup(), rs_start, rs_verify());
    }

    MPI_Op_free(&affine_op);
    MPI_Type_free(&pair_t);
    MPI_Comm_free(&inter);
    MPI_Comm_free(&local);
    MPI_Finalize();
    return test_finish();
}
