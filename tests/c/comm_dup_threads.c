/* gridmpi-test: ranks=2,3,4 timeout=120 */
/*
 * Communicators made at the same time by several threads
 * (MPI_THREAD_MULTIPLE): each thread of each rank duplicates its own copy
 * of MPI_COMM_WORLD, or splits it, over and over, and passes a token
 * around a ring of the new communicator. Two communicators given one
 * context id would swap the threads' tokens (or hang). Every token is
 * checked for its thread and round.
 */
#include "testutil.h"
#include <pthread.h>

#define THREADS 3
#define ROUNDS 40

static MPI_Comm base[THREADS];
static int rank, size;

static void *worker(void *arg)
{
    int t = (int)(intptr_t)arg;
    for (int round = 0; round < ROUNDS; round++) {
        MPI_Comm c;
        if (round % 2)
            MPI_Comm_split(base[t], 0, rank, &c);
        else
            MPI_Comm_dup(base[t], &c);
        int out[3] = {t, round, rank}, in[3] = {-1, -1, -1};
        MPI_Sendrecv(out, 3, MPI_INT, (rank + 1) % size, 0, in, 3, MPI_INT, (rank + size - 1) % size, 0, c, MPI_STATUS_IGNORE);
        CHECK(in[0] == t && in[1] == round && in[2] == (rank + size - 1) % size,
              "thread %d round %d: got the token of thread %d round %d from rank %d", t, round, in[0], in[1], in[2]);
        MPI_Comm_free(&c);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(provided == MPI_THREAD_MULTIPLE, "provided %d", provided);
    for (int t = 0; t < THREADS; t++)
        MPI_Comm_dup(MPI_COMM_WORLD, &base[t]);
    pthread_t th[THREADS];
    for (int t = 0; t < THREADS; t++)
        pthread_create(&th[t], NULL, worker, (void *)(intptr_t)t);
    for (int t = 0; t < THREADS; t++)
        pthread_join(th[t], NULL);
    for (int t = 0; t < THREADS; t++)
        MPI_Comm_free(&base[t]);
    MPI_Finalize();
    return test_finish();
}
