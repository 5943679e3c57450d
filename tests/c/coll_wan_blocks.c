/* gridmpi-test: ranks=2,3,4,6 min-ranks=2 timeout=180 env=GRIDMPI_TRANSPORT=tcp env=GRIDMPI_WAN_BANDWIDTH=2gbit env=GRIDMPI_WAN_DELAY=100us env=GRIDMPI_COLL_ALLGATHER=wan env=GRIDMPI_COLL_GATHER=wan env=GRIDMPI_COLL_SCATTER=wan env=GRIDMPI_COLL_REDUCE_SCATTER=wan */
/*
 * The cluster-aware (WAN) allgather(v), gather(v), scatter(v) and
 * reduce_scatter(_block), end to end: each rank names its cluster before
 * MPI_Init (rank mod 2, or mod 3 from 6 ranks: clusters interleave in rank
 * order), so GridMPI takes its cluster-aware algorithms (also forced by
 * the header's settings), with pacing on the connections that cross
 * clusters. Results are checked against what any MPI gives: small blocks
 * (through the clusters' leaders) and large ones (straight, paced), every
 * root, MPI_IN_PLACE, v forms with empty blocks and displacements out of
 * rank order, a derived receive type with holes, a nonblocking form.
 * Under other MPIs GRIDMPI_CLUSTER means nothing and this is a plain
 * collectives test.
 */
#include "testutil.h"

static int val(int r, int i) { return r * 1000003 + i; }

static MPI_Comm comm;
static int rank, size;

/* displs[r] for blocks of counts[r] ints laid out in reverse rank order. */
static int reverse_displs(const int *counts, int *displs)
{
    int at = 0;
    for (int r = size - 1; r >= 0; r--) {
        displs[r] = at;
        at += counts[r];
    }
    return at;
}

static void test_allgather(void)
{
    int sizes[] = {1, 1000, 20000};
    for (int si = 0; si < 3; si++) {
        int n = sizes[si];
        int *in = malloc(sizeof(int) * n), *out = malloc(sizeof(int) * n * size);
        for (int ip = 0; ip < 2; ip++) {
            for (int i = 0; i < n * size; i++)
                out[i] = -1;
            for (int i = 0; i < n; i++)
                (ip ? out + rank * n : in)[i] = val(rank, i);
            CHECK_MPI(MPI_Allgather(ip ? MPI_IN_PLACE : in, n, MPI_INT, out, n, MPI_INT, comm));
            int bad = 0;
            for (int r = 0; r < size; r++)
                for (int i = 0; i < n; i++)
                    bad += out[r * n + i] != val(r, i);
            CHECK(bad == 0, "allgather of %d ints (in place %d): %d wrong", n, ip, bad);
        }
        free(in);
        free(out);
    }
    /* Allgatherv: some empty blocks, in reverse order. */
    int *counts = malloc(sizeof(int) * size), *displs = malloc(sizeof(int) * size);
    for (int r = 0; r < size; r++)
        counts[r] = (r % 3) * 3000 + (r == 1);
    int total = reverse_displs(counts, displs);
    int *in = malloc(sizeof(int) * (counts[rank] + 1)), *out = malloc(sizeof(int) * (total + 1));
    for (int ip = 0; ip < 2; ip++) {
        for (int i = 0; i < total; i++)
            out[i] = -1;
        for (int i = 0; i < counts[rank]; i++)
            (ip ? out + displs[rank] : in)[i] = val(rank, i);
        CHECK_MPI(MPI_Allgatherv(ip ? MPI_IN_PLACE : in, counts[rank], MPI_INT, out, counts, displs, MPI_INT, comm));
        int bad = 0;
        for (int r = 0; r < size; r++)
            for (int i = 0; i < counts[r]; i++)
                bad += out[displs[r] + i] != val(r, i);
        CHECK(bad == 0, "allgatherv (in place %d): %d wrong", ip, bad);
    }
    free(in); free(out); free(counts); free(displs);
}

static void test_gather_scatter(void)
{
    /* 1 and 100 ints: through the leaders; 10000 (40 KB): straight. */
    int sizes[] = {1, 100, 10000};
    for (int si = 0; si < 3; si++) {
        int n = sizes[si];
        int *one = malloc(sizeof(int) * n), *all = malloc(sizeof(int) * n * size);
        for (int root = 0; root < size; root++) {
            int ip = (root + si) % 2 == 0 && rank == root;
            for (int i = 0; i < n * size; i++)
                all[i] = -1;
            for (int i = 0; i < n; i++)
                (ip ? all + root * n : one)[i] = val(rank, i);
            CHECK_MPI(MPI_Gather(ip ? MPI_IN_PLACE : one, n, MPI_INT, all, n, MPI_INT, root, comm));
            if (rank == root) {
                int bad = 0;
                for (int r = 0; r < size; r++)
                    for (int i = 0; i < n; i++)
                        bad += all[r * n + i] != val(r, i);
                CHECK(bad == 0, "gather of %d ints to %d (in place %d): %d wrong", n, root, ip, bad);
            }
            /* Scatter back what root holds: rank r's block is val(r + root, i). */
            for (int r = 0; r < size; r++)
                for (int i = 0; i < n; i++)
                    all[r * n + i] = rank == root ? val(r + root, i) : -1;
            for (int i = 0; i < n; i++)
                one[i] = -1;
            CHECK_MPI(MPI_Scatter(all, n, MPI_INT, ip ? MPI_IN_PLACE : one, n, MPI_INT, root, comm));
            int bad = 0;
            for (int i = 0; i < n; i++)
                bad += (ip ? all[root * n + i] : one[i]) != val(rank + root, i);
            CHECK(bad == 0, "scatter of %d ints from %d (in place %d): %d wrong", n, root, ip, bad);
        }
        free(one);
        free(all);
    }
    /* Gatherv and scatterv: empty blocks, reverse order, every root. */
    int *counts = malloc(sizeof(int) * size), *displs = malloc(sizeof(int) * size);
    for (int root = 0; root < size; root++) {
        for (int r = 0; r < size; r++)
            counts[r] = ((r + root) % 3) * 4000;
        int total = reverse_displs(counts, displs);
        int *one = malloc(sizeof(int) * (counts[rank] + 1)), *all = malloc(sizeof(int) * (total + 1));
        int ip = root % 2 == 0 && rank == root;
        for (int i = 0; i < total; i++)
            all[i] = -1;
        for (int i = 0; i < counts[rank]; i++)
            (ip ? all + displs[rank] : one)[i] = val(rank, i);
        CHECK_MPI(MPI_Gatherv(ip ? MPI_IN_PLACE : one, counts[rank], MPI_INT, all, counts, displs, MPI_INT, root, comm));
        if (rank == root) {
            int bad = 0;
            for (int r = 0; r < size; r++)
                for (int i = 0; i < counts[r]; i++)
                    bad += all[displs[r] + i] != val(r, i);
            CHECK(bad == 0, "gatherv to %d: %d wrong", root, bad);
            for (int r = 0; r < size; r++)
                for (int i = 0; i < counts[r]; i++)
                    all[displs[r] + i] = val(r + 7, i);
        }
        for (int i = 0; i < counts[rank]; i++)
            one[i] = -1;
        CHECK_MPI(MPI_Scatterv(all, counts, displs, MPI_INT, ip ? MPI_IN_PLACE : one, counts[rank], MPI_INT, root, comm));
        int bad = 0;
        for (int i = 0; i < counts[rank]; i++)
            bad += (ip ? all[displs[rank] + i] : one[i]) != val(rank + 7, i);
        CHECK(bad == 0, "scatterv from %d: %d wrong", root, bad);
        free(one);
        free(all);
    }
    free(counts);
    free(displs);
}

static void test_reduce_scatter(void)
{
    int *counts = malloc(sizeof(int) * size);
    int kinds[] = {1, 5000};
    for (int k = 0; k < 2; k++) {
        int total = 0;
        for (int r = 0; r < size; r++)
            total += counts[r] = (r % 3) * kinds[k] + (r == 0);
        int *in = malloc(sizeof(int) * total), *out = malloc(sizeof(int) * total);
        for (int ip = 0; ip < 2; ip++) {
            for (int i = 0; i < total; i++)
                (ip ? out : in)[i] = val(rank, i) % 100000;
            CHECK_MPI(MPI_Reduce_scatter(ip ? MPI_IN_PLACE : in, out, counts, MPI_INT, MPI_SUM, comm));
            int off = 0, bad = 0;
            for (int r = 0; r < rank; r++)
                off += counts[r];
            for (int i = 0; i < counts[rank]; i++) {
                long want = 0;
                for (int r = 0; r < size; r++)
                    want += val(r, off + i) % 100000;
                bad += out[i] != want;
            }
            CHECK(bad == 0, "reduce_scatter (%d, in place %d): %d wrong", kinds[k], ip, bad);
        }
        free(in);
        free(out);
    }
    /* Block form, doubles (sums exact in any order). */
    int n = 3001;
    double *d = malloc(sizeof(double) * n * size), *e = malloc(sizeof(double) * n);
    for (int i = 0; i < n * size; i++)
        d[i] = rank + i * 0.5;
    CHECK_MPI(MPI_Reduce_scatter_block(d, e, n, MPI_DOUBLE, MPI_SUM, comm));
    int bad = 0;
    for (int i = 0; i < n; i++)
        bad += e[i] != (double)size * (size - 1) / 2 + size * ((rank * n + i) * 0.5);
    CHECK(bad == 0, "reduce_scatter_block of doubles: %d wrong", bad);
    free(d); free(e); free(counts);
}

/* A receive type with holes (every other int), and a nonblocking form. */
static void test_derived(void)
{
    int n = 700;
    MPI_Datatype holey;
    CHECK_MPI(MPI_Type_vector(n, 1, 2, MPI_INT, &holey));
    CHECK_MPI(MPI_Type_create_resized(holey, 0, (MPI_Aint)sizeof(int) * 2 * n, &holey));
    CHECK_MPI(MPI_Type_commit(&holey));
    int *in = malloc(sizeof(int) * n), *out = malloc(sizeof(int) * 2 * n * size);
    for (int i = 0; i < n; i++)
        in[i] = val(rank, i);
    for (int i = 0; i < 2 * n * size; i++)
        out[i] = -1;
    MPI_Request req;
    CHECK_MPI(MPI_Iallgather(in, n, MPI_INT, out, 1, holey, comm, &req));
    CHECK_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
    int bad = 0;
    for (int r = 0; r < size; r++)
        for (int i = 0; i < n; i++)
            bad += out[2 * (r * n + i)] != val(r, i) || out[2 * (r * n + i) + 1] != -1;
    CHECK(bad == 0, "iallgather into a holey type: %d wrong", bad);
    int root = size - 1;
    for (int i = 0; i < 2 * n * size; i++)
        out[i] = -1;
    CHECK_MPI(MPI_Gather(in, n, MPI_INT, out, 1, holey, root, comm));
    if (rank == root) {
        bad = 0;
        for (int r = 0; r < size; r++)
            for (int i = 0; i < n; i++)
                bad += out[2 * (r * n + i)] != val(r, i) || out[2 * (r * n + i) + 1] != -1;
        CHECK(bad == 0, "gather into a holey type: %d wrong", bad);
    }
    CHECK_MPI(MPI_Type_free(&holey));
    free(in);
    free(out);
}

int main(int argc, char **argv)
{
    const char *r = getenv("PMI_RANK"), *s = getenv("PMI_SIZE");
    int sites = s && atoi(s) >= 6 ? 3 : 2;
    char cl[32];
    snprintf(cl, sizeof cl, "site%d", r ? atoi(r) % sites : 0);
    setenv("GRIDMPI_CLUSTER", cl, 1);
    rank = test_init(&argc, &argv, &size);
    comm = MPI_COMM_WORLD;

    test_allgather();
    test_gather_scatter();
    test_reduce_scatter();
    test_derived();

#ifdef GRIDMPI
    CHECK_CLUSTERS(comm, size >= 6 ? 3 : 2);
#endif
    MPI_Finalize();
    return test_finish();
}
