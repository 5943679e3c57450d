/*
 * The MPI-5 standard ABI, point to point and collectives: statuses read
 * from their fields (MPI_SOURCE, MPI_TAG, MPI_ERROR), MPI_ANY_SOURCE,
 * MPI_ANY_TAG, MPI_PROC_NULL, arrays of requests and statuses, predefined
 * datatypes and operations (MPI_INT, MPI_DOUBLE, MPI_2INT and
 * MPI_DOUBLE_INT with MINLOC/MAXLOC), MPI_IN_PLACE, a user-defined
 * datatype and operation (whose callback must see the datatype's handle),
 * MPI_Alltoallw. Built with mpicc_abi (ours or MPICH's); prints
 * "abi_p2p_coll OK" on rank 0.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, size;

#define CHECK(cond, ...)                                                   \
    do {                                                                   \
        if (!(cond)) {                                                     \
            fprintf(stderr, "rank %d: %s:%d: ", rank, __FILE__, __LINE__); \
            fprintf(stderr, __VA_ARGS__);                                  \
            fprintf(stderr, "\n");                                         \
            MPI_Abort(MPI_COMM_WORLD, 1);                                  \
        }                                                                  \
    } while (0)

static MPI_Datatype pair_type; /* two ints, contiguous: the user op's type */

/* On (a, b) pairs: a sums, b takes the maximum. */
static void pair_op(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    CHECK(*dt == pair_type, "user op got datatype %p, expected %p", (void *)*dt, (void *)pair_type);
    int *a = in, *b = inout;
    for (int i = 0; i < *len; i++) {
        b[2 * i] += a[2 * i];
        if (a[2 * i + 1] > b[2 * i + 1]) b[2 * i + 1] = a[2 * i + 1];
    }
}

int main(int argc, char **argv)
{
    int provided = -1;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
    CHECK(provided >= MPI_THREAD_FUNNELED && provided <= MPI_THREAD_MULTIPLE &&
              (provided == MPI_THREAD_FUNNELED || provided == MPI_THREAD_SERIALIZED || provided == MPI_THREAD_MULTIPLE),
          "provided %d is not a thread level of the standard ABI", provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(sizeof(MPI_Status) == 32 && sizeof(MPI_Comm) == sizeof(void *), "type sizes");

    /* The standard's handle values, as a binary built by anyone carries them. */
    CHECK((intptr_t)MPI_COMM_WORLD == 0x101 && (intptr_t)MPI_INT == 0x209, "header values");

    /* Point to point: every rank sends to 0 with tag 100+rank; 0 receives
     * them with MPI_ANY_SOURCE/MPI_ANY_TAG and reads the status fields. */
    if (rank != 0) {
        int v[3] = {rank, rank * 10, rank * 100};
        MPI_Send(v, 3, MPI_INT, 0, 100 + rank, MPI_COMM_WORLD);
    } else {
        int seen = 0;
        for (int k = 1; k < size; k++) {
            int v[3] = {0}, count = -1;
            MPI_Status st;
            st.MPI_ERROR = 12345;
            MPI_Recv(v, 3, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
            CHECK(st.MPI_SOURCE >= 1 && st.MPI_SOURCE < size, "MPI_SOURCE %d", st.MPI_SOURCE);
            CHECK(st.MPI_TAG == 100 + st.MPI_SOURCE, "MPI_TAG %d from %d", st.MPI_TAG, st.MPI_SOURCE);
            CHECK(v[0] == st.MPI_SOURCE && v[2] == 100 * st.MPI_SOURCE, "data from %d", st.MPI_SOURCE);
            MPI_Get_count(&st, MPI_INT, &count);
            CHECK(count == 3, "MPI_Get_count %d", count);
            MPI_Get_count(&st, MPI_DOUBLE, &count);
            CHECK(count == MPI_UNDEFINED, "MPI_Get_count of 12 bytes as MPI_DOUBLE: %d", count);
            seen |= 1 << st.MPI_SOURCE;
        }
        CHECK(seen == ((1 << size) - 2), "senders seen %x", seen);
    }

    /* Later messages must not match the MPI_ANY_TAG receives above. */
    MPI_Barrier(MPI_COMM_WORLD);

    /* MPI_PROC_NULL: completes at once, status says so. */
    {
        MPI_Status st;
        int x = 7;
        MPI_Recv(&x, 1, MPI_INT, MPI_PROC_NULL, 5, MPI_COMM_WORLD, &st);
        CHECK(st.MPI_SOURCE == MPI_PROC_NULL && st.MPI_TAG == MPI_ANY_TAG, "PROC_NULL status %d %d", st.MPI_SOURCE, st.MPI_TAG);
        MPI_Send(&x, 1, MPI_INT, MPI_PROC_NULL, 5, MPI_COMM_WORLD);
    }

    /* Ring with Isend/Irecv and MPI_Waitall on arrays of requests and statuses. */
    {
        int right = (rank + 1) % size, left = (rank + size - 1) % size;
        double out = rank + 0.5, in = -1;
        MPI_Request reqs[2];
        MPI_Status sts[2];
        MPI_Irecv(&in, 1, MPI_DOUBLE, left, 7, MPI_COMM_WORLD, &reqs[0]);
        MPI_Isend(&out, 1, MPI_DOUBLE, right, 7, MPI_COMM_WORLD, &reqs[1]);
        MPI_Waitall(2, reqs, sts);
        CHECK(reqs[0] == MPI_REQUEST_NULL && reqs[1] == MPI_REQUEST_NULL, "requests not freed");
        CHECK(in == left + 0.5, "ring got %g", in);
        CHECK(sts[0].MPI_SOURCE == left && sts[0].MPI_TAG == 7, "ring status %d %d", sts[0].MPI_SOURCE, sts[0].MPI_TAG);
        /* MPI_STATUSES_IGNORE and MPI_Waitany on nothing left to do. */
        MPI_Irecv(&in, 1, MPI_DOUBLE, left, 8, MPI_COMM_WORLD, &reqs[0]);
        MPI_Isend(&out, 1, MPI_DOUBLE, right, 8, MPI_COMM_WORLD, &reqs[1]);
        MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE);
        int idx = -5;
        MPI_Waitany(2, reqs, &idx, MPI_STATUS_IGNORE);
        CHECK(idx == MPI_UNDEFINED, "Waitany index %d", idx);
    }

    /* Collectives with predefined datatypes and operations. */
    {
        int s = rank + 1, sum = 0;
        MPI_Allreduce(&s, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        CHECK(sum == size * (size + 1) / 2, "MPI_SUM %d", sum);
        double d = rank * 1.5, mx = -1;
        MPI_Allreduce(&d, &mx, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        CHECK(mx == (size - 1) * 1.5, "MPI_MAX %g", mx);
        /* MPI_IN_PLACE */
        int p = rank;
        MPI_Allreduce(MPI_IN_PLACE, &p, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
        CHECK(p == 0, "MPI_MIN in place %d", p);
        long lp = 1;
        MPI_Allreduce(MPI_IN_PLACE, &lp, 1, MPI_LONG, MPI_PROD, MPI_COMM_WORLD);
        CHECK(lp == 1, "MPI_PROD %ld", lp);
        /* Pairs: value and index. */
        struct { int v, i; } in2 = {(rank * 7) % size, rank}, out2;
        MPI_Allreduce(&in2, &out2, 1, MPI_2INT, MPI_MAXLOC, MPI_COMM_WORLD);
        int best = -1, who = -1;
        for (int r = 0; r < size; r++)
            if ((r * 7) % size > best) best = (r * 7) % size, who = r;
        CHECK(out2.v == best && out2.i == who, "MPI_2INT MAXLOC %d@%d, expected %d@%d", out2.v, out2.i, best, who);
        struct { double v; int i; } ind = {-(double)rank, rank}, outd;
        MPI_Allreduce(&ind, &outd, 1, MPI_DOUBLE_INT, MPI_MINLOC, MPI_COMM_WORLD);
        CHECK(outd.v == -(double)(size - 1) && outd.i == size - 1, "MPI_DOUBLE_INT MINLOC %g@%d", outd.v, outd.i);
        /* Bcast from the last rank, Reduce to it with MPI_IN_PLACE at the root. */
        int root = size - 1, b = rank == root ? 4242 : 0;
        MPI_Bcast(&b, 1, MPI_INT, root, MPI_COMM_WORLD);
        CHECK(b == 4242, "Bcast %d", b);
        int r = 1;
        if (rank == root)
            MPI_Reduce(MPI_IN_PLACE, &r, 1, MPI_INT, MPI_SUM, root, MPI_COMM_WORLD);
        else
            MPI_Reduce(&r, NULL, 1, MPI_INT, MPI_SUM, root, MPI_COMM_WORLD);
        CHECK(rank != root || r == size, "Reduce in place %d", r);
        /* Gather of MPI_BYTE. */
        unsigned char c = (unsigned char)rank, *all = malloc(size);
        MPI_Gather(&c, 1, MPI_BYTE, all, 1, MPI_BYTE, 0, MPI_COMM_WORLD);
        for (int k = 0; rank == 0 && k < size; k++) CHECK(all[k] == k, "Gather[%d] %d", k, all[k]);
        free(all);
    }

    /* A user-defined datatype and operation. */
    {
        MPI_Type_contiguous(2, MPI_INT, &pair_type);
        MPI_Type_commit(&pair_type);
        int tsize = 0;
        MPI_Type_size(pair_type, &tsize);
        CHECK(tsize == 8, "pair size %d", tsize);
        MPI_Op op;
        MPI_Op_create(pair_op, 1, &op);
        CHECK(op != MPI_OP_NULL && (intptr_t)op >= 0x400, "user op handle %p collides with predefined ones", (void *)op);
        int mine[4] = {1, rank, 2, -rank}, res[4] = {0};
        MPI_Allreduce(mine, res, 2, pair_type, op, MPI_COMM_WORLD);
        CHECK(res[0] == size && res[1] == size - 1 && res[2] == 2 * size && res[3] == 0, "user op result %d %d %d %d", res[0], res[1], res[2], res[3]);
        /* The datatype's envelope: a contiguous of MPI_INT. */
        int ni, na, nd, comb;
        MPI_Type_get_envelope(pair_type, &ni, &na, &nd, &comb);
        CHECK(comb == MPI_COMBINER_CONTIGUOUS && ni == 1 && nd == 1, "envelope %d %d %d %d", ni, na, nd, comb);
        int ints[1];
        MPI_Aint addrs[1];
        MPI_Datatype types[1];
        MPI_Type_get_contents(pair_type, 1, 0, 1, ints, addrs, types);
        CHECK(ints[0] == 2 && types[0] == MPI_INT, "contents %d %p", ints[0], (void *)types[0]);
        MPI_Op_free(&op);
        CHECK(op == MPI_OP_NULL, "Op_free did not set MPI_OP_NULL");
        MPI_Type_free(&pair_type);
        CHECK(pair_type == MPI_DATATYPE_NULL, "Type_free did not set MPI_DATATYPE_NULL");
    }

    /* MPI_Alltoallw with an array of datatypes per peer. */
    {
        int *sb = malloc(size * sizeof(int)), *rb = malloc(size * sizeof(int));
        int *cnt = malloc(size * sizeof(int)), *dsp = malloc(size * sizeof(int));
        MPI_Datatype *ty = malloc(size * sizeof(MPI_Datatype));
        for (int k = 0; k < size; k++) {
            sb[k] = rank * 100 + k;
            rb[k] = -1;
            cnt[k] = 1;
            dsp[k] = k * (int)sizeof(int);
            ty[k] = MPI_INT;
        }
        MPI_Alltoallw(sb, cnt, dsp, ty, rb, cnt, dsp, ty, MPI_COMM_WORLD);
        for (int k = 0; k < size; k++) CHECK(rb[k] == k * 100 + rank, "Alltoallw[%d] %d", k, rb[k]);
        free(sb), free(rb), free(cnt), free(dsp), free(ty);
    }

    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("abi_p2p_coll OK (%d ranks)\n", size);
    MPI_Finalize();
    return 0;
}
