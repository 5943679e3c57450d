/* MPICH's MPI_Pack on the layouts of examples/pack_bench.rs. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static double best(MPI_Datatype t, int count, const void *src, void *out, int outsize) {
    double b = 1e9;
    for (int r = 0; r < 20; r++) {
        int pos = 0;
        double t0 = MPI_Wtime();
        MPI_Pack(src, count, t, out, outsize, &pos, MPI_COMM_SELF);
        double dt = MPI_Wtime() - t0;
        if (dt < b) b = dt;
    }
    return b;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int n = 1000000;
    double *src = malloc(sizeof(double) * 2 * n);
    for (int i = 0; i < 2 * n; i++) src[i] = i;
    char *out = malloc(8 * n);
    MPI_Datatype v, v4, rows, c, s;
    MPI_Type_vector(n, 1, 2, MPI_DOUBLE, &v); MPI_Type_commit(&v);
    MPI_Type_vector(n / 4, 4, 8, MPI_DOUBLE, &v4); MPI_Type_commit(&v4);
    MPI_Type_vector(1000, 1000, 2000, MPI_DOUBLE, &rows); MPI_Type_commit(&rows);
    MPI_Type_contiguous(n, MPI_DOUBLE, &c); MPI_Type_commit(&c);
    int bl[2] = {1, 1}; MPI_Aint d[2] = {0, 8}; MPI_Datatype ty[2] = {MPI_INT, MPI_DOUBLE};
    MPI_Type_create_struct(2, bl, d, ty, &s); MPI_Type_commit(&s);
    double t;
    t = best(v, 1, src, out, 8 * n); printf("MPICH pack vector(1M, 1, 2, double)        %8.2f ms %6.2f ns/element\n", t * 1e3, t * 1e9 / n);
    t = best(v4, 1, src, out, 8 * n); printf("MPICH pack vector(250k, 4, 8, double)      %8.2f ms %6.2f ns/element\n", t * 1e3, t * 1e9 / n);
    t = best(rows, 1, src, out, 8 * n); printf("MPICH pack vector(1000, 1000, 2000, double) %7.2f ms %6.2f ns/element\n", t * 1e3, t * 1e9 / n);
    t = best(c, 1, src, out, 8 * n); printf("MPICH pack contiguous(1M, double)          %8.2f ms %6.2f ns/element\n", t * 1e3, t * 1e9 / n);
    t = best(s, 500000, src, out, 8 * n); printf("MPICH pack 500k struct{int; double}        %8.2f ms %6.2f ns/element\n", t * 1e3, t * 1e9 / n);
    MPI_Finalize();
    return 0;
}
