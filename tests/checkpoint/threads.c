/* Threads across a checkpoint: workers with thread-local state (__thread,
 * their own heap buffers and stacks) meet the main thread at barriers; the
 * main thread checkpoints while the workers wait in the barrier (a futex
 * wait the checkpoint signal interrupts and the restart resumes), then
 * everyone goes on and the main thread joins them (which needs the
 * restored threads' tid addresses: the kernel clears them at exit).
 *
 * threads IMAGE CKPT_STEPS run|kill [worker]: as single.c; with "worker",
 * worker 1 takes the checkpoints (between the barriers, while the main
 * thread prints: its lines stay in stdio's buffer, well under a flush), so
 * the restored process's first thread is a worker and main is a clone. */
#define _GNU_SOURCE
#include "gridmpi_checkpoint.h"
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WORKERS 3
#define STEPS 30

static pthread_barrier_t bar;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t results[WORKERS];
static uint64_t shared_sum;
static __thread uint64_t tls_acc;
static __thread int tls_id;
static int ckpt_at[STEPS];
static int kill_after, by_worker;
static const char *image;

static void take_checkpoint(void) {
    int r = gridmpi_checkpoint(image);
    if (r < 0) exit(3);
    if (r == 0 && kill_after) raise(SIGKILL);
}

static uint64_t mix(uint64_t h, uint64_t v) { h ^= v; h *= 1099511628211ull; return h; }

static void *worker(void *arg) {
    tls_id = (int)(intptr_t)arg;
    char name[16];
    snprintf(name, sizeof name, "worker-%d", tls_id);
    pthread_setname_np(pthread_self(), name);
    tls_acc = 0xcbf29ce484222325ull + (uint64_t)tls_id;
    uint64_t *buf = malloc(4096 * sizeof *buf);
    uint64_t local[32];
    for (int i = 0; i < 32; i++) local[i] = (uint64_t)(i + tls_id);
    for (int step = 0; step < STEPS; step++) {
        for (int i = 0; i < 4096; i++) buf[i] = mix(buf[i] * (step != 0), tls_acc + (uint64_t)i);
        for (int i = 0; i < 4096; i += 97) local[step % 32] = mix(local[step % 32], buf[i]);
        tls_acc = mix(tls_acc, local[step % 32]);
        results[tls_id] = tls_acc;
        pthread_mutex_lock(&lock);
        shared_sum += tls_acc & 0xffff;
        pthread_mutex_unlock(&lock);
        pthread_barrier_wait(&bar);   /* results are ready */
        if (by_worker && tls_id == 1 && ckpt_at[step]) take_checkpoint();
        pthread_barrier_wait(&bar);   /* main printed them (and maybe checkpointed) */
    }
    free(buf);
    return (void *)(uintptr_t)(tls_acc & 0xff);
}

int main(int argc, char **argv) {
    if (argc != 4 && argc != 5) { fprintf(stderr, "usage: threads IMAGE CKPT_STEPS run|kill [worker]\n"); return 2; }
    image = argv[1];
    by_worker = argc == 5 && strcmp(argv[4], "worker") == 0;
    /* CKPT_STEPS: a comma-separated list; each checkpoint overwrites IMAGE */
    for (char *p = argv[2]; *p;) {
        int s = (int)strtol(p, &p, 10);
        if (s >= 0 && s < STEPS) ckpt_at[s] = 1;
        if (*p == ',') p++; else break;
    }
    kill_after = strcmp(argv[3], "kill") == 0;
    pthread_barrier_init(&bar, NULL, WORKERS + 1);
    pthread_t t[WORKERS];
    char names[WORKERS][16];
    for (int i = 0; i < WORKERS; i++) pthread_create(&t[i], NULL, worker, (void *)(intptr_t)i);
    for (int step = 0; step < STEPS; step++) {
        pthread_barrier_wait(&bar);
        printf("step %2d:", step);
        for (int i = 0; i < WORKERS; i++) printf(" %016llx", (unsigned long long)results[i]);
        pthread_mutex_lock(&lock);
        printf(" sum %llu\n", (unsigned long long)shared_sum);
        pthread_mutex_unlock(&lock);
        if (ckpt_at[step] && !by_worker) take_checkpoint();
        /* the workers' names, while they wait in the barrier (read through
         * each thread's tid, which glibc keeps where the restorer told the
         * kernel to write it) */
        if (step == STEPS - 1)
            for (int i = 0; i < WORKERS; i++)
                if (pthread_getname_np(t[i], names[i], sizeof names[i]) != 0) strcpy(names[i], "?");
        pthread_barrier_wait(&bar);
    }
    for (int i = 0; i < WORKERS; i++) printf("thread %d: %s\n", i, names[i]);
    uint64_t j = 0;
    for (int i = 0; i < WORKERS; i++) {
        void *ret;
        if (pthread_join(t[i], &ret) != 0) { fprintf(stderr, "join failed\n"); return 2; }
        j = mix(j, (uint64_t)(uintptr_t)ret);
    }
    printf("joined %016llx; done\n", (unsigned long long)j);
    return 0;
}
