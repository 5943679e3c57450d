/* More MPICH reference values: struct padding rules, markers, zero blocks. */
#include <mpi.h>
#include <stdio.h>

static void show(const char *name, MPI_Datatype t) {
    MPI_Aint lb, ext, tlb, text; MPI_Count sz;
    MPI_Type_commit(&t);
    MPI_Type_get_extent(t, &lb, &ext);
    MPI_Type_get_true_extent(t, &tlb, &text);
    MPI_Type_size_x(t, &sz);
    printf("%-36s size=%lld lb=%ld extent=%ld true_lb=%ld true_extent=%ld\n", name, sz, lb, ext, tlb, text);
}
#define STRUCT(name, n, ...) do { int bl[n]; MPI_Aint d[n]; MPI_Datatype ty[n]; \
    struct { int b; MPI_Aint d; MPI_Datatype t; } e[n] = { __VA_ARGS__ }; \
    for (int i = 0; i < n; i++) { bl[i] = e[i].b; d[i] = e[i].d; ty[i] = e[i].t; } \
    MPI_Datatype t; MPI_Type_create_struct(n, bl, d, ty, &t); show(name, t); } while (0)

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Datatype t, u, r9;
    STRUCT("struct{double@0,double@12}", 2, {1, 0, MPI_DOUBLE}, {1, 12, MPI_DOUBLE});
    STRUCT("struct{double@0,int@12}", 2, {1, 0, MPI_DOUBLE}, {1, 12, MPI_INT});
    STRUCT("struct{2xdouble@3}", 1, {2, 3, MPI_DOUBLE});
    STRUCT("struct{int@0,char@4,int@8 ->no}", 3, {1, 0, MPI_INT}, {1, 4, MPI_CHAR}, {1, 5, MPI_INT});
    MPI_Type_create_resized(MPI_DOUBLE, 0, 9, &r9); MPI_Type_commit(&r9);
    STRUCT("struct{r9@0}", 1, {1, 0, r9});
    STRUCT("struct{r9@0,r9@9}", 2, {1, 0, r9}, {1, 9, r9});
    STRUCT("struct{2xr9@0}", 1, {2, 0, r9});
    STRUCT("struct{r9@0,char@20}", 2, {1, 0, r9}, {1, 20, MPI_CHAR});
    MPI_Type_contiguous(1, r9, &u); MPI_Type_commit(&u);
    STRUCT("struct{contig(r9)@0,char@9}", 2, {1, 0, u}, {1, 9, MPI_CHAR});
    STRUCT("struct{LB@8,LB@5,double@0}", 3, {1, 8, MPI_LB}, {1, 5, MPI_LB}, {1, 0, MPI_DOUBLE});
    STRUCT("struct{LB@5,LB@8,double@0}", 3, {1, 5, MPI_LB}, {1, 8, MPI_LB}, {1, 0, MPI_DOUBLE});
    STRUCT("struct{UB@20,UB@12,double@0}", 3, {1, 20, MPI_UB}, {1, 12, MPI_UB}, {1, 0, MPI_DOUBLE});
    STRUCT("struct{UB@12,UB@20,double@0}", 3, {1, 12, MPI_UB}, {1, 20, MPI_UB}, {1, 0, MPI_DOUBLE});
    STRUCT("struct{UB@4,double@0}", 2, {1, 4, MPI_UB}, {1, 0, MPI_DOUBLE});
    STRUCT("struct{LB@2,double@0,char@8}", 3, {1, 2, MPI_LB}, {1, 0, MPI_DOUBLE}, {1, 8, MPI_CHAR});
    STRUCT("struct{LB@-4,UB@20}", 2, {1, -4, MPI_LB}, {1, 20, MPI_UB});
    STRUCT("struct{LB@-4,UB@20,0xint@100}", 3, {1, -4, MPI_LB}, {1, 20, MPI_UB}, {0, 100, MPI_INT});
    STRUCT("struct{UB@20}", 1, {1, 20, MPI_UB});
    STRUCT("struct{LB@4,char@0}", 2, {1, 4, MPI_LB}, {1, 0, MPI_CHAR});
    STRUCT("struct{LB@-3,int@0,UB@6}", 3, {1, -3, MPI_LB}, {1, 0, MPI_INT}, {1, 6, MPI_UB});
    STRUCT("struct{LB@1,int@0,char@4}", 3, {1, 1, MPI_LB}, {1, 0, MPI_INT}, {1, 4, MPI_CHAR});
    STRUCT("struct{0xdouble@0,char@4}", 2, {0, 0, MPI_DOUBLE}, {1, 4, MPI_CHAR});
    STRUCT("struct{char@4,0xdouble@0}", 2, {1, 4, MPI_CHAR}, {0, 0, MPI_DOUBLE});
    STRUCT("struct{char@1,double@-7}", 2, {1, 1, MPI_CHAR}, {1, -7, MPI_DOUBLE});
    MPI_Type_create_indexed_block(2, 0, (int[]){3, 5}, MPI_INT, &t); show("indexed_block(bl0,{3,5},int)", t);
    MPI_Type_create_hindexed_block(2, 0, (MPI_Aint[]){3, 5}, MPI_INT, &t); show("hindexed_block(bl0,{3,5},int)", t);
    MPI_Type_vector(2, 0, -3, MPI_INT, &t); show("vector(2,0,-3,int)", t);
    MPI_Type_create_hvector(3, 0, 5, MPI_INT, &t); show("hvector(3,0,5,int)", t);
    MPI_Type_contiguous(0, MPI_INT, &u); MPI_Type_commit(&u);
    MPI_Type_vector(3, 2, 4, u, &t); show("vector(3,2,4,contig0)", t);
    MPI_Type_create_resized(u, -8, 4, &u); MPI_Type_commit(&u);
    MPI_Type_vector(3, 2, 4, u, &t); show("vector(3,2,4,rsz(contig0,-8,4))", t);
    MPI_Type_create_indexed_block(2, 1, (int[]){3, -5}, u, &t); show("indexed_block(1,{3,-5},rsz0)", t);
    MPI_Type_create_resized(MPI_INT, 0, 0, &u); MPI_Type_commit(&u);
    MPI_Type_contiguous(4, u, &t); show("contig(4,rsz(int,0,0))", t);
    MPI_Type_vector(2, 3, 5, u, &t); show("vector(2,3,5,rsz(int,0,0))", t);
    MPI_Type_dup(MPI_DOUBLE_INT, &t); show("dup(double_int)", t);
    MPI_Type_contiguous(2, MPI_SHORT_INT, &t); show("contig(2,short_int)", t);
    MPI_Finalize();
    return 0;
}
