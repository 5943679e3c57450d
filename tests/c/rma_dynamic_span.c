/* gridmpi-test: ranks=2,3 timeout=60 */
/*
 * A dynamic window whose memory is attached in two pieces that touch: one
 * operation may cover both (MPI 4.1, 12.2.4 asks only that the target
 * memory be attached). Every rank attaches the two halves of an array;
 * rank 0 puts, accumulates and gets across the boundary at every other
 * rank, and the bytes around stay untouched.
 */
#include "testutil.h"

#define HALF 64

int main(int argc, char **argv)
{
    int rank, size;
    CHECK_MPI(MPI_Init(&argc, &argv));
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int mem[2 * HALF];
    for (int i = 0; i < 2 * HALF; i++)
        mem[i] = -1;
    MPI_Win win;
    CHECK_MPI(MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    CHECK_MPI(MPI_Win_attach(win, mem, HALF * sizeof(int)));
    CHECK_MPI(MPI_Win_attach(win, mem + HALF, HALF * sizeof(int)));
    MPI_Aint base, *bases = malloc(size * sizeof(MPI_Aint));
    MPI_Get_address(mem, &base);
    MPI_Allgather(&base, 1, MPI_AINT, bases, 1, MPI_AINT, MPI_COMM_WORLD);
    /* 32 ints from HALF - 16: half in each attachment. */
    int from = HALF - 16, n = 32, out[32], back[32];
    for (int i = 0; i < n; i++)
        out[i] = 1000 + i;
    if (rank == 0) {
        for (int t = 1; t < size; t++) {
            MPI_Aint at = MPI_Aint_add(bases[t], from * sizeof(int));
            CHECK_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, t, 0, win));
            CHECK_MPI(MPI_Put(out, n, MPI_INT, t, at, n, MPI_INT, win));
            CHECK_MPI(MPI_Win_flush(t, win));
            CHECK_MPI(MPI_Accumulate(out, n, MPI_INT, t, at, n, MPI_INT, MPI_SUM, win));
            CHECK_MPI(MPI_Win_flush(t, win));
            CHECK_MPI(MPI_Get(back, n, MPI_INT, t, at, n, MPI_INT, win));
            CHECK_MPI(MPI_Win_unlock(t, win));
            for (int i = 0; i < n; i++)
                CHECK(back[i] == 2 * out[i], "rank %d item %d: got %d, expected %d", t, i, back[i], 2 * out[i]);
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank != 0)
        for (int i = 0; i < 2 * HALF; i++) {
            int want = i >= from && i < from + n ? 2 * (1000 + i - from) : -1;
            CHECK(mem[i] == want, "int %d of my memory is %d, expected %d", i, mem[i], want);
        }
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK_MPI(MPI_Win_detach(win, mem));
    CHECK_MPI(MPI_Win_detach(win, mem + HALF));
    CHECK_MPI(MPI_Win_free(&win));
    free(bases);
    MPI_Finalize();
    return test_finish();
}
