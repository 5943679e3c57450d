/* gridmpi-test: ranks=2,4 min-ranks=2 timeout=60 */
/*
 * MPI 4.1 buffered-send buffers: a buffer attached to one communicator
 * (MPI_Comm_attach_buffer / MPI_Comm_detach_buffer) serves the buffered
 * sends on that communicator; MPI_Comm_flush_buffer, MPI_Buffer_flush and
 * MPI_Buffer_iflush wait for the buffered messages to be transmitted;
 * MPI_BUFFER_AUTOMATIC lets the library size the buffer itself (many large
 * buffered sends posted before the receiver receives anything), and
 * detaching it returns MPI_BUFFER_AUTOMATIC.
 */
#include "testutil.h"

#define NMSG 40
#define LEN 16384 /* ints */

int main(int argc, char **argv)
{
    int size;
    int rank = test_init(&argc, &argv, &size);
#if TU_PEER_OPENMPI
    printf("MPI 4.1 buffer functions are not in Open MPI 5.0.11: nothing tested\n");
    (void)rank;
#else
    int peer = rank ^ 1;
    if (peer < size) {
        int sender = rank % 2 == 0;
        MPI_Comm comm;
        MPI_Comm_dup(MPI_COMM_WORLD, &comm);
        int *msgs = tu_malloc(sizeof(int) * LEN * NMSG);

        /* 1. A communicator buffer. */
        if (sender) {
            int psize;
            MPI_Pack_size(LEN, MPI_INT, comm, &psize);
            int bsize = 4 * (psize + MPI_BSEND_OVERHEAD);
            char *buf = tu_malloc(bsize);
            CHECK_MPI(MPI_Comm_attach_buffer(comm, buf, bsize));
            for (int i = 0; i < 4; i++) {
                fill_ints(msgs + i * LEN, LEN, 10 + i);
                CHECK_MPI(MPI_Bsend(msgs + i * LEN, LEN, MPI_INT, peer, i, comm));
            }
            memset(msgs, 0, sizeof(int) * LEN * 4); /* buffered: reusable at once */
            CHECK_MPI(MPI_Send(NULL, 0, MPI_INT, peer, 99, comm));
            CHECK_MPI(MPI_Comm_flush_buffer(comm));
            void *addr = NULL;
            int dsize = -1;
            CHECK_MPI(MPI_Comm_detach_buffer(comm, &addr, &dsize));
            CHECK(addr == buf && dsize == bsize, "Comm_detach_buffer returned %p/%d, attached %p/%d", addr, dsize,
                  (void *)buf, bsize);
            free(buf);
        } else {
            CHECK_MPI(MPI_Recv(NULL, 0, MPI_INT, peer, 99, comm, MPI_STATUS_IGNORE));
            for (int i = 3; i >= 0; i--) {
                CHECK_MPI(MPI_Recv(msgs, LEN, MPI_INT, peer, i, comm, MPI_STATUS_IGNORE));
                char what[48];
                snprintf(what, sizeof what, "Bsend through a communicator buffer, %d", i);
                check_ints(msgs, LEN, 10 + i, what);
            }
        }

        /* 2. MPI_BUFFER_AUTOMATIC for the process: 40 x 64 KiB buffered
         * before the receiver takes any. */
        if (sender) {
            CHECK_MPI(MPI_Buffer_attach(MPI_BUFFER_AUTOMATIC, 0));
            for (int i = 0; i < NMSG; i++) {
                fill_ints(msgs + i * LEN, LEN, 100 + i);
                CHECK_MPI(MPI_Bsend(msgs + i * LEN, LEN, MPI_INT, peer, i, MPI_COMM_WORLD));
            }
            memset(msgs, 0, sizeof(int) * LEN * NMSG);
            CHECK_MPI(MPI_Send(NULL, 0, MPI_INT, peer, 99, MPI_COMM_WORLD));
            CHECK_MPI(MPI_Buffer_flush());
            MPI_Request req;
            CHECK_MPI(MPI_Ibsend(msgs, 1, MPI_INT, peer, 98, MPI_COMM_WORLD, &req));
            CHECK_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
            CHECK_MPI(MPI_Buffer_iflush(&req));
            CHECK_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
            void *addr = NULL;
            int dsize;
            CHECK_MPI(MPI_Buffer_detach(&addr, &dsize));
            CHECK(addr == MPI_BUFFER_AUTOMATIC, "detaching the automatic buffer returned %p", addr);
        } else {
            CHECK_MPI(MPI_Recv(NULL, 0, MPI_INT, peer, 99, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            for (int i = NMSG - 1; i >= 0; i--) {
                CHECK_MPI(MPI_Recv(msgs, LEN, MPI_INT, peer, i, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
                char what[48];
                snprintf(what, sizeof what, "Bsend with MPI_BUFFER_AUTOMATIC, %d", i);
                check_ints(msgs, LEN, 100 + i, what);
            }
            int one;
            CHECK_MPI(MPI_Recv(&one, 1, MPI_INT, peer, 98, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        }
        free(msgs);
        MPI_Comm_free(&comm);
    }
#endif
    MPI_Finalize();
    return test_finish();
}
