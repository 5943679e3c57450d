/*
 * rma.c: one-sided communication between 2 ranks, rank 0 the origin,
 * rank 1 the target (which waits in the harness's barrier meanwhile, so
 * it is inside MPI as a passive target usually is not: see below).
 *
 *   put_lat, get_lat   one MPI_Put/MPI_Get of SIZE bytes and MPI_Win_flush,
 *                      in a lock_all epoch (time per operation, us)
 *   put_bw, get_bw     a window of W operations then one flush (MB/s)
 *   acc_rate           MPI_Accumulate of one double (MPI_SUM), a flush every
 *                      64 (time per accumulate, us)
 *   fop_lat            MPI_Fetch_and_op of one long and a flush (us)
 *   lock_put_unlock    MPI_Win_lock(exclusive), an 8-byte put, unlock (us)
 *
 * The window is MPI_Win_allocate'd (4 MiB). After the timed loops the
 * target checks the last data put (and the accumulated sum), so a fast but
 * wrong implementation reports ERROR.
 *
 * A target that computes outside MPI delays passive-target operations in
 * implementations without asynchronous progress (GridMPI: unless
 * GRIDMPI_PROGRESS_THREAD=on); this program does not measure that.
 */
#include "common.h"

#define WIN_BYTES (4L << 20)

static MPI_Win win;
static unsigned char *wbase;

struct rctx {
    unsigned char *buf;
    long size, w;
    int get; /* get instead of put */
};

static double lat_loop(void *vctx, long n)
{
    struct rctx *c = vctx;
    double t0 = now();
    if (bx_rank == 0)
        for (long i = 0; i < n; i++) {
            if (c->get)
                CHK(MPI_Get(c->buf, (int)c->size, MPI_BYTE, 1, 0, (int)c->size, MPI_BYTE, win));
            else
                CHK(MPI_Put(c->buf, (int)c->size, MPI_BYTE, 1, 0, (int)c->size, MPI_BYTE, win));
            CHK(MPI_Win_flush(1, win));
        }
    return now() - t0;
}

static double bw_loop(void *vctx, long n)
{
    struct rctx *c = vctx;
    double t0 = now();
    if (bx_rank == 0)
        for (long i = 0; i < n; i++) {
            for (long k = 0; k < c->w; k++) {
                long off = (k * c->size) % (WIN_BYTES - c->size + 1);
                if (c->get)
                    CHK(MPI_Get(c->buf + k * c->size, (int)c->size, MPI_BYTE, 1, off, (int)c->size, MPI_BYTE, win));
                else
                    CHK(MPI_Put(c->buf + k * c->size, (int)c->size, MPI_BYTE, 1, off, (int)c->size, MPI_BYTE, win));
            }
            CHK(MPI_Win_flush(1, win));
        }
    return now() - t0;
}

static double acc_loop(void *vctx, long n)
{
    (void)vctx;
    double one = 1.0;
    double t0 = now();
    if (bx_rank == 0)
        for (long i = 0; i < n; i++) {
            CHK(MPI_Accumulate(&one, 1, MPI_DOUBLE, 1, 0, 1, MPI_DOUBLE, MPI_SUM, win));
            if (i % 64 == 63 || i == n - 1)
                CHK(MPI_Win_flush(1, win));
        }
    return now() - t0;
}

static double fop_loop(void *vctx, long n)
{
    (void)vctx;
    long one = 1, old;
    double t0 = now();
    if (bx_rank == 0)
        for (long i = 0; i < n; i++) {
            CHK(MPI_Fetch_and_op(&one, &old, MPI_LONG, 1, 8, MPI_SUM, win));
            CHK(MPI_Win_flush(1, win));
        }
    return now() - t0;
}

static double lpu_loop(void *vctx, long n)
{
    struct rctx *c = vctx;
    double t0 = now();
    if (bx_rank == 0)
        for (long i = 0; i < n; i++) {
            CHK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 1, 0, win));
            CHK(MPI_Put(c->buf, 8, MPI_BYTE, 1, 0, 8, MPI_BYTE, win));
            CHK(MPI_Win_unlock(1, win));
        }
    return now() - t0;
}

/* The target's view of its window, for checks (MPI_Win_sync in a lock). */
static void target_sync(void)
{
    CHK(MPI_Win_lock(MPI_LOCK_SHARED, 1, 0, win));
    CHK(MPI_Win_sync(win));
    CHK(MPI_Win_unlock(1, win));
}

static void run_lat(const char *name, long size, int get)
{
    bx_bench = name;
    bx_cur_size = size;
    struct rctx c = {xmalloc((size_t)size), size, 1, get};
    uint64_t seed = seed_of(size, get, 7, 0);
    pat_fill(c.buf, size, seed);
    CHK(MPI_Win_lock_all(0, win));
    struct plan pl = warm_up(lat_loop, &c, 1000, 2, 200000, 1);
    measure(name, size, lat_loop, &c, pl, 1e6, 1, NULL, 1, "us");
    CHK(MPI_Win_unlock_all(win));
    ctl_barrier();
    if (!get && bx_rank == 1) {
        target_sync();
        pat_check(wbase, size, seed, "put data at the target");
    }
    if (get && bx_rank == 0)
        pat_check(c.buf, size, seed ^ 99, "get data at the origin");
    free(c.buf);
}

static void run_bw(const char *name, long size, int get)
{
    bx_bench = name;
    bx_cur_size = size;
    long w = (16L << 20) / size;
    w = w > 64 ? 64 : w < 1 ? 1 : w;
    struct rctx c = {xmalloc((size_t)(w * size)), size, w, get};
    CHK(MPI_Win_lock_all(0, win));
    struct plan pl = warm_up(bw_loop, &c, 200, 2, 100000, 1);
    measure(name, size, bw_loop, &c, pl, (double)w * (double)size / 1e6, 0, NULL, w, "MB/s");
    CHK(MPI_Win_unlock_all(win));
    ctl_barrier();
    free(c.buf);
}

int main(int argc, char **argv)
{
    bench_init(&argc, &argv);
    if (bx_size != 2) {
        if (bx_rank == 0)
            printf("ERROR bench=rma size=-1 rank=0 msg=needs exactly 2 ranks, got %d\n", bx_size);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    if (MPI_Win_allocate(WIN_BYTES, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &wbase, &win) != MPI_SUCCESS) {
        printf("UNSUPPORTED bench=rma msg=MPI_Win_allocate failed\n");
        return bench_finish();
    }
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
    long top = opt_max_size < WIN_BYTES ? opt_max_size : WIN_BYTES;
    if (want("put_lat"))
        for (long s = opt_min_size; s <= top; s = next_size(s))
            run_lat("put_lat", s, 0);
    if (want("get_lat"))
        for (long s = opt_min_size; s <= top; s = next_size(s)) {
            /* The target holds the pattern the origin expects back. */
            if (bx_rank == 1) {
                CHK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 1, 0, win));
                pat_fill(wbase, s, seed_of(s, 1, 7, 0) ^ 99);
                CHK(MPI_Win_unlock(1, win));
            }
            ctl_barrier();
            run_lat("get_lat", s, 1);
        }
    if (want("put_bw"))
        for (long s = opt_min_size; s <= top; s = next_size(s))
            run_bw("put_bw", s, 0);
    if (want("get_bw"))
        for (long s = opt_min_size; s <= top; s = next_size(s))
            run_bw("get_bw", s, 1);
    if (want("acc_rate")) {
        bx_bench = "acc_rate";
        bx_cur_size = 8;
        if (bx_rank == 1) {
            CHK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 1, 0, win));
            *(double *)wbase = 0;
            CHK(MPI_Win_unlock(1, win));
        }
        ctl_barrier();
        CHK(MPI_Win_lock_all(0, win));
        struct plan pl = warm_up(acc_loop, NULL, 20000, 64, 2000000, 64);
        measure("acc_rate", 8, acc_loop, NULL, pl, 1e6, 1, NULL, 1, "us");
        CHK(MPI_Win_unlock_all(win));
        ctl_barrier();
        if (bx_rank == 1) {
            target_sync();
            double got = *(double *)wbase;
            /* Warm-up batches plus the reps: at least the reps' share. */
            if (got < (double)pl.iters * pl.reps)
                bx_data_error("accumulated sum", 0, (unsigned)got, (unsigned)(pl.iters * pl.reps));
        }
    }
    if (want("fop_lat")) {
        bx_bench = "fop_lat";
        bx_cur_size = 8;
        CHK(MPI_Win_lock_all(0, win));
        struct plan pl = warm_up(fop_loop, NULL, 1000, 2, 200000, 1);
        measure("fop_lat", 8, fop_loop, NULL, pl, 1e6, 1, NULL, 1, "us");
        CHK(MPI_Win_unlock_all(win));
        ctl_barrier();
    }
    if (want("lock_put_unlock")) {
        bx_bench = "lock_put_unlock";
        bx_cur_size = 8;
        struct rctx c = {xmalloc(8), 8, 1, 0};
        memset(c.buf, 7, 8);
        struct plan pl = warm_up(lpu_loop, &c, 1000, 2, 200000, 1);
        measure("lock_put_unlock", 8, lpu_loop, &c, pl, 1e6, 1, NULL, 1, "us");
        ctl_barrier();
        if (bx_rank == 1) {
            target_sync();
            for (int i = 0; i < 8; i++)
                if (wbase[i] != 7)
                    bx_data_error("lock/put/unlock data", i, wbase[i], 7);
        }
        free(c.buf);
    }
    CHK(MPI_Win_free(&win));
    return bench_finish();
}
