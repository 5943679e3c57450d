/* gridmpi-test: ranks=1,2,3,5,8 timeout=60 */
/*
 * Scan, Exscan, Reduce_scatter, Reduce_scatter_block: with MPI_SUM and
 * MPI_MAX on ints and doubles, MPI_IN_PLACE where allowed, varying
 * recvcounts with zeros, exscan's rank 0 buffer left undefined (not
 * checked) and rank 1 getting rank 0's value.
 */
#include "testutil.h"

#define CNT 9

int main(int argc, char **argv)
{
    int size;
    int rank = test_init(&argc, &argv, &size);
    MPI_Comm comm = MPI_COMM_WORLD;
    int in[CNT], out[CNT];
    double din[CNT], dout[CNT];

    /* Scan SUM: prefix sums including self. */
    for (int i = 0; i < CNT; i++)
        in[i] = rank * 10 + i;
    CHECK_MPI(MPI_Scan(in, out, CNT, MPI_INT, MPI_SUM, comm));
    for (int i = 0; i < CNT; i++) {
        int e = 10 * rank * (rank + 1) / 2 + (rank + 1) * i;
        if (!CHECK(out[i] == e, "Scan SUM element %d = %d, expected %d", i, out[i], e))
            break;
    }
    /* Scan MAX in place on doubles: values go down then up. */
    for (int i = 0; i < CNT; i++)
        dout[i] = (double)((rank * 5 + i) % 7);
    CHECK_MPI(MPI_Scan(MPI_IN_PLACE, dout, CNT, MPI_DOUBLE, MPI_MAX, comm));
    for (int i = 0; i < CNT; i++) {
        double e = 0;
        for (int r = 0; r <= rank; r++)
            if ((r * 5 + i) % 7 > e)
                e = (r * 5 + i) % 7;
        if (!CHECK(dout[i] == e, "Scan MAX IN_PLACE element %d = %g, expected %g", i, dout[i], e))
            break;
    }

    /* Exscan SUM: rank r gets the sum over 0..r-1; rank 0 undefined. */
    for (int i = 0; i < CNT; i++) {
        in[i] = rank + i;
        out[i] = -1;
    }
    CHECK_MPI(MPI_Exscan(in, out, CNT, MPI_INT, MPI_SUM, comm));
    if (rank > 0)
        for (int i = 0; i < CNT; i++) {
            int e = rank * (rank - 1) / 2 + rank * i;
            if (!CHECK(out[i] == e, "Exscan SUM element %d = %d, expected %d", i, out[i], e))
                break;
        }
    for (int i = 0; i < CNT; i++)
        out[i] = rank * 3 + i;
    CHECK_MPI(MPI_Exscan(MPI_IN_PLACE, out, CNT, MPI_INT, MPI_MAX, comm));
    if (rank > 0)
        for (int i = 0; i < CNT; i++)
            if (!CHECK(out[i] == (rank - 1) * 3 + i, "Exscan MAX IN_PLACE element %d = %d", i, out[i]))
                break;

    /* Reduce_scatter_block: each rank gets CNT elements of the sum. */
    {
        int *sb = tu_malloc(sizeof(int) * CNT * size), *rb = tu_malloc(sizeof(int) * CNT * size);
        for (int i = 0; i < CNT * size; i++)
            sb[i] = rank + i;
        CHECK_MPI(MPI_Reduce_scatter_block(sb, rb, CNT, MPI_INT, MPI_SUM, comm));
        for (int i = 0; i < CNT; i++) {
            int e = size * (size - 1) / 2 + size * (rank * CNT + i);
            if (!CHECK(rb[i] == e, "Reduce_scatter_block element %d = %d, expected %d", i, rb[i], e))
                break;
        }
        for (int i = 0; i < CNT * size; i++)
            rb[i] = rank * (i + 1);
        CHECK_MPI(MPI_Reduce_scatter_block(MPI_IN_PLACE, rb, CNT, MPI_INT, MPI_MAX, comm));
        for (int i = 0; i < CNT; i++) {
            int e = (size - 1) * (rank * CNT + i + 1);
            if (!CHECK(rb[i] == e, "Reduce_scatter_block IN_PLACE element %d = %d, expected %d", i, rb[i], e))
                break;
        }
        free(sb);
        free(rb);
    }

    /* Reduce_scatter with counts r % 3 (zeros included). */
    {
        int *counts = tu_malloc(sizeof(int) * size), total = 0, before = 0;
        for (int r = 0; r < size; r++) {
            counts[r] = r % 3;
            if (r < rank)
                before += counts[r];
            total += counts[r];
        }
        double *sb = tu_malloc(sizeof(double) * (total + 1)), *rb = tu_malloc(sizeof(double) * (total + 1));
        for (int i = 0; i < total; i++)
            sb[i] = rank * 0.5 + i;
        for (int i = 0; i <= total; i++)
            rb[i] = -1;
        CHECK_MPI(MPI_Reduce_scatter(sb, rb, counts, MPI_DOUBLE, MPI_SUM, comm));
        for (int i = 0; i < counts[rank]; i++) {
            double e = 0.5 * size * (size - 1) / 2 + size * (double)(before + i);
            CHECK(rb[i] == e, "Reduce_scatter element %d = %g, expected %g", i, rb[i], e);
        }
        CHECK(rb[counts[rank]] == -1, "Reduce_scatter wrote past recvcounts[rank]");
        for (int i = 0; i < total; i++)
            rb[i] = rank + i;
        CHECK_MPI(MPI_Reduce_scatter(MPI_IN_PLACE, rb, counts, MPI_DOUBLE, MPI_MIN, comm));
        for (int i = 0; i < counts[rank]; i++)
            CHECK(rb[i] == before + i, "Reduce_scatter IN_PLACE MIN element %d = %g", i, rb[i]);
        free(counts);
        free(sb);
        free(rb);
    }
    (void)din;

    MPI_Finalize();
    return test_finish();
}
