/*
 * mpi_threads.c: threads inside MPI when the checkpoint comes
 * (tests/checkpoint/mpi.sh).
 *
 *   mpi_threads ITERATIONS
 *
 * MPI_THREAD_MULTIPLE; every rank runs THREADS threads, thread t
 * exchanging messages (sizes from 4 B to 256 KiB, contents checked) with
 * the same thread of its ring neighbours on a communicator of its own,
 * while the main thread does allreduces on MPI_COMM_WORLD. So at the
 * checkpoint some threads sleep inside MPI (in the kernel, or waiting for
 * the lock) and must wake in the restored process. Rank 0 prints the
 * checksum and the count of wrong bytes.
 */
#include <mpi.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define THREADS 3
static int iters, rank, size;
static MPI_Comm comms[THREADS];
static uint64_t sums[THREADS];
static long wrongs[THREADS];

static unsigned char byte_of(int from, int t, int it, long i) { return (unsigned char)(from * 17 + t * 5 + it * 3 + i * 11); }

static void *worker(void *arg)
{
    int t = (int)(intptr_t)arg;
    int to = (rank + 1) % size, from = (rank + size - 1) % size;
    static const int sizes[] = {4, 3000, 40000, 262144};
    unsigned char *out = malloc(262144), *in = malloc(262144);
    for (int it = 0; it < iters; it++) {
        int len = sizes[(it + t) % 4];
        for (long i = 0; i < len; i++)
            out[i] = byte_of(rank, t, it, i);
        MPI_Sendrecv(out, len, MPI_BYTE, to, it, in, len, MPI_BYTE, from, it, comms[t], MPI_STATUS_IGNORE);
        for (long i = 0; i < len; i++) {
            wrongs[t] += in[i] != byte_of(from, t, it, i);
            sums[t] = sums[t] * 131 + in[i];
        }
        if (it % 7 == t)
            usleep(1000);
    }
    free(out);
    free(in);
    return NULL;
}

int main(int argc, char **argv)
{
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (provided != MPI_THREAD_MULTIPLE || argc < 2)
        MPI_Abort(MPI_COMM_WORLD, 2);
    iters = atoi(argv[1]);
    for (int t = 0; t < THREADS; t++)
        MPI_Comm_dup(MPI_COMM_WORLD, &comms[t]);
    pthread_t th[THREADS];
    for (int t = 0; t < THREADS; t++)
        pthread_create(&th[t], NULL, worker, (void *)(intptr_t)t);
    long main_wrong = 0;
    for (int it = 0; it < iters / 4; it++) {
        long v = rank + it, all;
        MPI_Allreduce(&v, &all, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
        main_wrong += all != (long)size * (size - 1) / 2 + (long)size * it;
        usleep(2000);
    }
    uint64_t sum = 0;
    long wrong = main_wrong;
    for (int t = 0; t < THREADS; t++) {
        pthread_join(th[t], NULL);
        sum = sum * 31 + sums[t];
        wrong += wrongs[t];
        MPI_Comm_free(&comms[t]);
    }
    uint64_t total;
    long wrong_all;
    MPI_Reduce(&sum, &total, 1, MPI_UINT64_T, MPI_BXOR, 0, MPI_COMM_WORLD);
    MPI_Reduce(&wrong, &wrong_all, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0)
        printf("mpi_threads: %d ranks x %d threads, %d iterations, checksum %016llx, wrong %ld\n", size, THREADS, iters,
               (unsigned long long)total, wrong_all);
    MPI_Finalize();
    return 0;
}
