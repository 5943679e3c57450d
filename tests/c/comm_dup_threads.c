/* gridmpi-test: ranks=2,3,4 timeout=120 */
/*
 * Communicators made at the same time by several threads
 * (MPI_THREAD_MULTIPLE): each thread of each rank duplicates its own copy
 * of MPI_COMM_WORLD (blocking and nonblocking), splits it, or makes a
 * communicator of its group (MPI_Comm_create_group, collective over the
 * group only), over and over, and passes a token around a ring of the new
 * communicator; or it joins the even and odd ranks by
 * MPI_Intercomm_create and allreduces over the intercommunicator. Two
 * communicators given one context id would swap the threads' tokens (or
 * hang). Every token and sum is checked for its thread and round.
 */
#include "testutil.h"
#include <pthread.h>

#define THREADS 3
#define ROUNDS 50

static MPI_Comm base[THREADS];
static int rank, size;
static pthread_barrier_t together;

static void *worker(void *arg)
{
    int t = (int)(intptr_t)arg;
    for (int round = 0; round < ROUNDS; round++) {
        MPI_Comm c;
        /* One kind at a time, started together, so the threads' calls overlap. */
        int kind = round * 5 / ROUNDS;
        pthread_barrier_wait(&together);
        if (kind == 4) {
            /* An intercommunicator between the even and the odd ranks:
             * an allreduce over it gives the other group's sum. */
            MPI_Comm local, inter;
            MPI_Comm_split(base[t], rank % 2, rank, &local);
            MPI_Intercomm_create(local, 0, base[t], 1 - rank % 2, t, &inter);
            int v = 1000 * t + rank, sum = -1, want = 0;
            for (int r = 0; r < size; r++)
                if (r % 2 != rank % 2)
                    want += 1000 * t + r;
            MPI_Allreduce(&v, &sum, 1, MPI_INT, MPI_SUM, inter);
            CHECK(sum == want, "thread %d round %d: allreduce over the intercommunicator gave %d, expected %d", t, round, sum, want);
            MPI_Comm_free(&inter);
            MPI_Comm_free(&local);
            continue;
        }
        if (kind == 0) {
            MPI_Comm_dup(base[t], &c);
        } else if (kind == 1) {
            MPI_Comm_split(base[t], 0, rank, &c);
        } else if (kind == 2) {
            MPI_Group g;
            MPI_Comm_group(base[t], &g);
            MPI_Comm_create_group(base[t], g, t, &c);
            MPI_Group_free(&g);
        } else {
            MPI_Request r;
            MPI_Comm_idup(base[t], &c, &r);
            MPI_Wait(&r, MPI_STATUS_IGNORE);
        }
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
    pthread_barrier_init(&together, NULL, THREADS);
    for (int t = 0; t < THREADS; t++)
        pthread_create(&th[t], NULL, worker, (void *)(intptr_t)t);
    for (int t = 0; t < THREADS; t++)
        pthread_join(th[t], NULL);
    pthread_barrier_destroy(&together);
    for (int t = 0; t < THREADS; t++)
        MPI_Comm_free(&base[t]);
    MPI_Finalize();
    return test_finish();
}
