/* gridmpi-test: ranks=2,3 timeout=120 */
/*
 * Below MPI_THREAD_MULTIPLE the thread that called MPI_Init_thread reaches
 * GridMPI's state without its lock until another thread calls MPI
 * (crates/mpi/src/solo.rs). This test brings the other threads:
 *   - while the main thread exchanges messages, a second thread keeps
 *     calling the functions MPI allows from any thread at any level
 *     (MPI_Query_thread, MPI_Is_thread_main, MPI_Initialized,
 *     MPI_Get_version);
 *   - at MPI_THREAD_SERIALIZED, the main thread hands MPI to a worker
 *     thread (one at a time, the handoff ordered by joining), which
 *     exchanges messages and runs collectives, then takes it back.
 * Every message and every answer is checked.
 */
#include "testutil.h"
#include <pthread.h>

#define ROUNDS 3000

static int g_rank, g_size, g_provided;
static volatile int g_stop;
static long g_queries;
static int g_query_errors;

static void exchange(int base, const char *what)
{
    int right = (g_rank + 1) % g_size, left = (g_rank + g_size - 1) % g_size;
    for (int i = 0; i < ROUNDS; i++) {
        int out[4] = {g_rank, base, i, g_rank * 7 + i}, in[4] = {-1, -1, -1, -1};
        MPI_Sendrecv(out, 4, MPI_INT, right, i % 32, in, 4, MPI_INT, left, i % 32, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        if (in[0] != left || in[1] != base || in[2] != i || in[3] != left * 7 + i) {
            CHECK(0, "%s: message %d from rank %d reads %d %d %d %d", what, i, left, in[0], in[1], in[2], in[3]);
            return;
        }
    }
    int sum = 0, one = g_rank + base;
    MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    CHECK(sum == g_size * (g_size - 1) / 2 + g_size * base, "%s: allreduce gives %d", what, sum);
}

static void *querier(void *arg)
{
    (void)arg;
    while (!g_stop) {
        int level = -1, main_flag = -1, init = 0, v = 0, sv = 0;
        MPI_Query_thread(&level);
        MPI_Is_thread_main(&main_flag);
        MPI_Initialized(&init);
        MPI_Get_version(&v, &sv);
        if (level != g_provided || main_flag != 0 || !init || v < 3)
            g_query_errors++;
        g_queries++;
    }
    return NULL;
}

static void *worker(void *arg)
{
    int flag = -1;
    MPI_Is_thread_main(&flag);
    CHECK(flag == 0, "MPI_Is_thread_main is %d in a worker thread", flag);
    exchange((int)(intptr_t)arg, "worker thread");
    return NULL;
}

int main(int argc, char **argv)
{
    CHECK_MPI(MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &g_provided));
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_size);

    /* Alone first, then with a thread asking the always-allowed questions. */
    exchange(0, "main thread alone");
    pthread_t q;
    CHECK(pthread_create(&q, NULL, querier, NULL) == 0, "pthread_create");
    exchange(1, "main thread beside the querier");
    g_stop = 1;
    pthread_join(q, NULL);
    CHECK(g_queries > 0 && g_query_errors == 0, "%d of %ld answers to the querier were wrong", g_query_errors, g_queries);

    if (g_provided >= MPI_THREAD_SERIALIZED) {
        /* MPI handed to workers one after the other, and back. */
        for (int w = 0; w < 3; w++) {
            pthread_t t;
            CHECK(pthread_create(&t, NULL, worker, (void *)(intptr_t)(10 + w)) == 0, "pthread_create");
            pthread_join(t, NULL);
            exchange(20 + w, "main thread after a worker");
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();
    return test_finish();
}
