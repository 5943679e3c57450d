/* The two communication patterns that decide how a program fares across
 * clusters: an all-to-all exchange (a distributed sort's or an FFT
 * transpose's) and an allreduce of a large vector (a solver's), each timed
 * over several calls with the data checked.
 *
 *   exchange [BYTES_PER_PAIR [CALLS [ALLREDUCE_BYTES]]]   (default 65536 10 1048576)
 *
 * Rank 0 prints one line per pattern: the median and best time per call. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void report(const char *what, double *t, int n, int rank, int errors)
{
    qsort(t, n, sizeof *t, cmp_double);
    if (rank == 0)
        printf("%-44s median %8.2f ms  best %8.2f ms  %s\n", what, t[n / 2] * 1e3, t[0] * 1e3,
               errors ? "DATA WRONG" : "data ok");
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    long m = argc > 1 ? atol(argv[1]) : 65536;
    int calls = argc > 2 ? atoi(argv[2]) : 10;
    long vbytes = argc > 3 ? atol(argv[3]) : 1 << 20;
    if (m < 1 || calls < 1 || vbytes < (long)sizeof(double)) {
        if (rank == 0)
            fprintf(stderr, "usage: exchange [BYTES_PER_PAIR [CALLS [ALLREDUCE_BYTES]]]\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    unsigned char *sbuf = malloc((size_t)m * size), *rbuf = malloc((size_t)m * size);
    double *t = malloc(sizeof(double) * calls);
    int errors = 0, all_errors = 0;

    /* All-to-all: byte j of the block from s to d is (s * 31 + d * 7 + j) mod 251. */
    for (int d = 0; d < size; d++)
        for (long j = 0; j < m; j++)
            sbuf[d * m + j] = (unsigned char)((rank * 31 + d * 7 + j) % 251);
    MPI_Alltoall(sbuf, (int)m, MPI_BYTE, rbuf, (int)m, MPI_BYTE, MPI_COMM_WORLD); /* warm-up */
    for (int i = 0; i < calls; i++) {
        memset(rbuf, 0, (size_t)m * size);
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        MPI_Alltoall(sbuf, (int)m, MPI_BYTE, rbuf, (int)m, MPI_BYTE, MPI_COMM_WORLD);
        t[i] = MPI_Wtime() - t0;
        for (int s = 0; s < size; s++)
            for (long j = 0; j < m; j += 61)
                errors += rbuf[s * m + j] != (unsigned char)((s * 31 + rank * 7 + j) % 251);
    }
    MPI_Reduce(&errors, &all_errors, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, t, calls, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    char what[96];
    snprintf(what, sizeof what, "MPI_Alltoall, %ld KiB per pair:", m / 1024);
    report(what, t, calls, rank, all_errors);

    /* Allreduce: element k of rank r is r + k; the sum is known. */
    long n = vbytes / (long)sizeof(double);
    double *v = malloc(sizeof(double) * n), *w = malloc(sizeof(double) * n);
    for (long k = 0; k < n; k++)
        v[k] = rank + (double)k;
    errors = 0;
    MPI_Allreduce(v, w, (int)n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD); /* warm-up */
    for (int i = 0; i < calls; i++) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        MPI_Allreduce(v, w, (int)n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        t[i] = MPI_Wtime() - t0;
        for (long k = 0; k < n; k += 97)
            errors += w[k] != (double)size * (size - 1) / 2 + (double)k * size;
    }
    MPI_Reduce(&errors, &all_errors, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, t, calls, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    snprintf(what, sizeof what, "MPI_Allreduce, %ld KiB of doubles:", vbytes / 1024);
    report(what, t, calls, rank, all_errors);

    free(v);
    free(w);
    free(sbuf);
    free(rbuf);
    free(t);
    MPI_Finalize();
    return all_errors != 0;
}
