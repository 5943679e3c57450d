/* One rank of a job formed at a rendezvous fails; the whole job must end.
 *
 *   fail abort|crash RANK
 *        every rank passes a barrier, then world rank RANK calls
 *        MPI_Abort(MPI_COMM_WORLD, 7) (abort) or kills itself with SIGKILL
 *        (crash), while the others wait in a receive nobody matches. */
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    if (argc != 3) {
        fprintf(stderr, "usage: fail abort|crash RANK\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int rank, victim = atoi(argv[2]), x;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == victim) {
        if (strcmp(argv[1], "abort") == 0)
            MPI_Abort(MPI_COMM_WORLD, 7);
        raise(SIGKILL);
    }
    MPI_Recv(&x, 1, MPI_INT, MPI_ANY_SOURCE, 99, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    fprintf(stderr, "fail: rank %d received a message nobody sent\n", rank);
    MPI_Finalize();
    return 1;
}
