/* gridmpi-test: ranks=1,2,4 timeout=60 */
/*
 * Passive-target one-sided communication on a window of MPI_Win_allocate:
 * exclusive locks protect a get + flush + put increment (not atomic by
 * itself) at every target; MPI_Win_lock_all with fetch-and-op and the
 * request-based operations (Rput, Rget, Raccumulate, Rget_accumulate)
 * waited with MPI_Wait; flush_local, flush_all, flush_local_all; a
 * compare-and-swap spin lock. Every increment must be counted exactly once.
 */
#include "testutil.h"

#define ROUNDS 5

int main(int argc, char **argv)
{
    int n;
    int rank = test_init(&argc, &argv, &n);
    long *mem;
    MPI_Win win;
    CHECK_MPI(MPI_Win_allocate(8 * sizeof(long), sizeof(long), MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &win));
    CHECK_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, win));
    for (int i = 0; i < 8; i++)
        mem[i] = 0;
    CHECK_MPI(MPI_Win_unlock(rank, win));
    MPI_Barrier(MPI_COMM_WORLD);

    /* 1. Exclusive lock: get, flush, put. */
    for (int k = 0; k < ROUNDS; k++)
        for (int t = 0; t < n; t++) {
            long v = -1;
            CHECK_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, t, 0, win));
            CHECK_MPI(MPI_Get(&v, 1, MPI_LONG, t, 0, 1, MPI_LONG, win));
            CHECK_MPI(MPI_Win_flush(t, win));
            v++;
            CHECK_MPI(MPI_Put(&v, 1, MPI_LONG, t, 0, 1, MPI_LONG, win));
            CHECK_MPI(MPI_Win_unlock(t, win));
        }

    /* 2. lock_all: fetch-and-op, request-based operations. */
    CHECK_MPI(MPI_Win_lock_all(0, win));
    for (int k = 0; k < ROUNDS; k++)
        for (int t = 0; t < n; t++) {
            long one = 1, old = -1, res = -1, got = -1;
            MPI_Request rq[3];
            CHECK_MPI(MPI_Fetch_and_op(&one, &old, MPI_LONG, t, 1, MPI_SUM, win));
            CHECK_MPI(MPI_Raccumulate(&one, 1, MPI_LONG, t, 2, 1, MPI_LONG, MPI_SUM, win, &rq[0]));
            CHECK_MPI(MPI_Rget_accumulate(&one, 1, MPI_LONG, &res, 1, MPI_LONG, t, 3, 1, MPI_LONG, MPI_SUM, win, &rq[1]));
            CHECK_MPI(MPI_Win_flush_local(t, win));
            CHECK(old >= 0 && old < n * ROUNDS, "fetch_and_op result %ld", old);
            CHECK_MPI(MPI_Rget(&got, 1, MPI_LONG, t, 3, 1, MPI_LONG, win, &rq[2]));
            CHECK_MPI(MPI_Waitall(3, rq, MPI_STATUSES_IGNORE));
            CHECK(res >= 0 && res < n * ROUNDS, "get_accumulate result %ld", res);
            CHECK(got > res, "a get after the accumulate sees it (%ld after %ld)", got, res);
        }
    CHECK_MPI(MPI_Win_flush_all(win));
    CHECK_MPI(MPI_Win_flush_local_all(win));
    /* Rput of our rank into slot 4 + (rank % 4) of rank 0: last writer wins, any is fine. */
    long me = rank;
    MPI_Request rp;
    CHECK_MPI(MPI_Rput(&me, 1, MPI_LONG, 0, 4, 1, MPI_LONG, win, &rp));
    CHECK_MPI(MPI_Wait(&rp, MPI_STATUS_IGNORE));
    CHECK_MPI(MPI_Win_unlock_all(win));

    /* 3. A compare-and-swap spin lock on rank 0's slot 5 guarding slot 6. */
    for (int k = 0; k < ROUNDS; k++) {
        long mine = rank + 1, free_ = 0, old = -1;
        CHECK_MPI(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win));
        do {
            CHECK_MPI(MPI_Compare_and_swap(&mine, &free_, &old, MPI_LONG, 0, 5, win));
            CHECK_MPI(MPI_Win_flush(0, win));
        } while (old != 0);
        long v;
        CHECK_MPI(MPI_Get(&v, 1, MPI_LONG, 0, 6, 1, MPI_LONG, win));
        CHECK_MPI(MPI_Win_flush(0, win));
        v++;
        CHECK_MPI(MPI_Put(&v, 1, MPI_LONG, 0, 6, 1, MPI_LONG, win));
        CHECK_MPI(MPI_Win_flush(0, win));
        CHECK_MPI(MPI_Compare_and_swap(&free_, &mine, &old, MPI_LONG, 0, 5, win));
        CHECK_MPI(MPI_Win_unlock(0, win));
        CHECK(old == mine, "the spin lock was held by %ld, not us", old);
    }

    MPI_Barrier(MPI_COMM_WORLD);
    CHECK_MPI(MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, win));
    CHECK(mem[0] == (long)n * ROUNDS, "exclusive-lock counter %ld, want %d", mem[0], n * ROUNDS);
    CHECK(mem[1] == (long)n * ROUNDS, "fetch_and_op counter %ld", mem[1]);
    CHECK(mem[2] == (long)n * ROUNDS, "raccumulate counter %ld", mem[2]);
    CHECK(mem[3] == (long)n * ROUNDS, "rget_accumulate counter %ld", mem[3]);
    if (rank == 0) {
        CHECK(mem[4] >= 0 && mem[4] < n, "rput slot %ld", mem[4]);
        CHECK(mem[5] == 0, "spin lock left taken: %ld", mem[5]);
        CHECK(mem[6] == (long)n * ROUNDS, "spin-lock counter %ld", mem[6]);
    }
    CHECK_MPI(MPI_Win_unlock(rank, win));
    CHECK_MPI(MPI_Win_free(&win));
    MPI_Finalize();
    return test_finish();
}
