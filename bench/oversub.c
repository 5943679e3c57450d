/*
 * oversub.c: many ranks on few cores (run it with more ranks than cores,
 * e.g. 8 ranks on 2 cores). A rank that waits by busy-polling takes CPU
 * time from the ranks that have work; a rank that sleeps in the kernel
 * gives it back. Each benchmark is one pattern that waits a lot:
 *
 *   ring       an 8-byte token goes around all ranks (MPI_Recv from the
 *              left, MPI_Send to the right). Value: time per hop, us.
 *   p2pbarrier dissemination barrier of 0-byte MPI_Sendrecv (log2 P
 *              rounds). Value: time per barrier, us. Needs only p2p.
 *   barrier    MPI_Barrier. Value: time per barrier, us.
 *   compute    the halo benchmark's compute kernel, no communication, all
 *              ranks at once, timed in CPU time of the calling thread
 *              (CLOCK_THREAD_CPUTIME_ID), so the value is the work itself,
 *              whatever else runs. Value: CPU time per step, us (largest
 *              over the ranks). Also printed as bench=ideal: that CPU time
 *              times ranks/CPUs (when ranks outnumber CPUs), the shortest
 *              a halo step can take when waiting costs no CPU.
 *   halo       a periodic 1-D domain decomposition: per step, every rank
 *              runs the compute kernel (a fixed amount of work, the same
 *              for every MPI), then exchanges --halo bytes (default 4k)
 *              with both neighbours (2 MPI_Irecv, 2 MPI_Isend,
 *              MPI_Waitall). Value: time per step, us. The closer halo is
 *              to ideal, the less CPU the waiting took from the work.
 *
 * Correctness: the token carries a counter that every hop checks and
 * increments; halo messages carry (sender, step) in their first bytes,
 * checked every step, and a full pattern check before timing; barrier is
 * checked as in coll.c (rank 0 enters 30 ms late).
 *
 * Options: --only ring,p2pbarrier,barrier,compute,halo  --halo BYTES
 *          --work N (kernel sweeps per step, default 100: about 0.5 ms on
 *          one core of the machine of RESULTS.md)
 */
#include "common.h"

static long opt_halo = 4096;
static long opt_work = 100;

#define TAG_RING 21
#define TAG_PB 22
#define TAG_HALO_L 23
#define TAG_HALO_R 24

static int left, right;

/* ---- ring ---- */

static double ring_loop(long rounds, long *token_io)
{
    long token = *token_io;
    double t0 = now();
    for (long i = 0; i < rounds; i++) {
        if (bx_rank == 0) {
            CHK(MPI_Send(&token, 1, MPI_LONG, right, TAG_RING, MPI_COMM_WORLD));
            long got;
            CHK(MPI_Recv(&got, 1, MPI_LONG, left, TAG_RING, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            if (got != token + bx_size - 1)
                bx_data_error("ring token back at rank 0", i, (unsigned)got, (unsigned)(token + bx_size - 1));
            token = got + 1;
        } else {
            long got;
            CHK(MPI_Recv(&got, 1, MPI_LONG, left, TAG_RING, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            if (got != token + bx_rank - 1)
                bx_data_error("ring token", i, (unsigned)got, (unsigned)(token + bx_rank - 1));
            token = got - bx_rank + 1 + bx_size; /* what rank 0 sends next round */
            got++;
            CHK(MPI_Send(&got, 1, MPI_LONG, right, TAG_RING, MPI_COMM_WORLD));
        }
    }
    *token_io = token;
    return now() - t0;
}

struct ring_ctx {
    long token; /* what rank 0 sends next; every rank tracks it */
};

static double ring_loop_ctx(void *vctx, long n)
{
    struct ring_ctx *c = vctx;
    return ring_loop(n, &c->token);
}

static void run_ring(void)
{
    bx_bench = "ring";
    bx_cur_size = 8;
    struct ring_ctx c = {1000};
    struct plan pl = warm_up(ring_loop_ctx, &c, 1000, 2, 100000, 1);
    measure("ring", 8, ring_loop_ctx, &c, pl, 1e6 / bx_size, 1, NULL, 1, "us");
}

/* ---- p2p barrier ---- */

static void p2p_barrier(void)
{
    char s = 0, r = 0;
    for (int dist = 1; dist < bx_size; dist <<= 1)
        CHK(MPI_Sendrecv(&s, 0, MPI_BYTE, (bx_rank + dist) % bx_size, TAG_PB, &r, 0, MPI_BYTE,
                         (bx_rank - dist + bx_size) % bx_size, TAG_PB, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
}

static void one_barrier(int use_mpi)
{
    if (use_mpi)
        CHK(MPI_Barrier(MPI_COMM_WORLD));
    else
        p2p_barrier();
}

static double mpi_barrier_loop(void *ctx, long n)
{
    (void)ctx;
    double t0 = now();
    for (long i = 0; i < n; i++)
        CHK(MPI_Barrier(MPI_COMM_WORLD));
    return now() - t0;
}

static double p2p_barrier_loop(void *ctx, long n)
{
    (void)ctx;
    double t0 = now();
    for (long i = 0; i < n; i++)
        p2p_barrier();
    return now() - t0;
}

static void run_barrier_generic(const char *name, int use_mpi)
{
    bx_bench = name;
    bx_cur_size = 0;
    ctl_barrier();
    if (use_mpi) {
        int rc = MPI_Barrier(MPI_COMM_WORLD);
        double bad = ctl_sum(rc != MPI_SUCCESS ? 1.0 : 0.0);
        if (bad > 0) {
            if (rc != MPI_SUCCESS) {
                char msg[MPI_MAX_ERROR_STRING + 1];
                int len = 0;
                msg[0] = 0;
                MPI_Error_string(rc, msg, &len);
                printf("%s bench=%s rank=%d msg=%s\n", is_unsupported_class(rc) ? "UNSUPPORTED" : "ERROR",
                       name, bx_rank, msg);
                if (!is_unsupported_class(rc))
                    bx_errors++;
                fflush(stdout);
            }
            return;
        }
    }
    /* Correctness: rank 0 enters 30 ms late. */
    ctl_barrier();
    double t0 = now();
    if (bx_rank == 0)
        usleep(30000);
    one_barrier(use_mpi);
    double waited = now() - t0;
    if (bx_rank != 0 && waited < 0.025) {
        bx_errors++;
        printf("ERROR bench=%s size=0 rank=%d msg=left the barrier after %.3f ms although rank 0 entered "
               "30 ms late\n",
               name, bx_rank, waited * 1e3);
    }
    loop_fn loop = use_mpi ? mpi_barrier_loop : p2p_barrier_loop;
    struct plan pl = warm_up(loop, NULL, 1000, 2, 100000, 1);
    measure(name, 0, loop, NULL, pl, 1e6, 1, NULL, 1, "us");
}

/* ---- compute kernel and halo exchange ---- */

#define DOMAIN 8192 /* doubles per rank: 64 KiB, two arrays fit in L2 */
static double dom_a[DOMAIN + 2], dom_b[DOMAIN + 2];
static volatile double sink;

/* opt_work Jacobi sweeps over the local domain (periodic within the rank,
 * so the amount of work never depends on received data). */
static void kernel(void)
{
    for (long s = 0; s < opt_work; s++) {
        dom_a[0] = dom_a[DOMAIN];
        dom_a[DOMAIN + 1] = dom_a[1];
        for (int i = 1; i <= DOMAIN; i++)
            dom_b[i] = (dom_a[i - 1] + dom_a[i] + dom_a[i + 1]) * (1.0 / 3.0);
        memcpy(dom_a + 1, dom_b + 1, DOMAIN * sizeof(double));
    }
    sink = dom_a[DOMAIN / 2];
}

static void kernel_init(void)
{
    for (int i = 0; i < DOMAIN + 2; i++)
        dom_a[i] = (double)((i * 37 + bx_rank) % 101);
}

static double thread_cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* CPU time (of this thread, not wall time) of n kernel steps: what the
 * work costs, whoever else wants the cores meanwhile. */
static double compute_loop(void *ctx, long n)
{
    (void)ctx;
    double t0 = thread_cpu_now();
    for (long i = 0; i < n; i++)
        kernel();
    return thread_cpu_now() - t0;
}

static void run_compute(void)
{
    bx_bench = "compute";
    bx_cur_size = opt_halo;
    kernel_init();
    struct plan pl = warm_up(compute_loop, NULL, 1000, 2, 100000, 1);
    double vals[64];
    int reps = pl.reps > 64 ? 64 : pl.reps;
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    double share = ncpu > 0 && ncpu < bx_size ? (double)bx_size / (double)ncpu : 1.0;
    for (int r = 0; r < reps; r++) {
        ctl_barrier();
        vals[r] = ctl_max(compute_loop(NULL, pl.iters)) / (double)pl.iters * 1e6;
    }
    report("compute", opt_halo, pl.iters, vals, reps, "us");
    /* The fastest a halo step can be: every rank's kernel CPU time, the
     * ranks sharing the CPUs. */
    for (int r = 0; r < reps; r++)
        vals[r] *= share;
    report("ideal", opt_halo, pl.iters, vals, reps, "us");
}

struct halo_bufs {
    unsigned char *send_l, *send_r, *recv_l, *recv_r;
};

static void stamp(unsigned char *buf, long step)
{
    long hdr[2] = {bx_rank, step};
    if (opt_halo >= (long)sizeof hdr)
        memcpy(buf, hdr, sizeof hdr);
}

static void check_stamp(const unsigned char *buf, int from, long step)
{
    long hdr[2];
    if (opt_halo < (long)sizeof hdr)
        return;
    memcpy(hdr, buf, sizeof hdr);
    if (hdr[0] != from || hdr[1] != step)
        bx_data_error("halo header (sender, step)", step, (unsigned)hdr[0] * 65536u + (unsigned)hdr[1],
                      (unsigned)from * 65536u + (unsigned)step);
}

static void halo_exchange(struct halo_bufs *b, long step)
{
    MPI_Request req[4];
    int cnt = (int)opt_halo;
    stamp(b->send_l, step);
    stamp(b->send_r, step);
    CHK(MPI_Irecv(b->recv_l, cnt, MPI_BYTE, left, TAG_HALO_R, MPI_COMM_WORLD, &req[0]));
    CHK(MPI_Irecv(b->recv_r, cnt, MPI_BYTE, right, TAG_HALO_L, MPI_COMM_WORLD, &req[1]));
    CHK(MPI_Isend(b->send_l, cnt, MPI_BYTE, left, TAG_HALO_L, MPI_COMM_WORLD, &req[2]));
    CHK(MPI_Isend(b->send_r, cnt, MPI_BYTE, right, TAG_HALO_R, MPI_COMM_WORLD, &req[3]));
    CHK(MPI_Waitall(4, req, MPI_STATUSES_IGNORE));
    check_stamp(b->recv_l, left, step);
    check_stamp(b->recv_r, right, step);
}

struct halo_ctx {
    struct halo_bufs *b;
    long step; /* steps so far: stamped into every halo message */
};

static double halo_loop(void *vctx, long n)
{
    struct halo_ctx *c = vctx;
    double t0 = now();
    for (long i = 0; i < n; i++, c->step++) {
        kernel();
        halo_exchange(c->b, c->step);
    }
    return now() - t0;
}

static void run_halo(void)
{
    bx_bench = "halo";
    bx_cur_size = opt_halo;
    struct halo_bufs b = {xmalloc((size_t)opt_halo), xmalloc((size_t)opt_halo), xmalloc((size_t)opt_halo),
                          xmalloc((size_t)opt_halo)};
    kernel_init();

    /* Full pattern check of one exchange. */
    ctl_barrier();
    {
        MPI_Request req[4];
        int cnt = (int)opt_halo;
        pat_fill(b.send_l, opt_halo, seed_of(opt_halo, bx_rank, left, 5));
        pat_fill(b.send_r, opt_halo, seed_of(opt_halo, bx_rank, right, 6));
        CHK(MPI_Irecv(b.recv_l, cnt, MPI_BYTE, left, TAG_HALO_R, MPI_COMM_WORLD, &req[0]));
        CHK(MPI_Irecv(b.recv_r, cnt, MPI_BYTE, right, TAG_HALO_L, MPI_COMM_WORLD, &req[1]));
        CHK(MPI_Isend(b.send_l, cnt, MPI_BYTE, left, TAG_HALO_L, MPI_COMM_WORLD, &req[2]));
        CHK(MPI_Isend(b.send_r, cnt, MPI_BYTE, right, TAG_HALO_R, MPI_COMM_WORLD, &req[3]));
        CHK(MPI_Waitall(4, req, MPI_STATUSES_IGNORE));
        pat_check(b.recv_l, opt_halo, seed_of(opt_halo, left, bx_rank, 6), "halo from left");
        pat_check(b.recv_r, opt_halo, seed_of(opt_halo, right, bx_rank, 5), "halo from right");
    }

    struct halo_ctx c = {&b, 0};
    struct plan pl = warm_up(halo_loop, &c, 1000, 2, 100000, 1);
    measure("halo", opt_halo, halo_loop, &c, pl, 1e6, 1, NULL, 1, "us");
    free(b.send_l);
    free(b.send_r);
    free(b.recv_l);
    free(b.recv_r);
}

int main(int argc, char **argv)
{
    /* Own options first; the rest go to the common parser. */
    int k = 1;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--halo") && i + 1 < argc) {
            opt_halo = parse_size(argv[++i]);
        } else if (!strcmp(argv[i], "--work") && i + 1 < argc) {
            opt_work = atol(argv[++i]);
        } else {
            argv[k++] = argv[i];
        }
    }
    argc = k;
    opt_rep_ms = 100;
    opt_reps = 5;
    bench_init(&argc, &argv);
    left = (bx_rank - 1 + bx_size) % bx_size;
    right = (bx_rank + 1) % bx_size;
    if (want("ring"))
        run_ring();
    if (want("p2pbarrier"))
        run_barrier_generic("p2pbarrier", 0);
    if (want("barrier"))
        run_barrier_generic("barrier", 1);
    if (want("compute"))
        run_compute();
    if (want("halo"))
        run_halo();
    return bench_finish();
}
