/* gridmpi-test: ranks=2,4,8 min-ranks=2 timeout=60 */
/*
 * Persistent requests: Send_init, Ssend_init, Rsend_init, Bsend_init and
 * Recv_init paired between ranks (r, r^1), started many times with Start and
 * Startall, the buffer contents changing between starts; a completed
 * persistent request stays allocated (inactive) and Wait/Test on it return at
 * once with an empty status; Request_free of an inactive request; persistent
 * operations to/from MPI_PROC_NULL.
 */
#include "testutil.h"

#define LEN 1000
#define ITERS 40

static void check_empty_status(const MPI_Status *st, const char *what)
{
    int count = -1;
    MPI_Get_count(st, MPI_INT, &count);
    CHECK(st->MPI_SOURCE == MPI_ANY_SOURCE && st->MPI_TAG == MPI_ANY_TAG && count == 0,
          "%s: status not empty (source %d tag %d count %d)", what, st->MPI_SOURCE, st->MPI_TAG, count);
}

int main(int argc, char **argv)
{
    int size;
    int rank = test_init(&argc, &argv, &size);
    /* Pairs (0,1), (2,3), ...; an odd last rank only does the PROC_NULL part. */
    int peer = rank ^ 1;
    int paired = peer < size;
    MPI_Comm comm = MPI_COMM_WORLD;
    MPI_Status st;
    int flag;

    if (paired) {
        int *sbuf = tu_malloc(4 * LEN * sizeof(int));
        int *rbuf = tu_malloc(4 * LEN * sizeof(int));
        int bsize = LEN * (int)sizeof(int) + MPI_BSEND_OVERHEAD;
        void *battach = tu_malloc(bsize);
        CHECK_MPI(MPI_Buffer_attach(battach, bsize));

        /* Each side sends 4 streams (standard, sync, buffered, ready) and
         * receives 4; the ready send is only started after the peer's
         * receive is known to be active (a token message). */
        MPI_Request sreq[4], rreq[4];
        CHECK_MPI(MPI_Send_init(sbuf + 0 * LEN, LEN, MPI_INT, peer, 1, comm, &sreq[0]));
        CHECK_MPI(MPI_Ssend_init(sbuf + 1 * LEN, LEN, MPI_INT, peer, 2, comm, &sreq[1]));
        CHECK_MPI(MPI_Bsend_init(sbuf + 2 * LEN, LEN, MPI_INT, peer, 3, comm, &sreq[2]));
        CHECK_MPI(MPI_Rsend_init(sbuf + 3 * LEN, LEN, MPI_INT, peer, 4, comm, &sreq[3]));
        for (int k = 0; k < 4; k++)
            CHECK_MPI(MPI_Recv_init(rbuf + k * LEN, LEN, MPI_INT, peer, k + 1, comm, &rreq[k]));

        /* Inactive persistent requests complete at once with an empty status. */
        CHECK_MPI(MPI_Wait(&sreq[0], &st));
        check_empty_status(&st, "Wait on inactive persistent send");
        CHECK(sreq[0] != MPI_REQUEST_NULL, "Wait freed an inactive persistent request");
        flag = 0;
        CHECK_MPI(MPI_Test(&rreq[0], &flag, &st));
        CHECK(flag, "Test on inactive persistent receive: flag 0");
        check_empty_status(&st, "Test on inactive persistent receive");

        for (int it = 0; it < ITERS; it++) {
            for (int k = 0; k < 4; k++)
                fill_ints(sbuf + k * LEN, LEN, it * 100 + rank * 10 + k);
            for (int k = 0; k < 4 * LEN; k++)
                rbuf[k] = -1;
            if (it % 2 == 0) {
                CHECK_MPI(MPI_Startall(4, rreq));
            } else {
                for (int k = 0; k < 4; k++)
                    CHECK_MPI(MPI_Start(&rreq[k]));
            }
            /* Token: my receives are active. */
            int token = it;
            MPI_Request treq;
            CHECK_MPI(MPI_Irecv(&token, 1, MPI_INT, peer, 5, comm, &treq));
            CHECK_MPI(MPI_Send(&it, 1, MPI_INT, peer, 5, comm));
            CHECK_MPI(MPI_Wait(&treq, MPI_STATUS_IGNORE));
            CHECK_INT_EQ(token, it);
            if (it % 2 == 0) {
                CHECK_MPI(MPI_Startall(4, sreq));
            } else {
                for (int k = 3; k >= 0; k--)
                    CHECK_MPI(MPI_Start(&sreq[k]));
            }
            MPI_Status sts[4];
            CHECK_MPI(MPI_Waitall(4, rreq, sts));
            CHECK_MPI(MPI_Waitall(4, sreq, MPI_STATUSES_IGNORE));
            for (int k = 0; k < 4; k++) {
                char what[64];
                snprintf(what, sizeof what, "iteration %d stream %d", it, k);
                check_ints(rbuf + k * LEN, LEN, it * 100 + peer * 10 + k, what);
                CHECK(rreq[k] != MPI_REQUEST_NULL && sreq[k] != MPI_REQUEST_NULL,
                      "persistent request freed by completion");
                CHECK(sts[k].MPI_SOURCE == peer && sts[k].MPI_TAG == k + 1, "%s: status source %d tag %d",
                      what, sts[k].MPI_SOURCE, sts[k].MPI_TAG);
            }
        }
        for (int k = 0; k < 4; k++) {
            CHECK_MPI(MPI_Request_free(&sreq[k]));
            CHECK_MPI(MPI_Request_free(&rreq[k]));
            CHECK(sreq[k] == MPI_REQUEST_NULL && rreq[k] == MPI_REQUEST_NULL, "Request_free did not null the handle");
        }
        void *dbuf;
        int dsize;
        CHECK_MPI(MPI_Buffer_detach(&dbuf, &dsize));
        CHECK(dbuf == battach && dsize == bsize, "Buffer_detach returned %p/%d", dbuf, dsize);
        free(battach);
        free(sbuf);
        free(rbuf);
    }

    /* Persistent operations with MPI_PROC_NULL complete at once. */
    {
        int buf[4] = {1, 2, 3, 4};
        MPI_Request reqs[2];
        CHECK_MPI(MPI_Send_init(buf, 4, MPI_INT, MPI_PROC_NULL, 9, comm, &reqs[0]));
        CHECK_MPI(MPI_Recv_init(buf, 4, MPI_INT, MPI_PROC_NULL, 9, comm, &reqs[1]));
        for (int it = 0; it < 3; it++) {
            CHECK_MPI(MPI_Startall(2, reqs));
            MPI_Status sts[2];
            CHECK_MPI(MPI_Waitall(2, reqs, sts));
            int count = -1;
            MPI_Get_count(&sts[1], MPI_INT, &count);
            /* MPICH 5.0.2 and Open MPI 5.0.11 return an empty status (source
             * MPI_ANY_SOURCE) for a persistent receive from MPI_PROC_NULL. */
            if (!TU_PEER_MPICH && !TU_PEER_OPENMPI)
            CHECK(sts[1].MPI_SOURCE == MPI_PROC_NULL && sts[1].MPI_TAG == MPI_ANY_TAG && count == 0,
                  "persistent receive from PROC_NULL: source %d tag %d count %d", sts[1].MPI_SOURCE,
                  sts[1].MPI_TAG, count);
            CHECK(buf[0] == 1 && buf[3] == 4, "receive from PROC_NULL modified the buffer");
        }
        MPI_Request_free(&reqs[0]);
        MPI_Request_free(&reqs[1]);
    }

    MPI_Finalize();
    return test_finish();
}
