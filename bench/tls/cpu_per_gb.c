/*
 * cpu_per_gb.c: the CPU time it costs to move data between two ranks
 * (bench/tls/run.sh: GRIDMPI_WAN_TLS=all against off, TCP on one host).
 *
 *   cpu_per_gb [GIB] [MSG_MIB]
 *
 * Rank 0 sends GIB GiB (default 4) to rank 1 in messages of MSG_MIB MiB
 * (default 4); rank 1 checks a word of every message. The CPU time of each
 * rank (getrusage: user + system, every thread) and the wall time are
 * taken around the transfer only (after a warm-up message and a barrier).
 *
 * Prints "RESULT gib=G wall_s=W user_s=U sys_s=S cpu_s=C cpu_s_per_gb=X"
 * (U, S, C: the two ranks together; X per 10^9 bytes moved).
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

static double secs(struct timeval t)
{
    return t.tv_sec + t.tv_usec / 1e6;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 2) {
        if (rank == 0)
            fprintf(stderr, "cpu_per_gb: run it on 2 ranks\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    double gib = argc > 1 ? atof(argv[1]) : 4;
    long msg = (argc > 2 ? atol(argv[2]) : 4) << 20;
    long count = (long)(gib * (1L << 30) / msg);
    long *buf = malloc(msg);
    memset(buf, 0, msg);
    /* Warm-up: connections made, buffers touched. */
    if (rank == 0)
        MPI_Send(buf, (int)msg, MPI_BYTE, 1, 0, MPI_COMM_WORLD);
    else
        MPI_Recv(buf, (int)msg, MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Barrier(MPI_COMM_WORLD);
    struct rusage r0, r1;
    getrusage(RUSAGE_SELF, &r0);
    double t0 = MPI_Wtime();
    long bad = 0;
    for (long i = 0; i < count; i++) {
        if (rank == 0) {
            buf[0] = i;
            buf[msg / 8 - 1] = ~i;
            MPI_Send(buf, (int)msg, MPI_BYTE, 1, 1, MPI_COMM_WORLD);
        } else {
            MPI_Recv(buf, (int)msg, MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            bad += buf[0] != i || buf[msg / 8 - 1] != ~i;
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    double wall = MPI_Wtime() - t0;
    getrusage(RUSAGE_SELF, &r1);
    double mine[3] = {secs(r1.ru_utime) - secs(r0.ru_utime), secs(r1.ru_stime) - secs(r0.ru_stime), (double)bad};
    double sum[3];
    MPI_Reduce(mine, sum, 3, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        double bytes = (double)count * msg;
        printf("RESULT gib=%g wall_s=%.3f user_s=%.3f sys_s=%.3f cpu_s=%.3f cpu_s_per_gb=%.3f bad=%.0f\n", bytes / (1L << 30), wall,
               sum[0], sum[1], sum[0] + sum[1], (sum[0] + sum[1]) / (bytes / 1e9), sum[2]);
    }
    free(buf);
    MPI_Finalize();
    return 0;
}
