/* gridmpi-test: ranks=1,2,3,4 timeout=60 */
/*
 * A user-defined reduction may call MPI itself (mpi4py's do: they look at
 * the datatype): Allreduce, Reduce, Scan, Exscan, Reduce_scatter_block and
 * their nonblocking forms must run it without holding any library lock.
 * The op here calls MPI_Type_size, MPI_Comm_rank and MPI_Wtime, and checks
 * that the datatype it is given is the one the collective was called with.
 */
#include "testutil.h"

static int calls;

static void my_sum(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    int sz, r;
    MPI_Type_size(*dt, &sz);
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    (void)MPI_Wtime();
    if (sz != (int)sizeof(int)) {
        fprintf(stderr, "rank %d: user op got a datatype of size %d\n", r, sz);
        MPI_Abort(MPI_COMM_WORLD, 3);
    }
    for (int i = 0; i < *len; i++)
        ((int *)inout)[i] += ((int *)in)[i];
    calls++;
}

int main(int argc, char **argv)
{
    int size;
    int rank = test_init(&argc, &argv, &size);
    MPI_Op op;
    CHECK_MPI(MPI_Op_create(my_sum, 0, &op)); /* non-commutative: rank order */
    enum { N = 5 };
    int in[N], out[N], expect_all[N];
    for (int i = 0; i < N; i++) {
        in[i] = (rank + 1) * (i + 1);
        expect_all[i] = size * (size + 1) / 2 * (i + 1);
    }
    CHECK_MPI(MPI_Allreduce(in, out, N, MPI_INT, op, MPI_COMM_WORLD));
    for (int i = 0; i < N; i++)
        CHECK_INT_EQ(out[i], expect_all[i]);

    MPI_Request req;
    memset(out, 0, sizeof out);
    CHECK_MPI(MPI_Iallreduce(in, out, N, MPI_INT, op, MPI_COMM_WORLD, &req));
    CHECK_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
    for (int i = 0; i < N; i++)
        CHECK_INT_EQ(out[i], expect_all[i]);

    memset(out, 0, sizeof out);
    CHECK_MPI(MPI_Reduce(in, out, N, MPI_INT, op, size - 1, MPI_COMM_WORLD));
    if (rank == size - 1)
        for (int i = 0; i < N; i++)
            CHECK_INT_EQ(out[i], expect_all[i]);

    CHECK_MPI(MPI_Scan(in, out, N, MPI_INT, op, MPI_COMM_WORLD));
    for (int i = 0; i < N; i++)
        CHECK_INT_EQ(out[i], (rank + 1) * (rank + 2) / 2 * (i + 1));

    CHECK_MPI(MPI_Exscan(in, out, N, MPI_INT, op, MPI_COMM_WORLD));
    if (rank > 0)
        for (int i = 0; i < N; i++)
            CHECK_INT_EQ(out[i], rank * (rank + 1) / 2 * (i + 1));

    int *blk = malloc(sizeof(int) * size), rs;
    for (int i = 0; i < size; i++)
        blk[i] = rank + i;
    CHECK_MPI(MPI_Reduce_scatter_block(blk, &rs, 1, MPI_INT, op, MPI_COMM_WORLD));
    CHECK_INT_EQ(rs, size * (size - 1) / 2 + size * rank);
    free(blk);

    CHECK(size == 1 || calls > 0, "the user op was never called");
    CHECK_MPI(MPI_Op_free(&op));
    MPI_Finalize();
    return test_finish();
}
