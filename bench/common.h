/*
 * common.h: shared harness of the GridMPI benchmark programs (the .c files in bench/).
 *
 * The harness itself uses only point-to-point calls on a private duplicate
 * of MPI_COMM_WORLD, so it works (and measures the same way) on any MPI,
 * including one whose collectives are missing or broken:
 *   - ctl_barrier()   dissemination barrier of 0-byte MPI_Sendrecv
 *   - ctl_max/ctl_sum combine one value at rank 0 and send it back
 * Every MPI call of a benchmark goes through CHK(): MPI_COMM_WORLD has
 * MPI_ERRORS_RETURN, and an error prints an ERROR line and aborts.
 *
 * Output is line-oriented, parsed by bench/run.py:
 *   RESULT bench=NAME ranks=P size=BYTES iters=N reps=R min=X med=Y max=Z unit=U
 *   UNSUPPORTED bench=NAME msg=...       (an MPI call returned an error class
 *                                         saying the operation is not there)
 *   ERROR bench=NAME size=BYTES msg=...  (wrong data, failed call, ...)
 * A program exits non-zero after any ERROR.
 *
 * Timing: every measurement is R repetitions ("reps", --reps, at most 64)
 * of N iterations, each rep started by a harness barrier and timed on every
 * rank; the largest rank time counts. A rep gives one value (time per
 * iteration, or bandwidth); min, median and max are taken over the reps.
 * N is calibrated per size from a warm-up (see warm_up()) so a rep lasts
 * about --rep-ms milliseconds; rank 0 decides, so all ranks agree.
 *
 * Include from exactly one translation unit.
 */
#ifndef GRIDMPI_BENCH_COMMON_H
#define GRIDMPI_BENCH_COMMON_H

#define _GNU_SOURCE
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int bx_rank = -1, bx_size = 0;
static MPI_Comm bx_ctl = MPI_COMM_NULL; /* harness traffic only */
static const char *bx_bench = "?";      /* current benchmark, for messages */
static long bx_cur_size = -1;           /* current size, for messages */
static int bx_errors = 0;

/* Options common to all programs. */
static double opt_rep_ms = 40.0;  /* target duration of one rep */
static int opt_reps = 7;          /* reps per measurement */
static long opt_min_size = 1;
static long opt_max_size = 4L << 20;
static int opt_pow4 = 0;          /* sizes in powers of 4 instead of 2 */
static long opt_sizes[16];        /* --sizes: exactly these sizes, ascending */
static int opt_nsizes = 0;
static const char *opt_which = NULL; /* comma list of sub-benchmarks */

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static __attribute__((unused)) int is_unsupported_class(int code)
{
    int cls = code;
    MPI_Error_class(code, &cls);
#ifdef MPI_ERR_UNSUPPORTED_OPERATION
    if (cls == MPI_ERR_UNSUPPORTED_OPERATION)
        return 1;
#endif
    return 0;
}

static void bx_fail_call(const char *call, int code, const char *file, int line)
{
    char msg[MPI_MAX_ERROR_STRING + 1];
    int len = 0;
    msg[0] = 0;
    MPI_Error_string(code, msg, &len);
    for (char *p = msg; *p; p++)
        if (*p == '\n')
            *p = ' ';
    printf("ERROR bench=%s size=%ld rank=%d msg=%s failed at %s:%d: %s\n", bx_bench, bx_cur_size,
           bx_rank, call, file, line, msg);
    fflush(stdout);
    MPI_Abort(MPI_COMM_WORLD, 3);
    exit(3);
}

#define CHK(call)                                                   \
    do {                                                            \
        int chk_rc_ = (call);                                       \
        if (chk_rc_ != MPI_SUCCESS)                                 \
            bx_fail_call(#call, chk_rc_, __FILE__, __LINE__);       \
    } while (0)

/* Report wrong data: printed, counted, and turned into a failure at the end
 * of the program (so the rest of the run still shows what else is wrong). */
static void bx_data_error(const char *what, long index, unsigned got, unsigned want)
{
    bx_errors++;
    if (bx_errors <= 20)
        printf("ERROR bench=%s size=%ld rank=%d msg=wrong data: %s at index %ld: got 0x%x, expected 0x%x\n",
               bx_bench, bx_cur_size, bx_rank, what, index, got, want);
    fflush(stdout);
}

/* ---- harness communication (point-to-point only) ---- */

#define CTL_TAG 7001

static void ctl_barrier(void)
{
    char dummy_s = 0, dummy_r = 0;
    for (int dist = 1; dist < bx_size; dist <<= 1) {
        int to = (bx_rank + dist) % bx_size;
        int from = (bx_rank - dist + bx_size) % bx_size;
        CHK(MPI_Sendrecv(&dummy_s, 0, MPI_BYTE, to, CTL_TAG, &dummy_r, 0, MPI_BYTE, from, CTL_TAG,
                         bx_ctl, MPI_STATUS_IGNORE));
    }
}

/* Combine one double across ranks at rank 0 with op (0 = max, 1 = sum,
 * 2 = min), then give the result to every rank. */
static double ctl_combine(double v, int op)
{
    double acc = v;
    if (bx_rank == 0) {
        for (int r = 1; r < bx_size; r++) {
            double x;
            CHK(MPI_Recv(&x, 1, MPI_DOUBLE, r, CTL_TAG + 1, bx_ctl, MPI_STATUS_IGNORE));
            if (op == 0 && x > acc)
                acc = x;
            else if (op == 1)
                acc += x;
            else if (op == 2 && x < acc)
                acc = x;
        }
        for (int r = 1; r < bx_size; r++)
            CHK(MPI_Send(&acc, 1, MPI_DOUBLE, r, CTL_TAG + 2, bx_ctl));
    } else {
        CHK(MPI_Send(&v, 1, MPI_DOUBLE, 0, CTL_TAG + 1, bx_ctl));
        CHK(MPI_Recv(&acc, 1, MPI_DOUBLE, 0, CTL_TAG + 2, bx_ctl, MPI_STATUS_IGNORE));
    }
    return acc;
}
static double ctl_max(double v) { return ctl_combine(v, 0); }
static double ctl_sum(double v) { return ctl_combine(v, 1); }

/* Rank 0's value of v, on every rank. */
static long ctl_from_root(long v)
{
    if (bx_rank == 0) {
        for (int r = 1; r < bx_size; r++)
            CHK(MPI_Send(&v, 1, MPI_LONG, r, CTL_TAG + 3, bx_ctl));
    } else {
        CHK(MPI_Recv(&v, 1, MPI_LONG, 0, CTL_TAG + 3, bx_ctl, MPI_STATUS_IGNORE));
    }
    return v;
}

/* ---- data patterns ---- */

/* Byte i of the pattern identified by seed. Cheap, position-dependent and
 * seed-dependent, so a shifted, truncated, stale or misrouted buffer fails. */
static inline unsigned char pat_byte(uint64_t seed, uint64_t i)
{
    uint64_t x = (i + 1) * 0x9E3779B97F4A7C15ull ^ (seed * 0xC2B2AE3D27D4EB4Full);
    x ^= x >> 29;
    return (unsigned char)(x >> 11);
}

static void pat_fill(void *buf, long n, uint64_t seed)
{
    unsigned char *b = buf;
    for (long i = 0; i < n; i++)
        b[i] = pat_byte(seed, (uint64_t)i);
}

/* Returns 1 when buf holds the pattern, else reports the first difference. */
static int pat_check(const void *buf, long n, uint64_t seed, const char *what)
{
    const unsigned char *b = buf;
    for (long i = 0; i < n; i++) {
        unsigned char want = pat_byte(seed, (uint64_t)i);
        if (b[i] != want) {
            bx_data_error(what, i, b[i], want);
            return 0;
        }
    }
    return 1;
}

static uint64_t seed_of(long size, int a, int b, int c)
{
    return ((uint64_t)size << 24) ^ ((uint64_t)a << 16) ^ ((uint64_t)b << 8) ^ (uint64_t)c ^ 0x5eedull;
}

static void *xmalloc(size_t n)
{
    void *p = NULL;
    if (n == 0)
        n = 1;
    if (posix_memalign(&p, 4096, n) != 0) {
        printf("ERROR bench=%s size=%ld rank=%d msg=out of memory (%zu bytes)\n", bx_bench, bx_cur_size,
               bx_rank, n);
        MPI_Abort(MPI_COMM_WORLD, 4);
    }
    memset(p, 0, n);
    return p;
}

/* ---- statistics ---- */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Sorts v in place; fills min, median, max. */
static void stats(double *v, int n, double *mn, double *med, double *mx)
{
    qsort(v, (size_t)n, sizeof(double), cmp_double);
    *mn = v[0];
    *mx = v[n - 1];
    *med = (n % 2) ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static void report(const char *bench, long size, long iters, double *vals, int n, const char *unit)
{
    double mn, med, mx;
    stats(vals, n, &mn, &med, &mx);
    if (bx_rank == 0) {
        printf("RESULT bench=%s ranks=%d size=%ld iters=%ld reps=%d min=%.6g med=%.6g max=%.6g unit=%s\n",
               bench, bx_size, size, iters, n, mn, med, mx, unit);
        fflush(stdout);
    }
}

/* A timed loop: runs n iterations of one benchmark, returns this rank's
 * elapsed seconds. */
typedef double (*loop_fn)(void *ctx, long n);

struct plan {
    long iters; /* per rep */
    int reps;
};

/* Warm-up and calibration: four timed batches; the per-iteration time of
 * the last (max over ranks) is the estimate. The first batch is 1
 * iteration (it also makes any connection the benchmark needs); each next
 * one is as large as fits in half a rep by the latest estimate, at most
 * `batch`, so a lucky fast batch cannot make a rep last much too long. An operation slower than
 * 1 s stops the warm-up early, gets at most 3 reps of iters_min iterations,
 * so one very slow MPI cannot stall the whole run. Iterations per rep:
 * --rep-ms / estimate, clamped to [iters_min, iters_max], rounded up to a
 * multiple of `multiple`. Rank 0 decides, so all ranks agree. */
static struct plan warm_up(loop_fn loop, void *ctx, long batch, long iters_min, long iters_max, long multiple)
{
    double rep_s = opt_rep_ms * 1e-3;
    double per = 1e30;
    long b = 1;
    for (int k = 0; k < 4; k++) {
        ctl_barrier();
        per = ctl_max(loop(ctx, b)) / (double)b;
        if (per > 1.0)
            break;
        double fit = 0.5 * rep_s / per;
        b = fit < 1 ? 1 : fit > (double)batch ? batch : (long)fit;
    }
    long n = iters_max;
    if (per > 0 && rep_s / per < (double)iters_max)
        n = (long)(rep_s / per);
    if (n < iters_min)
        n = iters_min;
    if (multiple > 1)
        n = (n + multiple - 1) / multiple * multiple;
    struct plan pl = {ctl_from_root(n), opt_reps};
    if (per > 1.0 && pl.reps > 3)
        pl.reps = 3;
    return pl;
}

/* Runs the reps of a plan; value of a rep from the largest per-rank time t
 * of its n iterations: scale * t / n (times), or scale * n / t with
 * per_time = 0 (rates). before_last (may be NULL) runs before the last rep,
 * e.g. to zero the buffers whose content is checked afterwards. Prints the
 * RESULT line (iters = reported_per_iter * n). */
static void measure(const char *bench, long size, loop_fn loop, void *ctx, struct plan pl, double scale,
                    int per_time, void (*before_last)(void *), long reported_per_iter, const char *unit)
{
    double vals[64];
    int reps = pl.reps > 64 ? 64 : pl.reps;
    for (int r = 0; r < reps; r++) {
        if (r == reps - 1 && before_last)
            before_last(ctx);
        ctl_barrier();
        double t = ctl_max(loop(ctx, pl.iters));
        vals[r] = per_time ? scale * t / (double)pl.iters : scale * (double)pl.iters / t;
    }
    report(bench, size, pl.iters * reported_per_iter, vals, reps, unit);
}

/* ---- options and setup ---- */

static long parse_size(const char *s)
{
    char *end;
    long v = strtol(s, &end, 10);
    if (*end == 'k' || *end == 'K')
        v <<= 10;
    else if (*end == 'm' || *end == 'M')
        v <<= 20;
    return v;
}

/* Does the comma list opt_which name this sub-benchmark (or is it empty)? */
static int want(const char *name)
{
    if (!opt_which || !*opt_which)
        return 1;
    size_t n = strlen(name);
    for (const char *p = opt_which; *p;) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len == n && strncmp(p, name, n) == 0)
            return 1;
        if (!e)
            break;
        p = e + 1;
    }
    return 0;
}

static void usage_common(void)
{
    fprintf(stderr,
            "options: --reps R  --rep-ms MS  --min-size B  --max-size B (k/m suffixes)  --pow4  "
            "--sizes a,b,c  --only a,b,c\n");
}

static __attribute__((unused)) long next_size(long s)
{
    if (opt_nsizes > 0) {
        for (int i = 0; i < opt_nsizes; i++)
            if (opt_sizes[i] > s)
                return opt_sizes[i];
        return opt_max_size + 1;
    }
    return opt_pow4 ? s * 4 : s * 2;
}

/* MPI_Init_thread at `level` (MPI_Init when level < 0), then the harness
 * setup and the common options. */
static void bench_init_level(int *argc, char ***argv, int level)
{
    if (level < 0) {
        CHK(MPI_Init(argc, argv));
    } else {
        int provided = -1;
        CHK(MPI_Init_thread(argc, argv, level, &provided));
        if (provided < level) {
            printf("ERROR bench=init size=-1 rank=0 msg=thread level %d requested, %d provided\n", level, provided);
            fflush(stdout);
            MPI_Abort(MPI_COMM_WORLD, 3);
        }
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    /* Errors not tied to a communicator are raised on MPI_COMM_SELF. */
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    CHK(MPI_Comm_rank(MPI_COMM_WORLD, &bx_rank));
    CHK(MPI_Comm_size(MPI_COMM_WORLD, &bx_size));
    CHK(MPI_Comm_dup(MPI_COMM_WORLD, &bx_ctl));
    MPI_Comm_set_errhandler(bx_ctl, MPI_ERRORS_RETURN);
    for (int i = 1; i < *argc; i++) {
        const char *a = (*argv)[i];
        const char *v = (i + 1 < *argc) ? (*argv)[i + 1] : NULL;
        if (!strcmp(a, "--reps") && v) {
            opt_reps = atoi(v);
            i++;
        } else if (!strcmp(a, "--rep-ms") && v) {
            opt_rep_ms = atof(v);
            i++;
        } else if (!strcmp(a, "--min-size") && v) {
            opt_min_size = parse_size(v);
            i++;
        } else if (!strcmp(a, "--max-size") && v) {
            opt_max_size = parse_size(v);
            i++;
        } else if (!strcmp(a, "--only") && v) {
            opt_which = v;
            i++;
        } else if (!strcmp(a, "--sizes") && v) {
            /* A list of sizes instead of a range (as with --min-size/--max-size). */
            char *copy = strdup(v), *save = NULL;
            opt_nsizes = 0;
            for (char *tok = strtok_r(copy, ",", &save); tok && opt_nsizes < 16; tok = strtok_r(NULL, ",", &save)) {
                long z = parse_size(tok);
                if (opt_nsizes > 0 && z <= opt_sizes[opt_nsizes - 1]) {
                    if (bx_rank == 0)
                        fprintf(stderr, "--sizes: sizes must be ascending (%s)\n", v);
                    MPI_Abort(MPI_COMM_WORLD, 2);
                }
                opt_sizes[opt_nsizes++] = z;
            }
            free(copy);
            if (opt_nsizes == 0) {
                if (bx_rank == 0)
                    fprintf(stderr, "--sizes: no size in '%s'\n", v);
                MPI_Abort(MPI_COMM_WORLD, 2);
            }
            opt_min_size = opt_sizes[0];
            opt_max_size = opt_sizes[opt_nsizes - 1];
            i++;
        } else if (!strcmp(a, "--pow4")) {
            opt_pow4 = 1;
        } else {
            if (bx_rank == 0) {
                fprintf(stderr, "unknown option %s\n", a);
                usage_common();
            }
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    }
    if (opt_reps < 1)
        opt_reps = 1;
    if (opt_reps > 64)
        opt_reps = 64;
    if (bx_rank == 0) {
        char ver[MPI_MAX_LIBRARY_VERSION_STRING + 1];
        int len = 0;
        MPI_Get_library_version(ver, &len);
        char *nl = strchr(ver, '\n');
        if (nl)
            *nl = 0;
        printf("INFO ranks=%d reps=%d rep_ms=%g library=%s\n", bx_size, opt_reps, opt_rep_ms, ver);
        fflush(stdout);
    }
    /* Make every connection the harness uses before anything is timed. */
    ctl_barrier();
    ctl_barrier();
}

static __attribute__((unused)) void bench_init(int *argc, char ***argv)
{
    bench_init_level(argc, argv, -1);
}

static int bench_finish(void)
{
    double errs = ctl_sum((double)bx_errors);
    ctl_barrier();
    MPI_Comm_free(&bx_ctl);
    MPI_Finalize();
    if (errs > 0) {
        if (bx_rank == 0)
            printf("ERROR bench=all size=-1 rank=0 msg=%g data errors in total\n", errs);
        return 1;
    }
    return 0;
}

#endif
