/*
 * cg_solve.c: conjugate gradients across the grid, in the manner of the NAS
 * Parallel Benchmarks' CG kernel (written from its description, not its
 * code): every step a sparse matrix-vector product whose halo comes from
 * the neighbouring ranks, and dot products summed over all ranks.
 *
 *   cg_solve [--n N] [--steps S] [--iters I] [--reps R]
 *
 * The matrix is the 5-point Laplacian of an N x N grid plus the identity
 * (well conditioned, so S = 25 steps converge far, as NPB's 25 inner
 * steps do), the grid's rows in blocks of N/P per rank. The right-hand
 * side is A x* for a known x*. One iteration (timed) solves A x = b from
 * x = 0 with S steps: per step one halo exchange of a grid row with each
 * neighbour (MPI_Sendrecv) and two MPI_Allreduce of one double.
 *
 * Verification after every rep (not timed): ||b - A x|| / ||b|| < 1e-6 and
 * max |x - x*| < 1e-6 (the matrix's condition number is 9: each step
 * shrinks the error about twice, 25 steps about 3e7 times).
 */
#include "wan.h"
#include <math.h>

static int opt_n = 512, opt_steps = 25, opt_iters = 10, opt_reps = 3;
static int rows, first_row;          /* this rank's rows of the grid */
static double *x, *r, *p, *q, *b, *xstar;
static double *halo;                 /* p with a row above and below */
static double comm_time;

static double truth(long i, long j) { return sin(0.01 * (double)i) + cos(0.013 * (double)j); }

/* q = A v for this rank's rows; v's halo rows are exchanged first. */
static void matvec(const double *v, double *out)
{
    int n = opt_n, up = w_rank - 1, down = w_rank + 1;
    memcpy(halo + n, v, sizeof(double) * (size_t)rows * n);
    double t0 = now();
    /* first row up, last row down; receive the neighbours' into the halo */
    CHK(MPI_Sendrecv(halo + n, n, MPI_DOUBLE, up >= 0 ? up : MPI_PROC_NULL, 1, halo + (size_t)(rows + 1) * n, n,
                     MPI_DOUBLE, down < w_size ? down : MPI_PROC_NULL, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    CHK(MPI_Sendrecv(halo + (size_t)rows * n, n, MPI_DOUBLE, down < w_size ? down : MPI_PROC_NULL, 2, halo, n,
                     MPI_DOUBLE, up >= 0 ? up : MPI_PROC_NULL, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    comm_time += now() - t0;
    if (up < 0)
        memset(halo, 0, sizeof(double) * n);
    if (down >= w_size)
        memset(halo + (size_t)(rows + 1) * n, 0, sizeof(double) * n);
    for (int i = 0; i < rows; i++) {
        const double *c = halo + (size_t)(i + 1) * n;
        for (int j = 0; j < n; j++) {
            double s = 5.0 * c[j] - c[j - n] - c[j + n];
            if (j > 0)
                s -= c[j - 1];
            if (j + 1 < n)
                s -= c[j + 1];
            out[(size_t)i * n + j] = s;
        }
    }
}

static double dot(const double *u, const double *v)
{
    double mine = 0, all;
    for (long k = 0; k < (long)rows * opt_n; k++)
        mine += u[k] * v[k];
    double t0 = now();
    CHK(MPI_Allreduce(&mine, &all, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD));
    comm_time += now() - t0;
    return all;
}

static void reset(void)
{
    memset(x, 0, sizeof(double) * (size_t)rows * opt_n);
}

static void iteration(int it)
{
    (void)it;
    long len = (long)rows * opt_n;
    memset(x, 0, sizeof(double) * (size_t)len);
    memcpy(r, b, sizeof(double) * (size_t)len);
    memcpy(p, b, sizeof(double) * (size_t)len);
    double rr = dot(r, r);
    for (int s = 0; s < opt_steps; s++) {
        matvec(p, q);
        double alpha = rr / dot(p, q);
        for (long k = 0; k < len; k++) {
            x[k] += alpha * p[k];
            r[k] -= alpha * q[k];
        }
        double rr2 = dot(r, r);
        for (long k = 0; k < len; k++)
            p[k] = r[k] + rr2 / rr * p[k];
        rr = rr2;
    }
}

static void verify(void)
{
    long len = (long)rows * opt_n;
    matvec(x, q);
    double res = 0, bb = 0, err = 0;
    for (long k = 0; k < len; k++) {
        res += (b[k] - q[k]) * (b[k] - q[k]);
        bb += b[k] * b[k];
        err = fmax(err, fabs(x[k] - xstar[k]));
    }
    double loc[2] = {res, bb}, all[2], maxerr;
    CHK(MPI_Allreduce(loc, all, 2, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD));
    CHK(MPI_Allreduce(&err, &maxerr, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD));
    if (w_rank == 0 && !(sqrt(all[0] / all[1]) < 1e-6))
        w_data_error("relative residual", 0, sqrt(all[0] / all[1]), 1e-6);
    if (w_rank == 0 && !(maxerr < 1e-6))
        w_data_error("max error against the known solution", 0, maxerr, 1e-6);
}

int main(int argc, char **argv)
{
    w_init(&argc, &argv);
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--n") && i + 1 < argc)
            opt_n = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--steps") && i + 1 < argc)
            opt_steps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--iters") && i + 1 < argc)
            opt_iters = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc)
            opt_reps = atoi(argv[++i]);
        else {
            if (w_rank == 0)
                fprintf(stderr, "usage: cg_solve [--n N] [--steps S] [--iters I] [--reps R]\n");
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    }
    if (opt_n < w_size || opt_steps < 1 || opt_iters < 1 || opt_reps < 1) {
        if (w_rank == 0)
            fprintf(stderr, "cg_solve: N must be at least the number of ranks\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    first_row = (int)((long)opt_n * w_rank / w_size);
    rows = (int)((long)opt_n * (w_rank + 1) / w_size) - first_row;
    size_t len = (size_t)rows * opt_n;
    x = xmalloc(sizeof(double) * len);
    r = xmalloc(sizeof(double) * len);
    p = xmalloc(sizeof(double) * len);
    q = xmalloc(sizeof(double) * len);
    b = xmalloc(sizeof(double) * len);
    xstar = xmalloc(sizeof(double) * len);
    halo = xmalloc(sizeof(double) * (len + 2 * (size_t)opt_n));
    for (int i = 0; i < rows; i++)
        for (int j = 0; j < opt_n; j++)
            xstar[(size_t)i * opt_n + j] = truth(first_row + i, j);
    matvec(xstar, b);

    char tags[160];
    snprintf(tags, sizeof tags, "app=cg n=%d steps=%d iters=%d ranks=%d", opt_n, opt_steps, opt_iters, w_size);
    iteration(0);
    verify();
    return w_run_timed(tags, opt_iters, opt_reps, reset, iteration, verify, &comm_time);
}
