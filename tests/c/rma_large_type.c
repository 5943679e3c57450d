/* gridmpi-test: ranks=2,3 timeout=120 */
/*
 * One-sided operations whose target datatype is an indexed type of tens
 * of thousands of blocks: its description alone is larger than a frame
 * (before, each frame repeated it with a few bytes of data, or it fitted
 * no frame and the fence hung). Each rank puts into the next rank's
 * window, accumulates into it (fence and lock epochs) and gets it back,
 * origin data contiguous, target data spread; the bytes between the
 * blocks must stay untouched.
 */
#include "testutil.h"

#define BLOCKS 50000

int main(int argc, char **argv)
{
    int rank, size;
    CHECK_MPI(MPI_Init(&argc, &argv));
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int *bl = malloc(BLOCKS * sizeof(int)), *ds = malloc(BLOCKS * sizeof(int));
    int items = 0;
    for (int i = 0; i < BLOCKS; i++) {
        bl[i] = i % 5 == 4 ? 2 : 1; /* blocks of two ints now and then */
        ds[i] = 3 * i;
        items += bl[i];
    }
    int span = 3 * BLOCKS + 1;
    MPI_Datatype spread;
    CHECK_MPI(MPI_Type_indexed(BLOCKS, bl, ds, MPI_INT, &spread));
    CHECK_MPI(MPI_Type_commit(&spread));
    int *mem = malloc(span * sizeof(int)), *out = malloc(items * sizeof(int)), *back = malloc(items * sizeof(int));
    int *ones = malloc(items * sizeof(int)), *in_block = calloc(span, sizeof(int));
    for (int i = 0; i < span; i++)
        mem[i] = -1;
    for (int i = 0; i < BLOCKS; i++)
        for (int k = 0; k < bl[i]; k++)
            in_block[ds[i] + k] = 1;
    for (int k = 0; k < items; k++)
        out[k] = rank * 100000 + k, ones[k] = 1;
    int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    MPI_Win win;
    CHECK_MPI(MPI_Win_create(mem, span * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win));

    /* Put, then accumulate, each in a fence epoch. */
    CHECK_MPI(MPI_Win_fence(0, win));
    CHECK_MPI(MPI_Put(out, items, MPI_INT, next, 0, 1, spread, win));
    CHECK_MPI(MPI_Win_fence(0, win));
    CHECK_MPI(MPI_Accumulate(ones, items, MPI_INT, next, 0, 1, spread, MPI_SUM, win));
    CHECK_MPI(MPI_Win_fence(0, win));
    /* An exclusive lock epoch adds one more. */
    CHECK_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, next, 0, win));
    CHECK_MPI(MPI_Accumulate(ones, items, MPI_INT, next, 0, 1, spread, MPI_SUM, win));
    CHECK_MPI(MPI_Win_unlock(next, win));
    MPI_Barrier(MPI_COMM_WORLD);

    /* My window holds what the previous rank put, plus two. */
    CHECK_MPI(MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, win));
    int bad = 0, k = 0;
    for (int i = 0; i < span; i++) {
        int want = in_block[i] ? prev * 100000 + k++ + 2 : -1;
        if (mem[i] != want && bad++ < 5)
            CHECK(0, "window int %d: %d, expected %d", i, mem[i], want);
    }
    CHECK_MPI(MPI_Win_unlock(rank, win));
    MPI_Barrier(MPI_COMM_WORLD);

    /* Get it back from the next rank. */
    CHECK_MPI(MPI_Win_fence(0, win));
    CHECK_MPI(MPI_Get(back, items, MPI_INT, next, 0, 1, spread, win));
    CHECK_MPI(MPI_Win_fence(0, win));
    for (k = 0; k < items; k++)
        if (back[k] != out[k] + 2 && bad++ < 10)
            CHECK(0, "got item %d: %d, expected %d", k, back[k], out[k] + 2);

    CHECK_MPI(MPI_Win_free(&win));
    MPI_Type_free(&spread);
    free(bl), free(ds), free(mem), free(out), free(back), free(ones), free(in_block);
    MPI_Finalize();
    return test_finish();
}
