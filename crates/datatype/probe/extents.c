/* Prints lb/extent/true_lb/true_extent/size of tricky datatypes as MPICH
 * computes them. Reference values for the Rust unit tests. */
#include <mpi.h>
#include <stdio.h>

static void show(const char *name, MPI_Datatype t) {
    MPI_Aint lb, ext, tlb, text; MPI_Count sz;
    MPI_Type_commit(&t);
    MPI_Type_get_extent(t, &lb, &ext);
    MPI_Type_get_true_extent(t, &tlb, &text);
    MPI_Type_size_x(t, &sz);
    printf("%-28s size=%lld lb=%ld extent=%ld true_lb=%ld true_extent=%ld\n", name, sz, lb, ext, tlb, text);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Datatype t, u, v;
    MPI_Type_create_hvector(2, 1, 9, MPI_DOUBLE, &t); show("hvector(2,1,9,double)", t);
    { int bl[2] = {1, 1}; MPI_Aint d[2] = {0, 8}; MPI_Datatype ty[2] = {MPI_CHAR, MPI_DOUBLE};
      MPI_Type_create_struct(2, bl, d, ty, &t); show("struct{char@0,double@8}", t); }
    { int bl[2] = {1, 1}; MPI_Aint d[2] = {0, 8}; MPI_Datatype ty[2] = {MPI_DOUBLE, MPI_CHAR};
      MPI_Type_create_struct(2, bl, d, ty, &t); show("struct{double@0,char@8}", t); }
    { int bl[2] = {1, 1}; MPI_Aint d[2] = {0, 8}; MPI_Datatype ty[2] = {MPI_C_FLOAT_COMPLEX, MPI_CHAR};
      MPI_Type_create_struct(2, bl, d, ty, &t); show("struct{cfloatcplx@0,char@8}", t); }
    { int bl[2] = {1, 1}; MPI_Aint d[2] = {0, 16}; MPI_Datatype ty[2] = {MPI_LONG_DOUBLE, MPI_CHAR};
      MPI_Type_create_struct(2, bl, d, ty, &t); show("struct{ldouble@0,char@16}", t); }
    { int bl[2] = {1, 1}; MPI_Aint d[2] = {0, 2}; MPI_Datatype ty[2] = {MPI_SHORT, MPI_CHAR};
      MPI_Type_create_struct(2, bl, d, ty, &t); show("struct{short@0,char@2}", t); }
    { int bl[2] = {1, 1}; MPI_Aint d[2] = {-3, 8}; MPI_Datatype ty[2] = {MPI_CHAR, MPI_DOUBLE};
      MPI_Type_create_struct(2, bl, d, ty, &t); show("struct{char@-3,double@8}", t); }
    { int bl[2] = {1, 1}; MPI_Aint d[2] = {0, 4}; MPI_Datatype ty[2] = {MPI_INT, MPI_CHAR};
      MPI_Type_contiguous(3, MPI_CHAR, &u); MPI_Type_commit(&u);
      ty[1] = u; MPI_Type_create_struct(2, bl, d, ty, &t); show("struct{int@0,contig3char@4}", t); }
    { /* struct of a derived child containing a double */
      int bl[2] = {1, 1}; MPI_Aint d[2] = {0, 8}; MPI_Datatype ty[2];
      MPI_Type_contiguous(1, MPI_DOUBLE, &u); MPI_Type_commit(&u);
      ty[0] = u; ty[1] = MPI_CHAR; MPI_Type_create_struct(2, bl, d, ty, &t); show("struct{contig1double@0,char@8}", t); }
    { /* resized inside struct: sticky? */
      MPI_Type_create_resized(MPI_INT, 0, 8, &u); MPI_Type_commit(&u);
      int bl[2] = {1, 1}; MPI_Aint d[2] = {0, 16}; MPI_Datatype ty[2] = {u, MPI_DOUBLE};
      MPI_Type_create_struct(2, bl, d, ty, &t); show("struct{resized(int,0,8)@0,double@16}", t); }
    { MPI_Type_create_resized(MPI_DOUBLE, 0, 9, &u); MPI_Type_commit(&u);
      int bl[2] = {1, 1}; MPI_Aint d[2] = {0, 9}; MPI_Datatype ty[2] = {u, MPI_CHAR};
      MPI_Type_create_struct(2, bl, d, ty, &t); show("struct{resized(double,0,9)@0,char@9}", t);
      MPI_Type_create_struct(1, bl, d, ty, &t); show("struct{resized(double,0,9)@0}", t); }
    { MPI_Type_create_resized(MPI_CHAR, -2, 5, &u); MPI_Type_commit(&u);
      int bl[2] = {1, 1}; MPI_Aint d[2] = {0, 8}; MPI_Datatype ty[2] = {u, MPI_DOUBLE};
      MPI_Type_create_struct(2, bl, d, ty, &t); show("struct{resized(char,-2,5)@0,double@8}", t); }
    /* sticky markers */
    { int bl[3] = {1, 1, 1}; MPI_Aint d[3] = {-4, 0, 20}; MPI_Datatype ty[3] = {MPI_LB, MPI_INT, MPI_UB};
      MPI_Type_create_struct(3, bl, d, ty, &t); show("struct{LB@-4,int@0,UB@20}", t);
      MPI_Type_commit(&t);
      MPI_Type_contiguous(2, t, &u); show("contig(2,^)", u);
      MPI_Type_create_resized(t, 0, 100, &u); show("resized(^,0,100)", u);
      { int bl2[2] = {1, 1}; MPI_Aint d2[2] = {0, 100}; MPI_Datatype ty2[2] = {t, MPI_DOUBLE};
        MPI_Type_create_struct(2, bl2, d2, ty2, &u); show("struct{markers@0,double@100}", u); }
    }
    { int bl[3] = {1, 1, 1}; MPI_Aint d[3] = {-4, 0, 8}; MPI_Datatype ty[3] = {MPI_LB, MPI_DOUBLE, MPI_CHAR};
      MPI_Type_create_struct(3, bl, d, ty, &t); show("struct{LB@-4,double@0,char@8}", t); }
    { int bl[3] = {1, 1, 1}; MPI_Aint d[3] = {0, 8, 13}; MPI_Datatype ty[3] = {MPI_DOUBLE, MPI_CHAR, MPI_UB};
      MPI_Type_create_struct(3, bl, d, ty, &t); show("struct{double@0,char@8,UB@13}", t); }
    { int bl[3] = {1, 1, 1}; MPI_Aint d[3] = {5, 0, 8}; MPI_Datatype ty[3] = {MPI_LB, MPI_DOUBLE, MPI_LB};
      MPI_Type_create_struct(3, bl, d, ty, &t); show("struct{LB@5,double@0,LB@8}", t); }
    { int bl[2] = {3, 1}; MPI_Aint d[2] = {4, 0}; MPI_Datatype ty[2] = {MPI_LB, MPI_INT};
      MPI_Type_create_struct(2, bl, d, ty, &t); show("struct{3xLB@4,int@0}", t); }
    { int bl[2] = {0, 1}; MPI_Aint d[2] = {-4, 0}; MPI_Datatype ty[2] = {MPI_LB, MPI_INT};
      MPI_Type_create_struct(2, bl, d, ty, &t); show("struct{0xLB@-4,int@0}", t); }
    /* zero counts */
    MPI_Type_contiguous(0, MPI_INT, &t); show("contig(0,int)", t);
    MPI_Type_vector(0, 2, 3, MPI_INT, &t); show("vector(0,2,3,int)", t);
    MPI_Type_vector(3, 0, 3, MPI_INT, &t); show("vector(3,0,3,int)", t);
    { int bl[2] = {0, 2}; int d[2] = {-5, 3};
      MPI_Type_indexed(2, bl, d, MPI_INT, &t); show("indexed{0@-5,2@3}", t); }
    { int bl[2] = {0, 0}; int d[2] = {-5, 3};
      MPI_Type_indexed(2, bl, d, MPI_INT, &t); show("indexed{0@-5,0@3}", t); }
    { int bl[1] = {0}; MPI_Aint d[1] = {16}; MPI_Datatype ty[1] = {MPI_DOUBLE};
      MPI_Type_create_struct(1, bl, d, ty, &t); show("struct{0xdouble@16}", t); }
    MPI_Type_create_struct(0, NULL, NULL, NULL, &t); show("struct{}", t);
    { int bl[2] = {0, 1}; MPI_Aint d[2] = {-8, 4}; MPI_Datatype ty[2] = {MPI_DOUBLE, MPI_CHAR};
      MPI_Type_create_struct(2, bl, d, ty, &t); show("struct{0xdouble@-8,char@4}", t); }
    MPI_Type_contiguous(0, MPI_INT, &u); MPI_Type_commit(&u);
    MPI_Type_create_resized(u, 3, 10, &t); show("resized(contig0,3,10)", t);
    MPI_Type_contiguous(5, u, &t); show("contig(5,contig0)", t);
    { int bl[2] = {1, 1}; MPI_Aint d[2] = {-8, 4}; MPI_Datatype ty[2] = {u, MPI_CHAR};
      MPI_Type_create_struct(2, bl, d, ty, &t); show("struct{contig0@-8,char@4}", t); }
    /* negative strides */
    MPI_Type_vector(3, 1, -2, MPI_INT, &t); show("vector(3,1,-2,int)", t);
    MPI_Type_vector(3, 2, -1, MPI_INT, &t); show("vector(3,2,-1,int)", t);
    MPI_Type_create_hvector(3, 2, -3, MPI_SHORT, &t); show("hvector(3,2,-3,short)", t);
    MPI_Type_create_resized(MPI_INT, -4, 16, &u); MPI_Type_commit(&u);
    MPI_Type_vector(2, 2, 3, u, &t); show("vector(2,2,3,resized(int,-4,16))", t);
    MPI_Type_create_resized(MPI_INT, 4, -16, &v); MPI_Type_commit(&v);
    show("resized(int,4,-16)", v);
    MPI_Type_contiguous(3, v, &t); show("contig(3,resized(int,4,-16))", t);
    MPI_Type_vector(2, 2, 3, v, &t); show("vector(2,2,3,resized(int,4,-16))", t);
    { int bl[2] = {2, 1}; int d[2] = {5, -3};
      MPI_Type_indexed(2, bl, d, u, &t); show("indexed{2@5,1@-3}(rsz(int,-4,16))", t); }
    { MPI_Aint d[3] = {8, -8, 0};
      MPI_Type_create_hindexed_block(3, 2, d, MPI_SHORT, &t); show("hindexed_block(2,{8,-8,0},short)", t); }
    { int d[3] = {4, -1, 0};
      MPI_Type_create_indexed_block(3, 2, d, MPI_SHORT, &t); show("indexed_block(2,{4,-1,0},short)", t); }
    /* subarray */
    { int s[2] = {4, 5}, ss[2] = {2, 3}, st[2] = {1, 1};
      MPI_Type_create_subarray(2, s, ss, st, MPI_ORDER_C, MPI_INT, &t); show("subarray C {4,5}{2,3}{1,1}", t);
      MPI_Type_create_subarray(2, s, ss, st, MPI_ORDER_FORTRAN, MPI_INT, &t); show("subarray F {4,5}{2,3}{1,1}", t); }
    { int s[2] = {4, 5}, ss[2] = {0, 3}, st[2] = {1, 1};
      int rc = MPI_Type_create_subarray(2, s, ss, st, MPI_ORDER_C, MPI_INT, &t);
      if (rc == MPI_SUCCESS) show("subarray C subsize 0", t); else printf("subarray subsize 0: error %d\n", rc); }
    { int s[1] = {10}, ss[1] = {3}, st[1] = {7};
      MPI_Type_create_subarray(1, s, ss, st, MPI_ORDER_C, u, &t); show("subarray 1d rsz(int,-4,16)", t); }
    /* pair types */
    show("MPI_FLOAT_INT", MPI_FLOAT_INT); show("MPI_DOUBLE_INT", MPI_DOUBLE_INT);
    show("MPI_LONG_INT", MPI_LONG_INT); show("MPI_SHORT_INT", MPI_SHORT_INT);
    show("MPI_2INT", MPI_2INT); show("MPI_LONG_DOUBLE_INT", MPI_LONG_DOUBLE_INT);
    show("MPI_2INTEGER", MPI_2INTEGER); show("MPI_2REAL", MPI_2REAL); show("MPI_2DOUBLE_PRECISION", MPI_2DOUBLE_PRECISION);
    show("MPI_LB", MPI_LB); show("MPI_UB", MPI_UB);
    { int bl[2] = {1, 1}; MPI_Aint d[2] = {0, 16}; MPI_Datatype ty[2] = {MPI_SHORT_INT, MPI_CHAR};
      MPI_Type_create_struct(2, bl, d, ty, &t); show("struct{short_int@0,char@16}", t); }
    { int bl[2] = {1, 1}; MPI_Aint d[2] = {0, 32}; MPI_Datatype ty[2] = {MPI_LONG_DOUBLE_INT, MPI_CHAR};
      MPI_Type_create_struct(2, bl, d, ty, &t); show("struct{ldouble_int@0,char@32}", t); }
    MPI_Finalize();
    return 0;
}
