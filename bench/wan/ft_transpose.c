/*
 * ft_transpose.c: 3-D FFTs whose transposes cross the grid, in the manner
 * of the NAS Parallel Benchmarks' FT kernel (written from its description,
 * not its code): a real complex 3-D FFT, slab-decomposed, with MPI_Alltoall
 * transposes.
 *
 *   ft_transpose [--grid NXxNYxNZ] [--iters I] [--reps R]
 *
 * The complex grid (NX x NY x NZ, powers of 2, NX and NZ multiples of P) is
 * split into slabs of NZ/P planes (layout [z][y][x], x fastest).
 *
 * One iteration (all of it timed):
 *   forward:  FFT along x and y in every plane; transpose with MPI_Alltoall
 *             to slabs of NX/P x-columns (layout [x][y][z], z fastest); FFT
 *             along z;
 *   evolve:   multiply every coefficient by a unit-modulus factor that
 *             depends on the iteration and the wave numbers (stands in for
 *             NPB's time evolution; undone below so the data can be checked);
 *   inverse:  undo the factor; inverse FFT along z; transpose back
 *             (MPI_Alltoall); inverse FFT along y and x; scale by 1/N.
 * Every rank sends NX NY NZ / P^2 complex doubles (16 bytes) to every rank in
 * each of the two transposes.
 *
 * Verification (not timed): after the first forward transform the (0,0,0)
 * coefficient must equal the sum of all inputs (MPI_Allreduce); after each
 * rep the data must equal the input to within 1e-9 relative (a forward and
 * an inverse 3-D FFT per iteration, through both transposes).
 *
 * A rep is --iters iterations after an MPI_Barrier; its value is the largest
 * per-rank time / iterations. One untimed iteration first (connections).
 */
#include "wan.h"
#include <complex.h>
#include <math.h>

typedef double complex cplx;

static long nx = 64, ny = 64, nz = 64;
static int opt_iters = 5, opt_reps = 3;
static long zl, xl; /* local planes / local x-columns */
static cplx *u0, *slab, *cols, *sendbuf, *recvbuf, *line;
static double comm_time;

/* ---- 1-D radix-2 FFT (in place, iterative), sign -1 forward, +1 inverse ---- */

static void fft1(cplx *a, long n, int sign)
{
    for (long i = 1, j = 0; i < n; i++) {
        long bit = n >> 1;
        for (; j & bit; bit >>= 1)
            j ^= bit;
        j ^= bit;
        if (i < j) {
            cplx t = a[i];
            a[i] = a[j];
            a[j] = t;
        }
    }
    for (long len = 2; len <= n; len <<= 1) {
        double ang = sign * 2.0 * M_PI / (double)len;
        cplx wl = cos(ang) + I * sin(ang);
        for (long i = 0; i < n; i += len) {
            cplx w = 1;
            for (long k = 0; k < len / 2; k++) {
                cplx x = a[i + k], y = a[i + k + len / 2] * w;
                a[i + k] = x + y;
                a[i + k + len / 2] = x - y;
                w *= wl;
            }
        }
    }
}

/* FFT of every line of length n at stride `stride` starting at base + j*jstride. */
static void fft_lines(cplx *base, long n, long stride, long count, long jstride, int sign)
{
    for (long j = 0; j < count; j++) {
        cplx *p = base + j * jstride;
        if (stride == 1) {
            fft1(p, n, sign);
        } else {
            for (long i = 0; i < n; i++)
                line[i] = p[i * stride];
            fft1(line, n, sign);
            for (long i = 0; i < n; i++)
                p[i * stride] = line[i];
        }
    }
}

/* slab [z][y][x] (zl planes) -> cols [x][y][z] (xl columns), across ranks */
static void transpose_forward(void)
{
    long blk = zl * ny * xl;
    for (int q = 0; q < w_size; q++) {
        cplx *s = sendbuf + (size_t)q * (size_t)blk;
        long n = 0;
        for (long z = 0; z < zl; z++)
            for (long y = 0; y < ny; y++)
                for (long x = q * xl; x < (q + 1) * xl; x++)
                    s[n++] = slab[(z * ny + y) * nx + x];
    }
    double t0 = now();
    CHK(MPI_Alltoall(sendbuf, (int)(blk * 2), MPI_DOUBLE, recvbuf, (int)(blk * 2), MPI_DOUBLE, MPI_COMM_WORLD));
    comm_time += now() - t0;
    for (int src = 0; src < w_size; src++) {
        const cplx *r = recvbuf + (size_t)src * (size_t)blk;
        long n = 0;
        for (long z = src * zl; z < (src + 1) * zl; z++)
            for (long y = 0; y < ny; y++)
                for (long x = 0; x < xl; x++)
                    cols[(x * ny + y) * nz + z] = r[n++];
    }
}

/* cols [x][y][z] -> slab [z][y][x] */
static void transpose_back(void)
{
    long blk = zl * ny * xl;
    for (int q = 0; q < w_size; q++) {
        cplx *s = sendbuf + (size_t)q * (size_t)blk;
        long n = 0;
        for (long z = q * zl; z < (q + 1) * zl; z++)
            for (long y = 0; y < ny; y++)
                for (long x = 0; x < xl; x++)
                    s[n++] = cols[(x * ny + y) * nz + z];
    }
    double t0 = now();
    CHK(MPI_Alltoall(sendbuf, (int)(blk * 2), MPI_DOUBLE, recvbuf, (int)(blk * 2), MPI_DOUBLE, MPI_COMM_WORLD));
    comm_time += now() - t0;
    for (int src = 0; src < w_size; src++) {
        const cplx *r = recvbuf + (size_t)src * (size_t)blk;
        long n = 0;
        for (long z = 0; z < zl; z++)
            for (long y = 0; y < ny; y++)
                for (long x = src * xl; x < (src + 1) * xl; x++)
                    slab[(z * ny + y) * nx + x] = r[n++];
    }
}

static void forward(void)
{
    fft_lines(slab, nx, 1, zl * ny, nx, -1);                 /* x: rows */
    for (long z = 0; z < zl; z++)                             /* y: stride nx */
        fft_lines(slab + z * ny * nx, ny, nx, nx, 1, -1);
    transpose_forward();
    fft_lines(cols, nz, 1, xl * ny, nz, -1);                 /* z: contiguous */
}

static void inverse(void)
{
    fft_lines(cols, nz, 1, xl * ny, nz, +1);
    transpose_back();
    for (long z = 0; z < zl; z++)
        fft_lines(slab + z * ny * nx, ny, nx, nx, 1, +1);
    fft_lines(slab, nx, 1, zl * ny, nx, +1);
    double scale = 1.0 / ((double)nx * (double)ny * (double)nz);
    for (long i = 0; i < zl * ny * nx; i++)
        slab[i] *= scale;
}

/* Multiply (sign +1) or divide (sign -1) every coefficient by a unit factor. */
static void evolve(int it, int sign)
{
    for (long x = 0; x < xl; x++) {
        long kx = w_rank * xl + x;
        for (long y = 0; y < ny; y++)
            for (long z = 0; z < nz; z++) {
                double ph = 1e-3 * (double)it * (double)(kx * kx + y * y + z * z);
                cols[(x * ny + y) * nz + z] *= cos(ph) + I * sign * sin(ph);
            }
    }
}

static void iteration(int it)
{
    forward();
    evolve(it, +1);
    evolve(it, -1);
    inverse();
}

static void check_roundtrip(const char *what)
{
    double maxerr = 0, maxval = 0;
    for (long i = 0; i < zl * ny * nx; i++) {
        double e = cabs(slab[i] - u0[i]), v = cabs(u0[i]);
        if (e > maxerr)
            maxerr = e;
        if (v > maxval)
            maxval = v;
    }
    double g;
    CHK(MPI_Allreduce(&maxerr, &g, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD));
    if (!(g <= 1e-9 * (maxval > 0 ? maxval : 1)))
        w_data_error(what, 0, g, 0);
}

static int parse_grid(const char *s)
{
    return sscanf(s, "%ldx%ldx%ld", &nx, &ny, &nz) == 3;
}

static int pow2(long v)
{
    return v > 0 && (v & (v - 1)) == 0;
}

/* Each timed rep starts from the same input and must give it back. */
static void reset_rep(void)
{
    memcpy(slab, u0, sizeof(cplx) * (size_t)(zl * ny * nx));
}

static void check_rep(void)
{
    check_roundtrip("round trip after a rep");
}

int main(int argc, char **argv)
{
    w_init(&argc, &argv);
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--grid") && i + 1 < argc && parse_grid(argv[i + 1]))
            i++;
        else if (!strcmp(argv[i], "--iters") && i + 1 < argc)
            opt_iters = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc)
            opt_reps = atoi(argv[++i]);
        else {
            if (w_rank == 0)
                fprintf(stderr, "usage: ft_transpose [--grid NXxNYxNZ] [--iters I] [--reps R]\n");
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    }
    if (!pow2(nx) || !pow2(ny) || !pow2(nz) || nx % w_size || nz % w_size || opt_iters < 1 || opt_reps < 1) {
        if (w_rank == 0)
            fprintf(stderr, "ft_transpose: NX, NY, NZ must be powers of 2, NX and NZ multiples of %d\n", w_size);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    zl = nz / w_size;
    xl = nx / w_size;
    long local = zl * ny * nx; /* = xl * ny * nz */
    u0 = xmalloc(sizeof(cplx) * (size_t)local);
    slab = xmalloc(sizeof(cplx) * (size_t)local);
    cols = xmalloc(sizeof(cplx) * (size_t)local);
    sendbuf = xmalloc(sizeof(cplx) * (size_t)local);
    recvbuf = xmalloc(sizeof(cplx) * (size_t)local);
    long maxn = nx > ny ? nx : ny;
    if (nz > maxn)
        maxn = nz;
    line = xmalloc(sizeof(cplx) * (size_t)maxn);

    double local_sum_re = 0, local_sum_im = 0;
    for (long i = 0; i < local; i++) {
        uint64_t h = mix64(((uint64_t)w_rank << 40) ^ (uint64_t)i);
        double re = (double)(h >> 11) / 9007199254740992.0 - 0.5;
        double im = (double)(mix64(h) >> 11) / 9007199254740992.0 - 0.5;
        u0[i] = re + I * im;
        local_sum_re += re;
        local_sum_im += im;
    }
    char tags[160];
    long per_peer = zl * ny * xl * 16;
    snprintf(tags, sizeof tags, "app=ft grid=%ldx%ldx%ld iters=%d ranks=%d", nx, ny, nz, opt_iters, w_size);
    if (w_rank == 0)
        printf("SHAPE %s alltoall_bytes_per_peer=%ld alltoalls_per_iter=2\n", tags, per_peer);

    /* untimed iteration with the DC check */
    memcpy(slab, u0, sizeof(cplx) * (size_t)local);
    forward();
    double ls[2] = {local_sum_re, local_sum_im}, gs[2];
    CHK(MPI_Allreduce(ls, gs, 2, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD));
    if (w_rank == 0) {
        double tol = 1e-9 * (double)(nx * ny * nz);
        if (fabs(creal(cols[0]) - gs[0]) > tol || fabs(cimag(cols[0]) - gs[1]) > tol)
            w_data_error("DC coefficient after forward FFT", 0, creal(cols[0]), gs[0]);
    }
    evolve(0, +1);
    evolve(0, -1);
    inverse();
    check_roundtrip("round trip (untimed iteration)");

    return w_run_timed(tags, opt_iters, opt_reps, reset_rep, iteration, check_rep, &comm_time);
}
