/* gridmpi-test: ranks=2,3 min-ranks=2 timeout=60 */
/*
 * Partitioned communication as it is meant to be used: under
 * MPI_THREAD_MULTIPLE, four threads of each rank fill their share of the
 * partitions of a send and call MPI_Pready for each as soon as it is
 * filled, while the receiving rank's threads wait with MPI_Parrived for
 * their share and check it, over several rounds (MPI_Start and MPI_Wait by
 * the main thread); rank i sends to rank i+1.
 */
#include "testutil.h"
#include <pthread.h>

#define NTHREADS 4
#define PER_THREAD 6
#define NPART (NTHREADS * PER_THREAD)
#define COUNT 512

static double out[NPART * COUNT], in[NPART * COUNT];
static MPI_Request sreq = MPI_REQUEST_NULL, rreq = MPI_REQUEST_NULL;
static int round_no, me, from;

static double value(int src, int round, int i)
{
    return src * 1e6 + round * 1e4 + i;
}

static void *worker(void *arg)
{
    int t = (int)(long)arg;
    for (int k = 0; k < PER_THREAD; k++) {
        int p = t * PER_THREAD + k;
        if (sreq != MPI_REQUEST_NULL) {
            for (int i = 0; i < COUNT; i++)
                out[p * COUNT + i] = value(me, round_no, p * COUNT + i);
            CHECK_MPI(MPI_Pready(p, sreq));
        }
    }
    if (rreq != MPI_REQUEST_NULL) {
        for (int k = 0; k < PER_THREAD; k++) {
            int p = t * PER_THREAD + k, flag = 0;
            for (long spin = 0; !flag && spin < 200000000; spin++)
                CHECK_MPI(MPI_Parrived(rreq, p, &flag));
            CHECK(flag, "partition %d never arrived", p);
            for (int i = 0; i < COUNT; i++) {
                double want = value(from, round_no, p * COUNT + i);
                if (in[p * COUNT + i] != want) {
                    CHECK(0, "round %d partition %d item %d: %g, expected %g", round_no, p, i, in[p * COUNT + i], want);
                    break;
                }
            }
        }
    }
    return NULL;
}

int main(int argc, char **argv)
{
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    int size;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    tu_cached_rank = me;
    if (provided < MPI_THREAD_MULTIPLE) {
        printf("MPI_THREAD_MULTIPLE not provided; nothing to test\n");
        MPI_Finalize();
        return 0;
    }
    from = me - 1;
    if (me + 1 < size)
        CHECK_MPI(MPI_Psend_init(out, NPART, COUNT, MPI_DOUBLE, me + 1, 3, MPI_COMM_WORLD, MPI_INFO_NULL, &sreq));
    if (me > 0)
        CHECK_MPI(MPI_Precv_init(in, NPART, COUNT, MPI_DOUBLE, me - 1, 3, MPI_COMM_WORLD, MPI_INFO_NULL, &rreq));
    MPI_Request both[2] = {sreq, rreq};
    for (round_no = 0; round_no < 5; round_no++) {
        for (int i = 0; i < 2; i++)
            if (both[i] != MPI_REQUEST_NULL)
                CHECK_MPI(MPI_Start(&both[i]));
        pthread_t th[NTHREADS];
        for (long t = 0; t < NTHREADS; t++)
            pthread_create(&th[t], NULL, worker, (void *)t);
        for (int t = 0; t < NTHREADS; t++)
            pthread_join(th[t], NULL);
        CHECK_MPI(MPI_Waitall(2, both, MPI_STATUSES_IGNORE));
    }
    for (int i = 0; i < 2; i++)
        if (both[i] != MPI_REQUEST_NULL)
            MPI_Request_free(&both[i]);
    MPI_Finalize();
    return test_finish();
}
