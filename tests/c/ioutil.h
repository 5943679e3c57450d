/* Helpers of the io_* tests: a scratch directory every rank of the job
 * shares (made by rank 0 under /tmp, its name broadcast) and removed at
 * the end with what is left in it. */
#ifndef GRIDMPI_IOUTIL_H
#define GRIDMPI_IOUTIL_H

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char io_dir[256];

static void io_setup(void)
{
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0) {
        strcpy(io_dir, "/tmp/gridmpi-io-XXXXXX");
        if (!mkdtemp(io_dir)) {
            perror("mkdtemp");
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    }
    MPI_Bcast(io_dir, sizeof io_dir, MPI_CHAR, 0, MPI_COMM_WORLD);
}

/* The path of `name` in the scratch directory (a static buffer per call slot). */
static const char *io_path(const char *name)
{
    static char buf[8][512];
    static int slot;
    char *p = buf[slot++ % 8];
    snprintf(p, 512, "%s/%s", io_dir, name);
    return p;
}

static int io_exists(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0;
}

/* Entries of the scratch directory (hidden ones too), for leak checks. */
static int io_count_entries(void)
{
    DIR *d = opendir(io_dir);
    int n = 0;
    struct dirent *e;
    if (!d)
        return -1;
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
            n++;
    closedir(d);
    return n;
}

/* Remove the scratch directory and what is in it (no MPI call). */
static void io_remove_dir(void)
{
    DIR *d = opendir(io_dir);
    struct dirent *e;
    char p[768];
    while (d && (e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        snprintf(p, sizeof p, "%s/%s", io_dir, e->d_name);
        unlink(p);
    }
    if (d)
        closedir(d);
    rmdir(io_dir);
}

static void io_teardown(void)
{
    int rank;
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0)
        io_remove_dir();
}

#endif
