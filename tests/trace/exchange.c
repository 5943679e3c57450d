/*
 * exchange.c: traffic for the trace tests and the overhead measurement.
 *
 * Every iteration each rank exchanges SIZE bytes with every other rank:
 * with MPI_Alltoall when the library has it (mode "alltoall", or "auto" when
 * a first call succeeds), else with one MPI_Isend/MPI_Irecv per peer and
 * MPI_Waitall ("p2p"). Data is checked after the last iteration.
 *
 *   exchange [-s SIZE] [-n ITERS] [-m auto|alltoall|p2p] [-r REPS] [-q] [-w FILE]
 *
 * -w FILE: before MPI_Finalize, print "WAITING rank N" and wait (at most
 * two minutes) until FILE exists.
 *
 * Prints one line per rep (rank 0):
 *   RESULT mode=p2p ranks=2 size=1048576 iters=50 seconds=0.123 us_per_iter=2460.0
 * Exits non-zero on wrong data or a failed call.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int rank, size;

static void die(const char *what, int rc)
{
    char msg[MPI_MAX_ERROR_STRING + 1] = "";
    int len = 0;
    MPI_Error_string(rc, msg, &len);
    fprintf(stderr, "exchange: rank %d: %s failed: %s\n", rank, what, msg);
    MPI_Abort(MPI_COMM_WORLD, 2);
}

#define CHK(call, what) do { int rc_ = (call); if (rc_ != MPI_SUCCESS) die(what, rc_); } while (0)

static unsigned char pattern(int from, int to, long i) { return (unsigned char)(from * 31 + to * 7 + i); }

static void fill(unsigned char *send, long n)
{
    for (int p = 0; p < size; p++)
        for (long i = 0; i < n; i++)
            send[(long)p * n + i] = pattern(rank, p, i);
}

static int check(const unsigned char *recv, long n)
{
    for (int p = 0; p < size; p++)
        for (long i = 0; i < n; i += 97)
            if (recv[(long)p * n + i] != pattern(p, rank, i))
                return 0;
    return 1;
}

static void p2p(unsigned char *send, unsigned char *recv, long n, MPI_Request *req)
{
    int k = 0;
    for (int d = 1; d < size; d++) {
        int from = (rank - d + size) % size;
        CHK(MPI_Irecv(recv + (long)from * n, (int)n, MPI_BYTE, from, 7, MPI_COMM_WORLD, &req[k++]), "MPI_Irecv");
    }
    for (int d = 1; d < size; d++) {
        int to = (rank + d) % size;
        CHK(MPI_Isend(send + (long)to * n, (int)n, MPI_BYTE, to, 7, MPI_COMM_WORLD, &req[k++]), "MPI_Isend");
    }
    memcpy(recv + (long)rank * n, send + (long)rank * n, (size_t)n);
    CHK(MPI_Waitall(k, req, MPI_STATUSES_IGNORE), "MPI_Waitall");
}

int main(int argc, char **argv)
{
    long n = 1 << 20, iters = 50;
    int reps = 1, quiet = 0;
    const char *mode = "auto", *wait_for = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-s") && i + 1 < argc) {
            char *end;
            n = strtol(argv[++i], &end, 10);
            if (*end == 'k' || *end == 'K') n <<= 10;
            if (*end == 'm' || *end == 'M') n <<= 20;
        } else if (!strcmp(argv[i], "-n") && i + 1 < argc) iters = atol(argv[++i]);
        else if (!strcmp(argv[i], "-m") && i + 1 < argc) mode = argv[++i];
        else if (!strcmp(argv[i], "-r") && i + 1 < argc) reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-q")) quiet = 1;
        else if (!strcmp(argv[i], "-w") && i + 1 < argc) wait_for = argv[++i];
        else { fprintf(stderr, "usage: exchange [-s SIZE] [-n ITERS] [-m auto|alltoall|p2p] [-r REPS] [-q] [-w FILE]\n"); return 2; }
    }
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    unsigned char *send = malloc((size_t)n * size), *recv = malloc((size_t)n * size);
    MPI_Request *req = malloc(sizeof(MPI_Request) * 2 * size);
    if (!send || !recv || !req) { fprintf(stderr, "exchange: out of memory\n"); MPI_Abort(MPI_COMM_WORLD, 2); }
    fill(send, n);

    int use_coll = 0;
    if (strcmp(mode, "p2p") != 0) {
        int rc = MPI_Alltoall(send, (int)n, MPI_BYTE, recv, (int)n, MPI_BYTE, MPI_COMM_WORLD);
        int ok = rc == MPI_SUCCESS, all_ok = 0;
        /* Agree with point-to-point, which every MPI has. */
        int *oks = malloc(sizeof(int) * size);
        for (int p = 0; p < size; p++) oks[p] = 0;
        MPI_Request *r2 = malloc(sizeof(MPI_Request) * 2 * size);
        int k = 0;
        for (int p = 0; p < size; p++) if (p != rank) {
            MPI_Irecv(&oks[p], 1, MPI_INT, p, 9, MPI_COMM_WORLD, &r2[k++]);
            MPI_Isend(&ok, 1, MPI_INT, p, 9, MPI_COMM_WORLD, &r2[k++]);
        }
        MPI_Waitall(k, r2, MPI_STATUSES_IGNORE);
        oks[rank] = ok;
        all_ok = 1;
        for (int p = 0; p < size; p++) all_ok &= oks[p];
        free(oks);
        free(r2);
        if (all_ok) use_coll = 1;
        else if (!strcmp(mode, "alltoall")) die("MPI_Alltoall", rc);
    }
    const char *used = use_coll ? "alltoall" : "p2p";
    for (int rep = 0; rep < reps; rep++) {
        memset(recv, 0, (size_t)n * size);
        p2p(send, recv, 0, req); /* a zero-byte exchange lines the ranks up */
        double t0 = MPI_Wtime();
        for (long it = 0; it < iters; it++) {
            if (use_coll)
                CHK(MPI_Alltoall(send, (int)n, MPI_BYTE, recv, (int)n, MPI_BYTE, MPI_COMM_WORLD), "MPI_Alltoall");
            else
                p2p(send, recv, n, req);
        }
        double t = MPI_Wtime() - t0, tmax = t;
        /* slowest rank's time, at rank 0, by point-to-point */
        if (rank == 0) {
            for (int p = 1; p < size; p++) {
                double x;
                MPI_Recv(&x, 1, MPI_DOUBLE, p, 8, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                if (x > tmax) tmax = x;
            }
        } else {
            MPI_Send(&t, 1, MPI_DOUBLE, 0, 8, MPI_COMM_WORLD);
        }
        if (!check(recv, n)) {
            fprintf(stderr, "exchange: rank %d: wrong data\n", rank);
            MPI_Abort(MPI_COMM_WORLD, 3);
        }
        if (rank == 0 && !quiet)
            printf("RESULT mode=%s ranks=%d size=%ld iters=%ld seconds=%.6f us_per_iter=%.1f\n", used, size, n, iters, tmax,
                   tmax / iters * 1e6);
        fflush(stdout);
    }
    free(send);
    free(recv);
    free(req);
    if (wait_for) {
        /* -w: say so and wait for FILE before MPI_Finalize (a test changes
         * the network meanwhile: tests/trace/run.sh stops the loss, so that
         * nothing is lost after the trace's final samples). */
        printf("WAITING rank %d\n", rank);
        fflush(stdout);
        struct timespec tick = {0, 10 * 1000 * 1000};
        for (int i = 0; i < 12000 && access(wait_for, F_OK) != 0; i++)
            nanosleep(&tick, NULL);
    }
    MPI_Finalize();
    return 0;
}
