/* MPICH reference for envelopes/contents (incl. the large-count _c
 * constructors), MPI_Type_match_size, f90 types, value_index, external32. */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

static void env(const char *name, MPI_Datatype t) {
    MPI_Count ni, na, nc, nd; int comb;
    MPI_Type_get_envelope_c(t, &ni, &na, &nc, &nd, &comb);
    printf("%-26s comb=%d ni=%lld na=%lld nc=%lld nd=%lld", name, comb, ni, na, nc, nd);
    if (comb != MPI_COMBINER_NAMED) {
        int ints[64]; MPI_Aint addrs[64]; MPI_Count cs[64]; MPI_Datatype ds[64];
        MPI_Type_get_contents_c(t, ni, na, nc, nd, ints, addrs, cs, ds);
        printf(" ints="); for (int i = 0; i < ni; i++) printf("%d,", ints[i]);
        printf(" addrs="); for (int i = 0; i < na; i++) printf("%ld,", addrs[i]);
        printf(" counts="); for (int i = 0; i < nc; i++) printf("%lld,", cs[i]);
        printf(" types="); for (int i = 0; i < nd; i++) printf("%x,", ds[i]);
        int ni2, na2, nd2, comb2;
        int rc = MPI_Type_get_envelope(t, &ni2, &na2, &nd2, &comb2);
        printf(" | non-c envelope rc=%d ni=%d na=%d nd=%d", rc, ni2, na2, nd2);
    }
    printf("\n");
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    MPI_Datatype t;
    MPI_Type_contiguous(3, MPI_INT, &t); env("contig", t);
    MPI_Type_contiguous_c(3, MPI_INT, &t); env("contig_c", t);
    MPI_Type_vector(3, 2, 5, MPI_INT, &t); env("vector", t);
    MPI_Type_vector_c(3, 2, 5, MPI_INT, &t); env("vector_c", t);
    MPI_Type_create_hvector(3, 2, 50, MPI_INT, &t); env("hvector", t);
    MPI_Type_create_hvector_c(3, 2, 50, MPI_INT, &t); env("hvector_c", t);
    MPI_Type_indexed(2, (int[]){1, 2}, (int[]){5, 9}, MPI_INT, &t); env("indexed", t);
    MPI_Type_indexed_c(2, (MPI_Count[]){1, 2}, (MPI_Count[]){5, 9}, MPI_INT, &t); env("indexed_c", t);
    MPI_Type_create_hindexed(2, (int[]){1, 2}, (MPI_Aint[]){5, 90}, MPI_INT, &t); env("hindexed", t);
    MPI_Type_create_hindexed_c(2, (MPI_Count[]){1, 2}, (MPI_Count[]){5, 90}, MPI_INT, &t); env("hindexed_c", t);
    MPI_Type_create_indexed_block(2, 3, (int[]){5, 9}, MPI_INT, &t); env("indexed_block", t);
    MPI_Type_create_indexed_block_c(2, 3, (MPI_Count[]){5, 9}, MPI_INT, &t); env("indexed_block_c", t);
    MPI_Type_create_hindexed_block(2, 3, (MPI_Aint[]){5, 90}, MPI_INT, &t); env("hindexed_block", t);
    MPI_Type_create_hindexed_block_c(2, 3, (MPI_Count[]){5, 90}, MPI_INT, &t); env("hindexed_block_c", t);
    MPI_Type_create_struct(2, (int[]){1, 2}, (MPI_Aint[]){0, 8}, (MPI_Datatype[]){MPI_INT, MPI_DOUBLE}, &t); env("struct", t);
    MPI_Type_create_struct_c(2, (MPI_Count[]){1, 2}, (MPI_Count[]){0, 8}, (MPI_Datatype[]){MPI_INT, MPI_DOUBLE}, &t); env("struct_c", t);
    MPI_Type_create_subarray(2, (int[]){4, 5}, (int[]){2, 3}, (int[]){1, 2}, MPI_ORDER_FORTRAN, MPI_INT, &t); env("subarray", t);
    MPI_Type_create_subarray_c(2, (MPI_Count[]){4, 5}, (MPI_Count[]){2, 3}, (MPI_Count[]){1, 2}, MPI_ORDER_FORTRAN, MPI_INT, &t); env("subarray_c", t);
    MPI_Type_create_darray(4, 1, 2, (int[]){4, 6}, (int[]){MPI_DISTRIBUTE_BLOCK, MPI_DISTRIBUTE_CYCLIC}, (int[]){MPI_DISTRIBUTE_DFLT_DARG, 2}, (int[]){2, 2}, MPI_ORDER_C, MPI_INT, &t); env("darray", t);
    MPI_Type_create_darray_c(4, 1, 2, (MPI_Count[]){4, 6}, (int[]){MPI_DISTRIBUTE_BLOCK, MPI_DISTRIBUTE_CYCLIC}, (int[]){MPI_DISTRIBUTE_DFLT_DARG, 2}, (int[]){2, 2}, MPI_ORDER_C, MPI_INT, &t); env("darray_c", t);
    MPI_Type_create_resized(MPI_INT, -4, 16, &t); env("resized", t);
    MPI_Type_create_resized_c(MPI_INT, -4, 16, &t); env("resized_c", t);
    MPI_Type_dup(MPI_INT, &t); env("dup", t);
    env("MPI_DOUBLE_INT", MPI_DOUBLE_INT); env("MPI_LB", MPI_LB);
    int rc = MPI_Type_create_f90_real(10, MPI_UNDEFINED, &t); printf("f90_real(10,U) rc=%d %x\n", rc, t); if (!rc) env("f90_real(10,U)", t);
    rc = MPI_Type_create_f90_real(5, 300, &t); printf("f90_real(5,300) rc=%d %x\n", rc, t); if (!rc) env("f90_real(5,300)", t);
    rc = MPI_Type_create_f90_real(6, 37, &t); printf("f90_real(6,37) rc=%d %x\n", rc, t);
    rc = MPI_Type_create_f90_real(7, MPI_UNDEFINED, &t); printf("f90_real(7,U) rc=%d %x\n", rc, t);
    rc = MPI_Type_create_f90_real(16, MPI_UNDEFINED, &t); printf("f90_real(16,U) rc=%d %x\n", rc, t);
    rc = MPI_Type_create_f90_real(19, MPI_UNDEFINED, &t); printf("f90_real(19,U) rc=%d %x\n", rc, t);
    rc = MPI_Type_create_f90_real(34, MPI_UNDEFINED, &t); printf("f90_real(34,U) rc=%d\n", rc);
    rc = MPI_Type_create_f90_real(MPI_UNDEFINED, 308, &t); printf("f90_real(U,308) rc=%d %x\n", rc, t);
    rc = MPI_Type_create_f90_real(MPI_UNDEFINED, 4931, &t); printf("f90_real(U,4931) rc=%d %x\n", rc, t);
    rc = MPI_Type_create_f90_real(MPI_UNDEFINED, 4932, &t); printf("f90_real(U,4932) rc=%d\n", rc);
    rc = MPI_Type_create_f90_real(MPI_UNDEFINED, MPI_UNDEFINED, &t); printf("f90_real(U,U) rc=%d %x\n", rc, t);
    rc = MPI_Type_create_f90_complex(10, MPI_UNDEFINED, &t); printf("f90_complex(10,U) rc=%d %x\n", rc, t); if (!rc) env("f90_complex", t);
    rc = MPI_Type_create_f90_complex(3, MPI_UNDEFINED, &t); printf("f90_complex(3,U) rc=%d %x\n", rc, t);
    rc = MPI_Type_create_f90_complex(20, MPI_UNDEFINED, &t); printf("f90_complex(20,U) rc=%d %x\n", rc, t);
    for (int r = 1; r <= 40; r++) { rc = MPI_Type_create_f90_integer(r, &t); printf("f90_int(%d) rc=%d %x\n", r, rc, t); }
    rc = MPI_Type_create_f90_integer(5, &t); env("f90_integer(5)", t);
    printf("REAL4=%x REAL8=%x REAL16=%x INTEGER1=%x INTEGER2=%x INTEGER4=%x INTEGER8=%x INTEGER16=%x COMPLEX8=%x COMPLEX16=%x COMPLEX32=%x REAL=%x DOUBLE_PRECISION=%x\n",
           MPI_REAL4, MPI_REAL8, MPI_REAL16, MPI_INTEGER1, MPI_INTEGER2, MPI_INTEGER4, MPI_INTEGER8, MPI_INTEGER16, MPI_COMPLEX8, MPI_COMPLEX16, MPI_COMPLEX32, MPI_REAL, MPI_DOUBLE_PRECISION);
    printf("FLOAT=%x DOUBLE=%x LONG_DOUBLE=%x CHAR=%x SHORT=%x INT=%x LONG=%x LONG_LONG=%x SCHAR=%x C_FLOAT_COMPLEX=%x\n", MPI_FLOAT, MPI_DOUBLE, MPI_LONG_DOUBLE, MPI_CHAR, MPI_SHORT, MPI_INT, MPI_LONG, MPI_LONG_LONG, MPI_SIGNED_CHAR, MPI_C_FLOAT_COMPLEX);
    int classes[3] = {MPI_TYPECLASS_REAL, MPI_TYPECLASS_INTEGER, MPI_TYPECLASS_COMPLEX};
    for (int c = 0; c < 3; c++) for (int s = 1; s <= 32; s *= 2) {
        rc = MPI_Type_match_size(classes[c], s, &t); printf("match_size(%d,%d) rc=%d %x\n", classes[c], s, rc, rc ? 0 : t);
    }
    rc = MPI_Type_get_value_index(MPI_FLOAT, MPI_INT, &t); printf("value_index(float,int) rc=%d %x (FLOAT_INT=%x)\n", rc, t, MPI_FLOAT_INT);
    rc = MPI_Type_get_value_index(MPI_DOUBLE, MPI_LONG, &t); printf("value_index(double,long) rc=%d %x\n", rc, t); 
    rc = MPI_Type_get_value_index(MPI_REAL, MPI_REAL, &t); printf("value_index(real,real) rc=%d %x (2REAL=%x)\n", rc, t, MPI_2REAL);
    rc = MPI_Type_get_value_index(MPI_INT, MPI_INT, &t); printf("value_index(int,int) rc=%d %x (2INT=%x)\n", rc, t, MPI_2INT);
    rc = MPI_Type_get_value_index(MPI_INTEGER, MPI_INTEGER, &t); printf("value_index(integer,integer) rc=%d %x (2INTEGER=%x)\n", rc, t, MPI_2INTEGER);
    /* external32 */
    MPI_Datatype ext[] = {MPI_CHAR, MPI_WCHAR, MPI_SHORT, MPI_INT, MPI_LONG, MPI_UNSIGNED_LONG, MPI_LONG_LONG, MPI_FLOAT, MPI_DOUBLE, MPI_LONG_DOUBLE, MPI_C_BOOL, MPI_AINT, MPI_C_LONG_DOUBLE_COMPLEX, MPI_LOGICAL, MPI_INTEGER16, MPI_REAL16, MPI_DOUBLE_INT, MPI_LONG_INT, MPI_SHORT_INT, MPI_LONG_DOUBLE_INT, MPI_CXX_BOOL, MPI_2DOUBLE_PRECISION};
    const char *en[] = {"CHAR", "WCHAR", "SHORT", "INT", "LONG", "UNSIGNED_LONG", "LONG_LONG", "FLOAT", "DOUBLE", "LONG_DOUBLE", "C_BOOL", "AINT", "C_LONG_DOUBLE_COMPLEX", "LOGICAL", "INTEGER16", "REAL16", "DOUBLE_INT", "LONG_INT", "SHORT_INT", "LONG_DOUBLE_INT", "CXX_BOOL", "2DOUBLE_PRECISION"};
    for (int i = 0; i < (int)(sizeof ext / sizeof ext[0]); i++) {
        MPI_Aint sz; rc = MPI_Pack_external_size("external32", 1, ext[i], &sz); printf("external32 size %s rc=%d %ld\n", en[i], rc, sz);
    }
    { long v = 0x0102030405060708L; unsigned char out[16]; MPI_Aint pos = 0;
      rc = MPI_Pack_external("external32", &v, 1, MPI_LONG, out, 16, &pos);
      printf("pack_external long 0x0102030405060708 rc=%d pos=%ld bytes=", rc, pos); for (int i = 0; i < pos; i++) printf("%02x", out[i]); printf("\n"); }
    { long double v = 1.5L; unsigned char out[32]; MPI_Aint pos = 0;
      rc = MPI_Pack_external("external32", &v, 1, MPI_LONG_DOUBLE, out, 32, &pos);
      printf("pack_external long double 1.5 rc=%d pos=%ld bytes=", rc, pos); for (int i = 0; i < pos; i++) printf("%02x", out[i]); printf("\n"); }
    { struct { double d; int i; } v = {1.0, 7}; unsigned char out[32]; MPI_Aint pos = 0;
      rc = MPI_Pack_external("external32", &v, 1, MPI_DOUBLE_INT, out, 32, &pos);
      printf("pack_external double_int rc=%d pos=%ld bytes=", rc, pos); for (int i = 0; i < pos; i++) printf("%02x", out[i]); printf("\n"); }
    MPI_Finalize();
    return 0;
}
