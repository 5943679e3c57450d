/* gridmpi-test: ranks=2,4,8 min-ranks=2 timeout=60 */
/*
 * Derived datatypes between ranks, with a different layout on each side but
 * the same type signature: a struct array sent as struct and received as an
 * indexed/hvector layout; a 2-D subarray (halo) sent to a neighbour and
 * received contiguously; send types freed while the sends (Isend, large)
 * are still pending; a count of several derived elements; mismatched counts
 * within the signature (receive count larger than sent).
 */
#include "testutil.h"

struct particle { double pos[3]; int id; float mass; };

int main(int argc, char **argv)
{
    int size;
    int rank = test_init(&argc, &argv, &size);
    MPI_Comm comm = MPI_COMM_WORLD;
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    MPI_Status st;

    /* 1. particles as struct -> separate arrays via an hindexed-of-struct. */
    {
        enum { NP = 5000 };
        MPI_Datatype ptype;
        int bl[3] = {3, 1, 1};
        MPI_Aint d[3] = {offsetof(struct particle, pos), offsetof(struct particle, id), offsetof(struct particle, mass)};
        MPI_Datatype ty[3] = {MPI_DOUBLE, MPI_INT, MPI_FLOAT};
        MPI_Type_create_struct(3, bl, d, ty, &ptype);
        MPI_Type_commit(&ptype);
        struct particle *ps = tu_malloc(sizeof(struct particle) * NP);
        for (int i = 0; i < NP; i++) {
            ps[i].pos[0] = rank + i * 0.5;
            ps[i].pos[1] = -i;
            ps[i].pos[2] = i * 1e-3;
            ps[i].id = rank * NP + i;
            ps[i].mass = (float)(i % 17);
        }
        MPI_Request sreq;
        CHECK_MPI(MPI_Isend(ps, NP, ptype, right, 1, comm, &sreq));
        /* Free the send type while the send is pending. */
        MPI_Type_free(&ptype);
        /* Receive side: one record = 3 doubles in pos[], 1 int in ids[], 1
         * float in masses[]; a struct with those three arrays' element
         * positions, resized so that count NP steps one element along each. */
        double *pos = tu_malloc(sizeof(double) * 3 * NP);
        int *ids = tu_malloc(sizeof(int) * NP);
        float *masses = tu_malloc(sizeof(float) * NP);
        /* Build with absolute addresses: one struct of 3*NP blocks. */
        int *rbl = tu_malloc(sizeof(int) * 3 * NP);
        MPI_Aint *rd = tu_malloc(sizeof(MPI_Aint) * 3 * NP);
        MPI_Datatype *rty = tu_malloc(sizeof(MPI_Datatype) * 3 * NP);
        for (int i = 0; i < NP; i++) {
            rbl[3 * i] = 3;
            MPI_Get_address(&pos[3 * i], &rd[3 * i]);
            rty[3 * i] = MPI_DOUBLE;
            rbl[3 * i + 1] = 1;
            MPI_Get_address(&ids[i], &rd[3 * i + 1]);
            rty[3 * i + 1] = MPI_INT;
            rbl[3 * i + 2] = 1;
            MPI_Get_address(&masses[i], &rd[3 * i + 2]);
            rty[3 * i + 2] = MPI_FLOAT;
        }
        MPI_Datatype rtype;
        MPI_Type_create_struct(3 * NP, rbl, rd, rty, &rtype);
        MPI_Type_commit(&rtype);
        CHECK_MPI(MPI_Recv(MPI_BOTTOM, 1, rtype, left, 1, comm, &st));
        MPI_Type_free(&rtype);
        CHECK_MPI(MPI_Wait(&sreq, MPI_STATUS_IGNORE));
        int bad = 0;
        for (int i = 0; i < NP; i++)
            bad += pos[3 * i] != left + i * 0.5 || pos[3 * i + 1] != -i || pos[3 * i + 2] != i * 1e-3 ||
                   ids[i] != left * NP + i || masses[i] != (float)(i % 17);
        CHECK(bad == 0, "struct -> split arrays: %d wrong particles", bad);
        free(ps);
        free(pos);
        free(ids);
        free(masses);
        free(rbl);
        free(rd);
        free(rty);
    }

    /* 2. Halo exchange: column of an NxN C-order matrix (vector) to the right
     * neighbour, received as a row (contiguous) – and a 2-D subarray block. */
    {
        enum { N = 300 };
        double *m = tu_malloc(sizeof(double) * N * N);
        for (int i = 0; i < N * N; i++)
            m[i] = rank * 1e6 + i;
        MPI_Datatype col, block;
        MPI_Type_vector(N, 1, N, MPI_DOUBLE, &col);
        MPI_Type_commit(&col);
        int sizes[2] = {N, N}, sub[2] = {100, 50}, starts[2] = {10, 200};
        MPI_Type_create_subarray(2, sizes, sub, starts, MPI_ORDER_C, MPI_DOUBLE, &block);
        MPI_Type_commit(&block);
        double *row = tu_malloc(sizeof(double) * N), *blk = tu_malloc(sizeof(double) * 100 * 50);
        MPI_Request reqs[2];
        CHECK_MPI(MPI_Isend(m, 1, col, right, 2, comm, &reqs[0]));
        CHECK_MPI(MPI_Isend(m, 1, block, right, 3, comm, &reqs[1]));
        MPI_Type_free(&col);
        MPI_Type_free(&block);
        CHECK_MPI(MPI_Recv(row, N, MPI_DOUBLE, left, 2, comm, &st));
        /* Receive count larger than needed: 5000 of a 6000-double buffer. */
        CHECK_MPI(MPI_Recv(blk, 100 * 50 + 7, MPI_DOUBLE, left, 3, comm, &st));
        int count;
        MPI_Get_count(&st, MPI_DOUBLE, &count);
        CHECK_INT_EQ(count, 5000);
        CHECK_MPI(MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE));
        int bad = 0;
        for (int i = 0; i < N; i++)
            bad += row[i] != left * 1e6 + (double)i * N;
        CHECK(bad == 0, "column -> row: %d wrong", bad);
        bad = 0;
        for (int i = 0; i < 100; i++)
            for (int j = 0; j < 50; j++)
                bad += blk[i * 50 + j] != left * 1e6 + (double)(10 + i) * N + 200 + j;
        CHECK(bad == 0, "subarray block: %d wrong", bad);
        free(m);
        free(row);
        free(blk);
    }

    /* 3. count of several derived elements on one side, a different
     * grouping on the other: 6 x contiguous(4) ints received as 8 x
     * vector(3,1,2) ints. */
    {
        MPI_Datatype c4, v3;
        MPI_Type_contiguous(4, MPI_INT, &c4);
        MPI_Type_commit(&c4);
        MPI_Type_vector(3, 1, 2, MPI_INT, &v3);
        MPI_Datatype v3r;
        MPI_Type_create_resized(v3, 0, 5 * sizeof(int), &v3r);
        MPI_Type_commit(&v3r);
        int out[24], in[40];
        fill_ints(out, 24, rank + 70);
        for (int i = 0; i < 40; i++)
            in[i] = -1;
        CHECK_MPI(MPI_Sendrecv(out, 6, c4, right, 4, in, 8, v3r, left, 4, comm, &st));
        int count;
        MPI_Get_count(&st, v3r, &count);
        CHECK_INT_EQ(count, 8);
        int k = 0, bad = 0;
        for (int e = 0; e < 8; e++)
            for (int j = 0; j < 3; j++) {
                int expect = (int)((unsigned)(left + 70) * 1000u + (unsigned)k++);
                bad += in[e * 5 + 2 * j] != expect;
            }
        for (int e = 0; e < 8; e++)
            bad += in[e * 5 + 1] != -1 || in[e * 5 + 3] != -1;
        CHECK(bad == 0, "contiguous(4) x 6 -> resized vector(3) x 8: %d wrong", bad);
        MPI_Type_free(&c4);
        MPI_Type_free(&v3);
        MPI_Type_free(&v3r);
    }

    MPI_Finalize();
    return test_finish();
}
