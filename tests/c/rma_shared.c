/* gridmpi-test: ranks=1,2,4 timeout=60 */
/*
 * MPI_Win_allocate_shared: one shared mapping, contiguous across ranks by
 * default; MPI_Win_shared_query gives every member's segment (and for
 * MPI_PROC_NULL the first one); loads and stores into a neighbour's
 * segment are seen by it after MPI_Win_sync and a barrier; RMA puts,
 * gets and accumulates work on the same window; MPI_Win_shared_query_c.
 */
#include "testutil.h"

#define N 256

int main(int argc, char **argv)
{
    int n;
    int rank = test_init(&argc, &argv, &n);
    MPI_Comm node;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    int nr, ns;
    MPI_Comm_rank(node, &nr);
    MPI_Comm_size(node, &ns);
    int *mine;
    MPI_Win win;
    /* Rank r asks for N + 1 + r ints: segments of different sizes. */
    CHECK_MPI(MPI_Win_allocate_shared(sizeof(int) * (N + 1 + nr), sizeof(int), MPI_INFO_NULL, node, &mine, &win));
    int **seg = malloc(sizeof(int *) * ns);
    for (int r = 0; r < ns; r++) {
        MPI_Aint size;
        int du;
        CHECK_MPI(MPI_Win_shared_query(win, r, &size, &du, &seg[r]));
        CHECK(size == (MPI_Aint)sizeof(int) * (N + 1 + r), "segment %d size %ld", r, (long)size);
        CHECK(du == sizeof(int), "disp unit %d", du);
        if (r > 0)
            CHECK((char *)seg[r] == (char *)seg[r - 1] + sizeof(int) * (N + r), "segments are not contiguous");
    }
    CHECK(seg[nr] == mine, "shared_query of our own rank differs from the allocated base");
    MPI_Aint size_c, du_c;
    int *first;
    CHECK_MPI(MPI_Win_shared_query_c(win, MPI_PROC_NULL, &size_c, &du_c, &first));
    CHECK(first == seg[0] && du_c == sizeof(int) && size_c == (MPI_Aint)sizeof(int) * (N + 1), "MPI_PROC_NULL query");

    /* Stores into the right neighbour's segment. */
    CHECK_MPI(MPI_Win_lock_all(MPI_MODE_NOCHECK, win));
    mine[N] = 0;
    int right = (nr + 1) % ns, left = (nr + ns - 1) % ns;
    for (int i = 0; i < N; i++)
        seg[right][i] = nr * 1000 + i;
    CHECK_MPI(MPI_Win_sync(win));
    MPI_Barrier(node);
    CHECK_MPI(MPI_Win_sync(win));
    int bad = 0;
    for (int i = 0; i < N; i++)
        bad += mine[i] != left * 1000 + i;
    CHECK(bad == 0, "%d ints of the left neighbour's stores missing", bad);
    MPI_Barrier(node);

    /* RMA on the same window: put to the left, accumulate at rank 0. */
    int v[4] = {nr, nr, nr, nr}, one = 1;
    CHECK_MPI(MPI_Put(v, 4, MPI_INT, left, N - 4, 4, MPI_INT, win));
    CHECK_MPI(MPI_Accumulate(&one, 1, MPI_INT, 0, N, 1, MPI_INT, MPI_SUM, win));
    CHECK_MPI(MPI_Win_flush_all(win));
    MPI_Barrier(node);
    CHECK_MPI(MPI_Win_sync(win));
    for (int i = 0; i < 4; i++)
        CHECK(mine[N - 4 + i] == right, "put from the right neighbour: %d", mine[N - 4 + i]);
    int got = -1;
    CHECK_MPI(MPI_Get(&got, 1, MPI_INT, 0, N, 1, MPI_INT, win));
    CHECK_MPI(MPI_Win_flush(0, win));
    CHECK(got == ns, "accumulated counter at rank 0: %d", got);
    CHECK_MPI(MPI_Win_unlock_all(win));

    int flavor, *fp, flag;
    CHECK_MPI(MPI_Win_get_attr(win, MPI_WIN_CREATE_FLAVOR, &fp, &flag));
    flavor = *fp;
    CHECK(flag && flavor == MPI_WIN_FLAVOR_SHARED, "flavor %d", flavor);
    CHECK_MPI(MPI_Win_free(&win));
    free(seg);
    MPI_Comm_free(&node);
    MPI_Finalize();
    return test_finish();
}
