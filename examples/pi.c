/* Compute pi by integrating 4/(1+x^2) over [0,1]: each rank takes every
 * size-th interval; the partial sums meet at rank 0. Then a token goes round
 * the ring of ranks, and a large message is passed along it. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size, len;
    char host[MPI_MAX_PROCESSOR_NAME];
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Get_processor_name(host, &len);

    long n = argc > 1 ? atol(argv[1]) : 10000000;
    double h = 1.0 / n, sum = 0.0;
    double t0 = MPI_Wtime();
    for (long i = rank; i < n; i += size) {
        double x = h * (i + 0.5);
        sum += 4.0 / (1.0 + x * x);
    }
    double part = sum * h, pi = 0.0;
    /* Gather the partial sums at rank 0 with point-to-point messages. */
    if (rank == 0) {
        pi = part;
        for (int r = 1; r < size; r++) {
            double p;
            MPI_Recv(&p, 1, MPI_DOUBLE, r, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            pi += p;
        }
    } else {
        MPI_Send(&part, 1, MPI_DOUBLE, 0, 0, MPI_COMM_WORLD);
    }
    double t1 = MPI_Wtime();

    /* A ring: 1000 laps of a small token, then one lap of 16 MiB. */
    int next = (rank + 1) % size, prev = (rank + size - 1) % size, laps = 1000, token = 0;
    double r0 = MPI_Wtime();
    for (int i = 0; i < laps; i++) {
        if (rank == 0) {
            MPI_Send(&token, 1, MPI_INT, next, 1, MPI_COMM_WORLD);
            MPI_Recv(&token, 1, MPI_INT, prev, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(&token, 1, MPI_INT, prev, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            token++;
            MPI_Send(&token, 1, MPI_INT, next, 1, MPI_COMM_WORLD);
        }
    }
    double r1 = MPI_Wtime();
    size_t big = 16u << 20;
    char *buf = malloc(big);
    double b0 = MPI_Wtime();
    if (rank == 0) {
        memset(buf, 42, big);
        MPI_Send(buf, (int)big, MPI_BYTE, next, 2, MPI_COMM_WORLD);
        MPI_Recv(buf, (int)big, MPI_BYTE, prev, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else {
        MPI_Recv(buf, (int)big, MPI_BYTE, prev, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Send(buf, (int)big, MPI_BYTE, next, 2, MPI_COMM_WORLD);
    }
    double b1 = MPI_Wtime();
    int ok = 1;
    for (size_t i = 0; i < big; i++)
        if (buf[i] != 42) { ok = 0; break; }
    free(buf);

    printf("rank %d of %d on %s\n", rank, size, host);
    fflush(stdout);
    if (rank == 0) {
        printf("pi = %.15f (error %.2e) from %ld intervals in %.3f s\n", pi, pi - 3.141592653589793, n, t1 - t0);
        printf("ring: %d laps, %.2f us per hop; token %d (expected %d)\n", laps, (r1 - r0) / laps / (size > 1 ? size : 1) * 1e6,
               token, laps * (size - 1));
        printf("ring: 16 MiB lap at %.0f MB/s per hop, data %s\n", size * (double)big / (b1 - b0) / 1e6, ok ? "intact" : "CORRUPT");
    }
    MPI_Finalize();
    return ok && (rank != 0 || token == laps * (size - 1)) ? 0 : 1;
}
