/* gridmpi-test: ranks=2 timeout=60 */
/*
 * A message that ends inside a basic element of the receive datatype cannot
 * match the receive's type signature (MPI 4.1, 3.3.1): 3 chars received as
 * ints. The receive fails with MPI_ERR_TYPE (blocking, nonblocking, and a
 * rendezvous-sized message) instead of succeeding with a partial int
 * (MPICH's errors/pt2pt/truncmsg2). Messages of whole elements, and
 * MPI_BYTE and MPI_PACKED receives of any length, still succeed.
 * MPICH 5.0.2 fails an assertion on the mismatched receives and Open MPI
 * takes them: both skip that part.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "testutil.h"

static int errs;

static void expect(int ok, const char *what)
{
    if (!ok) {
        printf("FAILED: %s\n", what);
        errs++;
    }
}

static int class_of(int rc)
{
    int c;
    MPI_Error_class(rc, &c);
    return c;
}

int main(int argc, char **argv)
{
    int rank;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    enum { BIG = 300003 };
    char *src = malloc(BIG);
    int *dst = malloc(BIG + 64);
    for (int i = 0; i < BIG; i++)
        src[i] = (char)(i + 1);
    /* Three chars with gaps, as truncmsg2 sends them. */
    MPI_Datatype chars, ints;
    int bl[3] = {1, 1, 1}, ibl[3] = {1, 2, 1}, idx[3] = {4, 8, 16};
    MPI_Aint disp[3] = {0, 2, 4};
    MPI_Datatype types[3] = {MPI_CHAR, MPI_CHAR, MPI_CHAR};
    MPI_Type_create_struct(3, bl, disp, types, &chars);
    MPI_Type_commit(&chars);
    MPI_Type_indexed(3, ibl, idx, MPI_INT, &ints);
    MPI_Type_commit(&ints);
    int mismatched = !TU_PEER_MPICH && !TU_PEER_OPENMPI;
    if (rank == 1) {
        if (mismatched) {
            MPI_Send(src, 1, chars, 0, 1, MPI_COMM_WORLD);
            MPI_Send(src, 3, MPI_CHAR, 0, 2, MPI_COMM_WORLD);
            MPI_Send(src, BIG, MPI_CHAR, 0, 3, MPI_COMM_WORLD);
        }
        MPI_Send(src, 8, MPI_CHAR, 0, 4, MPI_COMM_WORLD);
        MPI_Send(src, 3, MPI_CHAR, 0, 5, MPI_COMM_WORLD);
        MPI_Send(src, 3, MPI_CHAR, 0, 6, MPI_COMM_WORLD);
    } else {
        MPI_Status st;
        MPI_Request r;
        int rc;
        if (mismatched) {
            rc = MPI_Recv(dst, 1, ints, 1, 1, MPI_COMM_WORLD, &st);
            expect(rc != MPI_SUCCESS && class_of(rc) == MPI_ERR_TYPE, "3 chars into an indexed type of ints: MPI_ERR_TYPE");
            MPI_Irecv(dst, 4, MPI_INT, 1, 2, MPI_COMM_WORLD, &r);
            rc = MPI_Wait(&r, &st);
            expect(rc != MPI_SUCCESS && class_of(rc) == MPI_ERR_TYPE, "Irecv of 3 chars as ints: MPI_ERR_TYPE");
            rc = MPI_Recv(dst, BIG / 4 + 1, MPI_INT, 1, 3, MPI_COMM_WORLD, &st);
            expect(rc != MPI_SUCCESS && class_of(rc) == MPI_ERR_TYPE, "a long message of chars ending mid-int: MPI_ERR_TYPE");
        }
        int count = -1;
        rc = MPI_Recv(dst, 4, MPI_INT, 1, 4, MPI_COMM_WORLD, &st);
        MPI_Get_count(&st, MPI_INT, &count);
        expect(rc == MPI_SUCCESS && count == 2 && memcmp(dst, src, 8) == 0, "8 chars into ints: 2 ints");
        rc = MPI_Recv(dst, 16, MPI_BYTE, 1, 5, MPI_COMM_WORLD, &st);
        MPI_Get_count(&st, MPI_BYTE, &count);
        expect(rc == MPI_SUCCESS && count == 3, "3 chars as MPI_BYTE");
        rc = MPI_Recv(dst, 16, MPI_PACKED, 1, 6, MPI_COMM_WORLD, &st);
        expect(rc == MPI_SUCCESS, "3 chars as MPI_PACKED");
    }
    MPI_Type_free(&chars);
    MPI_Type_free(&ints);
    free(src);
    free(dst);
    MPI_Finalize();
    if (rank == 0 && errs == 0)
        printf(" No Errors\n");
    return errs ? 1 : 0;
}
