/*
 * lu_sweep.c: pipelined wavefront sweeps across the grid, in the manner of
 * the NAS Parallel Benchmarks' LU kernel (written from its description, not
 * its code): symmetric Gauss-Seidel sweeps whose dependences run from rank
 * to rank, so the ranks work as a pipeline of many small messages.
 *
 *   lu_sweep [--n N] [--block B] [--iters I] [--reps R]
 *
 * An N x N grid, its rows in blocks of N/P per rank. One iteration (timed)
 * is a forward sweep, u[i][j] = c (u[i-1][j] + u[i][j-1] + f[i][j]) + d u[i][j],
 * rows top to bottom, then a backward sweep with u[i+1][j] and u[i][j+1],
 * bottom to top. Each sweep goes in column blocks of B: a rank receives
 * the row above (below) its rows for the block from its neighbour, updates
 * the block, and passes its last (first) row of it on: N/B messages of B
 * doubles per rank and sweep, in a pipeline through every rank.
 *
 * Verification after every rep (not timed): rank 0 gathers the grid and
 * recomputes the rep's sweeps alone, in the same order of operations: the
 * two must be equal bit for bit.
 */
#include "wan.h"

static int opt_n = 512, opt_block = 16, opt_iters = 10, opt_reps = 3;
static int rows, first_row;
static double *u, *f;       /* this rank's rows, with a halo row above and below */
static double comm_time;
static const double C = 0.24, D = 0.5;

#define U(i, j) u[(size_t)((i) + 1) * opt_n + (j)]

static double start_value(long i, long j) { return (double)((mix64((uint64_t)(i * 100003 + j)) >> 11) % 1000) / 1000.0; }

static void reset(void)
{
    for (int i = -1; i <= rows; i++)
        for (int j = 0; j < opt_n; j++)
            U(i, j) = (i >= 0 && i < rows) ? start_value(first_row + i, j) : 0.0;
}

/* One sweep over a grid of `nrows` rows (the halo rows around them), for
 * columns [j0, j1). Forward: from the top left; backward: from the bottom right. */
static void sweep_block(double *g, int nrows, const double *rhs, int j0, int j1, int forward)
{
    int n = opt_n;
#define G(i, j) g[(size_t)((i) + 1) * n + (j)]
    if (forward) {
        for (int i = 0; i < nrows; i++)
            for (int j = j0; j < j1; j++)
                G(i, j) = C * (G(i - 1, j) + (j > 0 ? G(i, j - 1) : 0.0) + rhs[(size_t)i * n + j]) + D * G(i, j);
    } else {
        for (int i = nrows - 1; i >= 0; i--)
            for (int j = j1 - 1; j >= j0; j--)
                G(i, j) = C * (G(i + 1, j) + (j + 1 < n ? G(i, j + 1) : 0.0) + rhs[(size_t)i * n + j]) + D * G(i, j);
    }
#undef G
}

static void iteration(int it)
{
    (void)it;
    int n = opt_n, up = w_rank - 1, down = w_rank + 1;
    /* forward: the row above comes from the rank above, block by block */
    for (int j0 = 0; j0 < n; j0 += opt_block) {
        int j1 = j0 + opt_block < n ? j0 + opt_block : n;
        double t0 = now();
        if (up >= 0)
            CHK(MPI_Recv(&U(-1, j0), j1 - j0, MPI_DOUBLE, up, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        comm_time += now() - t0;
        sweep_block(u, rows, f, j0, j1, 1);
        t0 = now();
        if (down < w_size)
            CHK(MPI_Send(&U(rows - 1, j0), j1 - j0, MPI_DOUBLE, down, 1, MPI_COMM_WORLD));
        comm_time += now() - t0;
    }
    /* backward: the row below comes from the rank below, last block first */
    for (int j1 = n; j1 > 0; j1 -= opt_block) {
        int j0 = j1 - opt_block > 0 ? j1 - opt_block : 0;
        double t0 = now();
        if (down < w_size)
            CHK(MPI_Recv(&U(rows, j0), j1 - j0, MPI_DOUBLE, down, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        comm_time += now() - t0;
        sweep_block(u, rows, f, j0, j1, 0);
        t0 = now();
        if (up >= 0)
            CHK(MPI_Send(&U(0, j0), j1 - j0, MPI_DOUBLE, up, 2, MPI_COMM_WORLD));
        comm_time += now() - t0;
    }
}

/* Rank 0 recomputes the rep alone (the same blocks in the same order give
 * the same operations) and compares. */
static void verify(void)
{
    int n = opt_n;
    int *counts = xmalloc(sizeof(int) * (size_t)w_size), *displs = xmalloc(sizeof(int) * (size_t)w_size);
    for (int r = 0; r < w_size; r++) {
        long a = (long)n * r / w_size, z = (long)n * (r + 1) / w_size;
        counts[r] = (int)((z - a) * n);
        displs[r] = (int)(a * n);
    }
    double *all = w_rank == 0 ? xmalloc(sizeof(double) * (size_t)n * n) : NULL;
    CHK(MPI_Gatherv(&U(0, 0), rows * n, MPI_DOUBLE, all, counts, displs, MPI_DOUBLE, 0, MPI_COMM_WORLD));
    if (w_rank == 0) {
        double *g = xmalloc(sizeof(double) * (size_t)(n + 2) * n), *rhs = xmalloc(sizeof(double) * (size_t)n * n);
        for (long i = -1; i <= n; i++)
            for (long j = 0; j < n; j++)
                g[(size_t)(i + 1) * n + j] = (i >= 0 && i < n) ? start_value(i, j) : 0.0;
        for (long k = 0; k < (long)n * n; k++)
            rhs[k] = start_value(k / n + n, k % n);
        for (int it = 0; it < opt_iters; it++) {
            for (int j0 = 0; j0 < n; j0 += opt_block)
                sweep_block(g, n, rhs, j0, j0 + opt_block < n ? j0 + opt_block : n, 1);
            for (int j1 = n; j1 > 0; j1 -= opt_block)
                sweep_block(g, n, rhs, j1 - opt_block > 0 ? j1 - opt_block : 0, j1, 0);
        }
        for (long k = 0; k < (long)n * n; k++)
            if (g[(size_t)n + k] != all[k]) {
                w_data_error("grid point differs from the serial sweeps", k, all[k], g[(size_t)n + k]);
                break;
            }
        free(g);
        free(rhs);
        free(all);
    }
    free(counts);
    free(displs);
}

int main(int argc, char **argv)
{
    w_init(&argc, &argv);
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--n") && i + 1 < argc)
            opt_n = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--block") && i + 1 < argc)
            opt_block = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--iters") && i + 1 < argc)
            opt_iters = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc)
            opt_reps = atoi(argv[++i]);
        else {
            if (w_rank == 0)
                fprintf(stderr, "usage: lu_sweep [--n N] [--block B] [--iters I] [--reps R]\n");
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    }
    if (opt_n < w_size || opt_block < 1 || opt_iters < 1 || opt_reps < 1) {
        if (w_rank == 0)
            fprintf(stderr, "lu_sweep: N must be at least the number of ranks, B at least 1\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    first_row = (int)((long)opt_n * w_rank / w_size);
    rows = (int)((long)opt_n * (w_rank + 1) / w_size) - first_row;
    u = xmalloc(sizeof(double) * (size_t)(rows + 2) * opt_n);
    f = xmalloc(sizeof(double) * (size_t)rows * opt_n);
    for (int i = 0; i < rows; i++)
        for (int j = 0; j < opt_n; j++)
            f[(size_t)i * opt_n + j] = start_value(first_row + i + opt_n, j);

    char tags[160];
    snprintf(tags, sizeof tags, "app=lu n=%d block=%d iters=%d ranks=%d", opt_n, opt_block, opt_iters, w_size);
    return w_run_timed(tags, opt_iters, opt_reps, reset, iteration, verify, &comm_time);
}
