/*
 * wan_coll.c: one collective at one size, timed on a grid (bench/wan/).
 *
 *   wan_coll --op alltoall|bcast|allreduce --size BYTES [--reps R] [--rep-ms MS]
 *            [--max-iters N] [--warmup W] [--warmup-ms MS] [--calls C] [--no-loop] [--no-isolated]
 *
 * alltoall: SIZE bytes (MPI_BYTE) to and from every rank ("size per peer").
 * bcast:    SIZE bytes from rank 0.
 * allreduce: SIZE/8 MPI_DOUBLE, MPI_SUM.
 *
 * Two ways of timing:
 *
 * loop (default for alltoall): R repetitions ("reps"), each started by an
 *   MPI_Barrier, of N back-to-back calls; a rep's value is the largest
 *   per-rank time / N (RESULT ... mode=loop). Warm-up: at least W calls
 *   (--warmup) and at least --warmup-ms; N is calibrated from the median of
 *   the last W warm-up calls so that a rep lasts about --rep-ms (at least
 *   1, at most --max-iters). Every call is also timed on every rank,
 *   and the largest per call over the ranks is kept: CALLS gives their
 *   median, 90th percentile, maximum, and how many took more than 100 ms.
 *
 * isolated (default for bcast and allreduce): C single calls, each after an
 *   MPI_Barrier; each rank notes when it entered and left the call. All
 *   ranks of the testbed share one CLOCK_MONOTONIC, so a call's latency is
 *   (last rank out) - (root in) for bcast and (last rank out) - (last rank
 *   in) for allreduce: nothing can finish before those. RESULT ... mode=isolated.
 *
 * Kernel TCP counters (wan.h) are read on every host right before the first
 * timed call and right after the last (loop mode), so KCOUNT scope=timed
 * counts retransmission timeouts of the timed calls only. WINDOW gives the
 * same interval on CLOCK_MONOTONIC, for cutting the testbed monitor's CSV.
 *
 * Correctness: alltoall blocks carry a pattern naming (source, destination,
 * rep); receive buffers are zeroed before each rep and checked after it.
 * bcast data are fresh for every isolated call and checked on every rank;
 * allreduce sums integer-valued doubles (exact) and checks every element
 * after every isolated call and after the last loop call.
 */
#include "wan.h"

enum op { OP_ALLTOALL, OP_BCAST, OP_ALLREDUCE };
static const char *op_names[] = {"alltoall", "bcast", "allreduce"};

static enum op opt_op = OP_ALLTOALL;
static long opt_size = 16384;
static int opt_reps = 5;
static double opt_rep_ms = 1000;
static long opt_max_iters = 500;
static int opt_warmup = 3;
static double opt_warmup_ms = 300;
static int opt_calls = 7;
static int opt_loop = -1, opt_isolated = -1; /* -1: by op */

struct bufs {
    unsigned char *send, *recv;
    double *dsend, *drecv;
    long count; /* elements per call (bytes for alltoall/bcast, doubles for allreduce) */
};

static uint64_t a2a_word(int src, int dst, long rep, long i)
{
    return mix64(((uint64_t)src << 48) ^ ((uint64_t)dst << 40) ^ ((uint64_t)rep << 32) ^ (uint64_t)i);
}

/* The byte i of the block from src to dst in rep: byte i%8 of a 64-bit word. */
static unsigned char a2a_byte(int src, int dst, long rep, long i)
{
    return (unsigned char)(a2a_word(src, dst, rep, i / 8) >> (8 * (i % 8)));
}

static void a2a_fill(struct bufs *b, long rep)
{
    for (int d = 0; d < w_size; d++) {
        unsigned char *blk = b->send + (size_t)d * (size_t)opt_size;
        for (long i = 0; i < opt_size; i += 8) {
            uint64_t w = a2a_word(w_rank, d, rep, i / 8);
            for (long k = 0; k < 8 && i + k < opt_size; k++)
                blk[i + k] = (unsigned char)(w >> (8 * k));
        }
    }
}

static void a2a_check(struct bufs *b, long rep)
{
    for (int s = 0; s < w_size; s++) {
        const unsigned char *blk = b->recv + (size_t)s * (size_t)opt_size;
        for (long i = 0; i < opt_size; i += 8) {
            uint64_t w = a2a_word(s, w_rank, rep, i / 8);
            for (long k = 0; k < 8 && i + k < opt_size; k++)
                if (blk[i + k] != (unsigned char)(w >> (8 * k))) {
                    w_data_error("alltoall block", (long)s * opt_size + i + k, blk[i + k],
                                 a2a_byte(s, w_rank, rep, i + k));
                    return;
                }
        }
    }
}

static void bcast_fill(struct bufs *b, long call)
{
    if (w_rank == 0)
        for (long i = 0; i < opt_size; i++)
            b->send[i] = (unsigned char)mix64(((uint64_t)call << 40) ^ (uint64_t)(i / 8));
    else
        memset(b->send, 0, (size_t)opt_size);
}

static void bcast_check(struct bufs *b, long call)
{
    for (long i = 0; i < opt_size; i++) {
        unsigned char want = (unsigned char)mix64(((uint64_t)call << 40) ^ (uint64_t)(i / 8));
        if (b->send[i] != want) {
            w_data_error("bcast data", i, b->send[i], want);
            return;
        }
    }
}

static double ar_value(int rank, long call, long j)
{
    return (double)((rank + 1) * (j % 997) + call % 101);
}

static void ar_fill(struct bufs *b, long call)
{
    for (long j = 0; j < b->count; j++)
        b->dsend[j] = ar_value(w_rank, call, j);
    memset(b->drecv, 0, sizeof(double) * (size_t)b->count);
}

static void ar_check(struct bufs *b, long call)
{
    for (long j = 0; j < b->count; j++) {
        double want = 0;
        for (int r = 0; r < w_size; r++)
            want += ar_value(r, call, j);
        if (b->drecv[j] != want) {
            w_data_error("allreduce sum", j, b->drecv[j], want);
            return;
        }
    }
}

static void one_call(struct bufs *b)
{
    switch (opt_op) {
    case OP_ALLTOALL:
        CHK(MPI_Alltoall(b->send, (int)opt_size, MPI_BYTE, b->recv, (int)opt_size, MPI_BYTE, MPI_COMM_WORLD));
        break;
    case OP_BCAST:
        CHK(MPI_Bcast(b->send, (int)opt_size, MPI_BYTE, 0, MPI_COMM_WORLD));
        break;
    case OP_ALLREDUCE:
        CHK(MPI_Allreduce(b->dsend, b->drecv, (int)b->count, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD));
        break;
    }
}

static void print_tags(char *tags, size_t n)
{
    snprintf(tags, n, "op=%s size=%ld ranks=%d", op_names[opt_op], opt_size, w_size);
}

static void run_loop(struct bufs *b)
{
    char tags[128];
    print_tags(tags, sizeof tags);

    /* Warm-up (also opens the connections and lets the congestion windows
     * grow): at least --warmup calls and at least --warmup-ms; calibrate
     * from the median of the last --warmup calls (the first ones are slow). */
    double *wt = xmalloc(sizeof(double) * 4096);
    int nw = 0;
    double wstart = now();
    for (;;) {
        CHK(MPI_Barrier(MPI_COMM_WORLD));
        double t0 = now();
        one_call(b);
        double t = now() - t0, tmax;
        CHK(MPI_Allreduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD));
        wt[nw++] = tmax;
        int more = nw < opt_warmup || (now() - wstart) * 1e3 < opt_warmup_ms;
        CHK(MPI_Bcast(&more, 1, MPI_INT, 0, MPI_COMM_WORLD));
        if (!more || nw == 4096)
            break;
    }
    double fastest = median(wt + nw - opt_warmup, opt_warmup);
    free(wt);
    long iters = (long)(opt_rep_ms / 1e3 / (fastest > 1e-6 ? fastest : 1e-6));
    if (iters < 1)
        iters = 1;
    if (iters > opt_max_iters)
        iters = opt_max_iters;
    CHK(MPI_Bcast(&iters, 1, MPI_LONG, 0, MPI_COMM_WORLD));

    double *rep_value = xmalloc(sizeof(double) * (size_t)opt_reps);
    double *call_t = xmalloc(sizeof(double) * (size_t)iters);
    double *call_max = xmalloc(sizeof(double) * (size_t)iters * (size_t)opt_reps);
    double kc0[KC_N], kc1[KC_N];
    double win0 = 0, win1 = 0;

    for (int rep = 0; rep < opt_reps; rep++) {
        if (opt_op == OP_ALLTOALL) {
            a2a_fill(b, rep);
            memset(b->recv, 0, (size_t)opt_size * (size_t)w_size);
        } else if (opt_op == OP_BCAST) {
            bcast_fill(b, 1000 + rep);
        } else {
            ar_fill(b, 1000 + rep);
        }
        CHK(MPI_Barrier(MPI_COMM_WORLD));
        if (rep == 0) {
            kc_read(kc0);
            CHK(MPI_Barrier(MPI_COMM_WORLD));
            win0 = now();
        }
        double t0 = now(), prev = t0;
        for (long i = 0; i < iters; i++) {
            one_call(b);
            double t = now();
            call_t[i] = t - prev;
            prev = t;
        }
        double mine = (prev - t0) / (double)iters, worst;
        CHK(MPI_Reduce(&mine, &worst, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD));
        rep_value[rep] = worst;
        CHK(MPI_Reduce(call_t, call_max + (size_t)rep * (size_t)iters, (int)iters, MPI_DOUBLE, MPI_MAX, 0,
                       MPI_COMM_WORLD));
        if (opt_op == OP_ALLTOALL)
            a2a_check(b, rep);
        else if (opt_op == OP_BCAST)
            bcast_check(b, 1000 + rep);
        else
            ar_check(b, 1000 + rep);
        if (w_rank == 0) {
            printf("REP %s mode=loop rep=%d iters=%ld per_call_ms=%.4f\n", tags, rep, iters, worst * 1e3);
            fflush(stdout);
        }
    }
    win1 = now();
    CHK(MPI_Barrier(MPI_COMM_WORLD));
    kc_read(kc1);
    double w0min, w1max;
    CHK(MPI_Reduce(&win0, &w0min, 1, MPI_DOUBLE, MPI_MIN, 0, MPI_COMM_WORLD));
    CHK(MPI_Reduce(&win1, &w1max, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD));
    kc_report("timed", kc0, kc1, tags);
    if (w_rank == 0) {
        long n = iters * opt_reps;
        double p50 = median(call_max, (int)n);
        qsort(call_max, (size_t)n, sizeof(double), cmp_double);
        double p90 = call_max[(size_t)((double)(n - 1) * 0.9)];
        long slow = 0;
        for (long i = 0; i < n; i++)
            slow += call_max[i] > 0.1;
        printf("RESULT %s mode=loop iters=%ld reps=%d min_ms=%.4f med_ms=%.4f max_ms=%.4f\n", tags, iters,
               opt_reps, vmin(rep_value, opt_reps) * 1e3, median(rep_value, opt_reps) * 1e3,
               vmax(rep_value, opt_reps) * 1e3);
        printf("CALLS %s calls=%ld p50_ms=%.4f p90_ms=%.4f max_ms=%.4f over100ms=%ld\n", tags, n, p50 * 1e3,
               p90 * 1e3, call_max[n - 1] * 1e3, slow);
        printf("WINDOW %s mono_start=%.6f mono_end=%.6f\n", tags, w0min, w1max);
        fflush(stdout);
    }
    free(rep_value);
    free(call_t);
    free(call_max);
}

static void run_isolated(struct bufs *b)
{
    char tags[128];
    print_tags(tags, sizeof tags);
    int n = opt_calls;
    double *t_in = xmalloc(sizeof(double) * (size_t)(n + 1));
    double *t_out = xmalloc(sizeof(double) * (size_t)(n + 1));
    double kc0[KC_N], kc1[KC_N];
    /* call 0 is a warm-up (opens connections), not counted */
    for (int c = 0; c <= n; c++) {
        if (c == 1) {
            CHK(MPI_Barrier(MPI_COMM_WORLD));
            kc_read(kc0);
        }
        if (opt_op == OP_BCAST)
            bcast_fill(b, c);
        else if (opt_op == OP_ALLREDUCE)
            ar_fill(b, c);
        else {
            a2a_fill(b, c);
            memset(b->recv, 0, (size_t)opt_size * (size_t)w_size);
        }
        CHK(MPI_Barrier(MPI_COMM_WORLD));
        t_in[c] = now();
        one_call(b);
        t_out[c] = now();
        if (opt_op == OP_BCAST)
            bcast_check(b, c);
        else if (opt_op == OP_ALLREDUCE)
            ar_check(b, c);
        else
            a2a_check(b, c);
    }
    CHK(MPI_Barrier(MPI_COMM_WORLD));
    kc_read(kc1);
    double *in_max = xmalloc(sizeof(double) * (size_t)(n + 1));
    double *out_max = xmalloc(sizeof(double) * (size_t)(n + 1));
    double *in_root = xmalloc(sizeof(double) * (size_t)(n + 1));
    CHK(MPI_Reduce(t_in, in_max, n + 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD));
    CHK(MPI_Reduce(t_out, out_max, n + 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD));
    if (w_rank == 0)
        memcpy(in_root, t_in, sizeof(double) * (size_t)(n + 1));
    char ktags[160];
    snprintf(ktags, sizeof ktags, "%s mode=isolated", tags);
    kc_report("isolated", kc0, kc1, ktags);
    if (w_rank == 0) {
        double *lat = xmalloc(sizeof(double) * (size_t)n);
        for (int c = 1; c <= n; c++) {
            double start = opt_op == OP_BCAST ? in_root[c] : in_max[c];
            lat[c - 1] = out_max[c] - start;
            printf("CALL %s mode=isolated call=%d ms=%.4f skew_in_ms=%.4f\n", tags, c, lat[c - 1] * 1e3,
                   (in_max[c] - in_root[c]) * 1e3);
        }
        printf("RESULT %s mode=isolated iters=1 reps=%d min_ms=%.4f med_ms=%.4f max_ms=%.4f\n", tags, n,
               vmin(lat, n) * 1e3, median(lat, n) * 1e3, vmax(lat, n) * 1e3);
        fflush(stdout);
        free(lat);
    }
    free(t_in);
    free(t_out);
    free(in_max);
    free(out_max);
    free(in_root);
}

static void usage(void)
{
    if (w_rank == 0)
        fprintf(stderr, "usage: wan_coll --op alltoall|bcast|allreduce --size BYTES [--reps R] [--rep-ms MS] "
                        "[--max-iters N] [--warmup W] [--warmup-ms MS] [--calls C] [--loop|--no-loop] [--isolated|--no-isolated]\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
}

int main(int argc, char **argv)
{
    w_init(&argc, &argv);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--op") && v) {
            i++;
            if (!strcmp(v, "alltoall"))
                opt_op = OP_ALLTOALL;
            else if (!strcmp(v, "bcast"))
                opt_op = OP_BCAST;
            else if (!strcmp(v, "allreduce"))
                opt_op = OP_ALLREDUCE;
            else
                usage();
        } else if (!strcmp(a, "--size") && v) {
            opt_size = parse_size(argv[++i]);
        } else if (!strcmp(a, "--reps") && v) {
            opt_reps = atoi(argv[++i]);
        } else if (!strcmp(a, "--rep-ms") && v) {
            opt_rep_ms = atof(argv[++i]);
        } else if (!strcmp(a, "--max-iters") && v) {
            opt_max_iters = atol(argv[++i]);
        } else if (!strcmp(a, "--warmup") && v) {
            opt_warmup = atoi(argv[++i]);
        } else if (!strcmp(a, "--warmup-ms") && v) {
            opt_warmup_ms = atof(argv[++i]);
        } else if (!strcmp(a, "--calls") && v) {
            opt_calls = atoi(argv[++i]);
        } else if (!strcmp(a, "--loop")) {
            opt_loop = 1;
        } else if (!strcmp(a, "--no-loop")) {
            opt_loop = 0;
        } else if (!strcmp(a, "--isolated")) {
            opt_isolated = 1;
        } else if (!strcmp(a, "--no-isolated")) {
            opt_isolated = 0;
        } else {
            usage();
        }
    }
    if (opt_reps < 1 || opt_warmup < 1 || opt_calls < 1 || opt_size < 8)
        usage();
    if (opt_loop < 0)
        opt_loop = opt_op == OP_ALLTOALL;
    if (opt_isolated < 0)
        opt_isolated = opt_op != OP_ALLTOALL;

    struct bufs b = {0};
    if (opt_op == OP_ALLTOALL) {
        b.send = xmalloc((size_t)opt_size * (size_t)w_size);
        b.recv = xmalloc((size_t)opt_size * (size_t)w_size);
        b.count = opt_size;
    } else if (opt_op == OP_BCAST) {
        b.send = xmalloc((size_t)opt_size);
        b.count = opt_size;
    } else {
        b.count = opt_size / 8;
        b.dsend = xmalloc(sizeof(double) * (size_t)b.count);
        b.drecv = xmalloc(sizeof(double) * (size_t)b.count);
    }
    /* First call on its own: opens connections; checked too. */
    if (opt_op == OP_ALLTOALL) {
        a2a_fill(&b, 999);
        one_call(&b);
        a2a_check(&b, 999);
    }
    if (opt_isolated)
        run_isolated(&b);
    if (opt_loop)
        run_loop(&b);
    free(b.send);
    free(b.recv);
    free(b.dsend);
    free(b.drecv);
    return w_finish();
}
