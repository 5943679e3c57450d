/* Checkpoint and restart times: bench IMAGE MIB [THREADS] fills MIB MiB of
 * heap, starts THREADS idle threads, checkpoints, and prints how long the
 * checkpoint took; restored, it checks the heap and prints "restarted ok".
 * (tests/checkpoint/bench.sh runs it; not part of the tests.) */
#define _GNU_SOURCE
#include "gridmpi_checkpoint.h"
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void *idle(void *arg) { (void)arg; for (;;) pause(); return NULL; }

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
    if (argc < 3) { fprintf(stderr, "usage: bench IMAGE MIB [THREADS]\n"); return 2; }
    size_t n = (size_t)atol(argv[2]) << 20;
    int threads = argc > 3 ? atoi(argv[3]) : 0;
    uint64_t *heap = malloc(n);
    for (size_t i = 0; i < n / 8; i++) heap[i] = i * 0x9E3779B97F4A7C15ull;
    for (int i = 0; i < threads; i++) { pthread_t t; pthread_create(&t, NULL, idle, NULL); }
    double t0 = now();
    int r = gridmpi_checkpoint(argv[1]);
    double t1 = now();
    if (r < 0) return 3;
    if (r == 1) {
        for (size_t i = 0; i < n / 8; i++)
            if (heap[i] != i * 0x9E3779B97F4A7C15ull) { printf("heap differs at %zu\n", i); return 1; }
        printf("restarted ok\n");
        return 0;
    }
    printf("checkpoint: %.1f ms\n", (t1 - t0) * 1e3);
    return 0;
}
