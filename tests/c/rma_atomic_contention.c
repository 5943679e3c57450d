/* gridmpi-test: ranks=1,3,4 timeout=120 */
/*
 * Accumulates and atomics from every rank at once onto the same locations
 * of rank 0, on a window of MPI_Win_allocate and one of
 * MPI_Win_allocate_shared (on one host both are shared memory in GridMPI,
 * where the origins change the target's memory themselves; with
 * GRIDMPI_TRANSPORT=tcp, rma_atomic_contention_tcp, the first goes as
 * frames over TCP and only the second is shared memory). The exact final
 * values must be there:
 *   - MPI_Accumulate SUM of a long, of a double, of a long double (no CPU
 *     atomic covers it), of two ints through a strided type, and contiguous
 *     int accumulates onto the same ints, and one-int accumulates onto one
 *     of them (the roads must agree);
 *   - MPI_Fetch_and_op SUM: the old values every rank got, put together,
 *     are exactly 0 .. n*ITERS-1 (none seen twice, none lost);
 *   - MPI_Accumulate MAX and MPI_MINLOC (MPI_2INT pairs);
 *   - a compare-and-swap spin lock guarding a non-atomic increment;
 *   - MPI_Win_lock exclusive: a get, a pause, a put increment (lost
 *     updates if two ranks held the lock at once), the target's own rank
 *     included; and a shared lock does not let an exclusive one in.
 */
#include "testutil.h"

#define ITERS 2000
#define LOCK_ITERS 200

/* Offsets in the window (bytes), every one aligned to 16. */
enum { O_LONG = 0, O_DBL = 16, O_LDBL = 32, O_INTS = 48, O_FOP = 64, O_MAX = 80, O_MINLOC = 96, O_CAS = 112, O_CASCNT = 128, O_LOCKCNT = 144, O_SHARED = 160, WIN_BYTES = 256 };

static void spin_a_little(void)
{
    volatile int x = 0;
    for (int i = 0; i < 2000; i++)
        x += i;
}

static void run(MPI_Win win, char *mem, int rank, int n, const char *what)
{
    MPI_Datatype strided; /* ints 0 and 2 of the 4 at O_INTS */
    MPI_Type_vector(2, 1, 2, MPI_INT, &strided);
    MPI_Type_commit(&strided);
    long *olds = tu_malloc(sizeof(long) * ITERS);

    MPI_Barrier(MPI_COMM_WORLD);
    CHECK_MPI(MPI_Win_lock_all(0, win));
    for (int i = 0; i < ITERS; i++) {
        long one = 1;
        double half = 0.5;
        long double ld = 0.25L;
        int two[2] = {1, 10}, four[4] = {100, 1000, 100, 1000}, seven = 7;
        int mx = rank * ITERS + i;
        int pair[2] = {-(rank * 10 + i % 7), rank};
        CHECK_MPI(MPI_Accumulate(&one, 1, MPI_LONG, 0, O_LONG, 1, MPI_LONG, MPI_SUM, win));
        CHECK_MPI(MPI_Accumulate(&half, 1, MPI_DOUBLE, 0, O_DBL, 1, MPI_DOUBLE, MPI_SUM, win));
        CHECK_MPI(MPI_Accumulate(&ld, 1, MPI_LONG_DOUBLE, 0, O_LDBL, 1, MPI_LONG_DOUBLE, MPI_SUM, win));
        CHECK_MPI(MPI_Accumulate(two, 2, MPI_INT, 0, O_INTS, 1, strided, MPI_SUM, win));
        CHECK_MPI(MPI_Accumulate(four, 4, MPI_INT, 0, O_INTS, 4, MPI_INT, MPI_SUM, win));
        CHECK_MPI(MPI_Accumulate(&seven, 1, MPI_INT, 0, O_INTS + sizeof(int), 1, MPI_INT, MPI_SUM, win));
        CHECK_MPI(MPI_Fetch_and_op(&one, &olds[i], MPI_LONG, 0, O_FOP, MPI_SUM, win));
        CHECK_MPI(MPI_Accumulate(&mx, 1, MPI_INT, 0, O_MAX, 1, MPI_INT, MPI_MAX, win));
        CHECK_MPI(MPI_Accumulate(pair, 1, MPI_2INT, 0, O_MINLOC, 1, MPI_2INT, MPI_MINLOC, win));
        if (i % 64 == 63)
            CHECK_MPI(MPI_Win_flush(0, win));
    }
    CHECK_MPI(MPI_Win_flush_all(win));
    /* The fetch-and-op results must be distinct among us all. */
    for (int i = 1; i < ITERS; i++)
        CHECK(olds[i] > olds[i - 1], "%s: fetch_and_op went back: %ld after %ld", what, olds[i], olds[i - 1]);

    /* A compare-and-swap spin lock (shared lock_all epoch still open). */
    for (int i = 0; i < LOCK_ITERS; i++) {
        long mine = rank + 1, free_ = 0, old = -1, v = -1;
        do {
            CHECK_MPI(MPI_Compare_and_swap(&mine, &free_, &old, MPI_LONG, 0, O_CAS, win));
            CHECK_MPI(MPI_Win_flush(0, win));
        } while (old != 0);
        CHECK_MPI(MPI_Get(&v, 1, MPI_LONG, 0, O_CASCNT, 1, MPI_LONG, win));
        CHECK_MPI(MPI_Win_flush(0, win));
        v++;
        spin_a_little();
        CHECK_MPI(MPI_Put(&v, 1, MPI_LONG, 0, O_CASCNT, 1, MPI_LONG, win));
        CHECK_MPI(MPI_Win_flush(0, win));
        CHECK_MPI(MPI_Compare_and_swap(&free_, &mine, &old, MPI_LONG, 0, O_CAS, win));
        CHECK_MPI(MPI_Win_flush(0, win));
        CHECK(old == mine, "%s: the spin lock was held by %ld, not us", what, old);
    }
    CHECK_MPI(MPI_Win_unlock_all(win));

    /* Exclusive locks: get, pause, put. */
    for (int i = 0; i < LOCK_ITERS; i++) {
        long v = -1;
        CHECK_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win));
        CHECK_MPI(MPI_Get(&v, 1, MPI_LONG, 0, O_LOCKCNT, 1, MPI_LONG, win));
        CHECK_MPI(MPI_Win_flush(0, win));
        spin_a_little();
        v++;
        CHECK_MPI(MPI_Put(&v, 1, MPI_LONG, 0, O_LOCKCNT, 1, MPI_LONG, win));
        CHECK_MPI(MPI_Win_unlock(0, win));
        /* Shared holders count themselves in and out; an exclusive holder
         * checks nobody is in. */
        long in = 1, out = -1, seen = -1;
        if (i % 4 == rank % 4) {
            CHECK_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win));
            CHECK_MPI(MPI_Get(&seen, 1, MPI_LONG, 0, O_SHARED, 1, MPI_LONG, win));
            CHECK_MPI(MPI_Win_flush(0, win));
            CHECK(seen == 0, "%s: %ld shared holder(s) inside an exclusive lock", what, seen);
            CHECK_MPI(MPI_Win_unlock(0, win));
        } else {
            CHECK_MPI(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win));
            CHECK_MPI(MPI_Accumulate(&in, 1, MPI_LONG, 0, O_SHARED, 1, MPI_LONG, MPI_SUM, win));
            CHECK_MPI(MPI_Win_flush(0, win));
            spin_a_little();
            CHECK_MPI(MPI_Accumulate(&out, 1, MPI_LONG, 0, O_SHARED, 1, MPI_LONG, MPI_SUM, win));
            CHECK_MPI(MPI_Win_unlock(0, win));
        }
    }

    /* Every rank's fetch-and-op results together: 0 .. n*ITERS-1. */
    long *all = rank == 0 ? tu_malloc(sizeof(long) * ITERS * n) : NULL;
    MPI_Gather(olds, ITERS, MPI_LONG, all, ITERS, MPI_LONG, 0, MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        char *seen = calloc((size_t)n * ITERS, 1);
        for (long i = 0; i < (long)n * ITERS; i++) {
            long v = all[i];
            if (CHECK(v >= 0 && v < (long)n * ITERS, "%s: fetch_and_op result %ld out of range", what, v))
                CHECK(!seen[v]++, "%s: fetch_and_op result %ld seen twice", what, v);
        }
        free(seen);
        free(all);
        long N = (long)n * ITERS;
        CHECK_MPI(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win));
        CHECK_MPI(MPI_Win_sync(win));
        long lv;
        double dv;
        long double ldv;
        int iv[4], mxv, pv[2];
        memcpy(&lv, mem + O_LONG, sizeof lv);
        memcpy(&dv, mem + O_DBL, sizeof dv);
        memcpy(&ldv, mem + O_LDBL, sizeof ldv);
        memcpy(iv, mem + O_INTS, sizeof iv);
        memcpy(&mxv, mem + O_MAX, sizeof mxv);
        memcpy(pv, mem + O_MINLOC, sizeof pv);
        CHECK(lv == N, "%s: long sum %ld, want %ld", what, lv, N);
        CHECK(dv == 0.5 * N, "%s: double sum %g, want %g", what, dv, 0.5 * N);
        CHECK(ldv == 0.25L * N, "%s: long double sum %Lg, want %Lg", what, ldv, 0.25L * N);
        CHECK(iv[0] == 101 * N && iv[1] == 1007 * N && iv[2] == 110 * N && iv[3] == 1000 * N,
              "%s: int sums %d %d %d %d, want %ld %ld %ld %ld", what, iv[0], iv[1], iv[2], iv[3], 101 * N, 1007 * N, 110 * N, 1000 * N);
        CHECK(mxv == (n - 1) * ITERS + ITERS - 1, "%s: max %d", what, mxv);
        CHECK(pv[0] == -((n - 1) * 10 + 6) && pv[1] == n - 1, "%s: minloc (%d, %d)", what, pv[0], pv[1]);
        long fop, cas, cascnt, lockcnt, shared;
        memcpy(&fop, mem + O_FOP, sizeof fop);
        memcpy(&cas, mem + O_CAS, sizeof cas);
        memcpy(&cascnt, mem + O_CASCNT, sizeof cascnt);
        memcpy(&lockcnt, mem + O_LOCKCNT, sizeof lockcnt);
        memcpy(&shared, mem + O_SHARED, sizeof shared);
        CHECK(fop == N, "%s: fetch_and_op counter %ld, want %ld", what, fop, N);
        CHECK(cas == 0, "%s: spin lock left taken by %ld", what, cas);
        CHECK(cascnt == (long)n * LOCK_ITERS, "%s: spin-lock counter %ld, want %d", what, cascnt, n * LOCK_ITERS);
        CHECK(lockcnt == (long)n * LOCK_ITERS, "%s: exclusive-lock counter %ld, want %d", what, lockcnt, n * LOCK_ITERS);
        CHECK(shared == 0, "%s: shared holders left counted: %ld", what, shared);
        CHECK_MPI(MPI_Win_unlock(0, win));
    }
    MPI_Barrier(MPI_COMM_WORLD);
    free(olds);
    MPI_Type_free(&strided);
}

static void zero(MPI_Win win, char *mem, int rank)
{
    CHECK_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, win));
    memset(mem, 0, WIN_BYTES);
    /* MINLOC starts above everything the ranks bring. */
    int start[2] = {1 << 30, -1};
    memcpy(mem + O_MINLOC, start, sizeof start);
    CHECK_MPI(MPI_Win_unlock(rank, win));
}

int main(int argc, char **argv)
{
    int n;
    int rank = test_init(&argc, &argv, &n);
    char *mem;
    MPI_Win win;
    CHECK_MPI(MPI_Win_allocate(WIN_BYTES, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &win));
    zero(win, mem, rank);
    run(win, mem, rank, n, "MPI_Win_allocate");
    CHECK_MPI(MPI_Win_free(&win));

    /* All ranks of a test job are on one host. */
    CHECK_MPI(MPI_Win_allocate_shared(WIN_BYTES, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &win));
    zero(win, mem, rank);
    run(win, mem, rank, n, "MPI_Win_allocate_shared");
    CHECK_MPI(MPI_Win_free(&win));
    MPI_Finalize();
    return test_finish();
}
