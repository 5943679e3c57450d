/* gridmpi-test: ranks=2,3,4 min-ranks=2 timeout=60 */
/*
 * Post-start-complete-wait: rank 0 exposes its window to all others, which
 * put into their slot and accumulate into a counter; rank 0 waits (or
 * polls with MPI_Win_test) and checks. Then the ring: every rank exposes
 * to its left neighbour and accesses its right one in the same epoch.
 */
#include "testutil.h"

int main(int argc, char **argv)
{
    int n;
    int rank = test_init(&argc, &argv, &n);
    int *mem = malloc(sizeof(int) * (n + 2));
    for (int i = 0; i < n + 2; i++)
        mem[i] = 0;
    MPI_Win win;
    CHECK_MPI(MPI_Win_create(mem, sizeof(int) * (n + 2), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    MPI_Group world, g0, others;
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    int zero = 0;
    MPI_Group_incl(world, 1, &zero, &g0);
    MPI_Group_excl(world, 1, &zero, &others);

    for (int round = 0; round < 3; round++) {
        if (rank == 0) {
            CHECK_MPI(MPI_Win_post(others, 0, win));
            if (round == 1) {
                int flag = 0;
                while (!flag)
                    CHECK_MPI(MPI_Win_test(win, &flag));
            } else {
                CHECK_MPI(MPI_Win_wait(win));
            }
            for (int r = 1; r < n; r++)
                CHECK(mem[r] == r * 10 + round, "round %d slot %d: %d", round, r, mem[r]);
            CHECK(mem[n] == (n - 1) * (round + 1), "round %d counter %d", round, mem[n]);
        } else {
            int v = rank * 10 + round, one = 1;
            CHECK_MPI(MPI_Win_start(g0, 0, win));
            CHECK_MPI(MPI_Put(&v, 1, MPI_INT, 0, rank, 1, MPI_INT, win));
            CHECK_MPI(MPI_Accumulate(&one, 1, MPI_INT, 0, n, 1, MPI_INT, MPI_SUM, win));
            CHECK_MPI(MPI_Win_complete(win));
        }
    }

    /* The ring. */
    int left = (rank + n - 1) % n, right = (rank + 1) % n;
    MPI_Group gl, gr;
    MPI_Group_incl(world, 1, &left, &gl);
    MPI_Group_incl(world, 1, &right, &gr);
    CHECK_MPI(MPI_Win_post(gl, 0, win));
    CHECK_MPI(MPI_Win_start(gr, 0, win));
    int v = 1000 + rank;
    CHECK_MPI(MPI_Put(&v, 1, MPI_INT, right, n + 1, 1, MPI_INT, win));
    CHECK_MPI(MPI_Win_complete(win));
    CHECK_MPI(MPI_Win_wait(win));
    CHECK(mem[n + 1] == 1000 + left, "ring slot %d", mem[n + 1]);

    MPI_Group_free(&gl);
    MPI_Group_free(&gr);
    MPI_Group_free(&g0);
    MPI_Group_free(&others);
    MPI_Group_free(&world);
    CHECK_MPI(MPI_Win_free(&win));
    free(mem);
    MPI_Finalize();
    return test_finish();
}
