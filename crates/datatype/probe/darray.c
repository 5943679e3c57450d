/* MPICH reference for darray/subarray: bounds and the packed order of the
 * local elements (indices into the global array). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static void show(const char *name, MPI_Datatype t, int total) {
    MPI_Aint lb, ext, tlb, text; int sz;
    MPI_Type_commit(&t);
    MPI_Type_get_extent(t, &lb, &ext);
    MPI_Type_get_true_extent(t, &tlb, &text);
    MPI_Type_size(t, &sz);
    int *buf = malloc(sizeof(int) * total); int *out = malloc(sizeof(int) * total + 4);
    for (int i = 0; i < total; i++) buf[i] = i;
    int pos = 0;
    MPI_Pack(buf, 1, t, out, sizeof(int) * total + 4, &pos, MPI_COMM_WORLD);
    printf("%s: size=%d lb=%ld extent=%ld true_lb=%ld true_extent=%ld elems=", name, sz, lb, ext, tlb, text);
    for (int i = 0; i < pos / 4; i++) printf("%s%d", i ? "," : "", out[i]);
    printf("\n");
    free(buf); free(out);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    MPI_Datatype t;
    char name[200];
    /* 2-D 6x7 array on a 2x3 grid: block x cyclic(2), both orders */
    {
        int g[2] = {6, 7}, d[2] = {MPI_DISTRIBUTE_BLOCK, MPI_DISTRIBUTE_CYCLIC}, a[2] = {MPI_DISTRIBUTE_DFLT_DARG, 2}, p[2] = {2, 3};
        for (int r = 0; r < 6; r++) {
            MPI_Type_create_darray(6, r, 2, g, d, a, p, MPI_ORDER_C, MPI_INT, &t);
            sprintf(name, "darray C 6x7 block,cyclic(2) 2x3 rank %d", r); show(name, t, 42);
            MPI_Type_create_darray(6, r, 2, g, d, a, p, MPI_ORDER_FORTRAN, MPI_INT, &t);
            sprintf(name, "darray F 6x7 block,cyclic(2) 2x3 rank %d", r); show(name, t, 42);
        }
    }
    /* 1-D: cyclic default, block default uneven, none */
    {
        int g[1] = {10}, d[1] = {MPI_DISTRIBUTE_CYCLIC}, a[1] = {MPI_DISTRIBUTE_DFLT_DARG}, p[1] = {3};
        for (int r = 0; r < 3; r++) { MPI_Type_create_darray(3, r, 1, g, d, a, p, MPI_ORDER_C, MPI_INT, &t);
            sprintf(name, "darray 10 cyclic 3 rank %d", r); show(name, t, 10); }
        d[0] = MPI_DISTRIBUTE_BLOCK;
        for (int r = 0; r < 3; r++) { MPI_Type_create_darray(3, r, 1, g, d, a, p, MPI_ORDER_C, MPI_INT, &t);
            sprintf(name, "darray 10 block 3 rank %d", r); show(name, t, 10); }
        g[0] = 7; p[0] = 4;
        for (int r = 0; r < 4; r++) { MPI_Type_create_darray(4, r, 1, g, d, a, p, MPI_ORDER_C, MPI_INT, &t);
            sprintf(name, "darray 7 block 4 rank %d", r); show(name, t, 7); }
        g[0] = 10; p[0] = 3; d[0] = MPI_DISTRIBUTE_CYCLIC; a[0] = 3;
        for (int r = 0; r < 3; r++) { MPI_Type_create_darray(3, r, 1, g, d, a, p, MPI_ORDER_C, MPI_INT, &t);
            sprintf(name, "darray 10 cyclic(3) 3 rank %d", r); show(name, t, 10); }
        d[0] = MPI_DISTRIBUTE_BLOCK; a[0] = 5; p[0] = 3;
        for (int r = 0; r < 3; r++) { MPI_Type_create_darray(3, r, 1, g, d, a, p, MPI_ORDER_C, MPI_INT, &t);
            sprintf(name, "darray 10 block(5) 3 rank %d", r); show(name, t, 10); }
        d[0] = MPI_DISTRIBUTE_BLOCK; a[0] = 3; p[0] = 3;
        int rc = MPI_Type_create_darray(3, 0, 1, g, d, a, p, MPI_ORDER_C, MPI_INT, &t);
        printf("block(3) on 10/3: rc=%d\n", rc);
        d[0] = MPI_DISTRIBUTE_NONE; a[0] = MPI_DISTRIBUTE_DFLT_DARG; p[0] = 1;
        MPI_Type_create_darray(1, 0, 1, g, d, a, p, MPI_ORDER_C, MPI_INT, &t); show("darray 10 none 1", t, 10);
    }
    /* 3-D with none in the middle, order F */
    {
        int g[3] = {4, 3, 5}, d[3] = {MPI_DISTRIBUTE_CYCLIC, MPI_DISTRIBUTE_NONE, MPI_DISTRIBUTE_BLOCK},
            a[3] = {MPI_DISTRIBUTE_DFLT_DARG, MPI_DISTRIBUTE_DFLT_DARG, MPI_DISTRIBUTE_DFLT_DARG}, p[3] = {2, 1, 2};
        for (int r = 0; r < 4; r++) {
            MPI_Type_create_darray(4, r, 3, g, d, a, p, MPI_ORDER_FORTRAN, MPI_INT, &t);
            sprintf(name, "darray F 4x3x5 cyc,none,block 2x1x2 rank %d", r); show(name, t, 60);
            MPI_Type_create_darray(4, r, 3, g, d, a, p, MPI_ORDER_C, MPI_INT, &t);
            sprintf(name, "darray C 4x3x5 cyc,none,block 2x1x2 rank %d", r); show(name, t, 60);
        }
    }
    /* darray of a resized old type: bounds */
    {
        MPI_Datatype r; MPI_Type_create_resized(MPI_INT, -4, 8, &r); MPI_Type_commit(&r);
        int g[1] = {6}, d[1] = {MPI_DISTRIBUTE_BLOCK}, a[1] = {MPI_DISTRIBUTE_DFLT_DARG}, p[1] = {2};
        MPI_Type_create_darray(2, 1, 1, g, d, a, p, MPI_ORDER_C, r, &t);
        MPI_Type_commit(&t);
        MPI_Aint lb, ext, tlb, text; MPI_Type_get_extent(t, &lb, &ext); MPI_Type_get_true_extent(t, &tlb, &text);
        printf("darray 6 block 2 rank1 of rsz(int,-4,8): lb=%ld extent=%ld true_lb=%ld true_extent=%ld\n", lb, ext, tlb, text);
    }
    /* process with no elements */
    {
        int g[1] = {2}, d[1] = {MPI_DISTRIBUTE_BLOCK}, a[1] = {MPI_DISTRIBUTE_DFLT_DARG}, p[1] = {4};
        MPI_Type_create_darray(4, 3, 1, g, d, a, p, MPI_ORDER_C, MPI_INT, &t); show("darray 2 block 4 rank 3", t, 2);
        d[0] = MPI_DISTRIBUTE_CYCLIC;
        MPI_Type_create_darray(4, 3, 1, g, d, a, p, MPI_ORDER_C, MPI_INT, &t); show("darray 2 cyclic 4 rank 3", t, 2);
    }
    /* subarray 3-D */
    {
        int s[3] = {3, 4, 5}, ss[3] = {2, 2, 3}, st[3] = {1, 1, 2};
        MPI_Type_create_subarray(3, s, ss, st, MPI_ORDER_C, MPI_INT, &t); show("subarray C 3x4x5 2x2x3 @1,1,2", t, 60);
        MPI_Type_create_subarray(3, s, ss, st, MPI_ORDER_FORTRAN, MPI_INT, &t); show("subarray F 3x4x5 2x2x3 @1,1,2", t, 60);
    }
    MPI_Finalize();
    return 0;
}
