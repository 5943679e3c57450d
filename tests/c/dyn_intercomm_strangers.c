/* gridmpi-test: ranks=2,3 timeout=90 */
/*
 * MPI_Intercomm_create between processes that never met: parent rank 0
 * alone spawns two children (over MPI_COMM_SELF), then the parents'
 * MPI_COMM_WORLD and the children's make an intercommunicator with the
 * spawn's intercommunicator as the peer communicator of the leaders. The
 * other parents had no link with the children's job (MPI 4.1, 7.6.2 only
 * asks that the leaders reach each other); every process must reach every
 * process of the other group (MPICH's spawn/spaiccreate: GridMPI refused
 * with "not connected to this process"). Every parent and child exchange
 * a message, then the intercommunicator is merged and reduced over.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    MPI_Comm parent, spawn = MPI_COMM_NULL, ic, merged;
    int rank, size, rsize, errs = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_get_parent(&parent);
    int child = parent != MPI_COMM_NULL;
    if (!child) {
        if (rank == 0)
            MPI_Comm_spawn(argv[0], MPI_ARGV_NULL, 2, MPI_INFO_NULL, 0, MPI_COMM_SELF, &spawn, MPI_ERRCODES_IGNORE);
    } else {
        spawn = parent;
    }
    MPI_Intercomm_create(MPI_COMM_WORLD, 0, spawn, 0, 77, &ic);
    MPI_Comm_remote_size(ic, &rsize);
    /* Every process sends its (side, rank) to every process of the other side. */
    int *got = malloc(sizeof(int) * 2 * rsize);
    MPI_Request *reqs = malloc(sizeof(MPI_Request) * 2 * rsize);
    int mine[2] = {child, rank};
    for (int i = 0; i < rsize; i++) {
        MPI_Irecv(&got[2 * i], 2, MPI_INT, i, 5, ic, &reqs[i]);
        MPI_Isend(mine, 2, MPI_INT, i, 5, ic, &reqs[rsize + i]);
    }
    MPI_Waitall(2 * rsize, reqs, MPI_STATUSES_IGNORE);
    for (int i = 0; i < rsize; i++)
        if (got[2 * i] != !child || got[2 * i + 1] != i) {
            printf("FAILED: %s %d got (%d, %d) from remote rank %d\n", child ? "child" : "parent", rank, got[2 * i], got[2 * i + 1], i);
            errs++;
        }
    if (!child && rsize != 2) {
        printf("FAILED: parent %d sees %d children\n", rank, rsize);
        errs++;
    }
    /* Merged: parents first. Sum of (1 + world rank) over all. */
    MPI_Intercomm_merge(ic, child, &merged);
    int one = 1 + rank, sum = 0, msize;
    MPI_Comm_size(merged, &msize);
    MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, merged);
    int psize = child ? rsize : size;
    int want = psize * (psize + 1) / 2 + 3; /* the two children give 1 + 2 */
    if (msize != psize + 2 || sum != want) {
        printf("FAILED: merged size %d sum %d, wanted %d and %d\n", msize, sum, psize + 2, want);
        errs++;
    }
    MPI_Comm_free(&merged);
    MPI_Comm_free(&ic);
    if (spawn != MPI_COMM_NULL)
        MPI_Comm_disconnect(&spawn);
    free(got);
    free(reqs);
    MPI_Finalize();
    return errs ? 1 : 0;
}
