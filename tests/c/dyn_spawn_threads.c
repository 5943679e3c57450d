/* gridmpi-test: ranks=1,2 timeout=90 */
/*
 * MPI_Comm_spawn from several threads at once (MPI_THREAD_MULTIPLE), as
 * mpi4py's process pools do: each thread of each rank spawns one child on
 * MPI_COMM_SELF with its own number as argument, and an allreduce across
 * the intercommunicator must bring each thread its own child's number
 * (two intercommunicators given one context would mix them up). Rounds
 * repeat it, with the children of a round still connected while the next
 * one spawns.
 */
#include "testutil.h"
#include <pthread.h>

#define THREADS 3
#define ROUNDS 3

static char *self;
static MPI_Comm kept[ROUNDS][THREADS];

struct job {
    int round, thread;
};

static void *spawner(void *arg)
{
    struct job *j = arg;
    char num[16];
    snprintf(num, sizeof num, "%d", 1000 * j->round + j->thread);
    char *args[] = {"child", num, NULL};
    MPI_Comm inter;
    MPI_Comm_spawn(self, args, 1, MPI_INFO_NULL, 0, MPI_COMM_SELF, &inter, MPI_ERRCODES_IGNORE);
    int mine = -1, theirs = -1;
    MPI_Allreduce(&mine, &theirs, 1, MPI_INT, MPI_MAX, inter);
    CHECK(theirs == 1000 * j->round + j->thread, "round %d thread %d: the child says %d", j->round, j->thread, theirs);
    kept[j->round][j->thread] = inter;
    return NULL;
}

int main(int argc, char **argv)
{
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm parent;
    MPI_Comm_get_parent(&parent);
    if (parent != MPI_COMM_NULL) {
        int mine = argc == 3 ? atoi(argv[2]) : -2, theirs;
        MPI_Allreduce(&mine, &theirs, 1, MPI_INT, MPI_MAX, parent);
        MPI_Comm_disconnect(&parent);
        MPI_Finalize();
        return test_finish();
    }
    CHECK(provided == MPI_THREAD_MULTIPLE, "provided %d", provided);
    self = argv[0];
    for (int r = 0; r < ROUNDS; r++) {
        pthread_t t[THREADS];
        struct job jobs[THREADS];
        for (int i = 0; i < THREADS; i++) {
            jobs[i] = (struct job){r, i};
            pthread_create(&t[i], NULL, spawner, &jobs[i]);
        }
        for (int i = 0; i < THREADS; i++)
            pthread_join(t[i], NULL);
    }
    for (int r = 0; r < ROUNDS; r++)
        for (int i = 0; i < THREADS; i++)
            MPI_Comm_disconnect(&kept[r][i]);
    MPI_Finalize();
    return test_finish();
}
