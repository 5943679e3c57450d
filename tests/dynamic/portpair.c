/*
 * Two separately started jobs joined by a port, then by MPI_Comm_join.
 *
 *   portpair server DIR   rank 0 opens a port and writes its name to DIR/port;
 *                         the job accepts on MPI_COMM_WORLD
 *   portpair client DIR   rank 0 reads DIR/port; the job connects
 *
 * Checked across the intercommunicator: sizes, every pair of processes
 * exchanging patterned messages (small and 1 MiB), a bcast from the
 * server's root, a merge (servers first) with an allreduce, then
 * MPI_Comm_join between the two rank 0s over a socket of their own, and
 * disconnects. Prints "portpair OK" per rank; exits 1 on a failed check.
 */
#include <arpa/inet.h>
#include <mpi.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static int errors;
#define CHECK(c, ...) do { if (!(c)) { errors++; printf("rank %d: ", wrank); printf(__VA_ARGS__); printf("\n"); } } while (0)
static int wrank;

static void wait_file(const char *path, char *buf, size_t cap)
{
    for (int i = 0; i < 600; i++) {
        FILE *f = fopen(path, "r");
        if (f) {
            size_t n = fread(buf, 1, cap - 1, f);
            fclose(f);
            buf[n] = 0;
            if (n > 0 && buf[n - 1] == '\n') {
                buf[n - 1] = 0;
                return;
            }
        }
        usleep(100000);
    }
    fprintf(stderr, "no %s after 60 s\n", path);
    exit(2);
}

static void write_file(const char *dir, const char *name, const char *text)
{
    char tmp[4096], path[4096];
    snprintf(tmp, sizeof tmp, "%s/%s.tmp", dir, name);
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(tmp, "w");
    fprintf(f, "%s\n", text);
    fclose(f);
    rename(tmp, path);
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: portpair server|client DIR\n");
        return 2;
    }
    int server = strcmp(argv[1], "server") == 0;
    const char *dir = argv[2];
    MPI_Init(&argc, &argv);
    int size;
    MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    char port[MPI_MAX_PORT_NAME] = "";
    MPI_Comm inter, merged;
    char path[4096];
    snprintf(path, sizeof path, "%s/port", dir);
    if (server) {
        if (wrank == 0) {
            MPI_Open_port(MPI_INFO_NULL, port);
            write_file(dir, "port", port);
        }
        MPI_Comm_accept(port, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &inter);
    } else {
        if (wrank == 0)
            wait_file(path, port, sizeof port);
        MPI_Comm_connect(port, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &inter);
    }
    int rsize;
    MPI_Comm_remote_size(inter, &rsize);
    /* Every pair exchanges a small and a large message. */
    enum { BIG = 1 << 18 };
    int *out = malloc(BIG * sizeof(int)), *in = malloc(BIG * sizeof(int));
    for (int r = 0; r < rsize; r++) {
        for (int len = 3; len <= BIG; len = len == 3 ? BIG : BIG + 1) {
            for (int i = 0; i < len; i++)
                out[i] = (server ? 1 : 2) * 1000003 + wrank * 7919 + r * 31 + i;
            MPI_Status st;
            MPI_Sendrecv(out, len, MPI_INT, r, len, in, len, MPI_INT, r, len, inter, &st);
            int bad = 0;
            for (int i = 0; i < len; i++)
                bad += in[i] != (server ? 2 : 1) * 1000003 + r * 7919 + wrank * 31 + i;
            CHECK(bad == 0 && st.MPI_SOURCE == r, "%d of %d ints from remote %d wrong (source %d)", bad, len, r, st.MPI_SOURCE);
        }
    }
    int v = server ? 0 : -1;
    if (server && wrank == 0)
        v = 777;
    MPI_Bcast(&v, 1, MPI_INT, server ? (wrank == 0 ? MPI_ROOT : MPI_PROC_NULL) : 0, inter);
    if (!server)
        CHECK(v == 777, "bcast gave %d", v);
    MPI_Intercomm_merge(inter, !server, &merged);
    int mrank, msize, sum = 0, one = 1;
    MPI_Comm_rank(merged, &mrank);
    MPI_Comm_size(merged, &msize);
    CHECK(msize == size + rsize, "merged size %d", msize);
    CHECK(mrank == (server ? wrank : rsize + wrank), "merged rank %d", mrank);
    MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, merged);
    CHECK(sum == msize, "allreduce gave %d", sum);
    /* Both groups say "low": they still agree on one order. */
    MPI_Comm same;
    MPI_Intercomm_merge(inter, 0, &same);
    int srank, lo = 0, mine[2];
    MPI_Comm_rank(same, &srank);
    mine[0] = server;
    mine[1] = wrank;
    int *all = malloc(2 * msize * sizeof(int));
    MPI_Allgather(mine, 2, MPI_INT, all, 2, MPI_INT, same);
    for (int i = 0; i < msize; i++)
        lo += all[2 * i] == all[0];
    CHECK(lo == (all[0] ? size * server + rsize * !server : size * !server + rsize * server), "merge(0, 0): the first group is not contiguous");
    free(all);
    MPI_Comm_free(&same);
    /* An intercommunicator made anew over the merged one (peer comm),
     * between the two jobs' halves: groups exchanged by their leaders. */
    MPI_Comm mine_half, again;
    MPI_Comm_split(merged, server, wrank, &mine_half);
    MPI_Intercomm_create(mine_half, 0, merged, server ? size : 0, 99, &again);
    int ar;
    MPI_Comm_remote_size(again, &ar);
    CHECK(ar == rsize, "Intercomm_create: remote size %d", ar);
    int tok = server ? 5 : 6, got = 0;
    MPI_Allreduce(&tok, &got, 1, MPI_INT, MPI_SUM, again);
    CHECK(got == (server ? 6 : 5) * rsize, "Intercomm_create: the remote group's sum is %d", got);
    MPI_Comm_free(&again);
    MPI_Comm_free(&mine_half);
    MPI_Comm_free(&merged);

    /* MPI_Comm_join between the rank 0s, over a socket of their own. */
    if (wrank == 0) {
        int fd = -1;
        if (server) {
            /* Any address: the client may be on another host; it finds
             * this one by name. */
            int l = socket(AF_INET, SOCK_STREAM, 0);
            struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_ANY)};
            socklen_t al = sizeof a;
            bind(l, (struct sockaddr *)&a, sizeof a);
            listen(l, 1);
            getsockname(l, (struct sockaddr *)&a, &al);
            char host[256], p[300];
            gethostname(host, sizeof host);
            host[sizeof host - 1] = 0;
            snprintf(p, sizeof p, "%s %d", host, ntohs(a.sin_port));
            write_file(dir, "sock", p);
            fd = accept(l, NULL, NULL);
            close(l);
        } else {
            char p[300], host[256];
            int port = 0;
            snprintf(path, sizeof path, "%s/sock", dir);
            wait_file(path, p, sizeof p);
            CHECK(sscanf(p, "%255s %d", host, &port) == 2, "the join address '%s'", p);
            struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_STREAM}, *ai = NULL;
            CHECK(getaddrinfo(host, NULL, &hints, &ai) == 0, "cannot resolve %s", host);
            fd = socket(AF_INET, SOCK_STREAM, 0);
            struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
            if (ai)
                a.sin_addr = ((struct sockaddr_in *)ai->ai_addr)->sin_addr;
            freeaddrinfo(ai);
            if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0)
                perror("connect");
        }
        MPI_Comm joined;
        MPI_Comm_join(fd, &joined);
        int jr, x = server ? 11 : 22, y = 0;
        MPI_Comm_remote_size(joined, &jr);
        CHECK(jr == 1, "join: remote size %d", jr);
        MPI_Sendrecv(&x, 1, MPI_INT, 0, 5, &y, 1, MPI_INT, 0, 5, joined, MPI_STATUS_IGNORE);
        CHECK(y == (server ? 22 : 11), "join: got %d", y);
        /* The socket is still the program's. */
        CHECK(write(fd, "", 0) == 0, "join closed the program's socket");
        MPI_Comm_disconnect(&joined);
        close(fd);
    }
    MPI_Comm_disconnect(&inter);
    if (server && wrank == 0)
        MPI_Close_port(port);
    free(out);
    free(in);
    MPI_Finalize();
    if (errors == 0)
        printf("portpair OK %s %d\n", argv[1], wrank);
    return errors != 0;
}
