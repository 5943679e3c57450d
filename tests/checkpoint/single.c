/* A single-threaded program with state everywhere: globals, the heap (a
 * linked list and stdio's buffer), the stack (locals across the checkpoint
 * and deeper recursion), a file written and read at offsets, a signal
 * handler, the vDSO (clock_gettime), brk growth after the restart.
 *
 * single IMAGE CKPT_STEPS MODE: CKPT_STEPS is a comma-separated list of
 * steps. MODE "run" checkpoints at each and goes on; "kill" dies by
 * SIGKILL after each checkpoint it takes (stdout's unflushed buffer dies
 * with it: the restored process must print it), so a restored process
 * checkpoints again at the next step and dies, and so on. The output of
 * "run" must equal that of "kill" followed by each restored process's. */
#define _GNU_SOURCE
#include "gridmpi_checkpoint.h"
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define STEPS 40

struct node { uint64_t v; struct node *next; };

static uint64_t global_acc = 1469598103934665603ull;
static volatile sig_atomic_t usr1_count;
static char global_text[64] = "globals";

static void on_usr1(int sig) { (void)sig; usr1_count++; }

static uint64_t mix(uint64_t h, uint64_t v) { h ^= v; h *= 1099511628211ull; return h; }

static uint64_t deep(int depth, uint64_t x) {
    volatile char pad[512];
    pad[depth % 512] = (char)x;
    if (depth == 0) return x ^ (uint64_t)pad[0];
    return mix(deep(depth - 1, x + depth), pad[depth % 512]);
}

int main(int argc, char **argv) {
    if (argc != 4) { fprintf(stderr, "usage: single IMAGE CKPT_STEPS run|kill\n"); return 2; }
    const char *image = argv[1];
    /* CKPT_STEPS: a comma-separated list; each checkpoint overwrites IMAGE */
    int ckpt_at[STEPS] = {0};
    for (char *p = argv[2]; *p;) {
        int s = (int)strtol(p, &p, 10);
        if (s >= 0 && s < STEPS) ckpt_at[s] = 1;
        if (*p == ',') p++; else break;
    }
    int kill_after = strcmp(argv[3], "kill") == 0;

    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_usr1;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGUSR1, &sa, NULL);

    int fd = open("data.bin", O_RDWR | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) { perror("open data.bin"); return 2; }

    /* a shared mapping of a file: mapped again from the file on restart */
    int sfd = open("shared.bin", O_RDWR | O_CREAT | O_TRUNC, 0644);
    if (sfd < 0 || ftruncate(sfd, 4096) != 0) { perror("shared.bin"); return 2; }
    uint64_t *shared = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, sfd, 0);
    if (shared == MAP_FAILED) { perror("mmap shared.bin"); return 2; }
    close(sfd);

    struct node *list = NULL;
    uint64_t stack_acc[16];
    for (int i = 0; i < 16; i++) stack_acc[i] = (uint64_t)i * 7919;

    for (int step = 0; step < STEPS; step++) {
        /* heap: a node per step, each with a payload of its own */
        struct node *n = malloc(sizeof *n);
        n->v = mix(global_acc, (uint64_t)step);
        n->next = list;
        list = n;
        char *blob = malloc(1000 + step * 3000);   /* grows brk, then mmap */
        memset(blob, step, 1000 + step * 3000);
        uint64_t hsum = 0;
        for (struct node *p = list; p; p = p->next) hsum = mix(hsum, p->v);
        hsum = mix(hsum, (uint64_t)blob[step]);
        if (step % 3) free(blob);

        stack_acc[step % 16] = mix(stack_acc[step % 16], hsum);
        global_acc = mix(global_acc, stack_acc[step % 16]);
        snprintf(global_text, sizeof global_text, "g%d", step);

        /* the file: a record per step at its offset, then read the previous one back */
        uint64_t rec[2] = { (uint64_t)step, hsum };
        if (write(fd, rec, sizeof rec) != sizeof rec) { perror("write"); return 2; }
        uint64_t prev[2] = { 0, 0 };
        if (step > 0 && pread(fd, prev, sizeof prev, (off_t)(step - 1) * sizeof rec) != sizeof prev) { perror("pread"); return 2; }
        off_t pos = lseek(fd, 0, SEEK_CUR);

        shared[step] = mix(step ? shared[step - 1] : 0, hsum);
        raise(SIGUSR1);
        struct timespec ts;
        if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0) { perror("clock_gettime"); return 2; }

        printf("step %2d: heap %016llx stack %016llx global %016llx %s file@%lld prev %llu/%016llx usr1 %d deep %016llx\n",
               step, (unsigned long long)hsum, (unsigned long long)stack_acc[step % 16],
               (unsigned long long)global_acc, global_text, (long long)pos,
               (unsigned long long)prev[0], (unsigned long long)prev[1], (int)usr1_count,
               (unsigned long long)deep(step * 10, hsum));

        if (ckpt_at[step]) {
            int r = gridmpi_checkpoint(image);
            if (r < 0) return 3;
            if (r == 0 && kill_after) raise(SIGKILL);
            /* r == 1: restarted; nothing is printed, so the outputs compare */
        }
    }
    /* the whole file, as the restored process sees it */
    uint64_t fsum = 0, rec[2];
    for (int i = 0; i < STEPS; i++) {
        if (pread(fd, rec, sizeof rec, (off_t)i * sizeof rec) != sizeof rec) { perror("final pread"); return 2; }
        fsum = mix(fsum, rec[1]);
    }
    /* the shared mapping, through memory and through the file */
    uint64_t msum = 0, disk[STEPS];
    int dfd = open("shared.bin", O_RDONLY);
    if (dfd < 0 || pread(dfd, disk, sizeof disk, 0) != sizeof disk) { perror("shared.bin read"); return 2; }
    for (int i = 0; i < STEPS; i++) {
        if (disk[i] != shared[i]) { printf("shared.bin differs from its mapping at %d\n", i); return 1; }
        msum = mix(msum, shared[i]);
    }
    printf("file %016llx shared %016llx; done\n", (unsigned long long)fsum, (unsigned long long)msum);
    return 0;
}
