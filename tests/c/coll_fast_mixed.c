/* gridmpi-test: ranks=2,3,4,8 timeout=120 */
/*
 * Small MPI_Allreduce, MPI_Reduce, MPI_Bcast, MPI_Alltoall and MPI_Barrier where some ranks pass a
 * predefined datatype and the others a derived one of the same type
 * signature (a contiguous type; for the allreduce only under GridMPI,
 * which lets predefined operations reduce a derived type whose elements
 * are all one predefined type, as MPICH does not), or MPI_IN_PLACE: in
 * GridMPI the first
 * take the collectives' quick road on the host's shared area
 * (shell/coll/fast.rs) and the others the general one, and both must meet
 * there, call after call, with sizes on both sides of the area's slot and
 * other collectives (which number their operations on the area the same
 * way) in between. Every result is checked.
 */
#include "testutil.h"

#define ITERS 200

int main(int argc, char **argv)
{
    int size;
    int rank = test_init(&argc, &argv, &size);
    MPI_Comm comm = MPI_COMM_WORLD;
    MPI_Datatype four;
    MPI_Type_contiguous(4, MPI_DOUBLE, &four);
    MPI_Type_commit(&four);
    const int counts[] = {4, 64, 1024, 4096}; /* doubles: 32 B to 32 KiB */
    double *in = tu_malloc(sizeof(double) * 4096), *out = tu_malloc(sizeof(double) * 4096);
    double *a2a_in = tu_malloc(sizeof(double) * 1024 * size), *a2a_out = tu_malloc(sizeof(double) * 1024 * size);
    int derived = rank % 2 == 1;

    for (int it = 0; it < ITERS; it++) {
        int n = counts[it % 4];
        /* Allreduce: derived on odd ranks (GridMPI), in place every third
         * iteration on rank 0. */
        int derived_sum = derived && TEST_IMPL_GRIDMPI;
        for (int i = 0; i < n; i++)
            in[i] = rank + i + it;
        int inplace = rank == 0 && it % 3 == 0;
        if (inplace)
            memcpy(out, in, sizeof(double) * n);
        CHECK_MPI(MPI_Allreduce(inplace ? MPI_IN_PLACE : in, out, derived_sum ? n / 4 : n, derived_sum ? four : MPI_DOUBLE, MPI_SUM, comm));
        double base = (double)size * (size - 1) / 2;
        for (int i = 0; i < n; i++)
            if (!CHECK(out[i] == base + (double)size * (i + it), "iteration %d: allreduce[%d] = %g, want %g", it, i, out[i], base + (double)size * (i + it)))
                break;

        /* Reduce to a rotating root, in place there every other time. */
        int root = it % size;
        for (int i = 0; i < n; i++)
            in[i] = rank * 2 + i + it;
        int rin = rank == root && it % 2 == 0;
        if (rin)
            memcpy(out, in, sizeof(double) * n);
        CHECK_MPI(MPI_Reduce(rin ? MPI_IN_PLACE : in, out, derived_sum ? n / 4 : n, derived_sum ? four : MPI_DOUBLE, MPI_SUM, root, comm));
        if (rank == root)
            for (int i = 0; i < n; i++)
                if (!CHECK(out[i] == 2 * base + (double)size * (i + it), "iteration %d: reduce[%d] at %d = %g", it, i, root, out[i]))
                    break;

        /* Bcast from the same root; the root uses the derived type when odd. */
        for (int i = 0; i < n; i++)
            out[i] = rank == root ? 1000.0 * it + i : -1;
        CHECK_MPI(MPI_Bcast(out, derived ? n / 4 : n, derived ? four : MPI_DOUBLE, root, comm));
        for (int i = 0; i < n; i++)
            if (!CHECK(out[i] == 1000.0 * it + i, "iteration %d: bcast[%d] from %d = %g", it, i, root, out[i]))
                break;

        /* Alltoall: odd ranks receive through the derived type. */
        int bk = n / 4 < 4 ? 4 : n / 4;
        for (int d = 0; d < size; d++)
            for (int i = 0; i < bk; i++)
                a2a_in[d * bk + i] = 10000.0 * rank + 100.0 * d + i + it;
        CHECK_MPI(MPI_Alltoall(a2a_in, bk, MPI_DOUBLE, a2a_out, derived ? bk / 4 : bk, derived ? four : MPI_DOUBLE, comm));
        for (int s = 0; s < size; s++)
            for (int i = 0; i < bk; i++)
                if (!CHECK(a2a_out[s * bk + i] == 10000.0 * s + 100.0 * rank + i + it, "iteration %d: alltoall from %d [%d] = %g", it, s, i, a2a_out[s * bk + i])) {
                    s = size;
                    break;
                }

        CHECK_MPI(MPI_Barrier(comm));
        if (it % 7 == 0) {
            /* Another collective on the area between them. */
            int mine = rank * 3 + it, all[64];
            CHECK_MPI(MPI_Allgather(&mine, 1, MPI_INT, all, 1, MPI_INT, comm));
            for (int r = 0; r < size; r++)
                CHECK(all[r] == r * 3 + it, "iteration %d: allgather[%d] = %d", it, r, all[r]);
        }
    }
    free(in);
    free(out);
    free(a2a_in);
    free(a2a_out);
    MPI_Type_free(&four);
    MPI_Finalize();
    return test_finish();
}
