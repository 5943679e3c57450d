/*
 * rate_change.c: MPI_Alltoall back to back for a while, each call timed,
 * while the WAN's rate is changed under it (bench/wan/rate_change.py).
 *
 *   rate_change --size BYTES --seconds S
 *
 * Every rank sends SIZE bytes (MPI_BYTE) to every rank in each call. The
 * calls go on until S seconds have passed since the first; whether to go on
 * is decided together: each rank's block carries its vote (its clock said
 * "not yet"), so every rank stops after the same call.
 *
 * Rank 0 prints a CALL line per call: its end on CLOCK_MONOTONIC (the same
 * clock on every testbed host and in the script that changes the rate), its
 * length, and the running totals of the kernel's retransmission timeouts
 * and retransmitted segments on all hosts (read by the first rank of each
 * host after each call). Every block is checked (source, destination,
 * call); CHECK errors=N at the end.
 */
#include "wan.h"

static long opt_size = 65536;
static double opt_seconds = 20;

#define MAX_CALLS 100000

/* Word i of the block from src to dst in call k (word 0 is the vote). */
static uint64_t word(int src, int dst, long k, long i)
{
    return mix64(((uint64_t)src << 48) ^ ((uint64_t)dst << 32) ^ ((uint64_t)k << 16) ^ (uint64_t)i);
}

int main(int argc, char **argv)
{
    w_init(&argc, &argv);
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--size") && i + 1 < argc)
            opt_size = parse_size(argv[++i]);
        else if (!strcmp(argv[i], "--seconds") && i + 1 < argc)
            opt_seconds = atof(argv[++i]);
        else {
            if (w_rank == 0)
                fprintf(stderr, "usage: rate_change --size BYTES --seconds S\n");
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    }
    if (opt_size < 16 || opt_size % 8) {
        if (w_rank == 0)
            fprintf(stderr, "rate_change: --size must be a multiple of 8, at least 16\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    long words = opt_size / 8;
    uint64_t *snd = xmalloc((size_t)opt_size * (size_t)w_size);
    uint64_t *rcv = xmalloc((size_t)opt_size * (size_t)w_size);
    double *ends = xmalloc(sizeof(double) * MAX_CALLS), *lens = xmalloc(sizeof(double) * MAX_CALLS);
    double *rto = calloc(MAX_CALLS, sizeof(double)), *ret = calloc(MAX_CALLS, sizeof(double));
    double kc0[KC_N], kc[KC_N];
    kc_read(kc0);

    CHK(MPI_Barrier(MPI_COMM_WORLD));
    double start = now();
    CHK(MPI_Bcast(&start, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD));
    long calls = 0;
    int go = 1;
    while (go && calls < MAX_CALLS) {
        uint64_t vote = now() - start < opt_seconds;
        for (int d = 0; d < w_size; d++) {
            uint64_t *b = snd + (size_t)d * words;
            b[0] = vote;
            for (long i = 1; i < words; i++)
                b[i] = word(w_rank, d, calls, i);
        }
        double t = now();
        CHK(MPI_Alltoall(snd, (int)opt_size, MPI_BYTE, rcv, (int)opt_size, MPI_BYTE, MPI_COMM_WORLD));
        ends[calls] = now();
        lens[calls] = ends[calls] - t;
        for (int s = 0; s < w_size; s++) {
            uint64_t *b = rcv + (size_t)s * words;
            if (b[0] > 1)
                w_data_error("vote", s, (double)b[0], 1);
            go &= b[0] == 1;
            for (long i = 1; i < words; i++)
                if (b[i] != word(s, w_rank, calls, i)) {
                    w_data_error("alltoall block", (long)s * words + i, (double)b[i], (double)word(s, w_rank, calls, i));
                    break;
                }
        }
        if (w_host_leader) {
            kc_read(kc);
            rto[calls] = kc[0] - kc0[0];
            ret[calls] = kc[1] - kc0[1];
        }
        calls++;
    }
    /* Totals over the hosts, per call. */
    double *rto_all = xmalloc(sizeof(double) * (size_t)calls), *ret_all = xmalloc(sizeof(double) * (size_t)calls);
    CHK(MPI_Reduce(rto, rto_all, (int)calls, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD));
    CHK(MPI_Reduce(ret, ret_all, (int)calls, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD));
    if (w_rank == 0) {
        for (long k = 0; k < calls; k++)
            printf("CALL k=%ld end=%.6f ms=%.3f rtos=%.0f retrans=%.0f\n", k, ends[k], lens[k] * 1e3, rto_all[k], ret_all[k]);
        printf("RESULT calls=%ld size=%ld ranks=%d start=%.6f\n", calls, opt_size, w_size, start);
    }
    free(snd);
    free(rcv);
    free(ends);
    free(lens);
    free(rto);
    free(ret);
    free(rto_all);
    free(ret_all);
    return w_finish();
}
