/* gridmpi-test: ranks=2,3,5,8 min-ranks=2 timeout=60 */
/*
 * Intercommunicators: the world split into a low group (world ranks below
 * n/2) and a high group (the rest), joined with Intercomm_create; test_inter,
 * size/rank (local), remote_size, remote_group (translated to world ranks),
 * compare of a duplicate (CONGRUENT), traffic across (every rank sends to
 * every remote rank; status source is the remote rank), Intercomm_merge with
 * the high flag deciding which group comes first, both ways.
 */
#include "testutil.h"

int main(int argc, char **argv)
{
    int size;
    int rank = test_init(&argc, &argv, &size);
    int nlow = size / 2;
    int low = rank < nlow;
    int lsize_exp = low ? nlow : size - nlow, rsize_exp = low ? size - nlow : nlow;
    int lrank_exp = low ? rank : rank - nlow;
    MPI_Comm local, inter, dupi, merged;
    int flag, n, r, res;

    CHECK_MPI(MPI_Comm_split(MPI_COMM_WORLD, low, rank, &local));
    /* Leaders: local rank 0 of each; remote leader given as a world rank. */
    CHECK_MPI(MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, low ? nlow : 0, 123, &inter));

    CHECK_MPI(MPI_Comm_test_inter(inter, &flag));
    CHECK_INT_EQ(flag, 1);
    MPI_Comm_size(inter, &n);
    MPI_Comm_rank(inter, &r);
    CHECK(n == lsize_exp && r == lrank_exp, "intercomm local size %d rank %d, expected %d %d", n, r, lsize_exp, lrank_exp);
    CHECK_MPI(MPI_Comm_remote_size(inter, &n));
    CHECK_INT_EQ(n, rsize_exp);

    MPI_Group rg, wg;
    CHECK_MPI(MPI_Comm_remote_group(inter, &rg));
    MPI_Comm_group(MPI_COMM_WORLD, &wg);
    {
        int *idx = tu_malloc(sizeof(int) * size), *w = tu_malloc(sizeof(int) * size);
        for (int i = 0; i < rsize_exp; i++)
            idx[i] = i;
        MPI_Group_translate_ranks(rg, rsize_exp, idx, wg, w);
        for (int i = 0; i < rsize_exp; i++)
            CHECK(w[i] == (low ? nlow + i : i), "remote group member %d is world rank %d", i, w[i]);
        free(idx);
        free(w);
    }
    /* Local group of an intercommunicator is the local side. */
    MPI_Group lg, localg;
    MPI_Comm_group(inter, &lg);
    MPI_Comm_group(local, &localg);
    MPI_Group_compare(lg, localg, &res);
    CHECK_INT_EQ(res, MPI_IDENT);
    MPI_Group_free(&lg);
    MPI_Group_free(&localg);
    MPI_Group_free(&rg);

    CHECK_MPI(MPI_Comm_dup(inter, &dupi));
    CHECK_MPI(MPI_Comm_compare(inter, dupi, &res));
    CHECK_INT_EQ(res, MPI_CONGRUENT);
    CHECK_MPI(MPI_Comm_test_inter(dupi, &flag));
    CHECK_INT_EQ(flag, 1);

    /* Everyone sends to every remote rank (ranks in send/recv name the
     * remote group); the same exchange on the duplicate with swapped
     * payloads must not mix. */
    {
        int *out = tu_malloc(sizeof(int) * 2 * rsize_exp), *in = tu_malloc(sizeof(int) * 2 * rsize_exp);
        MPI_Request *reqs = tu_malloc(sizeof(MPI_Request) * 4 * rsize_exp);
        MPI_Status *sts = tu_malloc(sizeof(MPI_Status) * 4 * rsize_exp);
        for (int j = 0; j < rsize_exp; j++) {
            CHECK_MPI(MPI_Irecv(&in[j], 1, MPI_INT, j, 7, inter, &reqs[j]));
            CHECK_MPI(MPI_Irecv(&in[rsize_exp + j], 1, MPI_INT, MPI_ANY_SOURCE, 1000 + j, dupi, &reqs[rsize_exp + j]));
        }
        for (int j = 0; j < rsize_exp; j++) {
            out[j] = rank * 100 + j;
            out[rsize_exp + j] = -(rank * 100 + j);
            CHECK_MPI(MPI_Isend(&out[rsize_exp + j], 1, MPI_INT, j, 1000 + lrank_exp, dupi, &reqs[2 * rsize_exp + j]));
            CHECK_MPI(MPI_Isend(&out[j], 1, MPI_INT, j, 7, inter, &reqs[3 * rsize_exp + j]));
        }
        CHECK_MPI(MPI_Waitall(4 * rsize_exp, reqs, sts));
        for (int j = 0; j < rsize_exp; j++) {
            int wsrc = low ? nlow + j : j;
            CHECK(in[j] == wsrc * 100 + lrank_exp, "intercomm message from remote %d: %d", j, in[j]);
            CHECK(sts[j].MPI_SOURCE == j, "intercomm status source %d, expected remote rank %d", sts[j].MPI_SOURCE, j);
            CHECK(in[rsize_exp + j] == -(wsrc * 100 + lrank_exp), "dup'ed intercomm message from remote %d: %d", j,
                  in[rsize_exp + j]);
            CHECK(sts[rsize_exp + j].MPI_SOURCE == j, "ANY_SOURCE on intercomm: source %d, expected %d",
                  sts[rsize_exp + j].MPI_SOURCE, j);
        }
        free(out);
        free(in);
        free(reqs);
        free(sts);
    }

    /* Merge: high group ordered last. low side says high=0, high side 1. */
    for (int way = 0; way < 2; way++) {
        int high = way == 0 ? !low : low;
        CHECK_MPI(MPI_Intercomm_merge(inter, high, &merged));
        CHECK_MPI(MPI_Comm_test_inter(merged, &flag));
        CHECK_INT_EQ(flag, 0);
        MPI_Comm_size(merged, &n);
        MPI_Comm_rank(merged, &r);
        int first_size = high ? rsize_exp : lsize_exp;
        int expect = high ? first_size + lrank_exp : lrank_exp;
        CHECK(n == size && r == expect, "merge (way %d, high=%d): size %d rank %d, expected %d %d", way, high, n, r,
              size, expect);
        /* Ring on the merged communicator. */
        int right = (r + 1) % n, left = (r + n - 1) % n, in = -1;
        CHECK_MPI(MPI_Sendrecv(&r, 1, MPI_INT, right, 0, &in, 1, MPI_INT, left, 0, merged, MPI_STATUS_IGNORE));
        CHECK(in == left, "merged ring: got %d from %d", in, left);
        MPI_Comm_free(&merged);
    }

    MPI_Group_free(&wg);
    MPI_Comm_free(&dupi);
    MPI_Comm_free(&inter);
    MPI_Comm_free(&local);
    MPI_Finalize();
    return test_finish();
}
