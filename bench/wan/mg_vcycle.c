/*
 * mg_vcycle.c: multigrid V-cycles across the grid, in the manner of the NAS
 * Parallel Benchmarks' MG kernel (written from its description, not its
 * code): halo exchanges on every level of a grid hierarchy, so message
 * sizes halve level by level down to a few doubles.
 *
 *   mg_vcycle [--n N] [--iters I] [--reps R]
 *
 * The Poisson equation on an N x N grid (N a power of 2; zero on its edges),
 * its rows in blocks of N/P per rank, cell-centred: restriction averages
 * 2 x 2 cells, prolongation adds a coarse cell's correction to its four
 * fine ones.
 * Levels go down while every rank keeps 2 rows or more. One iteration
 * (timed) is a V-cycle: 2 weighted-Jacobi sweeps, the residual restricted,
 * the coarser level solved by a V-cycle (16 sweeps on the coarsest), the
 * correction prolonged, 2 sweeps; each sweep and residual exchanges a row
 * with each neighbour (MPI_Sendrecv); then the residual's norm
 * (MPI_Allreduce).
 *
 * Verification after every rep (not timed): rank 0 gathers the solution
 * and runs the rep's V-cycles alone on the whole grid (Jacobi sweeps
 * compute every point from the same values whatever the decomposition):
 * the two must be equal bit for bit; and the residual must have fallen.
 */
#include "wan.h"
#include <math.h>

#define MAX_LEVELS 16
static int opt_n = 256, opt_iters = 6, opt_reps = 3;
static const double OMEGA = 0.8;
static double comm_time, last_norm, first_norm;

/* One level of one decomposition: `rows` rows of `n` (with a halo row above
 * and below in u and r), neighbours up/down (-1: none). */
typedef struct {
    int n, rows, up, down;
    double h2;              /* the grid spacing squared */
    double *u, *f, *r, *t;  /* u, r, t: (rows + 2) x n; f: rows x n */
} Level;

typedef struct {
    int levels;
    Level lv[MAX_LEVELS];
} Grid;

static Grid mine, whole;

#define AT(a, L, i, j) (a)[(size_t)((i) + 1) * (L)->n + (j)]

static void exchange(Level *L, double *a)
{
    int n = L->n;
    double t0 = now();
    CHK(MPI_Sendrecv(&AT(a, L, 0, 0), n, MPI_DOUBLE, L->up >= 0 ? L->up : MPI_PROC_NULL, 1, &AT(a, L, L->rows, 0), n,
                     MPI_DOUBLE, L->down >= 0 ? L->down : MPI_PROC_NULL, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    CHK(MPI_Sendrecv(&AT(a, L, L->rows - 1, 0), n, MPI_DOUBLE, L->down >= 0 ? L->down : MPI_PROC_NULL, 2, &AT(a, L, -1, 0), n,
                     MPI_DOUBLE, L->up >= 0 ? L->up : MPI_PROC_NULL, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    comm_time += now() - t0;
}

/* The grid's edges are cell faces where the solution is 0: a cell outside
 * holds minus its neighbour inside (the same on every level). */
static void edges(Level *L, double *a)
{
    if (L->up < 0)
        for (int j = 0; j < L->n; j++)
            AT(a, L, -1, j) = -AT(a, L, 0, j);
    if (L->down < 0)
        for (int j = 0; j < L->n; j++)
            AT(a, L, L->rows, j) = -AT(a, L, L->rows - 1, j);
}

static double neighbours(const Level *L, const double *a, int i, int j)
{
    double left = j > 0 ? AT(a, L, i, j - 1) : -AT(a, L, i, j), right = j + 1 < L->n ? AT(a, L, i, j + 1) : -AT(a, L, i, j);
    return AT(a, L, i - 1, j) + AT(a, L, i + 1, j) + left + right;
}

static void smooth(Level *L, int sweeps, int parallel)
{
    for (int s = 0; s < sweeps; s++) {
        if (parallel)
            exchange(L, L->u);
        edges(L, L->u);
        for (int i = 0; i < L->rows; i++)
            for (int j = 0; j < L->n; j++)
                AT(L->t, L, i, j) = (1 - OMEGA) * AT(L->u, L, i, j) +
                                    OMEGA * 0.25 * (neighbours(L, L->u, i, j) + L->h2 * L->f[(size_t)i * L->n + j]);
        for (int i = 0; i < L->rows; i++)
            memcpy(&AT(L->u, L, i, 0), &AT(L->t, L, i, 0), sizeof(double) * (size_t)L->n);
    }
}

static void residual(Level *L, int parallel)
{
    if (parallel)
        exchange(L, L->u);
    edges(L, L->u);
    for (int i = 0; i < L->rows; i++)
        for (int j = 0; j < L->n; j++)
            AT(L->r, L, i, j) = L->f[(size_t)i * L->n + j] - (4 * AT(L->u, L, i, j) - neighbours(L, L->u, i, j)) / L->h2;
}

static void vcycle(Grid *g, int l, int parallel)
{
    Level *L = &g->lv[l];
    if (l == g->levels - 1) {
        smooth(L, 16, parallel);
        return;
    }
    Level *C = &g->lv[l + 1];
    smooth(L, 2, parallel);
    residual(L, parallel);
    for (int i = 0; i < C->rows; i++)
        for (int j = 0; j < C->n; j++) {
            C->f[(size_t)i * C->n + j] = 0.25 * (AT(L->r, L, 2 * i, 2 * j) + AT(L->r, L, 2 * i, 2 * j + 1) +
                                                 AT(L->r, L, 2 * i + 1, 2 * j) + AT(L->r, L, 2 * i + 1, 2 * j + 1));
            AT(C->u, C, i, j) = 0;
        }
    vcycle(g, l + 1, parallel);
    for (int i = 0; i < L->rows; i++)
        for (int j = 0; j < L->n; j++)
            AT(L->u, L, i, j) += AT(C->u, C, i / 2, j / 2);
    smooth(L, 2, parallel);
}

static double rhs(long i, long j, long n) { return sin(3.0 * (double)(i + 1) / (double)n) * cos(2.0 * (double)(j + 1) / (double)n) + ((i * 7 + j) % 5) * 0.01; }

/* A hierarchy of `rows0` rows starting at global row `first0`, down while
 * every rank keeps 2 rows (the same number of levels everywhere). */
static void make_grid(Grid *g, int rows0, int first0, int up, int down, int levels)
{
    g->levels = levels;
    for (int l = 0; l < levels; l++) {
        Level *L = &g->lv[l];
        L->n = opt_n >> l;
        L->rows = rows0 >> l;
        L->up = up;
        L->down = down;
        L->h2 = (double)(1L << l) * (double)(1L << l);
        size_t with_halo = (size_t)(L->rows + 2) * L->n;
        L->u = calloc(with_halo, sizeof(double));
        L->r = calloc(with_halo, sizeof(double));
        L->t = calloc(with_halo, sizeof(double));
        L->f = calloc((size_t)L->rows * L->n, sizeof(double));
        if (!L->u || !L->r || !L->t || !L->f)
            MPI_Abort(MPI_COMM_WORLD, 3);
    }
    for (int i = 0; i < rows0; i++)
        for (int j = 0; j < opt_n; j++)
            g->lv[0].f[(size_t)i * opt_n + j] = rhs(first0 + i, j, opt_n);
}

static double norm_of_residual(void)
{
    Level *L = &mine.lv[0];
    residual(L, 1);
    double s = 0, all;
    for (int i = 0; i < L->rows; i++)
        for (int j = 0; j < L->n; j++)
            s += AT(L->r, L, i, j) * AT(L->r, L, i, j);
    double t0 = now();
    CHK(MPI_Allreduce(&s, &all, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD));
    comm_time += now() - t0;
    return sqrt(all);
}

static void reset(void)
{
    Level *L = &mine.lv[0];
    memset(L->u, 0, sizeof(double) * (size_t)(L->rows + 2) * L->n);
    first_norm = norm_of_residual();
}

static void iteration(int it)
{
    (void)it;
    vcycle(&mine, 0, 1);
    last_norm = norm_of_residual();
}

static void verify(void)
{
    Level *L = &mine.lv[0];
    double *all = w_rank == 0 ? xmalloc(sizeof(double) * (size_t)opt_n * opt_n) : NULL;
    CHK(MPI_Gather(&AT(L->u, L, 0, 0), L->rows * opt_n, MPI_DOUBLE, all, L->rows * opt_n, MPI_DOUBLE, 0, MPI_COMM_WORLD));
    if (w_rank != 0)
        return;
    Level *W = &whole.lv[0];
    memset(W->u, 0, sizeof(double) * (size_t)(W->rows + 2) * W->n);
    for (int it = 0; it < opt_iters; it++)
        vcycle(&whole, 0, 0);
    for (long k = 0; k < (long)opt_n * opt_n; k++)
        if (all[k] != W->u[(size_t)opt_n + k]) {
            w_data_error("solution differs from rank 0's serial V-cycles", k, all[k], W->u[(size_t)opt_n + k]);
            break;
        }
    if (!(last_norm < 0.5 * first_norm))
        w_data_error("the residual did not fall", 0, last_norm, first_norm);
    free(all);
}

int main(int argc, char **argv)
{
    w_init(&argc, &argv);
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--n") && i + 1 < argc)
            opt_n = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--iters") && i + 1 < argc)
            opt_iters = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc)
            opt_reps = atoi(argv[++i]);
        else {
            if (w_rank == 0)
                fprintf(stderr, "usage: mg_vcycle [--n N] [--iters I] [--reps R]\n");
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    }
    if (opt_n < 4 || (opt_n & (opt_n - 1)) || opt_n % w_size || opt_n / w_size < 2 || opt_iters < 1 || opt_reps < 1) {
        if (w_rank == 0)
            fprintf(stderr, "mg_vcycle: N must be a power of 2 with N/P >= 2 rows a rank\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int rows = opt_n / w_size, levels = 1;
    while (levels < MAX_LEVELS && (rows >> levels) >= 2 && ((rows >> (levels - 1)) % 2) == 0)
        levels++;
    make_grid(&mine, rows, rows * w_rank, w_rank > 0 ? w_rank - 1 : -1, w_rank + 1 < w_size ? w_rank + 1 : -1, levels);
    if (w_rank == 0)
        make_grid(&whole, opt_n, 0, -1, -1, levels);

    char tags[160];
    snprintf(tags, sizeof tags, "app=mg n=%d levels=%d iters=%d ranks=%d", opt_n, levels, opt_iters, w_size);
    return w_run_timed(tags, opt_iters, opt_reps, reset, iteration, verify, &comm_time);
}
