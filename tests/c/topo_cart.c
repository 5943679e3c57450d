/* gridmpi-test: ranks=1,2,4,6,8 timeout=60 */
/*
 * Cartesian topologies: Dims_create (balanced, non-increasing, respecting
 * fixed entries), Cart_create (reorder = false keeps ranks; ranks beyond
 * the grid get MPI_COMM_NULL), Topo_test (MPI_CART; MPI_UNDEFINED without a
 * topology), Cartdim_get, Cart_get, Cart_rank / Cart_coords round trip
 * (periodic coordinates out of range wrap), Cart_shift (periodic wrap,
 * MPI_PROC_NULL at non-periodic edges, displacement 2 and -1), Cart_sub,
 * Cart_map, traffic along a shift.
 */
#include "testutil.h"

static void check_dims(int nnodes, int ndims, const int *in, const int *expect)
{
    int d[4];
    for (int i = 0; i < ndims; i++)
        d[i] = in[i];
    CHECK_MPI(MPI_Dims_create(nnodes, ndims, d));
    for (int i = 0; i < ndims; i++)
        if (!CHECK(d[i] == expect[i], "Dims_create(%d, %d): dims[%d] = %d, expected %d", nnodes, ndims, i, d[i], expect[i]))
            break;
}

int main(int argc, char **argv)
{
    int size;
    int rank = test_init(&argc, &argv, &size);
    int status;

    {
        int z2[2] = {0, 0}, z3[3] = {0, 0, 0}, z4[4] = {0, 0, 0, 0};
        int e1[2] = {3, 2}, e2[2] = {7, 1}, e3[3] = {3, 2, 2}, e4[4] = {2, 2, 2, 2}, e5[3] = {1, 1, 1};
        int f3[3] = {0, 2, 0}, e6[3] = {3, 2, 2}, f2[2] = {0, 3}, e7[2] = {4, 3}, e8[3] = {5, 4, 3};
        check_dims(6, 2, z2, e1);
        check_dims(7, 2, z2, e2);
        check_dims(12, 3, z3, e3);
        check_dims(16, 4, z4, e4);
        check_dims(1, 3, z3, e5);
        check_dims(12, 3, f3, e6);
        check_dims(12, 2, f2, e7);
        /* As close to each other as possible: 9 x 8, not 12 x 6. */
        int z2b[2] = {0, 0}, e9[2] = {9, 8}, z3b[3] = {0, 0, 0}, e10[3] = {6, 4, 3};
        check_dims(72, 2, z2b, e9);
        check_dims(72, 3, z3b, e10);
        check_dims(60, 3, z3, e8);
    }

    CHECK_MPI(MPI_Topo_test(MPI_COMM_WORLD, &status));
    CHECK_INT_EQ(status, MPI_UNDEFINED);

    /* 2-D grid, periodic in dim 0 only. */
    int dims[2] = {0, 0}, periods[2] = {1, 0};
    MPI_Dims_create(size, 2, dims);
    MPI_Comm cart;
    CHECK_MPI(MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 0, &cart));
    if (CHECK(cart != MPI_COMM_NULL, "Cart_create gave MPI_COMM_NULL")) {
        int r;
        MPI_Comm_rank(cart, &r);
        CHECK(r == rank, "Cart_create without reorder changed rank %d to %d", rank, r);
        CHECK_MPI(MPI_Topo_test(cart, &status));
        CHECK_INT_EQ(status, MPI_CART);
        int nd;
        CHECK_MPI(MPI_Cartdim_get(cart, &nd));
        CHECK_INT_EQ(nd, 2);
        int gd[2], gp[2], gc[2];
        CHECK_MPI(MPI_Cart_get(cart, 2, gd, gp, gc));
        CHECK(gd[0] == dims[0] && gd[1] == dims[1] && gp[0] == 1 && gp[1] == 0, "Cart_get dims/periods");
        /* Row-major: rank = c0 * dims[1] + c1. */
        CHECK(gc[0] == rank / dims[1] && gc[1] == rank % dims[1], "Cart_get coords (%d,%d) for rank %d", gc[0], gc[1], rank);
        for (int q = 0; q < size; q++) {
            int c[2], back;
            CHECK_MPI(MPI_Cart_coords(cart, q, 2, c));
            CHECK(c[0] == q / dims[1] && c[1] == q % dims[1], "Cart_coords(%d) = (%d,%d)", q, c[0], c[1]);
            CHECK_MPI(MPI_Cart_rank(cart, c, &back));
            CHECK(back == q, "Cart_rank(Cart_coords(%d)) = %d", q, back);
        }
        /* Periodic dimension wraps. */
        int wc[2] = {gc[0] + dims[0], gc[1]}, wr;
        CHECK_MPI(MPI_Cart_rank(cart, wc, &wr));
        CHECK(wr == rank, "Cart_rank with a wrapped periodic coordinate gave %d", wr);
        wc[0] = gc[0] - dims[0];
        CHECK_MPI(MPI_Cart_rank(cart, wc, &wr));
        CHECK(wr == rank, "Cart_rank with a negative periodic coordinate gave %d", wr);

        /* Shifts. */
        int src, dst;
        CHECK_MPI(MPI_Cart_shift(cart, 0, 1, &src, &dst));
        int es = ((gc[0] - 1 + dims[0]) % dims[0]) * dims[1] + gc[1];
        int ed = ((gc[0] + 1) % dims[0]) * dims[1] + gc[1];
        CHECK(src == es && dst == ed, "Cart_shift(dim 0, +1): %d %d, expected %d %d", src, dst, es, ed);
        CHECK_MPI(MPI_Cart_shift(cart, 1, 1, &src, &dst));
        es = gc[1] > 0 ? rank - 1 : MPI_PROC_NULL;
        ed = gc[1] < dims[1] - 1 ? rank + 1 : MPI_PROC_NULL;
        CHECK(src == es && dst == ed, "Cart_shift(dim 1, +1): %d %d, expected %d %d", src, dst, es, ed);
        CHECK_MPI(MPI_Cart_shift(cart, 1, -1, &src, &dst));
        CHECK(src == ed && dst == es, "Cart_shift(dim 1, -1): %d %d", src, dst);
        CHECK_MPI(MPI_Cart_shift(cart, 1, 2, &src, &dst));
        es = gc[1] >= 2 ? rank - 2 : MPI_PROC_NULL;
        ed = gc[1] + 2 < dims[1] ? rank + 2 : MPI_PROC_NULL;
        CHECK(src == es && dst == ed, "Cart_shift(dim 1, +2): %d %d, expected %d %d", src, dst, es, ed);

        /* Traffic along dim 1 (non-periodic): PROC_NULL ends. */
        CHECK_MPI(MPI_Cart_shift(cart, 1, 1, &src, &dst));
        int out = rank, in = -5;
        MPI_Status st;
        CHECK_MPI(MPI_Sendrecv(&out, 1, MPI_INT, dst, 0, &in, 1, MPI_INT, src, 0, cart, &st));
        CHECK(in == (src == MPI_PROC_NULL ? -5 : src), "shift exchange got %d from %d", in, src);

        /* Cart_sub: keep dim 1 -> rows of dims[1] ranks. */
        int keep[2] = {0, 1};
        MPI_Comm row;
        CHECK_MPI(MPI_Cart_sub(cart, keep, &row));
        int rs, rr;
        MPI_Comm_size(row, &rs);
        MPI_Comm_rank(row, &rr);
        CHECK(rs == dims[1] && rr == gc[1], "Cart_sub row: size %d rank %d", rs, rr);
        CHECK_MPI(MPI_Topo_test(row, &status));
        CHECK_INT_EQ(status, MPI_CART);
        CHECK_MPI(MPI_Cartdim_get(row, &nd));
        CHECK_INT_EQ(nd, 1);
        int rowsum = -1;
        CHECK_MPI(MPI_Allreduce(&rank, &rowsum, 1, MPI_INT, MPI_SUM, row));
        int e = 0;
        for (int j = 0; j < dims[1]; j++)
            e += gc[0] * dims[1] + j;
        CHECK(rowsum == e, "sum over the Cart_sub row %d, expected %d", rowsum, e);
        MPI_Comm_free(&row);
        int keep0[2] = {1, 0};
        MPI_Comm col;
        CHECK_MPI(MPI_Cart_sub(cart, keep0, &col));
        MPI_Comm_size(col, &rs);
        MPI_Comm_rank(col, &rr);
        CHECK(rs == dims[0] && rr == gc[0], "Cart_sub column: size %d rank %d", rs, rr);
        int cd[1], cp[1], cc[1];
        MPI_Cart_get(col, 1, cd, cp, cc);
        CHECK(cd[0] == dims[0] && cp[0] == 1, "Cart_sub keeps periodicity");
        MPI_Comm_free(&col);
        MPI_Comm_free(&cart);
    }

    /* A grid smaller than the world: extra ranks get MPI_COMM_NULL. */
    if (size > 1) {
        int d1[1] = {size - 1}, p1[1] = {0};
        MPI_Comm small;
        CHECK_MPI(MPI_Cart_create(MPI_COMM_WORLD, 1, d1, p1, 0, &small));
        if (rank == size - 1)
            CHECK(small == MPI_COMM_NULL, "rank outside the grid got a communicator");
        else if (CHECK(small != MPI_COMM_NULL, "rank inside the grid got MPI_COMM_NULL"))
            MPI_Comm_free(&small);
    }

    /* A grid larger than the communicator is MPI_ERR_ARG, and the
     * handle is MPI_COMM_NULL, not what the variable held (MPICH's
     * errors/topo/cartsmall). */
    {
        int d1[1] = {size + 1}, p1[1] = {0};
        MPI_Comm big = MPI_COMM_WORLD;
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
        int rc = MPI_Cart_create(MPI_COMM_WORLD, 1, d1, p1, 0, &big), cls = -1;
        MPI_Error_class(rc, &cls);
        CHECK(rc != MPI_SUCCESS && cls == MPI_ERR_ARG, "a grid of %d on %d ranks: class %d", size + 1, size, cls);
        if (!TU_PEER_OPENMPI) /* Open MPI 5.0.11 leaves the variable as it was */
            CHECK(big == MPI_COMM_NULL, "a failed MPI_Cart_create left its handle set");
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    }

    /* Cart_map: a valid rank or MPI_UNDEFINED. */
    {
        int d1[1] = {size}, p1[1] = {1}, newrank = -7;
        CHECK_MPI(MPI_Cart_map(MPI_COMM_WORLD, 1, d1, p1, &newrank));
        CHECK(newrank >= 0 && newrank < size, "Cart_map gave %d", newrank);
    }

    MPI_Finalize();
    return test_finish();
}
