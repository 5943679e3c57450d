/* gridmpi-test: ranks=2,4 min-ranks=2 timeout=120 */
/*
 * Non-overtaking order per (source, tag, communicator) with message sizes
 * straddling typical eager/rendezvous thresholds: 0 B, 1 B, 1 KiB, 16 KiB,
 * 64 KiB - 1, 64 KiB, 64 KiB + 1, 1 MiB, 16 MiB. Ranks pair up (even sends to
 * the next odd rank).
 *   A. Unexpected messages: all sends (Isend) are posted before the receiver
 *      posts anything; one tag; the receiver receives with a buffer large
 *      enough for any of them and checks each arrives in order.
 *   B. Pre-posted receives: the receiver posts all Irecvs (ANY_TAG) first,
 *      then tells the sender; receives match in posting order.
 *   C. Two interleaved tags; the receiver drains tag 2 first, then tag 1:
 *      order within each tag is kept.
 *   D. Blocking Send of the same sequence on one tag, receives with
 *      MPI_ANY_SOURCE.
 */
#include "testutil.h"

static const size_t sizes[] = {0, 1, 1024, 16384, 65535, 65536, 65537, 1 << 20, 16 << 20,
                               65537, 1, 0, 16384, 1 << 20, 1024, 65535};
#define NMSG ((int)(sizeof sizes / sizeof sizes[0]))
#define MAXSZ (16 << 20)

int main(int argc, char **argv)
{
    int size;
    int rank = test_init(&argc, &argv, &size);
    MPI_Comm comm = MPI_COMM_WORLD;
    int partner = rank ^ 1;
    if (partner >= size) { /* odd rank count: the last rank sits out */
        MPI_Finalize();
        return test_finish();
    }
    int sender = rank % 2 == 0;
    MPI_Status st;
    int count;

    if (sender) {
        char **bufs = tu_malloc(sizeof(char *) * NMSG);
        MPI_Request *reqs = tu_malloc(sizeof(MPI_Request) * NMSG);
        for (int i = 0; i < NMSG; i++) {
            bufs[i] = tu_malloc(sizeof(char) * (sizes[i] + 1));
        }
        /* A */
        for (int i = 0; i < NMSG; i++) {
            fill_pattern(bufs[i], sizes[i], tu_seed(rank, 1, i));
            CHECK_MPI(MPI_Isend(bufs[i], (int)sizes[i], MPI_BYTE, partner, 1, comm, &reqs[i]));
        }
        CHECK_MPI(MPI_Send(NULL, 0, MPI_BYTE, partner, 99, comm)); /* "all posted" */
        CHECK_MPI(MPI_Waitall(NMSG, reqs, MPI_STATUSES_IGNORE));
        /* B */
        CHECK_MPI(MPI_Recv(NULL, 0, MPI_BYTE, partner, 98, comm, MPI_STATUS_IGNORE)); /* receives posted */
        for (int i = 0; i < NMSG; i++) {
            fill_pattern(bufs[i], sizes[i], tu_seed(rank, 2, i));
            CHECK_MPI(MPI_Isend(bufs[i], (int)sizes[i], MPI_BYTE, partner, 2 + i % 3, comm, &reqs[i]));
        }
        CHECK_MPI(MPI_Waitall(NMSG, reqs, MPI_STATUSES_IGNORE));
        /* C */
        for (int i = 0; i < NMSG; i++) {
            int tag = 10 + i % 2;
            fill_pattern(bufs[i], sizes[i], tu_seed(rank, tag, i));
            CHECK_MPI(MPI_Isend(bufs[i], (int)sizes[i], MPI_BYTE, partner, tag, comm, &reqs[i]));
        }
        CHECK_MPI(MPI_Waitall(NMSG, reqs, MPI_STATUSES_IGNORE));
        /* D */
        for (int i = 0; i < NMSG; i++) {
            fill_pattern(bufs[i], sizes[i], tu_seed(rank, 20, i));
            CHECK_MPI(MPI_Send(bufs[i], (int)sizes[i], MPI_BYTE, partner, 20, comm));
        }
        for (int i = 0; i < NMSG; i++)
            free(bufs[i]);
        free(bufs);
        free(reqs);
    } else {
        char *buf = tu_malloc(MAXSZ + 16);
        char what[96];
        /* A */
        CHECK_MPI(MPI_Recv(NULL, 0, MPI_BYTE, partner, 99, comm, MPI_STATUS_IGNORE));
        for (int i = 0; i < NMSG; i++) {
            CHECK_MPI(MPI_Recv(buf, MAXSZ + 16, MPI_BYTE, partner, 1, comm, &st));
            MPI_Get_count(&st, MPI_BYTE, &count);
            snprintf(what, sizeof what, "A: unexpected message %d (%zu bytes)", i, sizes[i]);
            if (CHECK(count == (int)sizes[i], "%s: arrived with %d bytes: overtaken", what, count))
                check_pattern(buf, sizes[i], tu_seed(partner, 1, i), what);
        }
        /* B: pre-posted, one buffer per message, ANY_TAG. */
        char **rb = tu_malloc(sizeof(char *) * NMSG);
        MPI_Request *reqs = tu_malloc(sizeof(MPI_Request) * NMSG);
        MPI_Status *sts = tu_malloc(sizeof(MPI_Status) * NMSG);
        for (int i = 0; i < NMSG; i++) {
            rb[i] = tu_malloc(sizes[i] + 1);
            CHECK_MPI(MPI_Irecv(rb[i], (int)sizes[i], MPI_BYTE, partner, MPI_ANY_TAG, comm, &reqs[i]));
        }
        CHECK_MPI(MPI_Send(NULL, 0, MPI_BYTE, partner, 98, comm));
        CHECK_MPI(MPI_Waitall(NMSG, reqs, sts));
        for (int i = 0; i < NMSG; i++) {
            snprintf(what, sizeof what, "B: pre-posted receive %d (%zu bytes)", i, sizes[i]);
            MPI_Get_count(&sts[i], MPI_BYTE, &count);
            CHECK(count == (int)sizes[i] && sts[i].MPI_TAG == 2 + i % 3, "%s: got %d bytes tag %d", what,
                  count, sts[i].MPI_TAG);
            check_pattern(rb[i], sizes[i], tu_seed(partner, 2, i), what);
            free(rb[i]);
        }
        free(rb);
        free(reqs);
        free(sts);
        /* C: tag 11 first, then tag 10. */
        for (int pass = 0; pass < 2; pass++) {
            int tag = pass == 0 ? 11 : 10;
            for (int i = (tag == 10 ? 0 : 1); i < NMSG; i += 2) {
                CHECK_MPI(MPI_Recv(buf, MAXSZ, MPI_BYTE, partner, tag, comm, &st));
                MPI_Get_count(&st, MPI_BYTE, &count);
                snprintf(what, sizeof what, "C: tag %d message %d (%zu bytes)", tag, i, sizes[i]);
                if (CHECK(count == (int)sizes[i], "%s: arrived with %d bytes", what, count))
                    check_pattern(buf, sizes[i], tu_seed(partner, tag, i), what);
            }
        }
        /* D */
        for (int i = 0; i < NMSG; i++) {
            CHECK_MPI(MPI_Recv(buf, MAXSZ, MPI_BYTE, MPI_ANY_SOURCE, 20, comm, &st));
            MPI_Get_count(&st, MPI_BYTE, &count);
            snprintf(what, sizeof what, "D: blocking message %d (%zu bytes)", i, sizes[i]);
            CHECK_INT_EQ(st.MPI_SOURCE, partner);
            if (CHECK(count == (int)sizes[i], "%s: arrived with %d bytes", what, count))
                check_pattern(buf, sizes[i], tu_seed(partner, 20, i), what);
        }
        free(buf);
    }
    MPI_Finalize();
    return test_finish();
}
