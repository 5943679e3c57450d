/*
 * threads.c: MPI_THREAD_MULTIPLE ping-pong between 2 ranks, T threads each.
 *
 *   pingpong   thread t of rank 0 ping-pongs SIZE bytes with thread t of
 *              rank 1 on its own communicator (a duplicate of
 *              MPI_COMM_WORLD per thread), all T threads at once, MPI_Send
 *              and MPI_Recv. Value of a rep: the round-trip time, averaged
 *              over the threads, in microseconds.
 *
 * T = 4 (--threads T). Every message carries a pattern of its thread and
 * iteration, checked on arrival (the first byte and the last), and the last
 * rep checks every byte.
 *
 * Sizes: --min-size (default 4) to --max-size (default 4m), x4 steps by
 * default as in the measurements (4 B, 4 KiB, 400 KB are the sizes
 * to quote: --min-size 4 --pow4 passes 4, 16, ..., 4 KiB, ..., 1 MiB).
 */
#include "common.h"
#include <pthread.h>

#define MAX_THREADS 16

static int g_threads = 4;
static long g_size;
static long g_iters;
static int g_check_all;
static MPI_Comm g_comm[MAX_THREADS];
static double g_time[MAX_THREADS];
static pthread_barrier_t g_start;

static void *pingpong(void *arg)
{
    int t = (int)(intptr_t)arg;
    int peer = 1 - bx_rank;
    unsigned char *buf = xmalloc((size_t)g_size);
    pthread_barrier_wait(&g_start);
    double t0 = now();
    for (long i = 0; i < g_iters; i++) {
        uint64_t seed = seed_of(g_size, t, (int)(i & 0xff), 1);
        if (bx_rank == 0) {
            if (g_size > 0) {
                buf[0] = pat_byte(seed, 0);
                buf[g_size - 1] = pat_byte(seed, (uint64_t)g_size - 1);
            }
            CHK(MPI_Send(buf, (int)g_size, MPI_BYTE, peer, (int)(i & 0x7fff), g_comm[t]));
            CHK(MPI_Recv(buf, (int)g_size, MPI_BYTE, peer, (int)(i & 0x7fff), g_comm[t], MPI_STATUS_IGNORE));
        } else {
            CHK(MPI_Recv(buf, (int)g_size, MPI_BYTE, peer, (int)(i & 0x7fff), g_comm[t], MPI_STATUS_IGNORE));
            CHK(MPI_Send(buf, (int)g_size, MPI_BYTE, peer, (int)(i & 0x7fff), g_comm[t]));
        }
        if (g_size > 0 && (buf[0] != pat_byte(seed, 0) || buf[g_size - 1] != pat_byte(seed, (uint64_t)g_size - 1)))
            __atomic_add_fetch(&bx_errors, 1, __ATOMIC_RELAXED);
    }
    g_time[t] = now() - t0;
    if (g_check_all && g_size > 0) {
        /* One more exchange with the whole pattern. */
        uint64_t seed = seed_of(g_size, t, 0, 2);
        if (bx_rank == 0) {
            pat_fill(buf, g_size, seed);
            CHK(MPI_Send(buf, (int)g_size, MPI_BYTE, peer, 0, g_comm[t]));
        } else {
            memset(buf, 0, (size_t)g_size);
            CHK(MPI_Recv(buf, (int)g_size, MPI_BYTE, peer, 0, g_comm[t], MPI_STATUS_IGNORE));
            pat_check(buf, g_size, seed, "whole message");
        }
    }
    free(buf);
    return NULL;
}

/* One rep: every thread runs n round trips; returns the mean per-thread time. */
static double threads_loop(void *ctx, long n)
{
    (void)ctx;
    pthread_t th[MAX_THREADS];
    g_iters = n;
    pthread_barrier_init(&g_start, NULL, (unsigned)g_threads);
    for (int t = 0; t < g_threads; t++)
        pthread_create(&th[t], NULL, pingpong, (void *)(intptr_t)t);
    double sum = 0;
    for (int t = 0; t < g_threads; t++) {
        pthread_join(th[t], NULL);
        sum += g_time[t];
    }
    pthread_barrier_destroy(&g_start);
    return sum / g_threads;
}

static void check_last(void *ctx)
{
    (void)ctx;
    g_check_all = 1;
}

int main(int argc, char **argv)
{
    /* --threads T is ours; the rest are the harness's options. */
    for (int i = 1; i + 1 < argc; i++) {
        if (!strcmp(argv[i], "--threads")) {
            g_threads = atoi(argv[i + 1]);
            for (int j = i; j + 2 <= argc; j++)
                argv[j] = argv[j + 2];
            argc -= 2;
            break;
        }
    }
    opt_min_size = 4;
    opt_pow4 = 1;
    bench_init_level(&argc, &argv, MPI_THREAD_MULTIPLE);
    bx_bench = "threads";
    if (bx_size != 2 || g_threads < 1 || g_threads > MAX_THREADS) {
        if (bx_rank == 0)
            printf("ERROR bench=threads size=-1 rank=0 msg=needs 2 ranks and 1..%d threads\n", MAX_THREADS);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    for (int t = 0; t < g_threads; t++)
        CHK(MPI_Comm_dup(MPI_COMM_WORLD, &g_comm[t]));
    for (long s = opt_min_size; s <= opt_max_size; s = next_size(s)) {
        g_size = bx_cur_size = s;
        g_check_all = 0;
        struct plan pl = warm_up(threads_loop, NULL, 1000, 5, 100000, 1);
        measure("threads", s, threads_loop, NULL, pl, 1e6, 1, check_last, 1, "us");
    }
    for (int t = 0; t < g_threads; t++)
        CHK(MPI_Comm_free(&g_comm[t]));
    return bench_finish();
}
