/* gridmpi-test: ranks=2,4 min-ranks=2 timeout=120 */
/*
 * A flood of unmatched sends: each even rank posts 10000 small Isends (tags
 * 0..9999) and 4 large ones (1 MiB, tags 10000..10003) to the next odd rank
 * before that rank posts any receive (it waits for an "all posted" message),
 * then the receiver receives them in reverse tag order. Must complete
 * without deadlock and deliver every byte.
 */
#include "testutil.h"

#define NSMALL 10000
#define NLARGE 4
#define SMALLSZ 16          /* ints */
#define LARGESZ (1 << 18)   /* ints = 1 MiB */

int main(int argc, char **argv)
{
    int size;
    int rank = test_init(&argc, &argv, &size);
    MPI_Comm comm = MPI_COMM_WORLD;
    int partner = rank ^ 1;
    if (partner >= size) {
        MPI_Finalize();
        return test_finish();
    }
    int ntotal = NSMALL + NLARGE;
    if (rank % 2 == 0) {
        int *small = tu_malloc(sizeof(int) * SMALLSZ * NSMALL);
        int *large = tu_malloc(sizeof(int) * LARGESZ * NLARGE);
        MPI_Request *reqs = tu_malloc(sizeof(MPI_Request) * ntotal);
        for (int t = 0; t < NSMALL; t++) {
            fill_ints(small + t * SMALLSZ, SMALLSZ, t);
            CHECK_MPI(MPI_Isend(small + t * SMALLSZ, SMALLSZ, MPI_INT, partner, t, comm, &reqs[t]));
        }
        for (int k = 0; k < NLARGE; k++) {
            fill_ints(large + (size_t)k * LARGESZ, LARGESZ, 50000 + k);
            CHECK_MPI(MPI_Isend(large + (size_t)k * LARGESZ, LARGESZ, MPI_INT, partner, NSMALL + k, comm,
                                &reqs[NSMALL + k]));
        }
        CHECK_MPI(MPI_Send(NULL, 0, MPI_INT, partner, NSMALL + NLARGE, comm));
        CHECK_MPI(MPI_Waitall(ntotal, reqs, MPI_STATUSES_IGNORE));
        free(small);
        free(large);
        free(reqs);
    } else {
        int *buf = tu_malloc(sizeof(int) * LARGESZ);
        MPI_Status st;
        int count;
        CHECK_MPI(MPI_Recv(NULL, 0, MPI_INT, partner, NSMALL + NLARGE, comm, MPI_STATUS_IGNORE));
        for (int t = ntotal - 1; t >= 0; t--) {
            int expect = t >= NSMALL ? LARGESZ : SMALLSZ;
            CHECK_MPI(MPI_Recv(buf, expect, MPI_INT, partner, t, comm, &st));
            MPI_Get_count(&st, MPI_INT, &count);
            if (!CHECK(count == expect && st.MPI_TAG == t, "tag %d: count %d status tag %d", t, count, st.MPI_TAG))
                continue;
            char what[32];
            snprintf(what, sizeof what, "message tag %d", t);
            if (check_ints(buf, expect, t >= NSMALL ? 50000 + t - NSMALL : t, what) && tu_errors > 20)
                break;
        }
        free(buf);
    }
    MPI_Finalize();
    return test_finish();
}
