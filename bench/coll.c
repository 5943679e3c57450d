/*
 * coll.c: latency of collective operations on MPI_COMM_WORLD.
 *
 *   barrier    MPI_Barrier (no size)
 *   bcast      MPI_Bcast of SIZE bytes (MPI_BYTE); the root rotates every
 *              iteration, so no root can run ahead of the others for long
 *   allreduce  MPI_Allreduce of SIZE bytes: SIZE/8 MPI_DOUBLE, MPI_SUM
 *   alltoall   MPI_Alltoall, SIZE bytes (MPI_BYTE) to and from every rank
 *
 * A rep is N back-to-back calls, started together (harness barrier); its
 * value is the largest per-rank time / N, in microseconds.
 *
 * Correctness, per size: before timing (bcast: one call from every root)
 * and after it (allreduce, alltoall: the output of the last timed call,
 * zeroed before the last rep; bcast: one more call with fresh data).
 * bcast checks the root's pattern on every rank; allreduce sums per-rank
 * integer-valued doubles (exact) and checks every element; alltoall checks
 * each block's pattern (which names source and destination); barrier
 * checks that no rank leaves before the last one entered (rank 0 enters
 * 30 ms late; everyone must wait for it).
 *
 * An MPI error class of MPI_ERR_UNSUPPORTED_OPERATION (or, for libraries
 * without it, any error on the first call) makes a collective print
 * UNSUPPORTED and be skipped; any other failure is an ERROR.
 *
 * Sizes: --min-size (default 8) to --max-size (default 1m), x4 (--pow4
 * default here) with --max-size always included. Sub-benchmarks: --only
 * barrier,bcast,allreduce,alltoall.
 */
#include "common.h"

/* Runs the first call of a collective on every rank; returns 1 if every
 * rank succeeded, 0 (after printing UNSUPPORTED) if any rank's call
 * returned an error. */
static int first_call_ok(const char *name, int rc)
{
    double bad = ctl_sum(rc != MPI_SUCCESS ? 1.0 : 0.0);
    if (bad == 0)
        return 1;
    if (rc != MPI_SUCCESS) {
        char msg[MPI_MAX_ERROR_STRING + 1];
        int len = 0;
        msg[0] = 0;
        MPI_Error_string(rc, msg, &len);
        for (char *p = msg; *p; p++)
            if (*p == '\n')
                *p = ' ';
        printf("%s bench=%s rank=%d msg=%s\n", is_unsupported_class(rc) ? "UNSUPPORTED" : "ERROR", name,
               bx_rank, msg);
        fflush(stdout);
        if (!is_unsupported_class(rc))
            bx_errors++;
    }
    return 0;
}

/* ---- barrier ---- */

static double barrier_loop(void *ctx, long n)
{
    (void)ctx;
    double t0 = now();
    for (long i = 0; i < n; i++)
        CHK(MPI_Barrier(MPI_COMM_WORLD));
    return now() - t0;
}

static void run_barrier(void)
{
    bx_bench = "barrier";
    bx_cur_size = 0;
    ctl_barrier();
    if (!first_call_ok("barrier", MPI_Barrier(MPI_COMM_WORLD)))
        return;

    /* Correctness: rank 0 enters 30 ms late; every rank must wait for it. */
    ctl_barrier();
    double t0 = now();
    if (bx_rank == 0)
        usleep(30000);
    CHK(MPI_Barrier(MPI_COMM_WORLD));
    double waited = now() - t0;
    if (bx_rank != 0 && waited < 0.025) {
        bx_errors++;
        printf("ERROR bench=barrier size=0 rank=%d msg=left MPI_Barrier after %.3f ms although rank 0 "
               "entered 30 ms late\n",
               bx_rank, waited * 1e3);
    }

    struct plan pl = warm_up(barrier_loop, NULL, 1000, 2, 100000, 1);
    measure("barrier", 0, barrier_loop, NULL, pl, 1e6, 1, NULL, 1, "us");
}

/* ---- bcast ---- */

struct bcast_ctx {
    unsigned char *buf;
    long size;
};

static uint64_t bcast_seed(long size, long iter)
{
    return seed_of(size, (int)(iter % bx_size), 3, (int)(iter & 0xff));
}

/* Root fills the pattern of call `iter`, the others zero their buffer. */
static void bcast_prep(struct bcast_ctx *c, long iter)
{
    if (bx_rank == (int)(iter % bx_size))
        pat_fill(c->buf, c->size, bcast_seed(c->size, iter));
    else
        memset(c->buf, 0, (size_t)c->size);
}

static double bcast_loop(void *vctx, long n)
{
    struct bcast_ctx *c = vctx;
    double t0 = now();
    for (long i = 0; i < n; i++)
        CHK(MPI_Bcast(c->buf, (int)c->size, MPI_BYTE, (int)(i % bx_size), MPI_COMM_WORLD));
    return now() - t0;
}

static int run_bcast(long size)
{
    bx_bench = "bcast";
    bx_cur_size = size;
    struct bcast_ctx c = {xmalloc((size_t)size), size};
    ctl_barrier();
    /* Correctness: one call from every root. */
    for (long it = 0; it < bx_size; it++) {
        bcast_prep(&c, it);
        int rc = MPI_Bcast(c.buf, (int)size, MPI_BYTE, (int)(it % bx_size), MPI_COMM_WORLD);
        if (it == 0 && !first_call_ok("bcast", rc)) {
            free(c.buf);
            return 0;
        }
        if (rc != MPI_SUCCESS)
            bx_fail_call("MPI_Bcast", rc, __FILE__, __LINE__);
        pat_check(c.buf, size, bcast_seed(size, it), "bcast data");
    }
    struct plan pl = warm_up(bcast_loop, &c, 1000, bx_size, 100000, bx_size);
    measure("bcast", size, bcast_loop, &c, pl, 1e6, 1, NULL, 1, "us");
    /* The timed loop rebroadcast unchanged buffers; check one more call
     * with fresh data, from a root other than rank 0. */
    long last = bx_size - 1 + bx_size;
    bcast_prep(&c, last);
    CHK(MPI_Bcast(c.buf, (int)size, MPI_BYTE, (int)(last % bx_size), MPI_COMM_WORLD));
    pat_check(c.buf, size, bcast_seed(size, last), "bcast data after timed loop");
    free(c.buf);
    return 1;
}

/* ---- allreduce ---- */

struct ar_ctx {
    double *in, *out;
    long cnt, salt;
};

/* Element k of rank r's contribution: small integers, so sums are exact. */
static double ar_val(int r, long k, long salt) { return (double)((r * 7 + k * 3 + salt) % 1000); }

static void ar_check(struct ar_ctx *c)
{
    for (long k = 0; k < c->cnt; k++) {
        double want = 0;
        for (int r = 0; r < bx_size; r++)
            want += ar_val(r, k, c->salt);
        if (c->out[k] != want) {
            bx_data_error("allreduce sum", k, (unsigned)c->out[k], (unsigned)want);
            return;
        }
    }
}

static double ar_loop(void *vctx, long n)
{
    struct ar_ctx *c = vctx;
    double t0 = now();
    for (long i = 0; i < n; i++)
        CHK(MPI_Allreduce(c->in, c->out, (int)c->cnt, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD));
    return now() - t0;
}

static void ar_zero(void *vctx)
{
    struct ar_ctx *c = vctx;
    memset(c->out, 0, (size_t)c->cnt * sizeof(double));
}

static int run_allreduce(long size)
{
    bx_bench = "allreduce";
    bx_cur_size = size;
    long cnt = size / 8 > 0 ? size / 8 : 1;
    struct ar_ctx c = {xmalloc((size_t)cnt * 8), xmalloc((size_t)cnt * 8), cnt, size};
    for (long k = 0; k < cnt; k++)
        c.in[k] = ar_val(bx_rank, k, c.salt);
    ctl_barrier();
    int rc = MPI_Allreduce(c.in, c.out, (int)cnt, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    if (!first_call_ok("allreduce", rc)) {
        free(c.in);
        free(c.out);
        return 0;
    }
    ar_check(&c);
    struct plan pl = warm_up(ar_loop, &c, 1000, 1, 100000, 1);
    measure("allreduce", size, ar_loop, &c, pl, 1e6, 1, ar_zero, 1, "us");
    ar_check(&c);
    free(c.in);
    free(c.out);
    return 1;
}

/* ---- alltoall ---- */

struct a2a_ctx {
    unsigned char *sbuf, *rbuf;
    long size;
};

static void a2a_check(struct a2a_ctx *c)
{
    for (int s = 0; s < bx_size; s++)
        if (!pat_check(c->rbuf + (long)s * c->size, c->size, seed_of(c->size, s, bx_rank, 4), "alltoall block"))
            return;
}

static double a2a_loop(void *vctx, long n)
{
    struct a2a_ctx *c = vctx;
    int cnt = (int)c->size;
    double t0 = now();
    for (long i = 0; i < n; i++)
        CHK(MPI_Alltoall(c->sbuf, cnt, MPI_BYTE, c->rbuf, cnt, MPI_BYTE, MPI_COMM_WORLD));
    return now() - t0;
}

static void a2a_zero(void *vctx)
{
    struct a2a_ctx *c = vctx;
    memset(c->rbuf, 0, (size_t)(c->size * bx_size));
}

static int run_alltoall(long size)
{
    bx_bench = "alltoall";
    bx_cur_size = size;
    struct a2a_ctx c = {xmalloc((size_t)(size * bx_size)), xmalloc((size_t)(size * bx_size)), size};
    for (int d = 0; d < bx_size; d++)
        pat_fill(c.sbuf + (long)d * size, size, seed_of(size, bx_rank, d, 4));
    ctl_barrier();
    int rc = MPI_Alltoall(c.sbuf, (int)size, MPI_BYTE, c.rbuf, (int)size, MPI_BYTE, MPI_COMM_WORLD);
    if (!first_call_ok("alltoall", rc)) {
        free(c.sbuf);
        free(c.rbuf);
        return 0;
    }
    a2a_check(&c);
    struct plan pl = warm_up(a2a_loop, &c, 1000, 1, 100000, 1);
    measure("alltoall", size, a2a_loop, &c, pl, 1e6, 1, a2a_zero, 1, "us");
    a2a_check(&c);
    free(c.sbuf);
    free(c.rbuf);
    return 1;
}

static void sizes_loop(int (*fn)(long))
{
    for (long s = opt_min_size; s <= opt_max_size; s = next_size(s)) {
        if (!fn(s))
            return;
        if (s < opt_max_size && next_size(s) > opt_max_size)
            fn(opt_max_size);
    }
}

int main(int argc, char **argv)
{
    opt_min_size = 8;
    opt_max_size = 1L << 20;
    opt_pow4 = 1;
    opt_rep_ms = 30;
    bench_init(&argc, &argv);
    if (want("barrier"))
        run_barrier();
    if (want("bcast"))
        sizes_loop(run_bcast);
    if (want("allreduce"))
        sizes_loop(run_allreduce);
    if (want("alltoall"))
        sizes_loop(run_alltoall);
    return bench_finish();
}
