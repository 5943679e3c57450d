/* gridmpi-test: ranks=1,2,4 timeout=60 */
/*
 * MPI_Init_thread(MPI_THREAD_MULTIPLE): the provided level is a valid level,
 * MPI_Query_thread agrees with it, MPI_Is_thread_main is true in the main
 * thread and (at MPI_THREAD_MULTIPLE) false in another one. When MULTIPLE is
 * provided, two threads per rank exchange messages concurrently on separate
 * communicators and on one shared communicator with distinct tags.
 */
#include "testutil.h"
#include <pthread.h>

#define NTHREADS 2
#define ITERS 200

static int g_rank, g_size;
static MPI_Comm g_comms[NTHREADS];
static int g_thread_main_flag[NTHREADS];

static void *worker(void *arg)
{
    int id = (int)(intptr_t)arg;
    MPI_Is_thread_main(&g_thread_main_flag[id]);
    int right = (g_rank + 1) % g_size, left = (g_rank + g_size - 1) % g_size;
    int sendbuf[64], recvbuf[64];
    for (int it = 0; it < ITERS; it++) {
        /* Own communicator per thread. */
        fill_ints(sendbuf, 64, g_rank * 100000 + id * 1000 + it);
        MPI_Sendrecv(sendbuf, 64, MPI_INT, right, it, recvbuf, 64, MPI_INT, left, it, g_comms[id],
                     MPI_STATUS_IGNORE);
        check_ints(recvbuf, 64, left * 100000 + id * 1000 + it, "per-thread communicator");
        /* Shared MPI_COMM_WORLD, thread id as tag. */
        fill_ints(sendbuf, 64, g_rank * 100000 + 50000 + id * 1000 + it);
        MPI_Request reqs[2];
        MPI_Irecv(recvbuf, 64, MPI_INT, left, id, MPI_COMM_WORLD, &reqs[0]);
        MPI_Isend(sendbuf, 64, MPI_INT, right, id, MPI_COMM_WORLD, &reqs[1]);
        MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE);
        check_ints(recvbuf, 64, left * 100000 + 50000 + id * 1000 + it, "shared communicator, tag per thread");
    }
    return NULL;
}

int main(int argc, char **argv)
{
    int provided = -1;
    CHECK_MPI(MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided));
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_size);
    CHECK(provided == MPI_THREAD_SINGLE || provided == MPI_THREAD_FUNNELED ||
              provided == MPI_THREAD_SERIALIZED || provided == MPI_THREAD_MULTIPLE,
          "provided = %d is not a thread level", provided);
    int queried = -1;
    CHECK_MPI(MPI_Query_thread(&queried));
    CHECK_INT_EQ(queried, provided);
    int flag = -1;
    CHECK_MPI(MPI_Is_thread_main(&flag));
    CHECK(flag == 1, "MPI_Is_thread_main in main thread gave %d", flag);
    if (g_rank == 0)
        printf("provided thread level %d\n", provided);

    if (provided == MPI_THREAD_MULTIPLE) {
        pthread_t th[NTHREADS];
        for (int i = 0; i < NTHREADS; i++)
            MPI_Comm_dup(MPI_COMM_WORLD, &g_comms[i]);
        for (int i = 0; i < NTHREADS; i++)
            pthread_create(&th[i], NULL, worker, (void *)(intptr_t)i);
        for (int i = 0; i < NTHREADS; i++)
            pthread_join(th[i], NULL);
        for (int i = 0; i < NTHREADS; i++) {
            CHECK(g_thread_main_flag[i] == 0, "MPI_Is_thread_main in a second thread gave %d",
                  g_thread_main_flag[i]);
            MPI_Comm_free(&g_comms[i]);
        }
    }
    MPI_Finalize();
    return test_finish();
}
