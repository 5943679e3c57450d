/*
 * wan.h: shared helpers of the WAN benchmark programs in bench/wan/
 * (wan_coll.c, is_sort.c, ft_transpose.c). Include from one file only.
 *
 * - now(): CLOCK_MONOTONIC in seconds. On the testbed every host is a
 *   network namespace of one machine, so this clock is the same on every
 *   rank (and the same as the testbed monitor's): times taken on different
 *   ranks can be compared directly.
 * - Kernel TCP counters of this rank's network namespace (= its host on
 *   the testbed), read from /proc/self/net/{netstat,snmp} (what nstat
 *   reads), so a program can count retransmission timeouts around exactly
 *   its timed section. Only the first rank of each host (by name) adds its
 *   host's counters, so nothing is counted twice.
 * - Every MPI call goes through CHK(): MPI_COMM_WORLD has
 *   MPI_ERRORS_RETURN; a failure prints an ERROR line and aborts.
 *
 * Output lines start with a keyword (RESULT, KCOUNT, WINDOW, HOSTS, CHECK,
 * ERROR, ...) followed by key=value words; bench/wan/run.py parses them.
 */
#ifndef GRIDMPI_BENCH_WAN_H
#define GRIDMPI_BENCH_WAN_H

#define _GNU_SOURCE
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int w_rank = -1, w_size = 0;
static long w_errors = 0;
static int w_host_leader = 0; /* first rank on its host */
static char w_host[256];

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void w_fail_call(const char *call, int code, const char *file, int line)
{
    char msg[MPI_MAX_ERROR_STRING + 1];
    int len = 0;
    msg[0] = 0;
    MPI_Error_string(code, msg, &len);
    for (char *p = msg; *p; p++)
        if (*p == '\n')
            *p = ' ';
    printf("ERROR rank=%d call=%s at=%s:%d msg=%s\n", w_rank, call, file, line, msg);
    fflush(stdout);
    MPI_Abort(MPI_COMM_WORLD, 3);
    exit(3);
}

#define CHK(call)                                                                                  \
    do {                                                                                           \
        int chk_rc_ = (call);                                                                      \
        if (chk_rc_ != MPI_SUCCESS)                                                                \
            w_fail_call(#call, chk_rc_, __FILE__, __LINE__);                                       \
    } while (0)

static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) {
        fprintf(stderr, "out of memory (%zu bytes)\n", n);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    return p;
}

/* Wrong data: print (the first few) and count; the program fails at the end. */
static void w_data_error(const char *what, long index, double got, double want)
{
    w_errors++;
    if (w_errors <= 10)
        printf("ERROR rank=%d msg=wrong data: %s at %ld: got %.17g expected %.17g\n", w_rank, what, index,
               got, want);
    fflush(stdout);
}

/* "16k", "1m", "4096" -> bytes */
static __attribute__((unused)) long parse_size(const char *s)
{
    char *end;
    double v = strtod(s, &end);
    switch (*end) {
    case 'k': case 'K': v *= 1024; break;
    case 'm': case 'M': v *= 1024 * 1024; break;
    case 'g': case 'G': v *= 1024.0 * 1024 * 1024; break;
    default: break;
    }
    return (long)v;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Median of n values (sorts a copy). */
static __attribute__((unused)) double median(const double *v, int n)
{
    if (n <= 0)
        return 0;
    double *c = xmalloc(sizeof(double) * (size_t)n);
    memcpy(c, v, sizeof(double) * (size_t)n);
    qsort(c, (size_t)n, sizeof(double), cmp_double);
    double m = n % 2 ? c[n / 2] : 0.5 * (c[n / 2 - 1] + c[n / 2]);
    free(c);
    return m;
}

static __attribute__((unused)) double vmin(const double *v, int n)
{
    double m = v[0];
    for (int i = 1; i < n; i++)
        if (v[i] < m)
            m = v[i];
    return m;
}

static __attribute__((unused)) double vmax(const double *v, int n)
{
    double m = v[0];
    for (int i = 1; i < n; i++)
        if (v[i] > m)
            m = v[i];
    return m;
}

/* ---- kernel TCP counters of this rank's network namespace ---- */

enum { KC_TIMEOUTS, KC_RETRANS_SEGS, KC_LOSS_PROBES, KC_LOSS_PROBE_RECOVERY, KC_SACK_FAILURES,
       KC_LOSS_FAILURES, KC_SACK_RECOVERY_FAIL, KC_SPURIOUS_RTOS, KC_N };
static const char *kc_names[KC_N] = {"TcpExtTCPTimeouts",      "TcpRetransSegs",
                                     "TcpExtTCPLossProbes",    "TcpExtTCPLossProbeRecovery",
                                     "TcpExtTCPSackFailures",  "TcpExtTCPLossFailures",
                                     "TcpExtTCPSackRecoveryFail", "TcpExtTCPSpuriousRTOs"};

/* Reads a /proc/net file made of pairs of lines "Prefix: names..." /
 * "Prefix: values..."; fills the counters whose "PrefixName" is wanted. */
static void kc_read_file(const char *path, double *out)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    static char names[16384], values[16384];
    while (fgets(names, sizeof names, f) && fgets(values, sizeof values, f)) {
        char *sn, *sv;
        char *n = strtok_r(names, " \n", &sn);
        char *v = strtok_r(values, " \n", &sv);
        if (!n || !v)
            continue;
        char prefix[64];
        snprintf(prefix, sizeof prefix, "%.*s", (int)(strlen(n) - 1), n); /* drop ':' */
        for (;;) {
            n = strtok_r(NULL, " \n", &sn);
            v = strtok_r(NULL, " \n", &sv);
            if (!n || !v)
                break;
            char full[256];
            snprintf(full, sizeof full, "%s%s", prefix, n);
            for (int k = 0; k < KC_N; k++)
                if (strcmp(full, kc_names[k]) == 0)
                    out[k] = strtod(v, NULL);
        }
    }
    fclose(f);
}

static void kc_read(double *out)
{
    for (int k = 0; k < KC_N; k++)
        out[k] = 0;
    kc_read_file("/proc/self/net/netstat", out);
    kc_read_file("/proc/self/net/snmp", out);
}

/* Sum over hosts of (after - before); printed by rank 0 as one KCOUNT line. */
static void kc_report(const char *scope, const double *before, const double *after, const char *tags)
{
    double d[KC_N], sum[KC_N];
    for (int k = 0; k < KC_N; k++)
        d[k] = w_host_leader ? after[k] - before[k] : 0;
    CHK(MPI_Reduce(d, sum, KC_N, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD));
    if (w_rank == 0) {
        printf("KCOUNT scope=%s %s", scope, tags);
        for (int k = 0; k < KC_N; k++)
            printf(" %s=%.0f", kc_names[k], sum[k]);
        printf("\n");
        fflush(stdout);
    }
}

/* Initialise: rank, size, host names (HOSTS line), host leaders. */
static void w_init(int *argc, char ***argv)
{
    CHK(MPI_Init(argc, argv));
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    CHK(MPI_Comm_rank(MPI_COMM_WORLD, &w_rank));
    CHK(MPI_Comm_size(MPI_COMM_WORLD, &w_size));
    memset(w_host, 0, sizeof w_host);
    gethostname(w_host, sizeof w_host - 1);
    char *all = xmalloc((size_t)w_size * 64);
    char mine[64] = {0};
    snprintf(mine, sizeof mine, "%.63s", w_host);
    CHK(MPI_Allgather(mine, 64, MPI_CHAR, all, 64, MPI_CHAR, MPI_COMM_WORLD));
    w_host_leader = 1;
    for (int r = 0; r < w_rank; r++)
        if (strncmp(all + (size_t)r * 64, mine, 64) == 0)
            w_host_leader = 0;
    if (w_rank == 0) {
        printf("HOSTS ranks=%d hosts=", w_size);
        for (int r = 0; r < w_size; r++)
            printf("%s%.64s", r ? "," : "", all + (size_t)r * 64);
        printf("\n");
        fflush(stdout);
    }
    free(all);
}

/* Ends the program: CHECK line, exit status 1 on any data error. */
static int w_finish(void)
{
    double e = (double)w_errors, total = 0;
    CHK(MPI_Reduce(&e, &total, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD));
    if (w_rank == 0) {
        printf("CHECK %s errors=%.0f\n", total == 0 ? "ok" : "FAILED", total);
        fflush(stdout);
    }
    CHK(MPI_Finalize());
    return total == 0 ? 0 : 1;
}

/* The timed part of an application kernel: `reps` reps of `iters` calls of
 * iteration(1..iters), each rep after reset() and a barrier, checked by
 * check() after it. *comm_time is the rank's time inside the collectives,
 * which iteration() adds to. Prints a REP line per rep (slowest rank), then
 * RESULT, COMM and WINDOW lines, with the kernel's TCP counters of the timed
 * section (kc_report); ends the program (w_finish). */
static __attribute__((unused)) int w_run_timed(const char *tags, int iters, int reps, void (*reset)(void),
                                               void (*iteration)(int), void (*check)(void), double *comm_time)
{
    double *rep_value = xmalloc(sizeof(double) * (size_t)reps);
    double *rep_comm = xmalloc(sizeof(double) * (size_t)reps);
    double kc0[KC_N], kc1[KC_N];
    CHK(MPI_Barrier(MPI_COMM_WORLD));
    kc_read(kc0);
    CHK(MPI_Barrier(MPI_COMM_WORLD));
    double win0 = now();
    for (int rep = 0; rep < reps; rep++) {
        reset();
        CHK(MPI_Barrier(MPI_COMM_WORLD));
        *comm_time = 0;
        double t0 = now();
        for (int it = 1; it <= iters; it++)
            iteration(it);
        double mine = (now() - t0) / iters, worst, cworst;
        double c = *comm_time / iters;
        CHK(MPI_Reduce(&mine, &worst, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD));
        CHK(MPI_Reduce(&c, &cworst, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD));
        rep_value[rep] = worst;
        rep_comm[rep] = cworst;
        check();
        if (w_rank == 0) {
            printf("REP %s rep=%d per_iter_ms=%.4f comm_ms=%.4f\n", tags, rep, worst * 1e3, cworst * 1e3);
            fflush(stdout);
        }
    }
    double win1 = now();
    CHK(MPI_Barrier(MPI_COMM_WORLD));
    kc_read(kc1);
    kc_report("timed", kc0, kc1, tags);
    if (w_rank == 0) {
        printf("RESULT %s mode=loop reps=%d min_ms=%.4f med_ms=%.4f max_ms=%.4f\n", tags, reps,
               vmin(rep_value, reps) * 1e3, median(rep_value, reps) * 1e3, vmax(rep_value, reps) * 1e3);
        printf("COMM %s med_comm_ms=%.4f\n", tags, median(rep_comm, reps) * 1e3);
        printf("WINDOW %s mono_start=%.6f mono_end=%.6f\n", tags, win0, win1);
        fflush(stdout);
    }
    free(rep_value);
    free(rep_comm);
    return w_finish();
}

/* splitmix64: deterministic data from (seed, index). */
static inline uint64_t mix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

#endif
