/* gridmpi-test: ranks=2,4 timeout=120 */
/*
 * When MPI_Win_wait returns at the target, every access of the exposure
 * epoch is over there (MPI 4.1, 12.5.2): the target may change its window
 * at once, and a get of the epoch must not see the change. Ranks pair up
 * (r, r^1); the even one gets a large block of the odd one's window in a
 * PSCW epoch, the odd one overwrites its window right after MPI_Win_wait.
 * (GridMPI's target read the data for a get only when the transport wrote
 * its frames, which for a large get was after MPI_Win_wait returned.)
 */
#include "testutil.h"

#define N 200000
#define ROUNDS 20

int main(int argc, char **argv)
{
    int rank, size;
    CHECK_MPI(MPI_Init(&argc, &argv));
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int partner = rank ^ 1;
    int *mem = malloc(N * sizeof(int)), *got = malloc(N * sizeof(int));
    MPI_Win win;
    CHECK_MPI(MPI_Win_create(mem, N * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    MPI_Group world, peer;
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    MPI_Group_incl(world, 1, &partner, &peer);
    for (int round = 0; round < ROUNDS; round++) {
        for (int i = 0; i < N; i++)
            mem[i] = round, got[i] = -1;
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank % 2 == 0) {
            CHECK_MPI(MPI_Win_start(peer, 0, win));
            CHECK_MPI(MPI_Get(got, N, MPI_INT, partner, 0, N, MPI_INT, win));
            CHECK_MPI(MPI_Win_complete(win));
            int bad = 0;
            for (int i = 0; i < N; i++)
                if (got[i] != round && bad++ < 3)
                    CHECK(0, "round %d: item %d of the get is %d, expected %d", round, i, got[i], round);
        } else {
            CHECK_MPI(MPI_Win_post(peer, 0, win));
            CHECK_MPI(MPI_Win_wait(win));
            for (int i = 0; i < N; i++)
                mem[i] = -2;
        }
        MPI_Barrier(MPI_COMM_WORLD);
    }
    MPI_Group_free(&peer);
    MPI_Group_free(&world);
    CHECK_MPI(MPI_Win_free(&win));
    free(mem), free(got);
    MPI_Finalize();
    return test_finish();
}
