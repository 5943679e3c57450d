/* gridmpi-test: ranks=2,3,5,8 min-ranks=2 timeout=60 */
/*
 * Collectives on an intercommunicator (low half / high half of the world):
 * Barrier; Bcast, Gather, Scatter, Reduce with MPI_ROOT at the root, MPI_PROC_NULL
 * at the other ranks of the root's group, and the root's rank in the remote
 * group elsewhere; Allgather (each side gets the other side's data),
 * Allreduce (each side gets the reduction of the other side), Alltoall,
 * in both directions.
 */
#include "testutil.h"

int main(int argc, char **argv)
{
    int size;
    int rank = test_init(&argc, &argv, &size);
    int nlow = size / 2, low = rank < nlow;
    int lsize = low ? nlow : size - nlow, rsize = low ? size - nlow : nlow;
    int lrank = low ? rank : rank - nlow;
    MPI_Comm local, inter;
    MPI_Comm_split(MPI_COMM_WORLD, low, rank, &local);
    MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, low ? nlow : 0, 7, &inter);

    CHECK_MPI(MPI_Barrier(inter));

    for (int dir = 0; dir < 2; dir++) {
        /* Root group: low in dir 0, high in dir 1; root is its local rank 0. */
        int in_root_group = dir == 0 ? low : !low;
        int root_arg = in_root_group ? (lrank == 0 ? MPI_ROOT : MPI_PROC_NULL) : 0;
        int is_root = in_root_group && lrank == 0;
        int other = in_root_group ? lsize : rsize; /* size of the non-root group (as seen from the root) */
        if (in_root_group)
            other = rsize;
        int v[4];

        /* Bcast */
        if (is_root)
            fill_ints(v, 4, 10 + dir);
        else
            for (int i = 0; i < 4; i++)
                v[i] = -1;
        CHECK_MPI(MPI_Bcast(v, 4, MPI_INT, root_arg, inter));
        if (!in_root_group)
            check_ints(v, 4, 10 + dir, "intercomm Bcast");
        else if (!is_root)
            CHECK(v[0] == -1, "intercomm Bcast touched a non-root rank of the root group");

        /* Gather: the root collects 2 ints from each remote rank. */
        int mine[2] = {rank * 2, rank * 2 + 1};
        int *all = tu_malloc(sizeof(int) * 2 * (other + 1));
        CHECK_MPI(MPI_Gather(mine, 2, MPI_INT, all, 2, MPI_INT, root_arg, inter));
        if (is_root)
            for (int j = 0; j < other; j++) {
                int w = low ? nlow + j : j; /* world rank of remote j */
                CHECK(all[2 * j] == 2 * w && all[2 * j + 1] == 2 * w + 1, "intercomm Gather from remote %d: %d %d", j,
                      all[2 * j], all[2 * j + 1]);
            }

        /* Scatter: root gives 1 int to each remote rank. */
        if (is_root)
            for (int j = 0; j < other; j++)
                all[j] = 500 + j + dir;
        int got = -1;
        CHECK_MPI(MPI_Scatter(all, 1, MPI_INT, &got, 1, MPI_INT, root_arg, inter));
        if (!in_root_group)
            CHECK(got == 500 + lrank + dir, "intercomm Scatter: %d", got);

        /* Reduce: root gets the sum of the remote group's values. */
        int contrib = rank + 1, sum = -1;
        CHECK_MPI(MPI_Reduce(&contrib, &sum, 1, MPI_INT, MPI_SUM, root_arg, inter));
        if (is_root) {
            int e = 0;
            for (int j = 0; j < other; j++)
                e += (low ? nlow + j : j) + 1;
            CHECK(sum == e, "intercomm Reduce: %d, expected %d", sum, e);
        }
        free(all);
    }

    /* Allgather: each gets the remote group's values. */
    {
        int *all = tu_malloc(sizeof(int) * rsize);
        CHECK_MPI(MPI_Allgather(&rank, 1, MPI_INT, all, 1, MPI_INT, inter));
        for (int j = 0; j < rsize; j++)
            CHECK(all[j] == (low ? nlow + j : j), "intercomm Allgather element %d = %d", j, all[j]);
        free(all);
    }
    /* Allreduce: each side gets the reduction over the other side. */
    {
        int s = -1;
        CHECK_MPI(MPI_Allreduce(&rank, &s, 1, MPI_INT, MPI_SUM, inter));
        int e = 0;
        for (int j = 0; j < rsize; j++)
            e += low ? nlow + j : j;
        CHECK(s == e, "intercomm Allreduce: %d, expected %d", s, e);
    }
    /* Alltoall: send to remote j the value rank*100+j. */
    {
        int *out = tu_malloc(sizeof(int) * rsize), *in = tu_malloc(sizeof(int) * rsize);
        for (int j = 0; j < rsize; j++)
            out[j] = rank * 100 + j;
        CHECK_MPI(MPI_Alltoall(out, 1, MPI_INT, in, 1, MPI_INT, inter));
        for (int j = 0; j < rsize; j++) {
            int w = low ? nlow + j : j;
            CHECK(in[j] == w * 100 + lrank, "intercomm Alltoall from remote %d: %d", j, in[j]);
        }
        free(out);
        free(in);
    }

    MPI_Comm_free(&inter);
    MPI_Comm_free(&local);
    MPI_Finalize();
    return test_finish();
}
