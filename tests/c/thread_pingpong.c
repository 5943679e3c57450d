/* gridmpi-test: ranks=2 timeout=120 */
/*
 * MPI_THREAD_MULTIPLE: 4 threads per rank ping-pong at once, each on its own
 * communicator, with messages of every protocol (empty, eager, rendezvous,
 * single-copy, several Data frames), every byte checked; then every thread
 * receives from MPI_ANY_SOURCE on one shared communicator with its own tag
 * while the others send, and the last thread waits on requests another
 * thread started. Blocked threads must be woken when their message is
 * received by another thread of the process: a lost wakeup shows as a
 * timeout. Run over shared memory here, over TCP and without spinning by
 * thread_pingpong_tcp.c and thread_pingpong_nospin.c, and with single-copy
 * reads for the large messages by thread_pingpong_single_copy.c.
 */
#include "testutil.h"
#include <pthread.h>

#define NTHREADS 4
#define ITERS 30

static int g_rank;
static MPI_Comm g_comm[NTHREADS];
static MPI_Comm g_shared;
static const int g_sizes[] = {0, 8, 4096, 20000, 65536, 400000, 3000000};
#define NSIZES ((int)(sizeof g_sizes / sizeof g_sizes[0]))

static void *pingpong(void *arg)
{
    int t = (int)(intptr_t)arg, peer = 1 - g_rank;
    unsigned char *buf = malloc(3000000);
    for (int s = 0; s < NSIZES; s++) {
        int n = g_sizes[s];
        for (int i = 0; i < ITERS; i++) {
            uint32_t seed = tu_seed(t, s, i);
            MPI_Status st;
            if (g_rank == 0) {
                fill_pattern(buf, n, seed);
                CHECK_MPI(MPI_Send(buf, n, MPI_BYTE, peer, i, g_comm[t]));
                memset(buf, 0, n);
                CHECK_MPI(MPI_Recv(buf, n, MPI_BYTE, peer, i, g_comm[t], &st));
            } else {
                memset(buf, 0, n);
                CHECK_MPI(MPI_Recv(buf, n, MPI_BYTE, peer, i, g_comm[t], &st));
                check_pattern(buf, n, seed, "ping");
                CHECK_MPI(MPI_Send(buf, n, MPI_BYTE, peer, i, g_comm[t]));
            }
            int count = -1;
            MPI_Get_count(&st, MPI_BYTE, &count);
            CHECK(count == n, "thread %d size %d: received %d bytes", t, n, count);
            if (g_rank == 0)
                check_pattern(buf, n, seed, "pong");
        }
    }
    free(buf);
    return NULL;
}

/* Every thread receives from any source with its tag on the shared
 * communicator; rank 1's threads send in reverse order. */
static void *any_source(void *arg)
{
    int t = (int)(intptr_t)arg;
    int v[256];
    for (int i = 0; i < ITERS; i++) {
        if (g_rank == 0) {
            MPI_Status st;
            CHECK_MPI(MPI_Recv(v, 256, MPI_INT, MPI_ANY_SOURCE, t, g_shared, &st));
            CHECK(st.MPI_SOURCE == 1 && st.MPI_TAG == t, "any-source: got source %d tag %d", st.MPI_SOURCE, st.MPI_TAG);
            check_ints(v, 256, t * 1000 + i, "any-source");
        } else {
            int tag = NTHREADS - 1 - t;
            fill_ints(v, 256, tag * 1000 + i);
            CHECK_MPI(MPI_Send(v, 256, MPI_INT, 0, tag, g_shared));
        }
    }
    return NULL;
}

static MPI_Request g_reqs[2];
static int g_in[100000], g_out[100000];
static pthread_barrier_t g_started;

/* One thread starts requests, another waits for them. */
static void *starter(void *arg)
{
    (void)arg;
    int peer = 1 - g_rank;
    fill_ints(g_out, 100000, 77 + g_rank);
    CHECK_MPI(MPI_Irecv(g_in, 100000, MPI_INT, peer, 5, g_shared, &g_reqs[0]));
    CHECK_MPI(MPI_Isend(g_out, 100000, MPI_INT, peer, 5, g_shared, &g_reqs[1]));
    pthread_barrier_wait(&g_started);
    return NULL;
}

static void *waiter(void *arg)
{
    (void)arg;
    pthread_barrier_wait(&g_started);
    CHECK_MPI(MPI_Waitall(2, g_reqs, MPI_STATUSES_IGNORE));
    check_ints(g_in, 100000, 77 + (1 - g_rank), "started by another thread");
    return NULL;
}

static void run(void *(*fn)(void *))
{
    pthread_t th[NTHREADS];
    for (int t = 0; t < NTHREADS; t++)
        pthread_create(&th[t], NULL, fn, (void *)(intptr_t)t);
    for (int t = 0; t < NTHREADS; t++)
        pthread_join(th[t], NULL);
}

int main(int argc, char **argv)
{
    int provided = -1;
    CHECK_MPI(MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided));
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    if (provided < MPI_THREAD_MULTIPLE) {
        printf("MPI_THREAD_MULTIPLE not provided (%d): nothing to test\n", provided);
        MPI_Finalize();
        return test_finish();
    }
    for (int t = 0; t < NTHREADS; t++)
        CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &g_comm[t]));
    CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &g_shared));
    run(pingpong);
    run(any_source);
    pthread_barrier_init(&g_started, NULL, 2);
    pthread_t a, b;
    pthread_create(&b, NULL, waiter, NULL);
    pthread_create(&a, NULL, starter, NULL);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    pthread_barrier_destroy(&g_started);
    for (int t = 0; t < NTHREADS; t++)
        MPI_Comm_free(&g_comm[t]);
    MPI_Comm_free(&g_shared);
    MPI_Finalize();
    return test_finish();
}
