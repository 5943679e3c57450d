/* Parallel HDF5 (Debian's libhdf5-mpich, built against MPICH) on GridMPI's
 * libmpi.so.12: every rank writes its rows of a 2-D dataset, collectively
 * and then independently, into one file through the MPI-IO driver; every
 * rank reads the whole dataset back and checks every element; an
 * attribute written by all ranks. Exits non-zero on any mismatch.
 * Usage: phdf5_basic [FILE [keep]] (keep: the file is not removed). */
#include <hdf5.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#define ROWS 8 /* per rank */
#define COLS 100

static int fail(int rank, const char *what)
{
    fprintf(stderr, "rank %d: %s\n", rank, what);
    MPI_Abort(MPI_COMM_WORLD, 1);
    return 1;
}

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const char *name = argc > 1 ? argv[1] : "phdf5_basic.h5";

    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    H5Pset_fapl_mpio(fapl, MPI_COMM_WORLD, MPI_INFO_NULL);
    hid_t file = H5Fcreate(name, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    if (file < 0)
        return fail(rank, "H5Fcreate failed");
    for (int pass = 0; pass < 2; pass++) {
        hsize_t dims[2] = {(hsize_t)size * ROWS, COLS};
        hid_t space = H5Screate_simple(2, dims, NULL);
        hid_t dset = H5Dcreate2(file, pass ? "independent" : "collective", H5T_NATIVE_INT, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
        if (dset < 0)
            return fail(rank, "H5Dcreate2 failed");
        hsize_t start[2] = {(hsize_t)rank * ROWS, 0}, count[2] = {ROWS, COLS};
        H5Sselect_hyperslab(space, H5S_SELECT_SET, start, NULL, count, NULL);
        hid_t mem = H5Screate_simple(2, count, NULL);
        int *buf = malloc(sizeof(int) * ROWS * COLS);
        for (int i = 0; i < ROWS * COLS; i++)
            buf[i] = pass * 1000000 + rank * 10000 + i;
        hid_t dxpl = H5Pcreate(H5P_DATASET_XFER);
        H5Pset_dxpl_mpio(dxpl, pass ? H5FD_MPIO_INDEPENDENT : H5FD_MPIO_COLLECTIVE);
        if (H5Dwrite(dset, H5T_NATIVE_INT, mem, space, dxpl, buf) < 0)
            return fail(rank, "H5Dwrite failed");
        H5Dclose(dset);
        H5Sclose(mem);
        H5Sclose(space);
        H5Pclose(dxpl);
        free(buf);
    }
    hid_t aspace = H5Screate(H5S_SCALAR);
    hid_t attr = H5Acreate2(file, "ranks", H5T_NATIVE_INT, aspace, H5P_DEFAULT, H5P_DEFAULT);
    H5Awrite(attr, H5T_NATIVE_INT, &size);
    H5Aclose(attr);
    H5Sclose(aspace);
    H5Fclose(file);

    /* Read back everything, on every rank. */
    file = H5Fopen(name, H5F_ACC_RDONLY, fapl);
    if (file < 0)
        return fail(rank, "H5Fopen failed");
    int n = size * ROWS * COLS;
    int *all = malloc(sizeof(int) * n);
    for (int pass = 0; pass < 2; pass++) {
        hid_t dset = H5Dopen2(file, pass ? "independent" : "collective", H5P_DEFAULT);
        hid_t dxpl = H5Pcreate(H5P_DATASET_XFER);
        H5Pset_dxpl_mpio(dxpl, H5FD_MPIO_COLLECTIVE);
        if (H5Dread(dset, H5T_NATIVE_INT, H5S_ALL, H5S_ALL, dxpl, all) < 0)
            return fail(rank, "H5Dread failed");
        for (int r = 0; r < size; r++)
            for (int i = 0; i < ROWS * COLS; i++)
                if (all[r * ROWS * COLS + i] != pass * 1000000 + r * 10000 + i) {
                    fprintf(stderr, "rank %d: dataset %d element %d of rank %d is %d\n", rank, pass, i, r, all[r * ROWS * COLS + i]);
                    MPI_Abort(MPI_COMM_WORLD, 1);
                }
        H5Pclose(dxpl);
        H5Dclose(dset);
    }
    int ranks = 0;
    attr = H5Aopen(file, "ranks", H5P_DEFAULT);
    H5Aread(attr, H5T_NATIVE_INT, &ranks);
    H5Aclose(attr);
    if (ranks != size)
        return fail(rank, "attribute mismatch");
    H5Fclose(file);
    H5Pclose(fapl);
    free(all);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        /* "keep": leave the file for h5dump (tests/hdf5/run.sh). */
        if (!(argc > 2 && argv[2][0] == 'k'))
            remove(name);
        printf("phdf5_basic: %d ranks OK\n", size);
    }
    MPI_Finalize();
    return 0;
}
