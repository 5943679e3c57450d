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
 * Correctness, once per size before timing and again on the last timed
 * call: bcast checks the root's pattern on every rank; allreduce sums
 * per-rank integer-valued doubles (exact) and checks every element;
 * alltoall checks each block's pattern (which names source and
 * destination); barrier checks that no rank leaves before the last one
 * entered (rank 0 enters 30 ms late; everyone must wait for it).
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

    ctl_barrier();
    for (int i = 0; i < 10; i++)
        CHK(MPI_Barrier(MPI_COMM_WORLD));
    ctl_barrier();
    t0 = now();
    for (int i = 0; i < 20; i++)
        CHK(MPI_Barrier(MPI_COMM_WORLD));
    long n = calibrate(ctl_max((now() - t0) / 20), 10, 100000);
    double vals[1000];
    for (int r = 0; r < opt_reps; r++) {
        ctl_barrier();
        t0 = now();
        for (long i = 0; i < n; i++)
            CHK(MPI_Barrier(MPI_COMM_WORLD));
        vals[r] = ctl_max((now() - t0) / (double)n) * 1e6;
    }
    report("barrier", 0, n, vals, opt_reps, "us");
}

/* ---- bcast ---- */

static int bcast_check(unsigned char *buf, long size, long iter)
{
    int root = (int)(iter % bx_size);
    return pat_check(buf, size, seed_of(size, root, 3, (int)(iter & 0xff)), "bcast data");
}

static void bcast_prep(unsigned char *buf, long size, long iter)
{
    int root = (int)(iter % bx_size);
    if (bx_rank == root)
        pat_fill(buf, size, seed_of(size, root, 3, (int)(iter & 0xff)));
    else
        memset(buf, 0, (size_t)size);
}

static double bcast_loop(unsigned char *buf, long size, long n)
{
    double t0 = now();
    for (long i = 0; i < n; i++)
        CHK(MPI_Bcast(buf, (int)size, MPI_BYTE, (int)(i % bx_size), MPI_COMM_WORLD));
    return now() - t0;
}

static int run_bcast(long size)
{
    bx_bench = "bcast";
    bx_cur_size = size;
    unsigned char *buf = xmalloc((size_t)size);
    ctl_barrier();
    /* Correctness: one call from every root. */
    for (long it = 0; it < bx_size; it++) {
        bcast_prep(buf, size, it);
        int rc = MPI_Bcast(buf, (int)size, MPI_BYTE, (int)(it % bx_size), MPI_COMM_WORLD);
        if (it == 0 && !first_call_ok("bcast", rc)) {
            free(buf);
            return 0;
        }
        if (rc != MPI_SUCCESS)
            bx_fail_call("MPI_Bcast", rc, __FILE__, __LINE__);
        bcast_check(buf, size, it);
    }
    ctl_barrier();
    bcast_loop(buf, size, 3);
    ctl_barrier();
    double t = bcast_loop(buf, size, 8);
    long n = calibrate(ctl_max(t / 8), 8, 100000);
    n = (n + bx_size - 1) / bx_size * bx_size; /* every root equally often */
    double vals[1000];
    for (int r = 0; r < opt_reps; r++) {
        ctl_barrier();
        t = bcast_loop(buf, size, n);
        vals[r] = ctl_max(t / (double)n) * 1e6;
    }
    /* The timed loop rebroadcast unchanged buffers; check one more call
     * with fresh data from the last root of the loop. */
    bcast_prep(buf, size, n - 1);
    CHK(MPI_Bcast(buf, (int)size, MPI_BYTE, (int)((n - 1) % bx_size), MPI_COMM_WORLD));
    bcast_check(buf, size, n - 1);
    report("bcast", size, n, vals, opt_reps, "us");
    free(buf);
    return 1;
}

/* ---- allreduce ---- */

/* Element k of rank r's contribution: small integers, so sums are exact. */
static double ar_val(int r, long k, long salt) { return (double)((r * 7 + k * 3 + salt) % 1000); }

static void ar_fill(double *v, long cnt, long salt)
{
    for (long k = 0; k < cnt; k++)
        v[k] = ar_val(bx_rank, k, salt);
}

static void ar_check(const double *v, long cnt, long salt)
{
    for (long k = 0; k < cnt; k++) {
        double want = 0;
        for (int r = 0; r < bx_size; r++)
            want += ar_val(r, k, salt);
        if (v[k] != want) {
            bx_data_error("allreduce sum", k, (unsigned)v[k], (unsigned)want);
            return;
        }
    }
}

static int run_allreduce(long size)
{
    bx_bench = "allreduce";
    bx_cur_size = size;
    long cnt = size / 8 > 0 ? size / 8 : 1;
    double *in = xmalloc((size_t)cnt * 8), *out = xmalloc((size_t)cnt * 8);
    ctl_barrier();
    ar_fill(in, cnt, size);
    int rc = MPI_Allreduce(in, out, (int)cnt, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    if (!first_call_ok("allreduce", rc)) {
        free(in);
        free(out);
        return 0;
    }
    ar_check(out, cnt, size);

    ctl_barrier();
    for (int i = 0; i < 3; i++)
        CHK(MPI_Allreduce(in, out, (int)cnt, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD));
    ctl_barrier();
    double t0 = now();
    for (int i = 0; i < 8; i++)
        CHK(MPI_Allreduce(in, out, (int)cnt, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD));
    long n = calibrate(ctl_max((now() - t0) / 8), 8, 100000);
    double vals[1000];
    for (int r = 0; r < opt_reps; r++) {
        if (r == opt_reps - 1)
            memset(out, 0, (size_t)cnt * 8);
        ctl_barrier();
        t0 = now();
        for (long i = 0; i < n; i++)
            CHK(MPI_Allreduce(in, out, (int)cnt, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD));
        vals[r] = ctl_max((now() - t0) / (double)n) * 1e6;
    }
    ar_check(out, cnt, size);
    report("allreduce", size, n, vals, opt_reps, "us");
    free(in);
    free(out);
    return 1;
}

/* ---- alltoall ---- */

static void a2a_fill(unsigned char *sbuf, long size)
{
    for (int d = 0; d < bx_size; d++)
        pat_fill(sbuf + (long)d * size, size, seed_of(size, bx_rank, d, 4));
}

static void a2a_check(const unsigned char *rbuf, long size)
{
    for (int s = 0; s < bx_size; s++)
        if (!pat_check(rbuf + (long)s * size, size, seed_of(size, s, bx_rank, 4), "alltoall block"))
            return;
}

static int run_alltoall(long size)
{
    bx_bench = "alltoall";
    bx_cur_size = size;
    unsigned char *sbuf = xmalloc((size_t)(size * bx_size)), *rbuf = xmalloc((size_t)(size * bx_size));
    ctl_barrier();
    a2a_fill(sbuf, size);
    int rc = MPI_Alltoall(sbuf, (int)size, MPI_BYTE, rbuf, (int)size, MPI_BYTE, MPI_COMM_WORLD);
    if (!first_call_ok("alltoall", rc)) {
        free(sbuf);
        free(rbuf);
        return 0;
    }
    a2a_check(rbuf, size);

    ctl_barrier();
    for (int i = 0; i < 3; i++)
        CHK(MPI_Alltoall(sbuf, (int)size, MPI_BYTE, rbuf, (int)size, MPI_BYTE, MPI_COMM_WORLD));
    ctl_barrier();
    double t0 = now();
    for (int i = 0; i < 8; i++)
        CHK(MPI_Alltoall(sbuf, (int)size, MPI_BYTE, rbuf, (int)size, MPI_BYTE, MPI_COMM_WORLD));
    long n = calibrate(ctl_max((now() - t0) / 8), 4, 100000);
    double vals[1000];
    for (int r = 0; r < opt_reps; r++) {
        if (r == opt_reps - 1)
            memset(rbuf, 0, (size_t)(size * bx_size));
        ctl_barrier();
        t0 = now();
        for (long i = 0; i < n; i++)
            CHK(MPI_Alltoall(sbuf, (int)size, MPI_BYTE, rbuf, (int)size, MPI_BYTE, MPI_COMM_WORLD));
        vals[r] = ctl_max((now() - t0) / (double)n) * 1e6;
    }
    a2a_check(rbuf, size);
    report("alltoall", size, n, vals, opt_reps, "us");
    free(sbuf);
    free(rbuf);
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
