/* A checkpoint at a moment the program does not choose: a thread of the
 * library checkpoints after DELAY ms while the main thread is in the middle
 * of a computation (integer and vectorized floating-point loops, no system
 * call: the signal stops it at whatever instruction), then kills the
 * process ("kill") or lets it go on ("run"). Everything is printed at the
 * end (well under stdio's buffer), so both runs' output is the same
 * whenever the checkpoint fell.
 *
 * async IMAGE DELAY_MS run|kill */
#include "gridmpi_checkpoint.h"
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N 4096
#define ROUNDS 400000

static double a[N], b[N];
static uint64_t ring[N];

int main(int argc, char **argv) {
    if (argc != 4) { fprintf(stderr, "usage: async IMAGE DELAY_MS run|kill\n"); return 2; }
    if (gridmpi_checkpoint_after((unsigned)atoi(argv[2]), argv[1], strcmp(argv[3], "kill") == 0) != 0) return 3;
    for (int i = 0; i < N; i++) { a[i] = i * 0.5; b[i] = 1.0 / (i + 1); ring[i] = (uint64_t)i * 0x9E3779B97F4A7C15ull; }
    double *heap = malloc(N * sizeof *heap);
    for (int i = 0; i < N; i++) heap[i] = 1.0;
    uint64_t h = 1469598103934665603ull;
    for (int r = 0; r < ROUNDS; r++) {
        double s = 0;
        for (int i = 0; i < N; i++) {             /* vectorized at -O2 -mavx2 */
            a[i] = a[i] * 0.999 + b[i] * heap[i];
            s += a[i];
        }
        for (int i = 0; i < N; i++) heap[i] = heap[i] * 0.5 + a[i] * 1e-3;
        for (int i = 0; i < N; i += 64) { h ^= ring[(i + r) % N] + (uint64_t)(s * 1e3); h *= 1099511628211ull; ring[i] = h; }
        if (r % 40000 == 39999) printf("round %d: sum %.9e hash %016llx\n", r + 1, s, (unsigned long long)h);
    }
    printf("done %016llx\n", (unsigned long long)h);
    return 0;
}
