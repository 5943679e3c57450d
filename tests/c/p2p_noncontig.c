/* gridmpi-test: ranks=1,2 timeout=120 */
/*
 * Large messages with non-contiguous datatypes on both sides, different
 * layouts with the same type signature:
 *   - vector (every 3rd double) -> indexed blocks of 2 with gaps
 *   - struct {int; gap; double[2]} x N -> contiguous ints/doubles via struct
 *   - contiguous -> vector with negative stride (reverses the order)
 *   - resized vector (interleaved columns) -> contiguous
 * Gaps in receive buffers must stay untouched. Between rank 0 and rank 1,
 * or with oneself when run on one rank.
 */
#include "testutil.h"

#define N (1 << 19) /* elements: 4 MiB of doubles */

int main(int argc, char **argv)
{
    int size;
    int rank = test_init(&argc, &argv, &size);
    MPI_Comm comm = MPI_COMM_WORLD;
    int sender = rank == 0;
    int receiver = (size == 1) ? rank == 0 : rank == 1;
    int src = 0, dst = size == 1 ? 0 : 1;
    MPI_Request req = MPI_REQUEST_NULL;
    MPI_Status st;
    int count;

    /* 1. vector(N, 1, 3) of doubles -> indexed(N/2 blocks of 2, displacement 5*i) */
    {
        MPI_Datatype svec, ridx;
        MPI_Type_vector(N, 1, 3, MPI_DOUBLE, &svec);
        MPI_Type_commit(&svec);
        int *bl = tu_malloc(sizeof(int) * N / 2), *disp = tu_malloc(sizeof(int) * N / 2);
        for (int i = 0; i < N / 2; i++) {
            bl[i] = 2;
            disp[i] = 5 * i;
        }
        MPI_Type_indexed(N / 2, bl, disp, MPI_DOUBLE, &ridx);
        MPI_Type_commit(&ridx);
        double *sbuf = NULL, *rbuf = NULL;
        if (sender) {
            sbuf = tu_malloc(sizeof(double) * 3 * N);
            for (long i = 0; i < 3L * N; i++)
                sbuf[i] = (i % 3 == 0) ? (double)(i / 3) : -1.0;
            CHECK_MPI(MPI_Isend(sbuf, 1, svec, dst, 1, comm, &req));
        }
        if (receiver) {
            long rlen = 5L * (N / 2);
            rbuf = tu_malloc(sizeof(double) * rlen);
            for (long i = 0; i < rlen; i++)
                rbuf[i] = -7.0;
            CHECK_MPI(MPI_Recv(rbuf, 1, ridx, src, 1, comm, &st));
            MPI_Get_count(&st, ridx, &count);
            CHECK_INT_EQ(count, 1);
            MPI_Get_elements(&st, ridx, &count);
            CHECK_INT_EQ(count, N);
            long bad = 0;
            for (long i = 0; i < rlen; i++) {
                long blk = i / 5, off = i % 5;
                double expect = off < 2 ? (double)(2 * blk + off) : -7.0;
                if (rbuf[i] != expect && bad++ == 0)
                    CHECK(0, "vector->indexed: rbuf[%ld] = %g, expected %g", i, rbuf[i], expect);
            }
            CHECK(bad == 0, "vector->indexed: %ld wrong elements", bad);
        }
        CHECK_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
        free(sbuf);
        free(rbuf);
        free(bl);
        free(disp);
        MPI_Type_free(&svec);
        MPI_Type_free(&ridx);
    }

    /* 2. Array of structs with padding -> two separate arrays (int, double pairs). */
    {
        struct rec { int i; char pad[12]; double d[2]; };
        MPI_Datatype srec, rpair;
        int bl[2] = {1, 2};
        MPI_Aint disp[2] = {offsetof(struct rec, i), offsetof(struct rec, d)};
        MPI_Datatype types[2] = {MPI_INT, MPI_DOUBLE};
        MPI_Type_create_struct(2, bl, disp, types, &srec);
        MPI_Type_commit(&srec);
        MPI_Aint ext, lb;
        MPI_Type_get_extent(srec, &lb, &ext);
        CHECK(ext == sizeof(struct rec), "struct extent %ld, sizeof %zu", (long)ext, sizeof(struct rec));
        int M = N / 4;
        /* Receive side: ints in one array, doubles in another, one struct type
         * with absolute addresses (MPI_BOTTOM). */
        int *ri = NULL;
        double *rd = NULL;
        struct rec *sb = NULL;
        if (sender) {
            sb = tu_malloc(sizeof(struct rec) * M);
            for (int k = 0; k < M; k++) {
                sb[k].i = k;
                memset(sb[k].pad, 0x77, sizeof sb[k].pad);
                sb[k].d[0] = k + 0.25;
                sb[k].d[1] = -k - 0.5;
            }
            CHECK_MPI(MPI_Isend(sb, M, srec, dst, 2, comm, &req));
        }
        if (receiver) {
            ri = tu_malloc(sizeof(int) * (M + 1));
            rd = tu_malloc(sizeof(double) * (2 * M + 1));
            ri[M] = -99;
            rd[2 * M] = -99.0;
            /* Record k lands as ri[k] and rd[2k], rd[2k+1]: one struct type
             * over absolute addresses, received at MPI_BOTTOM. */
            int *bls = tu_malloc(sizeof(int) * 2 * M);
            MPI_Aint *ds = tu_malloc(sizeof(MPI_Aint) * 2 * M);
            MPI_Datatype *ts = tu_malloc(sizeof(MPI_Datatype) * 2 * M);
            for (int k = 0; k < M; k++) {
                bls[2 * k] = 1;
                MPI_Get_address(&ri[k], &ds[2 * k]);
                ts[2 * k] = MPI_INT;
                bls[2 * k + 1] = 2;
                MPI_Get_address(&rd[2 * k], &ds[2 * k + 1]);
                ts[2 * k + 1] = MPI_DOUBLE;
            }
            MPI_Type_create_struct(2 * M, bls, ds, ts, &rpair);
            MPI_Type_commit(&rpair);
            CHECK_MPI(MPI_Recv(MPI_BOTTOM, 1, rpair, src, 2, comm, &st));
            MPI_Get_elements(&st, rpair, &count);
            CHECK_INT_EQ(count, 3 * M);
            long bad = 0;
            for (int k = 0; k < M; k++)
                if (ri[k] != k || rd[2 * k] != k + 0.25 || rd[2 * k + 1] != -k - 0.5)
                    bad++;
            CHECK(bad == 0, "struct->split arrays: %ld wrong records", bad);
            CHECK(ri[M] == -99 && rd[2 * M] == -99.0, "struct->split arrays wrote past the end");
            MPI_Type_free(&rpair);
            free(bls);
            free(ds);
            free(ts);
        }
        CHECK_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
        free(sb);
        free(ri);
        free(rd);
        MPI_Type_free(&srec);
    }

    /* 3. contiguous -> vector with negative stride: reversed order. */
    {
        MPI_Datatype rev;
        MPI_Type_vector(N, 1, -1, MPI_INT, &rev);
        MPI_Type_commit(&rev);
        int *sb = NULL, *rb = NULL;
        if (sender) {
            sb = tu_malloc(sizeof(int) * N);
            fill_ints(sb, N, 3);
            CHECK_MPI(MPI_Isend(sb, N, MPI_INT, dst, 3, comm, &req));
        }
        if (receiver) {
            rb = tu_malloc(sizeof(int) * N);
            /* The type starts at the buffer address and goes downwards. */
            CHECK_MPI(MPI_Recv(rb + N - 1, 1, rev, src, 3, comm, &st));
            long bad = 0;
            for (int i = 0; i < N; i++)
                if (rb[N - 1 - i] != (int)(3u * 1000u + (unsigned)i))
                    bad++;
            CHECK(bad == 0, "contiguous->negative-stride vector: %ld wrong", bad);
        }
        CHECK_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
        free(sb);
        free(rb);
        MPI_Type_free(&rev);
    }

    /* 4. Column of a row-major matrix (resized so consecutive columns
     * interleave), sent as 3 columns -> contiguous. */
    {
        const int R = 1024, C = 512;
        MPI_Datatype col, colr;
        MPI_Type_vector(R, 1, C, MPI_DOUBLE, &col);
        MPI_Type_create_resized(col, 0, sizeof(double), &colr);
        MPI_Type_commit(&colr);
        double *m = NULL, *rb = NULL;
        if (sender) {
            m = tu_malloc(sizeof(double) * R * C);
            for (int i = 0; i < R; i++)
                for (int j = 0; j < C; j++)
                    m[(long)i * C + j] = i * 10000.0 + j;
            CHECK_MPI(MPI_Isend(m + 5, 3, colr, dst, 4, comm, &req));
        }
        if (receiver) {
            rb = tu_malloc(sizeof(double) * 3 * R);
            CHECK_MPI(MPI_Recv(rb, 3 * R, MPI_DOUBLE, src, 4, comm, &st));
            MPI_Get_count(&st, MPI_DOUBLE, &count);
            CHECK_INT_EQ(count, 3 * R);
            long bad = 0;
            for (int c = 0; c < 3; c++)
                for (int i = 0; i < R; i++)
                    if (rb[c * R + i] != i * 10000.0 + 5 + c)
                        bad++;
            CHECK(bad == 0, "resized column type -> contiguous: %ld wrong", bad);
        }
        CHECK_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
        free(m);
        free(rb);
        MPI_Type_free(&col);
        MPI_Type_free(&colr);
    }

    MPI_Finalize();
    return test_finish();
}
