/*
 * raw_alltoall.c: the all-to-all exchange of wan_coll.c's MPI_Alltoall done
 * over plain TCP sockets, without any MPI in the timed part: a ceiling for
 * what an MPI library can reach on this machine and testbed.
 *
 * MPI (any implementation) only starts the ranks, exchanges the listening
 * addresses and times the reps with barriers. Each rank then connects to
 * every other rank (one TCP connection per pair, TCP_NODELAY), and one call
 * is: write SIZE bytes to every peer and read SIZE bytes from every peer,
 * with all sockets non-blocking, waiting in poll() (or, with --spin,
 * polling without sleeping). Ranks of the first half of MPI_COMM_WORLD
 * are cluster 0, the others cluster 1 (the testbed's 2x4 grid with one
 * rank per host); connections between clusters can be paced
 * (SO_MAX_PACING_RATE) and given a minimum RTO (TCP_RTO_MIN_US), as
 * GridMPI does.
 *
 *   raw_alltoall --size 4096 [--pace BYTES_PER_S] [--rto-min-us 5000]
 *                [--reps 5] [--rep-ms 1000] [--spin]
 *
 * Prints `RESULT op=raw_alltoall size=S rep=K calls=N time=T` per rep (T:
 * slowest rank's seconds per call), like wan_coll.
 */
#include "wan.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>

#ifndef TCP_RTO_MIN_US
#define TCP_RTO_MIN_US 45
#endif

static void die(const char *what)
{
    fprintf(stderr, "raw_alltoall: rank %d: %s: %s\n", w_rank, what, strerror(errno));
    MPI_Abort(MPI_COMM_WORLD, 1);
    exit(1);
}

/* Write or read all of `len` bytes of a blocking-mode socket. */
static void full(int fd, void *buf, size_t len, int writing)
{
    char *p = buf;
    while (len > 0) {
        ssize_t n = writing ? write(fd, p, len) : read(fd, p, len);
        if (n < 0 && (errno == EINTR || errno == EAGAIN))
            continue;
        if (n <= 0)
            die(writing ? "handshake write" : "handshake read");
        p += n;
        len -= (size_t)n;
    }
}

struct addr {
    uint32_t ip; /* network order */
    uint16_t port;
};

int main(int argc, char **argv)
{
    long size = 4096, reps = 5, rep_ms = 1000;
    unsigned long long pace = 0;
    long rto_min_us = 0;
    int spin = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--size") && i + 1 < argc)
            size = atol(argv[++i]);
        else if (!strcmp(argv[i], "--pace") && i + 1 < argc)
            pace = strtoull(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--rto-min-us") && i + 1 < argc)
            rto_min_us = atol(argv[++i]);
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc)
            reps = atol(argv[++i]);
        else if (!strcmp(argv[i], "--rep-ms") && i + 1 < argc)
            rep_ms = atol(argv[++i]);
        else if (!strcmp(argv[i], "--spin"))
            spin = 1;
        else {
            fprintf(stderr, "raw_alltoall: unknown argument %s\n", argv[i]);
            return 2;
        }
    }
    w_init(&argc, &argv);
    int n = w_size, me = w_rank;
    int half = n / 2;

    /* Listen, and tell everyone where. */
    int lfd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_ANY)};
    if (lfd < 0 || bind(lfd, (struct sockaddr *)&sa, sizeof sa) || listen(lfd, n))
        die("listen");
    socklen_t sl = sizeof sa;
    getsockname(lfd, (struct sockaddr *)&sa, &sl);
    char host[256];
    gethostname(host, sizeof host);
    struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_STREAM}, *ai;
    if (getaddrinfo(host, NULL, &hints, &ai))
        die("getaddrinfo of our host name");
    struct addr mine = {((struct sockaddr_in *)ai->ai_addr)->sin_addr.s_addr, sa.sin_port};
    freeaddrinfo(ai);
    struct addr *all = xmalloc(sizeof *all * n);
    CHK(MPI_Allgather(&mine, sizeof mine, MPI_BYTE, all, sizeof mine, MPI_BYTE, MPI_COMM_WORLD));

    /* Connect to higher ranks, accept from lower ones (they say who they are). */
    int *fd = xmalloc(sizeof(int) * n);
    for (int j = 0; j < n; j++)
        fd[j] = -1;
    for (int j = me + 1; j < n; j++) {
        int s = socket(AF_INET, SOCK_STREAM, 0);
        struct sockaddr_in to = {.sin_family = AF_INET, .sin_addr.s_addr = all[j].ip, .sin_port = all[j].port};
        if (s < 0 || connect(s, (struct sockaddr *)&to, sizeof to))
            die("connect");
        int32_t who = me;
        full(s, &who, sizeof who, 1);
        fd[j] = s;
    }
    for (int k = 0; k < me; k++) {
        int s = accept(lfd, NULL, NULL);
        int32_t who;
        if (s < 0)
            die("accept");
        full(s, &who, sizeof who, 0);
        if (who < 0 || who >= me || fd[who] >= 0) {
            fprintf(stderr, "raw_alltoall: rank %d: bad peer id %d\n", me, who);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        fd[who] = s;
    }
    close(lfd);
    int one = 1;
    for (int j = 0; j < n; j++) {
        if (j == me)
            continue;
        setsockopt(fd[j], IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        int wan = (j < half) != (me < half);
        if (wan && pace && setsockopt(fd[j], SOL_SOCKET, SO_MAX_PACING_RATE, &pace, sizeof pace))
            die("SO_MAX_PACING_RATE");
        if (wan && rto_min_us > 0) {
            int v = (int)rto_min_us;
            if (setsockopt(fd[j], IPPROTO_TCP, TCP_RTO_MIN_US, &v, sizeof v))
                die("TCP_RTO_MIN_US");
        }
        fcntl(fd[j], F_SETFL, fcntl(fd[j], F_GETFL) | O_NONBLOCK);
    }

    char *sbuf = xmalloc((size_t)size * n), *rbuf = xmalloc((size_t)size * n);
    long *sent = xmalloc(sizeof(long) * n), *got = xmalloc(sizeof(long) * n);
    struct pollfd *pf = xmalloc(sizeof *pf * n);
    int *who = xmalloc(sizeof(int) * n);

    /* One call: the full exchange; checks the first word of each block. */
    long call_no = 0;
#define ONE_CALL()                                                                                 \
    do {                                                                                           \
        call_no++;                                                                                 \
        for (int j = 0; j < n; j++) {                                                              \
            sent[j] = got[j] = (j == me) ? size : 0;                                               \
            long tagv = call_no * 1000 + me;                                                       \
            memcpy(sbuf + (size_t)j * size, &tagv, sizeof tagv);                                   \
        }                                                                                          \
        int left = 2 * (n - 1);                                                                    \
        while (left > 0) {                                                                         \
            int m = 0;                                                                             \
            for (int j = 0; j < n; j++) {                                                          \
                short ev = (sent[j] < size ? POLLOUT : 0) | (got[j] < size ? POLLIN : 0);          \
                if (ev) {                                                                          \
                    pf[m] = (struct pollfd){.fd = fd[j], .events = ev};                            \
                    who[m++] = j;                                                                  \
                }                                                                                  \
            }                                                                                      \
            if (poll(pf, m, spin ? 0 : -1) < 0 && errno != EINTR)                                  \
                die("poll");                                                                       \
            for (int k = 0; k < m; k++) {                                                          \
                int j = who[k];                                                                    \
                if ((pf[k].revents & POLLOUT) && sent[j] < size) {                                 \
                    ssize_t w = write(fd[j], sbuf + (size_t)j * size + sent[j], size - sent[j]);   \
                    if (w < 0 && errno != EAGAIN)                                                  \
                        die("write");                                                              \
                    if (w > 0 && (sent[j] += w) == size)                                           \
                        left--;                                                                    \
                }                                                                                  \
                if ((pf[k].revents & (POLLIN | POLLHUP | POLLERR)) && got[j] < size) {             \
                    ssize_t r = read(fd[j], rbuf + (size_t)j * size + got[j], size - got[j]);      \
                    if (r == 0)                                                                    \
                        die("peer closed");                                                        \
                    if (r < 0 && errno != EAGAIN)                                                  \
                        die("read");                                                               \
                    if (r > 0 && (got[j] += r) == size) {                                          \
                        left--;                                                                    \
                        long want = call_no * 1000 + j, have;                                      \
                        memcpy(&have, rbuf + (size_t)j * size, sizeof have);                       \
                        if (have != want)                                                          \
                            w_data_error("first word of a block", j, (double)have, (double)want); \
                    }                                                                              \
                }                                                                                  \
            }                                                                                      \
        }                                                                                          \
    } while (0)

    for (int w = 0; w < 3; w++)
        ONE_CALL();
    /* Calibrate calls per rep on rank 0's first timed call. */
    CHK(MPI_Barrier(MPI_COMM_WORLD));
    double t = now();
    ONE_CALL();
    t = now() - t;
    long calls = (long)(rep_ms / 1e3 / (t > 1e-6 ? t : 1e-6));
    if (calls < 1)
        calls = 1;
    CHK(MPI_Bcast(&calls, 1, MPI_LONG, 0, MPI_COMM_WORLD));
    for (long r = 0; r < reps; r++) {
        CHK(MPI_Barrier(MPI_COMM_WORLD));
        double t0 = now();
        for (long c = 0; c < calls; c++)
            ONE_CALL();
        double mine_t = (now() - t0) / calls, slowest;
        CHK(MPI_Reduce(&mine_t, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD));
        if (me == 0)
            printf("RESULT op=raw_alltoall size=%ld rep=%ld calls=%ld time=%.6e\n", size, r, calls, slowest);
        fflush(stdout);
    }
    for (int j = 0; j < n; j++)
        if (j != me)
            close(fd[j]);
    return w_finish();
}
