/* gridmpi-test: ranks=1,2,3,5,8 timeout=60 */
/*
 * User-defined reduction operations: a non-commutative one (2x2 matrix
 * product modulo a prime, on a contiguous datatype) must be applied in rank
 * order by Reduce (every root), Allreduce, Scan, Exscan, Reduce_scatter_block
 * and Reduce_local; a commutative one on a struct datatype with a gap;
 * MPI_Op_commutative reports the flag given to Op_create (and true for
 * predefined ops); Op_free sets MPI_OP_NULL; MPI_Reduce_local with
 * predefined ops.
 */
#include "testutil.h"

#define P 1000003LL
typedef struct { long long m[4]; } mat;

static void matmul(const mat *a, const mat *b, mat *c)
{
    mat t;
    t.m[0] = (a->m[0] * b->m[0] + a->m[1] * b->m[2]) % P;
    t.m[1] = (a->m[0] * b->m[1] + a->m[1] * b->m[3]) % P;
    t.m[2] = (a->m[2] * b->m[0] + a->m[3] * b->m[2]) % P;
    t.m[3] = (a->m[2] * b->m[1] + a->m[3] * b->m[3]) % P;
    *c = t;
}

static int op_calls;
/* inout[i] = in[i] * inout[i]: in holds the lower-ranked operand. */
static void matop(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    op_calls++;
    mat *a = in, *b = inout;
    for (int i = 0; i < *len; i++)
        matmul(&a[i], &b[i], &b[i]);
}

static mat rank_mat(int r, int i)
{
    mat x = {{(r + 2 + i) % 7 + 1, r + 1, i % 3, (r * 3 + i) % 5 + 1}};
    return x;
}

static mat product(int lo, int hi, int i) /* M_lo * ... * M_hi */
{
    mat acc = rank_mat(lo, i);
    for (int r = lo + 1; r <= hi; r++) {
        mat x = rank_mat(r, i);
        matmul(&acc, &x, &acc);
    }
    return acc;
}

static int mateq(const mat *a, const mat *b)
{
    return memcmp(a->m, b->m, sizeof a->m) == 0;
}

struct rec { int a; double gap; int b; };
static void recop(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    struct rec *x = in, *y = inout;
    for (int i = 0; i < *len; i++) {
        y[i].a += x[i].a;
        y[i].b = y[i].b > x[i].b ? y[i].b : x[i].b;
    }
}

int main(int argc, char **argv)
{
    int size;
    int rank = test_init(&argc, &argv, &size);
    MPI_Comm comm = MPI_COMM_WORLD;
    MPI_Datatype mt;
    MPI_Type_contiguous(4, MPI_LONG_LONG, &mt);
    MPI_Type_commit(&mt);
    MPI_Op nc, cm;
    CHECK_MPI(MPI_Op_create(matop, 0, &nc));
    int commute = -1;
    CHECK_MPI(MPI_Op_commutative(nc, &commute));
    CHECK(commute == 0, "Op_commutative of a non-commutative op gave %d", commute);
    CHECK_MPI(MPI_Op_commutative(MPI_SUM, &commute));
    CHECK(commute == 1, "Op_commutative(MPI_SUM) gave %d", commute);

    enum { K = 5 };
    mat in[K], out[K];
    for (int i = 0; i < K; i++)
        in[i] = rank_mat(rank, i);

    for (int root = 0; root < size; root++) {
        memset(out, 0, sizeof out);
        CHECK_MPI(MPI_Reduce(in, out, K, mt, nc, root, comm));
        if (rank == root)
            for (int i = 0; i < K; i++) {
                mat e = product(0, size - 1, i);
                if (!CHECK(mateq(&out[i], &e), "non-commutative Reduce (root %d) element %d not in rank order", root, i))
                    break;
            }
    }
    CHECK_MPI(MPI_Allreduce(in, out, K, mt, nc, comm));
    for (int i = 0; i < K; i++) {
        mat e = product(0, size - 1, i);
        if (!CHECK(mateq(&out[i], &e), "non-commutative Allreduce element %d not in rank order", i))
            break;
    }
    CHECK_MPI(MPI_Scan(in, out, K, mt, nc, comm));
    for (int i = 0; i < K; i++) {
        mat e = product(0, rank, i);
        if (!CHECK(mateq(&out[i], &e), "non-commutative Scan element %d", i))
            break;
    }
    CHECK_MPI(MPI_Exscan(in, out, K, mt, nc, comm));
    if (rank > 0)
        for (int i = 0; i < K; i++) {
            mat e = product(0, rank - 1, i);
            if (!CHECK(mateq(&out[i], &e), "non-commutative Exscan element %d", i))
                break;
        }
    {
        mat *sb = tu_malloc(sizeof(mat) * 2 * size), rb[2];
        for (int r = 0; r < size; r++)
            for (int j = 0; j < 2; j++)
                sb[r * 2 + j] = rank_mat(rank, r * 2 + j);
        CHECK_MPI(MPI_Reduce_scatter_block(sb, rb, 2, mt, nc, comm));
        for (int j = 0; j < 2; j++) {
            mat e = product(0, size - 1, rank * 2 + j);
            CHECK(mateq(&rb[j], &e), "non-commutative Reduce_scatter_block element %d", j);
        }
        free(sb);
    }
    /* Reduce_local: inout = in * inout. */
    {
        mat a = rank_mat(1, 0), b = rank_mat(2, 0), e;
        matmul(&a, &b, &e);
        CHECK_MPI(MPI_Reduce_local(&a, &b, 1, mt, nc));
        CHECK(mateq(&b, &e), "Reduce_local with a non-commutative op: wrong operand order");
    }
    CHECK(op_calls > 0 || size == 1, "the user function was never called");

    /* Commutative op on a struct type with a gap. */
    {
        MPI_Datatype rt;
        int bl[2] = {1, 1};
        MPI_Aint d[2] = {offsetof(struct rec, a), offsetof(struct rec, b)};
        MPI_Datatype ty[2] = {MPI_INT, MPI_INT};
        MPI_Type_create_struct(2, bl, d, ty, &rt);
        MPI_Datatype rtr;
        MPI_Type_create_resized(rt, 0, sizeof(struct rec), &rtr);
        MPI_Type_commit(&rtr);
        CHECK_MPI(MPI_Op_create(recop, 1, &cm));
        CHECK_MPI(MPI_Op_commutative(cm, &commute));
        CHECK(commute == 1, "Op_commutative of a commutative op gave %d", commute);
        struct rec ri[3], ro[3];
        for (int i = 0; i < 3; i++) {
            ri[i].a = rank + i;
            ri[i].b = (rank * 7 + i) % 5;
            ri[i].gap = -1;
            ro[i].gap = 42;
        }
        CHECK_MPI(MPI_Allreduce(ri, ro, 3, rtr, cm, comm));
        for (int i = 0; i < 3; i++) {
            int eb = 0;
            for (int r = 0; r < size; r++)
                if ((r * 7 + i) % 5 > eb)
                    eb = (r * 7 + i) % 5;
            CHECK(ro[i].a == size * (size - 1) / 2 + size * i && ro[i].b == eb, "struct op element %d: a %d b %d", i,
                  ro[i].a, ro[i].b);
            CHECK(ro[i].gap == 42, "user op / type wrote into the gap");
        }
        CHECK_MPI(MPI_Op_free(&cm));
        CHECK(cm == MPI_OP_NULL, "Op_free did not set MPI_OP_NULL");
        MPI_Type_free(&rt);
        MPI_Type_free(&rtr);
    }

    /* Reduce_local with predefined ops. */
    {
        int a[4] = {1, 5, -3, 8}, b[4] = {2, 2, 2, 2};
        CHECK_MPI(MPI_Reduce_local(a, b, 4, MPI_INT, MPI_SUM));
        CHECK(b[0] == 3 && b[1] == 7 && b[2] == -1 && b[3] == 10, "Reduce_local SUM");
        CHECK_MPI(MPI_Reduce_local(a, b, 4, MPI_INT, MPI_MAX));
        CHECK(b[0] == 3 && b[1] == 7 && b[2] == -1 && b[3] == 10, "Reduce_local MAX");
        double x[2] = {1.5, 2}, y[2] = {2, 0.25};
        CHECK_MPI(MPI_Reduce_local(x, y, 2, MPI_DOUBLE, MPI_PROD));
        CHECK(y[0] == 3.0 && y[1] == 0.5, "Reduce_local PROD double");
        CHECK_MPI(MPI_Reduce_local(x, y, 0, MPI_DOUBLE, MPI_PROD));
    }

    CHECK_MPI(MPI_Op_free(&nc));
    MPI_Type_free(&mt);
    MPI_Finalize();
    return test_finish();
}
