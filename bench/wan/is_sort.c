/*
 * is_sort.c: integer bucket sort across the grid, in the manner of the NAS
 * Parallel Benchmarks' IS kernel (written from its description, not its code).
 *
 *   is_sort [--keys-log2 K] [--max-key-log2 M] [--iters I] [--reps R]
 *
 * 2^K keys in all (2^K / P per rank), each in [0, 2^M), drawn per rank
 * from a bell-shaped distribution (the mean of four uniform draws), so
 * middle ranks receive more keys than the outer ones and the exchange is
 * uneven, as in NPB IS. Rank r owns the keys in [r 2^M / P, (r+1) 2^M / P).
 *
 * One iteration (all of it timed):
 *   1. before each iteration two keys are changed (key[i] = i and
 *      key[i + I] = 2^M - 1 - i), so no two iterations sort the same data;
 *   2. count the keys bound for each rank;
 *   3. MPI_Alltoall of the counts (one int per rank);
 *   4. pack the keys by destination and MPI_Alltoallv them;
 *   5. counting sort of the received keys over the rank's own key range.
 *
 * Verification after the last iteration of every rep (not timed): the
 * rank's output is sorted and inside its key range; the total number of
 * keys and the sums of key and key^2 (mod 2^64) over all ranks equal those
 * of the input the iteration started from.
 *
 * A rep is --iters iterations after an MPI_Barrier; its value is the
 * largest per-rank time / iterations. One untimed iteration first (opens
 * connections). RESULT ... med_ms is the median over reps; COMM gives the
 * share of that time the slowest rank spent inside the two collectives.
 */
#include "wan.h"

static int opt_keys_log2 = 20, opt_max_key_log2 = 16, opt_iters = 10, opt_reps = 3;

typedef int key_t_;

static key_t_ *keys;       /* this rank's input keys */
static long nkeys;         /* per rank */
static long max_key;
static key_t_ *send_keys;  /* keys packed by destination */
static key_t_ *recv_keys;  /* received keys (capacity grows) */
static long recv_cap;
static key_t_ *sorted;     /* output */
static long *hist;         /* histogram over the own key range */
static int *send_counts, *recv_counts, *sdispl, *rdispl;
static long nsorted;
static double comm_time;   /* this rank's time inside the collectives */

static void gen_keys(void)
{
    for (long i = 0; i < nkeys; i++) {
        uint64_t s = 0;
        for (int k = 0; k < 4; k++)
            s += mix64(((uint64_t)w_rank << 40) ^ ((uint64_t)i << 2) ^ (uint64_t)k) >> 40; /* 24 bits */
        /* mean of four 24-bit draws, scaled to [0, max_key) */
        keys[i] = (key_t_)((s * (uint64_t)max_key) >> 26);
    }
}

static int owner(key_t_ k)
{
    return (int)(((long)k * w_size) / max_key);
}

static void iteration(int it)
{
    keys[it] = it;
    keys[it + opt_iters] = (key_t_)(max_key - 1 - it);

    for (int r = 0; r < w_size; r++)
        send_counts[r] = 0;
    for (long i = 0; i < nkeys; i++)
        send_counts[owner(keys[i])]++;

    double t0 = now();
    CHK(MPI_Alltoall(send_counts, 1, MPI_INT, recv_counts, 1, MPI_INT, MPI_COMM_WORLD));
    comm_time += now() - t0;

    sdispl[0] = rdispl[0] = 0;
    for (int r = 1; r < w_size; r++) {
        sdispl[r] = sdispl[r - 1] + send_counts[r - 1];
        rdispl[r] = rdispl[r - 1] + recv_counts[r - 1];
    }
    long nrecv = rdispl[w_size - 1] + recv_counts[w_size - 1];
    if (nrecv > recv_cap) {
        free(recv_keys);
        free(sorted);
        recv_cap = nrecv + nrecv / 4;
        recv_keys = xmalloc(sizeof(key_t_) * (size_t)recv_cap);
        sorted = xmalloc(sizeof(key_t_) * (size_t)recv_cap);
    }
    /* pack by destination (a stable counting pass) */
    int *fill = xmalloc(sizeof(int) * (size_t)w_size);
    memcpy(fill, sdispl, sizeof(int) * (size_t)w_size);
    for (long i = 0; i < nkeys; i++)
        send_keys[fill[owner(keys[i])]++] = keys[i];
    free(fill);

    t0 = now();
    CHK(MPI_Alltoallv(send_keys, send_counts, sdispl, MPI_INT, recv_keys, recv_counts, rdispl, MPI_INT,
                      MPI_COMM_WORLD));
    comm_time += now() - t0;

    /* counting sort over the own key range */
    long lo = (long)w_rank * max_key / w_size, hi = (long)(w_rank + 1) * max_key / w_size;
    long range = hi - lo;
    memset(hist, 0, sizeof(long) * (size_t)range);
    for (long i = 0; i < nrecv; i++) {
        long k = recv_keys[i] - lo;
        if (k < 0 || k >= range) {
            w_data_error("received key outside the rank's range", i, recv_keys[i], (double)lo);
            return;
        }
        hist[k]++;
    }
    long pos = 0;
    for (long k = 0; k < range; k++)
        for (long c = 0; c < hist[k]; c++)
            sorted[pos++] = (key_t_)(lo + k);
    nsorted = pos;
}

/* Verify the last iteration's output against its input (keys[]). */
static void verify(void)
{
    long lo = (long)w_rank * max_key / w_size, hi = (long)(w_rank + 1) * max_key / w_size;
    for (long i = 0; i < nsorted; i++) {
        if (sorted[i] < lo || sorted[i] >= hi)
            w_data_error("sorted key outside the rank's range", i, sorted[i], (double)lo);
        if (i && sorted[i] < sorted[i - 1]) {
            w_data_error("output not sorted", i, sorted[i], sorted[i - 1]);
            break;
        }
    }
    uint64_t in[3] = {(uint64_t)nkeys, 0, 0}, out[3] = {(uint64_t)nsorted, 0, 0}, gin[3], gout[3];
    for (long i = 0; i < nkeys; i++) {
        in[1] += (uint64_t)keys[i];
        in[2] += (uint64_t)keys[i] * (uint64_t)keys[i];
    }
    for (long i = 0; i < nsorted; i++) {
        out[1] += (uint64_t)sorted[i];
        out[2] += (uint64_t)sorted[i] * (uint64_t)sorted[i];
    }
    CHK(MPI_Allreduce(in, gin, 3, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD));
    CHK(MPI_Allreduce(out, gout, 3, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD));
    if (w_rank == 0)
        for (int k = 0; k < 3; k++)
            if (gin[k] != gout[k])
                w_data_error(k == 0 ? "total keys" : k == 1 ? "sum of keys" : "sum of squared keys", k,
                             (double)gout[k], (double)gin[k]);
}

int main(int argc, char **argv)
{
    w_init(&argc, &argv);
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--keys-log2") && i + 1 < argc)
            opt_keys_log2 = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--max-key-log2") && i + 1 < argc)
            opt_max_key_log2 = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--iters") && i + 1 < argc)
            opt_iters = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc)
            opt_reps = atoi(argv[++i]);
        else {
            if (w_rank == 0)
                fprintf(stderr, "usage: is_sort [--keys-log2 K] [--max-key-log2 M] [--iters I] [--reps R]\n");
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    }
    nkeys = (1L << opt_keys_log2) / w_size;
    max_key = 1L << opt_max_key_log2;
    if (nkeys < 2L * opt_iters + 1 || opt_reps < 1 || opt_iters < 1) {
        if (w_rank == 0)
            fprintf(stderr, "is_sort: too few keys per rank\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    keys = xmalloc(sizeof(key_t_) * (size_t)nkeys);
    send_keys = xmalloc(sizeof(key_t_) * (size_t)nkeys);
    hist = xmalloc(sizeof(long) * (size_t)(max_key / w_size + 1));
    send_counts = xmalloc(sizeof(int) * (size_t)w_size);
    recv_counts = xmalloc(sizeof(int) * (size_t)w_size);
    sdispl = xmalloc(sizeof(int) * (size_t)w_size);
    rdispl = xmalloc(sizeof(int) * (size_t)w_size);
    gen_keys();

    char tags[160];
    snprintf(tags, sizeof tags, "app=is keys=%ld max_key=%ld iters=%d ranks=%d", nkeys * w_size, max_key, opt_iters,
             w_size);

    /* untimed first iteration, verified; also reports the exchange's shape */
    iteration(0);
    verify();
    {
        long mine_wan = 0, mine_all = 0, wan, all;
        int half = w_size / 2;
        for (int r = 0; r < w_size; r++) {
            if (r == w_rank)
                continue;
            mine_all += send_counts[r];
            if ((r < half) != (w_rank < half))
                mine_wan += send_counts[r];
        }
        CHK(MPI_Reduce(&mine_wan, &wan, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD));
        CHK(MPI_Reduce(&mine_all, &all, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD));
        if (w_rank == 0)
            printf("SHAPE %s keys_per_rank=%ld offrank_bytes=%ld crossing_bytes_both_dirs=%ld "
                   "mean_msg_bytes=%ld\n",
                   tags, nkeys, all * 4, wan * 4, all * 4 / ((long)w_size * (w_size - 1)));
    }

    return w_run_timed(tags, opt_iters, opt_reps, gen_keys /* same input every rep */, iteration, verify, &comm_time);
}
