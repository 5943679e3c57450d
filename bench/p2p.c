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
 *   bibw       both directions at once (as OSU's osu_bibw): each rank posts
 *              W MPI_Irecv and W MPI_Isend (own slots of two W*SIZE
 *              buffers), MPI_Waitall on all 2W. Value of a rep: bytes moved
 *              in both directions / time, in MB/s.
 *
 * Correctness: before timing each size, a message of a known pattern goes
 * each way and its length (MPI_Get_count) and content are checked; the
 * buffers of the last timed rep are zeroed beforehand and checked after, so
 * the timed loop itself must have moved the right bytes.
 *
 * Sizes: --min-size (default 1) to --max-size (default 4m), doubling
 * (--pow4: x4). Sub-benchmarks: --only latency,bandwidth,bibw.
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

struct pp_ctx {
    unsigned char *sbuf, *rbuf;
    long size;
};

/* n ping-pongs: rank 0 sends sbuf and receives into rbuf; rank 1 receives
 * into rbuf and sends rbuf back (an echo). */
static double pingpong_loop(void *vctx, long n)
{
    struct pp_ctx *c = vctx;
    int cnt = (int)c->size;
    double t0 = now();
    if (bx_rank == 0) {
        for (long i = 0; i < n; i++) {
            CHK(MPI_Send(c->sbuf, cnt, MPI_BYTE, peer, TAG_DATA, MPI_COMM_WORLD));
            CHK(MPI_Recv(c->rbuf, cnt, MPI_BYTE, peer, TAG_DATA, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        }
    } else {
        for (long i = 0; i < n; i++) {
            CHK(MPI_Recv(c->rbuf, cnt, MPI_BYTE, peer, TAG_DATA, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            CHK(MPI_Send(c->rbuf, cnt, MPI_BYTE, peer, TAG_DATA, MPI_COMM_WORLD));
        }
    }
    return now() - t0;
}

static void pp_zero(void *vctx)
{
    struct pp_ctx *c = vctx;
    memset(c->rbuf, 0, (size_t)c->size);
}

static void latency(long size)
{
    bx_bench = "latency";
    bx_cur_size = size;
    struct pp_ctx c = {xmalloc((size_t)size), xmalloc((size_t)size), size};
    uint64_t s0 = seed_of(size, 0, 1, 0), s1 = seed_of(size, 1, 0, 0);
    MPI_Status st;

    /* Correctness of one exchange each way. */
    ctl_barrier();
    if (bx_rank == 0) {
        pat_fill(c.sbuf, size, s0);
        CHK(MPI_Send(c.sbuf, (int)size, MPI_BYTE, peer, TAG_DATA, MPI_COMM_WORLD));
        CHK(MPI_Recv(c.rbuf, (int)size, MPI_BYTE, peer, TAG_DATA, MPI_COMM_WORLD, &st));
        check_count(&st, size, "reply");
        pat_check(c.rbuf, size, s1, "reply from rank 1");
    } else {
        CHK(MPI_Recv(c.rbuf, (int)size, MPI_BYTE, peer, TAG_DATA, MPI_COMM_WORLD, &st));
        check_count(&st, size, "message");
        pat_check(c.rbuf, size, s0, "message from rank 0");
        pat_fill(c.sbuf, size, s1);
        CHK(MPI_Send(c.sbuf, (int)size, MPI_BYTE, peer, TAG_DATA, MPI_COMM_WORLD));
    }
    if (bx_rank == 1)
        pat_fill(c.sbuf, size, s0 ^ 1); /* rank 1 echoes rbuf; its sbuf must not leak */

    long batch = (16L << 20) / size;
    batch = batch < 4 ? 4 : batch > 200 ? 200 : batch;
    struct plan pl = warm_up(pingpong_loop, &c, batch, 2, 200000, 1);
    measure("latency", size, pingpong_loop, &c, pl, 1e6 / 2, 1, pp_zero, 1, "us");
    /* Rank 1 echoed rank 0's pattern; after the last rep both hold it. */
    pat_check(c.rbuf, size, s0, bx_rank == 0 ? "echo after timed loop" : "timed message");
    free(c.sbuf);
    free(c.rbuf);
}

static long window_of(long size)
{
    long w = (16L << 20) / size;
    return w > 64 ? 64 : w < 4 ? 4 : w;
}

struct bw_ctx {
    unsigned char *buf; /* w slots of size bytes */
    long size, w;
};

/* n windows: rank 0 w MPI_Isend, rank 1 w MPI_Irecv, MPI_Waitall, ack. */
static double stream_loop(void *vctx, long n)
{
    struct bw_ctx *c = vctx;
    MPI_Request req[64];
    int ack = 0, cnt = (int)c->size;
    double t0 = now();
    for (long i = 0; i < n; i++) {
        if (bx_rank == 0) {
            for (long k = 0; k < c->w; k++)
                CHK(MPI_Isend(c->buf + k * c->size, cnt, MPI_BYTE, peer, TAG_DATA, MPI_COMM_WORLD, &req[k]));
            CHK(MPI_Waitall((int)c->w, req, MPI_STATUSES_IGNORE));
            CHK(MPI_Recv(&ack, 1, MPI_INT, peer, TAG_ACK, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        } else {
            for (long k = 0; k < c->w; k++)
                CHK(MPI_Irecv(c->buf + k * c->size, cnt, MPI_BYTE, peer, TAG_DATA, MPI_COMM_WORLD, &req[k]));
            CHK(MPI_Waitall((int)c->w, req, MPI_STATUSES_IGNORE));
            CHK(MPI_Send(&ack, 1, MPI_INT, peer, TAG_ACK, MPI_COMM_WORLD));
        }
    }
    return now() - t0;
}

static void bw_zero(void *vctx)
{
    struct bw_ctx *c = vctx;
    if (bx_rank == 1)
        memset(c->buf, 0, (size_t)(c->w * c->size));
}

static void bandwidth(long size)
{
    bx_bench = "bandwidth";
    bx_cur_size = size;
    long w = window_of(size);
    struct bw_ctx c = {xmalloc((size_t)(w * size)), size, w};
    MPI_Request req[64];
    MPI_Status st[64];

    /* Correctness: one window, each slot its own pattern. The sender's
     * slots keep their patterns for the whole benchmark. */
    ctl_barrier();
    if (bx_rank == 0) {
        for (long k = 0; k < w; k++)
            pat_fill(c.buf + k * size, size, seed_of(size, 0, 2, (int)k));
        for (long k = 0; k < w; k++)
            CHK(MPI_Isend(c.buf + k * size, (int)size, MPI_BYTE, peer, TAG_DATA, MPI_COMM_WORLD, &req[k]));
        CHK(MPI_Waitall((int)w, req, MPI_STATUSES_IGNORE));
    } else {
        for (long k = 0; k < w; k++)
            CHK(MPI_Irecv(c.buf + k * size, (int)size, MPI_BYTE, peer, TAG_DATA, MPI_COMM_WORLD, &req[k]));
        CHK(MPI_Waitall((int)w, req, st));
        for (long k = 0; k < w; k++) {
            check_count(&st[k], size, "window message");
            if (!pat_check(c.buf + k * size, size, seed_of(size, 0, 2, (int)k), "window slot"))
                break;
        }
    }

    struct plan pl = warm_up(stream_loop, &c, 2, 2, 100000, 1);
    measure("bandwidth", size, stream_loop, &c, pl, (double)w * (double)size / 1e6, 0, bw_zero, w, "MB/s");
    if (bx_rank == 1)
        for (long k = 0; k < w; k++)
            if (!pat_check(c.buf + k * size, size, seed_of(size, 0, 2, (int)k), "window slot after timed loop"))
                break;
    free(c.buf);
}

struct bibw_ctx {
    unsigned char *sbuf, *rbuf; /* w slots of size bytes each */
    long size, w;
};

/* n windows: both ranks w MPI_Irecv and w MPI_Isend, MPI_Waitall. */
static double bibw_loop(void *vctx, long n)
{
    struct bibw_ctx *c = vctx;
    MPI_Request req[128];
    int cnt = (int)c->size;
    double t0 = now();
    for (long i = 0; i < n; i++) {
        for (long k = 0; k < c->w; k++)
            CHK(MPI_Irecv(c->rbuf + k * c->size, cnt, MPI_BYTE, peer, TAG_DATA, MPI_COMM_WORLD, &req[k]));
        for (long k = 0; k < c->w; k++)
            CHK(MPI_Isend(c->sbuf + k * c->size, cnt, MPI_BYTE, peer, TAG_DATA, MPI_COMM_WORLD, &req[c->w + k]));
        CHK(MPI_Waitall((int)(2 * c->w), req, MPI_STATUSES_IGNORE));
    }
    return now() - t0;
}

static void bibw_zero(void *vctx)
{
    struct bibw_ctx *c = vctx;
    memset(c->rbuf, 0, (size_t)(c->w * c->size));
}

static void bibw(long size)
{
    bx_bench = "bibw";
    bx_cur_size = size;
    long w = window_of(size);
    struct bibw_ctx c = {xmalloc((size_t)(w * size)), xmalloc((size_t)(w * size)), size, w};
    /* Each slot its own pattern, per direction; checked after the last rep. */
    for (long k = 0; k < w; k++)
        pat_fill(c.sbuf + k * size, size, seed_of(size, bx_rank, 3, (int)k));
    struct plan pl = warm_up(bibw_loop, &c, 2, 2, 100000, 1);
    measure("bibw", size, bibw_loop, &c, pl, 2.0 * (double)w * (double)size / 1e6, 0, bibw_zero, w, "MB/s");
    for (long k = 0; k < w; k++)
        if (!pat_check(c.rbuf + k * size, size, seed_of(size, peer, 3, (int)k), "bibw slot after timed loop"))
            break;
    free(c.sbuf);
    free(c.rbuf);
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
    if (want("bibw"))
        for (long s = opt_min_size; s <= opt_max_size; s = next_size(s))
            bibw(s);
    return bench_finish();
}
