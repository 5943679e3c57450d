/* gridmpi-test: ranks=1,2,4 timeout=60 */
/*
 * One-sided communication in fence epochs on a window of MPI_Win_create:
 * every rank puts into the slots it owns at every target, accumulates
 * (MPI_SUM) into shared slots, with a strided (vector) target datatype,
 * get-accumulates, fetch-and-ops and compare-and-swaps; after the fence
 * every window holds exactly the expected values, and gets of every
 * window in the next epoch return them. Large operations (1 MiB puts and
 * accumulates, cut into pieces by the library) arrive whole. Fences with
 * assertions are accepted.
 */
#include "testutil.h"

#define SLOTS 8
#define ACC 64
#define BIG (128 * 1024)

int main(int argc, char **argv)
{
    int n;
    int rank = test_init(&argc, &argv, &n);
    /* Layout of each window (longs): [n*SLOTS put slots][ACC acc slots][3 atomics] */
    int words = n * SLOTS + ACC + 3;
    long *mem = malloc(sizeof(long) * words);
    for (int i = 0; i < words; i++)
        mem[i] = -1;
    for (int i = 0; i < ACC + 3; i++)
        mem[n * SLOTS + i] = 0;
    MPI_Win win;
    CHECK_MPI(MPI_Win_create(mem, sizeof(long) * words, sizeof(long), MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    CHECK_MPI(MPI_Win_fence(MPI_MODE_NOPRECEDE, win));

    long src[SLOTS];
    for (int i = 0; i < SLOTS; i++)
        src[i] = rank * 100 + i;
    /* Every other acc slot, through a vector type at the target. */
    MPI_Datatype every_other;
    MPI_Type_vector(ACC / 2, 1, 2, MPI_LONG, &every_other);
    MPI_Type_commit(&every_other);
    long ones[ACC / 2];
    for (int i = 0; i < ACC / 2; i++)
        ones[i] = rank + 1 + i;
    long fetched[64], one = 1;
    for (int t = 0; t < n; t++) {
        CHECK_MPI(MPI_Put(src, SLOTS, MPI_LONG, t, rank * SLOTS, SLOTS, MPI_LONG, win));
        CHECK_MPI(MPI_Accumulate(ones, ACC / 2, MPI_LONG, t, n * SLOTS, 1, every_other, MPI_SUM, win));
        CHECK_MPI(MPI_Get_accumulate(&one, 1, MPI_LONG, &fetched[t], 1, MPI_LONG, t, n * SLOTS + ACC, 1, MPI_LONG, MPI_SUM, win));
        CHECK_MPI(MPI_Fetch_and_op(&one, &fetched[32 + t], MPI_LONG, t, n * SLOTS + ACC + 1, MPI_SUM, win));
    }
    CHECK_MPI(MPI_Win_fence(0, win));

    long sum_ranks = (long)n * (n + 1) / 2; /* sum over r of (r + 1) */
    for (int r = 0; r < n; r++)
        for (int i = 0; i < SLOTS; i++)
            CHECK(mem[r * SLOTS + i] == r * 100 + i, "put slot %d of rank %d: %ld", i, r, mem[r * SLOTS + i]);
    for (int i = 0; i < ACC; i++) {
        long want = (i % 2 == 0) ? sum_ranks + (long)n * (i / 2) : 0;
        CHECK(mem[n * SLOTS + i] == want, "acc slot %d: %ld, want %ld", i, mem[n * SLOTS + i], want);
    }
    CHECK(mem[n * SLOTS + ACC] == n, "get_accumulate counter %ld", mem[n * SLOTS + ACC]);
    CHECK(mem[n * SLOTS + ACC + 1] == n, "fetch_and_op counter %ld", mem[n * SLOTS + ACC + 1]);
    for (int t = 0; t < n; t++) {
        CHECK(fetched[t] >= 0 && fetched[t] < n, "fetched %ld", fetched[t]);
        CHECK(fetched[32 + t] >= 0 && fetched[32 + t] < n, "fetched %ld", fetched[32 + t]);
    }

    /* Compare-and-swap: exactly one rank wins slot ACC+2 of each target. */
    long mine = rank + 1, zero = 0, old[64];
    for (int t = 0; t < n; t++)
        CHECK_MPI(MPI_Compare_and_swap(&mine, &zero, &old[t], MPI_LONG, t, n * SLOTS + ACC + 2, win));
    CHECK_MPI(MPI_Win_fence(0, win));
    CHECK(mem[n * SLOTS + ACC + 2] >= 1 && mem[n * SLOTS + ACC + 2] <= n, "CAS slot %ld", mem[n * SLOTS + ACC + 2]);

    /* Gets of every window. */
    long *all = malloc(sizeof(long) * words * n);
    for (int t = 0; t < n; t++)
        CHECK_MPI(MPI_Get(all + (size_t)t * words, words, MPI_LONG, t, 0, words, MPI_LONG, win));
    CHECK_MPI(MPI_Win_fence(0, win));
    int winners = 0;
    for (int t = 0; t < n; t++) {
        CHECK(memcmp(all + (size_t)t * words, mem, sizeof(long) * (words - 1)) == 0, "window of rank %d differs", t);
        winners += old[t] == 0;
    }
    CHECK(winners <= n, "winners");

    /* Large operations: 1 MiB of longs put at neighbours, and accumulated. */
    MPI_Win big;
    long *bmem = malloc(sizeof(long) * BIG);
    for (int i = 0; i < BIG; i++)
        bmem[i] = 0;
    CHECK_MPI(MPI_Win_create(bmem, sizeof(long) * BIG, sizeof(long), MPI_INFO_NULL, MPI_COMM_WORLD, &big));
    CHECK_MPI(MPI_Win_fence(0, big));
    long *bsrc = malloc(sizeof(long) * BIG);
    for (int i = 0; i < BIG; i++)
        bsrc[i] = i;
    int right = (rank + 1) % n;
    CHECK_MPI(MPI_Put(bsrc, BIG / 2, MPI_LONG, right, 0, BIG / 2, MPI_LONG, big));
    for (int t = 0; t < n; t++)
        CHECK_MPI(MPI_Accumulate(bsrc, BIG / 2, MPI_LONG, t, BIG / 2, BIG / 2, MPI_LONG, MPI_SUM, big));
    CHECK_MPI(MPI_Win_fence(MPI_MODE_NOSUCCEED, big));
    int bad = 0;
    for (int i = 0; i < BIG / 2; i++)
        bad += bmem[i] != i || bmem[BIG / 2 + i] != (long)n * i;
    CHECK(bad == 0, "%d wrong longs after the large put and accumulate", bad);
    CHECK_MPI(MPI_Win_free(&big));
    CHECK(big == MPI_WIN_NULL, "MPI_Win_free sets MPI_WIN_NULL");

    MPI_Type_free(&every_other);
    CHECK_MPI(MPI_Win_fence(MPI_MODE_NOSUCCEED, win));
    CHECK_MPI(MPI_Win_free(&win));
    free(all);
    free(bmem);
    free(bsrc);
    free(mem);
    MPI_Finalize();
    return test_finish();
}
