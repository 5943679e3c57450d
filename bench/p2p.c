/*
 * p2p.c: point-to-point latency and streaming bandwidth between 2 ranks.
 *
 *   latency    ping-pong: rank 0 sends SIZE bytes with MPI_Send, rank 1
 *              receives them with MPI_Recv and sends the same buffer back.
 *              Value of a rep: half the round-trip time, in microseconds.
 *   bandwidth  rank 0 posts a window of W MPI_Isend (each from its own
 *              slot of a W*SIZE buffer), rank 1 a window of W MPI_Irecv
 *              (each into its own slot); both MPI_Waitall, then rank 1
 *              sends a 4-byte acknowledgement. Value of a rep: bytes moved
 *              / time, in MB/s (10^6 bytes per second).
 *              W = 64, or fewer for large sizes so W*SIZE <= 16 MiB (min 4).
 *
 * Correctness: before timing each size, a message of a known pattern goes
 * each way and its length (MPI_Get_count) and content are checked; the
 * buffers of the last timed rep are zeroed beforehand and checked after, so
 * the timed loop itself must have moved the right bytes.
 *
 * Sizes: --min-size (default 1) to --max-size (default 4m), doubling
 * (--pow4: x4). Sub-benchmarks: --only latency,bandwidth.
 */
#include "common.h"

#define TAG_DATA 11
#define TAG_ACK 12

static int peer;

static void check_count(MPI_Status *st, long want, const char *what)
{
    int n = -1;
    CHK(MPI_Get_count(st, MPI_BYTE, &n));
    if (n != want) {
        bx_errors++;
        printf("ERROR bench=%s size=%ld rank=%d msg=%s: received %d bytes, expected %ld\n", bx_bench,
               bx_cur_size, bx_rank, what, n, want);
        fflush(stdout);
    }
}

/* Time n ping-pongs; returns seconds (rank 0's clock; rank 1 returns 0). */
static double pingpong_loop(void *sbuf, void *rbuf, long size, long n)
{
    double t0 = now();
    if (bx_rank == 0) {
        for (long i = 0; i < n; i++) {
            CHK(MPI_Send(sbuf, (int)size, MPI_BYTE, peer, TAG_DATA, MPI_COMM_WORLD));
            CHK(MPI_Recv(rbuf, (int)size, MPI_BYTE, peer, TAG_DATA, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        }
    } else {
        for (long i = 0; i < n; i++) {
            CHK(MPI_Recv(rbuf, (int)size, MPI_BYTE, peer, TAG_DATA, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            CHK(MPI_Send(rbuf, (int)size, MPI_BYTE, peer, TAG_DATA, MPI_COMM_WORLD));
        }
    }
    return now() - t0;
}

static void latency(long size)
{
    bx_bench = "latency";
    bx_cur_size = size;
    unsigned char *sbuf = xmalloc((size_t)size), *rbuf = xmalloc((size_t)size);
    uint64_t s0 = seed_of(size, 0, 1, 0), s1 = seed_of(size, 1, 0, 0);
    MPI_Status st;

    /* Correctness of one exchange each way. */
    ctl_barrier();
    if (bx_rank == 0) {
        pat_fill(sbuf, size, s0);
        CHK(MPI_Send(sbuf, (int)size, MPI_BYTE, peer, TAG_DATA, MPI_COMM_WORLD));
        CHK(MPI_Recv(rbuf, (int)size, MPI_BYTE, peer, TAG_DATA, MPI_COMM_WORLD, &st));
        check_count(&st, size, "reply");
        pat_check(rbuf, size, s1, "reply from rank 1");
    } else {
        CHK(MPI_Recv(rbuf, (int)size, MPI_BYTE, peer, TAG_DATA, MPI_COMM_WORLD, &st));
        check_count(&st, size, "message");
        pat_check(rbuf, size, s0, "message from rank 0");
        pat_fill(sbuf, size, s1);
        CHK(MPI_Send(sbuf, (int)size, MPI_BYTE, peer, TAG_DATA, MPI_COMM_WORLD));
    }

    /* Warm-up, which also calibrates the iteration count. */
    long warm = (16L << 20) / size;
    warm = warm < 4 ? 4 : warm > 200 ? 200 : warm;
    ctl_barrier();
    pingpong_loop(sbuf, rbuf, size, warm / 4 + 1);
    ctl_barrier();
    double t = pingpong_loop(sbuf, rbuf, size, warm);
    long n = calibrate(ctl_max(t / (double)warm), 4, 200000);

    double vals[1000];
    for (int r = 0; r < opt_reps; r++) {
        if (r == opt_reps - 1)
            memset(rbuf, 0, (size_t)size);
        ctl_barrier();
        t = pingpong_loop(sbuf, rbuf, size, n);
        vals[r] = ctl_max(t) / (2.0 * (double)n) * 1e6;
    }
    /* Rank 1 echoed rank 0's pattern; both now hold it in rbuf. */
    pat_check(rbuf, size, s0, bx_rank == 0 ? "echo after timed loop" : "timed message");
    report("latency", size, n, vals, opt_reps, "us");
    free(sbuf);
    free(rbuf);
}

static long window_of(long size)
{
    long w = (16L << 20) / size;
    return w > 64 ? 64 : w < 4 ? 4 : w;
}

/* Time n windows; returns seconds on rank 0's clock. */
static double stream_loop(unsigned char *buf, long size, long w, long n)
{
    MPI_Request req[64];
    int ack = 0;
    double t0 = now();
    for (long i = 0; i < n; i++) {
        if (bx_rank == 0) {
            for (long k = 0; k < w; k++)
                CHK(MPI_Isend(buf + k * size, (int)size, MPI_BYTE, peer, TAG_DATA, MPI_COMM_WORLD, &req[k]));
            CHK(MPI_Waitall((int)w, req, MPI_STATUSES_IGNORE));
            CHK(MPI_Recv(&ack, 1, MPI_INT, peer, TAG_ACK, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        } else {
            for (long k = 0; k < w; k++)
                CHK(MPI_Irecv(buf + k * size, (int)size, MPI_BYTE, peer, TAG_DATA, MPI_COMM_WORLD, &req[k]));
            CHK(MPI_Waitall((int)w, req, MPI_STATUSES_IGNORE));
            CHK(MPI_Send(&ack, 1, MPI_INT, peer, TAG_ACK, MPI_COMM_WORLD));
        }
    }
    return now() - t0;
}

static void bandwidth(long size)
{
    bx_bench = "bandwidth";
    bx_cur_size = size;
    long w = window_of(size);
    unsigned char *buf = xmalloc((size_t)(w * size));
    MPI_Request req[64];
    MPI_Status st[64];

    /* Correctness: one window, each slot its own pattern. */
    ctl_barrier();
    if (bx_rank == 0) {
        for (long k = 0; k < w; k++)
            pat_fill(buf + k * size, size, seed_of(size, 0, 2, (int)k));
        for (long k = 0; k < w; k++)
            CHK(MPI_Isend(buf + k * size, (int)size, MPI_BYTE, peer, TAG_DATA, MPI_COMM_WORLD, &req[k]));
        CHK(MPI_Waitall((int)w, req, MPI_STATUSES_IGNORE));
    } else {
        for (long k = 0; k < w; k++)
            CHK(MPI_Irecv(buf + k * size, (int)size, MPI_BYTE, peer, TAG_DATA, MPI_COMM_WORLD, &req[k]));
        CHK(MPI_Waitall((int)w, req, st));
        for (long k = 0; k < w; k++) {
            check_count(&st[k], size, "window message");
            if (!pat_check(buf + k * size, size, seed_of(size, 0, 2, (int)k), "window slot"))
                break;
        }
    }

    ctl_barrier();
    stream_loop(buf, size, w, 1);
    ctl_barrier();
    double t = stream_loop(buf, size, w, 2);
    long n = calibrate(ctl_max(t / 2.0), 2, 100000);

    double vals[1000];
    for (int r = 0; r < opt_reps; r++) {
        if (r == opt_reps - 1 && bx_rank == 1)
            memset(buf, 0, (size_t)(w * size));
        ctl_barrier();
        t = stream_loop(buf, size, w, n);
        t = ctl_max(t);
        vals[r] = (double)n * (double)w * (double)size / t / 1e6;
    }
    if (bx_rank == 1)
        for (long k = 0; k < w; k++)
            if (!pat_check(buf + k * size, size, seed_of(size, 0, 2, (int)k), "window slot after timed loop"))
                break;
    report("bandwidth", size, n * w, vals, opt_reps, "MB/s");
    free(buf);
}

int main(int argc, char **argv)
{
    bench_init(&argc, &argv);
    if (bx_size != 2) {
        if (bx_rank == 0)
            printf("ERROR bench=p2p size=-1 rank=0 msg=needs exactly 2 ranks, got %d\n", bx_size);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    peer = 1 - bx_rank;
    if (want("latency"))
        for (long s = opt_min_size; s <= opt_max_size; s = next_size(s))
            latency(s);
    if (want("bandwidth"))
        for (long s = opt_min_size; s <= opt_max_size; s = next_size(s))
            bandwidth(s);
    return bench_finish();
}
