/* gridmpi-test: ranks=2,4 min-ranks=2 timeout=120 */
/*
 * A blocking send's buffer is the caller's again when MPI_Send returns
 * (MPI 4.1, 3.4), even when the message could not leave yet. Each even rank
 * sends NMSG small messages of varying sizes to the next odd rank with
 * MPI_Send from one buffer, scribbling over it right after each call; a
 * second round does the same with MPI_Isend + MPI_Wait. The receiver sleeps first, so
 * the sender's ring to it fills and later messages wait in the sender
 * (GridMPI copies them then). The receiver checks every message's length
 * and bytes, in order.
 */
#include "testutil.h"
#include <unistd.h>

#define NMSG 6000
#define MAXSZ 1000

static size_t size_of(int i)
{
    return (size_t)((i * 37) % MAXSZ) + 1;
}

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
    unsigned char *buf = tu_malloc(MAXSZ);
    for (int round = 0; round < 2; round++) {
        int tag = 100 + round;
        if (rank % 2 == 0) {
            for (int i = 0; i < NMSG; i++) {
                size_t n = size_of(i);
                fill_pattern(buf, n, tu_seed(rank, tag, i));
                if (round == 0) {
                    CHECK_MPI(MPI_Send(buf, (int)n, MPI_BYTE, partner, tag, comm));
                } else {
                    MPI_Request r;
                    CHECK_MPI(MPI_Isend(buf, (int)n, MPI_BYTE, partner, tag, comm, &r));
                    CHECK_MPI(MPI_Wait(&r, MPI_STATUS_IGNORE));
                }
                /* The buffer is ours again: scribble over it at once. */
                memset(buf, 0xEE, MAXSZ);
            }
        } else {
            usleep(300 * 1000);
            for (int i = 0; i < NMSG; i++) {
                size_t n = size_of(i);
                MPI_Status st;
                memset(buf, 0, MAXSZ);
                CHECK_MPI(MPI_Recv(buf, MAXSZ, MPI_BYTE, partner, tag, comm, &st));
                int got = -1;
                MPI_Get_count(&st, MPI_BYTE, &got);
                if (!CHECK(got == (int)n, "round %d message %d: %d bytes, expected %zu", round, i, got, n))
                    continue;
                check_pattern(buf, n, tu_seed(partner, tag, i), "message");
            }
        }
    }
    free(buf);
    MPI_Finalize();
    return test_finish();
}
