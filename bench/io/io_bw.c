/*
 * Collective MPI-IO bandwidth: a square 2-D array of doubles, N x N, split
 * into blocks over a process grid (MPI_Dims_create); each rank's file view
 * is its block (MPI_Type_create_subarray), so a rank's data is strided in
 * the file and the implementation's collective buffering has to gather
 * it. Each repetition writes the whole array with MPI_File_write_all and
 * reads it back with MPI_File_read_all; the time of one access is from a
 * barrier before it to a barrier after it (so it is the slowest rank's).
 * Every element read is checked, and at the end rank 0 reads the whole
 * file without a view and checks its layout. No MPI_File_sync: this
 * measures the MPI library and the page cache, not the disk.
 *
 *   io_bw FILE MIB REPS     prints "io_bw ranks=P mib=M write_best=... write_median=...
 *                           read_best=... read_median=..." in MB/s (10^6 bytes/s)
 */
#include <mpi.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static double value(long i, long j, int rep)
{
    return (double)(i * 1000003L + j) + 0.25 * rep;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, n, sizeof *v, cmp);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc != 4) {
        if (rank == 0)
            fprintf(stderr, "usage: io_bw FILE MIB REPS\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    const char *path = argv[1];
    long mib = atol(argv[2]);
    int reps = atoi(argv[3]);
    int dims[2] = {0, 0}, periods[2] = {0, 0}, coords[2];
    MPI_Dims_create(size, 2, dims);
    MPI_Comm grid;
    MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 0, &grid);
    MPI_Cart_coords(grid, rank, 2, coords);
    /* N: the largest multiple of both grid dimensions with N*N*8 <= MIB MiB. */
    long step = (long)dims[0] * dims[1];
    long n = (long)sqrt((double)mib * 1048576 / 8) / step * step;
    int gsizes[2] = {(int)n, (int)n}, lsizes[2] = {(int)(n / dims[0]), (int)(n / dims[1])};
    int starts[2] = {coords[0] * lsizes[0], coords[1] * lsizes[1]};
    MPI_Datatype filetype;
    MPI_Type_create_subarray(2, gsizes, lsizes, starts, MPI_ORDER_C, MPI_DOUBLE, &filetype);
    MPI_Type_commit(&filetype);
    long local = (long)lsizes[0] * lsizes[1];
    double *buf = malloc(local * sizeof(double));
    double *wt = malloc(reps * sizeof(double)), *rt = malloc(reps * sizeof(double));
    double bytes = (double)n * n * sizeof(double);
    long errors = 0;

    MPI_File fh;
    MPI_File_delete(path, MPI_INFO_NULL);
    if (MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh) != MPI_SUCCESS) {
        fprintf(stderr, "rank %d: cannot open %s\n", rank, path);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    MPI_File_set_view(fh, 0, MPI_DOUBLE, filetype, "native", MPI_INFO_NULL);
    for (int rep = 0; rep < reps; rep++) {
        for (long a = 0; a < lsizes[0]; a++)
            for (long b = 0; b < lsizes[1]; b++)
                buf[a * lsizes[1] + b] = value(starts[0] + a, starts[1] + b, rep);
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        MPI_File_write_at_all(fh, 0, buf, (int)local, MPI_DOUBLE, MPI_STATUS_IGNORE);
        MPI_Barrier(MPI_COMM_WORLD);
        wt[rep] = bytes / (MPI_Wtime() - t0) / 1e6;
        memset(buf, 0, local * sizeof(double));
        MPI_Barrier(MPI_COMM_WORLD);
        t0 = MPI_Wtime();
        MPI_File_read_at_all(fh, 0, buf, (int)local, MPI_DOUBLE, MPI_STATUS_IGNORE);
        MPI_Barrier(MPI_COMM_WORLD);
        rt[rep] = bytes / (MPI_Wtime() - t0) / 1e6;
        for (long a = 0; a < lsizes[0]; a++)
            for (long b = 0; b < lsizes[1]; b++)
                errors += buf[a * lsizes[1] + b] != value(starts[0] + a, starts[1] + b, rep);
    }
    MPI_File_close(&fh);
    /* The file's layout, read by one process without a view. */
    if (rank == 0) {
        MPI_File one;
        MPI_File_open(MPI_COMM_SELF, path, MPI_MODE_RDONLY, MPI_INFO_NULL, &one);
        double *row = malloc(n * sizeof(double));
        for (long i = 0; i < n; i++) {
            MPI_File_read_at(one, i * n * (long)sizeof(double), row, (int)n, MPI_DOUBLE, MPI_STATUS_IGNORE);
            for (long j = 0; j < n; j++)
                errors += row[j] != value(i, j, reps - 1);
        }
        free(row);
        MPI_File_close(&one);
        MPI_File_delete(path, MPI_INFO_NULL);
    }
    long all = 0;
    MPI_Reduce(&errors, &all, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        if (all)
            printf("ERROR io_bw: %ld wrong elements\n", all);
        double wbest = 0, rbest = 0;
        for (int r = 0; r < reps; r++) {
            wbest = wt[r] > wbest ? wt[r] : wbest;
            rbest = rt[r] > rbest ? rt[r] : rbest;
        }
        printf("io_bw ranks=%d grid=%dx%d n=%ld mib=%.1f write_best=%.0f write_median=%.0f read_best=%.0f read_median=%.0f\n", size, dims[0], dims[1], n,
               bytes / 1048576, wbest, median(wt, reps), rbest, median(rt, reps));
    }
    free(buf);
    free(wt);
    free(rt);
    MPI_Type_free(&filetype);
    MPI_Comm_free(&grid);
    MPI_Finalize();
    return all ? 1 : 0;
}
