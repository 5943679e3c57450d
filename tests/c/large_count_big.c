/* gridmpi-test: ranks=2 timeout=180 */
/*
 * One real message of more than INT_MAX elements: 2 GiB + 1 MiB of
 * MPI_BYTE from rank 0 to rank 1 with MPI_Send_c / MPI_Recv_c (about
 * 2.1 GB of memory per rank). MPI_Probe sees its size; the receive's status
 * gives the count through MPI_Get_count_c / MPI_Get_elements_c and
 * MPI_UNDEFINED through the int forms; every 8-byte word arrives intact.
 * Then rank 1 sends it back with MPI_Isend_c / MPI_Irecv_c in two
 * overlapping halves of a derived type from MPI_Type_contiguous_c.
 */
#include "testutil.h"

#include <limits.h>

#define NBYTES (((size_t)1 << 31) + ((size_t)1 << 20))

static inline uint64_t word(uint64_t seed, size_t i)
{
    uint64_t z = (seed + i) * 0x9e3779b97f4a7c15ull;
    return z ^ (z >> 29);
}

static void fill(uint64_t *w, size_t n, uint64_t seed)
{
    for (size_t i = 0; i < n; i++)
        w[i] = word(seed, i);
}

static void verify(const char *what, const uint64_t *w, size_t n, uint64_t seed)
{
    size_t bad = 0, first = 0;
    for (size_t i = 0; i < n; i++) {
        if (w[i] != word(seed, i) && bad++ == 0)
            first = i;
    }
    CHECK(bad == 0, "%s: %zu of %zu words wrong, first at byte %zu", what, bad, n, first * 8);
}

int main(int argc, char **argv)
{
    int size;
    int rank = test_init(&argc, &argv, &size);
    int peer = 1 - rank;
    MPI_Comm comm;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    const MPI_Count n = (MPI_Count)NBYTES;
    const size_t nwords = NBYTES / 8;

    uint64_t *buf = malloc(NBYTES);
    if (!CHECK(buf != NULL, "cannot allocate %zu bytes", NBYTES)) {
        MPI_Abort(MPI_COMM_WORLD, 2);
    }

    if (rank == 0) {
        fill(buf, nwords, 1);
        CHECK_MPI(MPI_Send_c(buf, n, MPI_BYTE, peer, 7, comm));
    } else {
        MPI_Status st;
        CHECK_MPI(MPI_Probe(peer, 7, comm, &st));
        MPI_Count c = -1;
        CHECK_MPI(MPI_Get_count_c(&st, MPI_BYTE, &c));
        CHECK(c == n, "MPI_Probe: MPI_Get_count_c gave %lld, expected %lld", c, n);

        memset(buf, 0, NBYTES);
        CHECK_MPI(MPI_Recv_c(buf, n, MPI_BYTE, peer, 7, comm, &st));
        c = -1;
        MPI_Count e = -1;
        int ci = 0, ei = 0;
        CHECK_MPI(MPI_Get_count_c(&st, MPI_BYTE, &c));
        CHECK_MPI(MPI_Get_elements_c(&st, MPI_BYTE, &e));
        CHECK_MPI(MPI_Get_count(&st, MPI_BYTE, &ci));
        CHECK_MPI(MPI_Get_elements(&st, MPI_BYTE, &ei));
        CHECK(c == n && e == n, "MPI_Recv_c: count_c %lld, elements_c %lld, expected %lld", c, e, n);
        CHECK(ci == MPI_UNDEFINED && ei == MPI_UNDEFINED, "MPI_Get_count/MPI_Get_elements gave %d/%d, expected MPI_UNDEFINED", ci,
              ei);
        CHECK_MPI(MPI_Get_count_c(&st, MPI_INT, &c));
        CHECK(c == n / 4, "MPI_Get_count_c(MPI_INT) gave %lld, expected %lld", c, n / 4);
        verify("2 GiB message", buf, nwords, 1);
    }

    /* Back again as two items of a half-sized contiguous type. */
    MPI_Datatype half;
    CHECK_MPI(MPI_Type_contiguous_c(n / 2, MPI_BYTE, &half));
    CHECK_MPI(MPI_Type_commit(&half));
    MPI_Request r;
    if (rank == 1) {
        fill(buf, nwords, 2);
        CHECK_MPI(MPI_Isend_c(buf, 2, half, peer, 8, comm, &r));
        CHECK_MPI(MPI_Wait(&r, MPI_STATUS_IGNORE));
    } else {
        memset(buf, 0, NBYTES);
        MPI_Status st;
        CHECK_MPI(MPI_Irecv_c(buf, 2, half, peer, 8, comm, &r));
        CHECK_MPI(MPI_Wait(&r, &st));
        MPI_Count c = -1;
        CHECK_MPI(MPI_Get_count_c(&st, half, &c));
        CHECK(c == 2, "MPI_Get_count_c(half) gave %lld, expected 2", c);
        verify("2 GiB message back", buf, nwords, 2);
    }
    MPI_Type_free(&half);
    free(buf);
    MPI_Comm_free(&comm);
    MPI_Finalize();
    return test_finish();
}
