/* gridmpi-test: ranks=1,2 timeout=30 */
/*
 * MPI_Info_create_env gives the same keys and values before MPI_Init,
 * while MPI runs and after MPI_Finalize (MPI 4.1, 11.2.3 allows it at
 * any time; MPICH's f77/info/infocrenvf checks the three agree).
 */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

#define CHECK_MPI(call) \
    do { \
        if ((call) != MPI_SUCCESS) { \
            fprintf(stderr, "%s failed\n", #call); \
            return 1; \
        } \
    } while (0)

static int same(MPI_Info a, MPI_Info b, const char *when)
{
    int na, nb, errs = 0;
    MPI_Info_get_nkeys(a, &na);
    MPI_Info_get_nkeys(b, &nb);
    if (na != nb) {
        fprintf(stderr, "%s: %d keys, before MPI_Init %d\n", when, nb, na);
        return 1;
    }
    for (int i = 0; i < na; i++) {
        char key[MPI_MAX_INFO_KEY + 1], va[MPI_MAX_INFO_VAL + 1], vb[MPI_MAX_INFO_VAL + 1];
        int fa, fb;
        MPI_Info_get_nthkey(a, i, key);
        MPI_Info_get_string(a, key, &(int){MPI_MAX_INFO_VAL + 1}, va, &fa);
        MPI_Info_get_string(b, key, &(int){MPI_MAX_INFO_VAL + 1}, vb, &fb);
        if (!fa || !fb || strcmp(va, vb) != 0) {
            fprintf(stderr, "%s: key %s is \"%s\", before MPI_Init \"%s\"\n", when, key, fb ? vb : "(none)", va);
            errs++;
        }
    }
    return errs;
}

int main(int argc, char **argv)
{
    MPI_Info before, during, after;
    CHECK_MPI(MPI_Info_create_env(argc, argv, &before));
    CHECK_MPI(MPI_Init(&argc, &argv));
    CHECK_MPI(MPI_Info_create_env(argc, argv, &during));
    int errs = same(before, during, "while MPI runs");
    MPI_Info_free(&during);
    MPI_Finalize();
    if (MPI_Info_create_env(argc, argv, &after) != MPI_SUCCESS) {
        fprintf(stderr, "MPI_Info_create_env failed after MPI_Finalize\n");
        errs++;
    } else {
        errs += same(before, after, "after MPI_Finalize");
        MPI_Info_free(&after);
    }
    MPI_Info_free(&before);
    /* test_finish() would ask MPI for the rank, which it may not now. */
    return errs ? 1 : 0;
}
