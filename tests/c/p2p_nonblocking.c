/* gridmpi-test: ranks=1,2,4,8 timeout=60 */
/*
 * Nonblocking point-to-point and the completion functions: all-to-all
 * exchange with Isend/Irecv completed by Waitall, Waitany, Waitsome,
 * Testall, Testany, Testsome; arrays with MPI_REQUEST_NULL entries;
 * MPI_STATUSES_IGNORE; completion of null requests (empty status,
 * MPI_UNDEFINED index/outcount); Issend cannot complete before the matching
 * receive is posted; Request_get_status and (MPI 4.1)
 * Request_get_status_all/_any/_some do not free the requests.
 */
#include "testutil.h"

#define LEN 257

static int size, rank;

static void check_empty_status(const MPI_Status *st, const char *what)
{
    int count = -1;
    CHECK(st->MPI_SOURCE == MPI_ANY_SOURCE, "%s: empty status has source %d", what, st->MPI_SOURCE);
    CHECK(st->MPI_TAG == MPI_ANY_TAG, "%s: empty status has tag %d", what, st->MPI_TAG);
    MPI_Get_count(st, MPI_INT, &count);
    CHECK(count == 0, "%s: empty status has count %d", what, count);
}

enum { WAITALL, WAITANY, WAITSOME, TESTALL, TESTANY, TESTSOME, NMODES };
static const char *mode_names[] = {"Waitall", "Waitany", "Waitsome", "Testall", "Testany", "Testsome"};

/* All-to-all exchange (including self) with LEN ints from every rank; the
 * request array is interleaved with MPI_REQUEST_NULL entries. */
static void exchange(int mode, int round)
{
    int nreq = 3 * size; /* recv, null, send per peer */
    MPI_Request *reqs = tu_malloc(sizeof(MPI_Request) * nreq);
    MPI_Status *sts = tu_malloc(sizeof(MPI_Status) * nreq);
    int *sbuf = tu_malloc(sizeof(int) * LEN * size);
    int *rbuf = tu_malloc(sizeof(int) * LEN * size);
    int *done = calloc(nreq, sizeof(int));
    int *idx = tu_malloc(sizeof(int) * nreq);
    int tag = 50 + mode;
    for (int p = 0; p < size; p++) {
        reqs[3 * p + 1] = MPI_REQUEST_NULL;
        CHECK_MPI(MPI_Irecv(rbuf + p * LEN, LEN, MPI_INT, p, tag, MPI_COMM_WORLD, &reqs[3 * p]));
    }
    for (int p = 0; p < size; p++) {
        int q = (rank + p) % size;
        fill_ints(sbuf + q * LEN, LEN, round * 10000 + rank * 100 + q);
        CHECK_MPI(MPI_Isend(sbuf + q * LEN, LEN, MPI_INT, q, tag, MPI_COMM_WORLD, &reqs[3 * q + 2]));
    }
    const char *what = mode_names[mode];
    int completed = 0, flag, index, outcount, spins = 0;
    switch (mode) {
    case WAITALL:
        CHECK_MPI(MPI_Waitall(nreq, reqs, sts));
        for (int i = 0; i < nreq; i++)
            done[i] = 1;
        completed = nreq;
        break;
    case TESTALL:
        do {
            CHECK_MPI(MPI_Testall(nreq, reqs, &flag, sts));
            spins++;
        } while (!flag);
        for (int i = 0; i < nreq; i++)
            done[i] = 1;
        completed = nreq;
        break;
    case WAITANY:
        while (1) {
            MPI_Status st;
            CHECK_MPI(MPI_Waitany(nreq, reqs, &index, &st));
            if (index == MPI_UNDEFINED)
                break;
            if (!CHECK(index >= 0 && index < nreq && index % 3 != 1 && !done[index],
                       "Waitany index %d invalid or repeated", index))
                break;
            CHECK(reqs[index] == MPI_REQUEST_NULL, "Waitany did not free request %d", index);
            done[index] = 1;
            sts[index] = st;
            completed++;
        }
        break;
    case TESTANY:
        while (1) {
            MPI_Status st;
            CHECK_MPI(MPI_Testany(nreq, reqs, &index, &flag, &st));
            if (flag && index == MPI_UNDEFINED)
                break;
            if (!flag) {
                CHECK(index == MPI_UNDEFINED, "Testany flag=0 with index %d", index);
                continue;
            }
            if (!CHECK(index >= 0 && index < nreq && index % 3 != 1 && !done[index],
                       "Testany index %d invalid or repeated", index))
                break;
            done[index] = 1;
            sts[index] = st;
            completed++;
        }
        break;
    case WAITSOME:
    case TESTSOME:
        while (1) {
            MPI_Status *tmp = tu_malloc(sizeof(MPI_Status) * nreq);
            if (mode == WAITSOME)
                CHECK_MPI(MPI_Waitsome(nreq, reqs, &outcount, idx, tmp));
            else
                CHECK_MPI(MPI_Testsome(nreq, reqs, &outcount, idx, tmp));
            if (outcount == MPI_UNDEFINED) {
                free(tmp);
                break;
            }
            if (mode == WAITSOME)
                CHECK(outcount > 0, "Waitsome returned outcount %d", outcount);
            for (int k = 0; k < outcount; k++) {
                int i = idx[k];
                if (CHECK(i >= 0 && i < nreq && i % 3 != 1 && !done[i], "%s index %d invalid or repeated", what, i)) {
                    done[i] = 1;
                    sts[i] = tmp[k];
                    completed++;
                }
            }
            free(tmp);
        }
        break;
    }
    CHECK(completed == 2 * size || completed == nreq, "%s completed %d requests", what, completed);
    for (int i = 0; i < nreq; i++)
        CHECK(reqs[i] == MPI_REQUEST_NULL, "%s left request %d non-null", what, i);
    for (int p = 0; p < size; p++) {
        char msg[64];
        snprintf(msg, sizeof msg, "%s data from %d", what, p);
        check_ints(rbuf + p * LEN, LEN, round * 10000 + p * 100 + rank, msg);
        if (done[3 * p]) {
            CHECK(sts[3 * p].MPI_SOURCE == p, "%s: status source %d, expected %d", what, sts[3 * p].MPI_SOURCE, p);
            CHECK(sts[3 * p].MPI_TAG == tag, "%s: status tag %d", what, sts[3 * p].MPI_TAG);
            int count;
            MPI_Get_count(&sts[3 * p], MPI_INT, &count);
            CHECK(count == LEN, "%s: count %d", what, count);
        }
        if (mode == WAITALL || mode == TESTALL)
            check_empty_status(&sts[3 * p + 1], "null entry in Waitall/Testall");
    }
    free(reqs);
    free(sts);
    free(sbuf);
    free(rbuf);
    free(done);
    free(idx);
}

int main(int argc, char **argv)
{
    rank = test_init(&argc, &argv, &size);
    MPI_Status st;
    int flag, index, outcount, idx[4];
    MPI_Request nulls[4] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL, MPI_REQUEST_NULL, MPI_REQUEST_NULL};
    MPI_Status sts[4];

    /* Completing null requests. */
    MPI_Request r = MPI_REQUEST_NULL;
    CHECK_MPI(MPI_Wait(&r, &st));
    check_empty_status(&st, "Wait(MPI_REQUEST_NULL)");
    flag = 0;
    CHECK_MPI(MPI_Test(&r, &flag, &st));
    CHECK(flag == 1, "Test(MPI_REQUEST_NULL) flag %d", flag);
    check_empty_status(&st, "Test(MPI_REQUEST_NULL)");
    CHECK_MPI(MPI_Waitany(4, nulls, &index, &st));
    CHECK_INT_EQ(index, MPI_UNDEFINED);
    check_empty_status(&st, "Waitany(all null)");
    flag = 0;
    CHECK_MPI(MPI_Testany(4, nulls, &index, &flag, &st));
    CHECK(flag == 1 && index == MPI_UNDEFINED, "Testany(all null): flag %d index %d", flag, index);
    check_empty_status(&st, "Testany(all null)");
    CHECK_MPI(MPI_Waitsome(4, nulls, &outcount, idx, sts));
    CHECK_INT_EQ(outcount, MPI_UNDEFINED);
    CHECK_MPI(MPI_Testsome(4, nulls, &outcount, idx, sts));
    CHECK_INT_EQ(outcount, MPI_UNDEFINED);
    CHECK_MPI(MPI_Waitall(4, nulls, sts));
    for (int i = 0; i < 4; i++)
        check_empty_status(&sts[i], "Waitall(all null)");
    flag = 0;
    CHECK_MPI(MPI_Testall(4, nulls, &flag, MPI_STATUSES_IGNORE));
    CHECK(flag == 1, "Testall(all null) flag %d", flag);
    CHECK_MPI(MPI_Waitall(0, NULL, MPI_STATUSES_IGNORE));
    CHECK_MPI(MPI_Request_get_status(MPI_REQUEST_NULL, &flag, &st));
    CHECK(flag == 1, "Request_get_status(MPI_REQUEST_NULL) flag %d", flag);
    check_empty_status(&st, "Request_get_status(MPI_REQUEST_NULL)");

    for (int round = 0; round < 2; round++)
        for (int mode = 0; mode < NMODES; mode++)
            exchange(mode, round);

    /* Waitall with MPI_STATUSES_IGNORE, zero-count messages. */
    {
        MPI_Request reqs[2];
        int right = (rank + 1) % size, left = (rank + size - 1) % size;
        CHECK_MPI(MPI_Irecv(NULL, 0, MPI_INT, left, 77, MPI_COMM_WORLD, &reqs[0]));
        CHECK_MPI(MPI_Isend(NULL, 0, MPI_INT, right, 77, MPI_COMM_WORLD, &reqs[1]));
        CHECK_MPI(MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE));
        CHECK(reqs[0] == MPI_REQUEST_NULL && reqs[1] == MPI_REQUEST_NULL, "Waitall did not free");
    }

    /* Issend is not complete before the receiver posts the receive: the
     * receiver posts it only after a "go" message that the sender sends
     * after testing. Request_get_status leaves the request alive. */
    if (size >= 2 && rank < 2) {
        int peer = 1 - rank, buf[100];
        if (rank == 0) {
            MPI_Request req;
            fill_ints(buf, 100, 900);
            CHECK_MPI(MPI_Issend(buf, 100, MPI_INT, peer, 90, MPI_COMM_WORLD, &req));
            for (int i = 0; i < 100; i++) {
                CHECK_MPI(MPI_Test(&req, &flag, MPI_STATUS_IGNORE));
                if (!CHECK(!flag, "Issend completed before the receive was posted"))
                    break;
                CHECK_MPI(MPI_Request_get_status(req, &flag, MPI_STATUS_IGNORE));
                if (!CHECK(!flag, "Request_get_status: Issend complete before the receive was posted"))
                    break;
            }
            CHECK_MPI(MPI_Send(NULL, 0, MPI_INT, peer, 91, MPI_COMM_WORLD));
            do {
                CHECK_MPI(MPI_Request_get_status(req, &flag, &st));
            } while (!flag);
            CHECK(req != MPI_REQUEST_NULL, "Request_get_status freed the request");
            CHECK_MPI(MPI_Wait(&req, &st));
            CHECK(req == MPI_REQUEST_NULL, "Wait did not free the request");
        } else {
            CHECK_MPI(MPI_Recv(NULL, 0, MPI_INT, peer, 91, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            CHECK_MPI(MPI_Recv(buf, 100, MPI_INT, peer, 90, MPI_COMM_WORLD, &st));
            check_ints(buf, 100, 900, "Issend data");
        }
    }

    /* Request_get_status on a receive: poll until complete, status is right,
     * then Wait still has to free it. */
    {
        int right = (rank + 1) % size, left = (rank + size - 1) % size;
        int in[10], out[10];
        MPI_Request req;
        fill_ints(out, 10, rank + 3);
        CHECK_MPI(MPI_Irecv(in, 10, MPI_INT, left, 95, MPI_COMM_WORLD, &req));
        CHECK_MPI(MPI_Send(out, 10, MPI_INT, right, 95, MPI_COMM_WORLD));
        do {
            CHECK_MPI(MPI_Request_get_status(req, &flag, &st));
        } while (!flag);
        CHECK_INT_EQ(st.MPI_SOURCE, left);
        CHECK_INT_EQ(st.MPI_TAG, 95);
        CHECK(req != MPI_REQUEST_NULL, "Request_get_status freed the request");
        CHECK_MPI(MPI_Wait(&req, &st));
        CHECK_INT_EQ(st.MPI_SOURCE, left);
        check_ints(in, 10, left + 3, "Request_get_status receive");
    }

#if !TU_PEER_OPENMPI /* MPI 4.1, not in Open MPI 5.0.11 */
    /* Request_get_status_all / _any / _some: like Test*, but the completed
     * requests stay allocated. */
    {
        int right = (rank + 1) % size, left = (rank + size - 1) % size;
        int in[3] = {-1, -1, -1}, out[3] = {rank, rank + 100, rank + 200};
        MPI_Request rq[5];
        rq[0] = MPI_REQUEST_NULL;
        CHECK_MPI(MPI_Irecv(&in[0], 1, MPI_INT, left, 97, MPI_COMM_WORLD, &rq[1]));
        CHECK_MPI(MPI_Irecv(&in[1], 1, MPI_INT, left, 98, MPI_COMM_WORLD, &rq[2]));
        CHECK_MPI(MPI_Isend(&out[0], 1, MPI_INT, right, 97, MPI_COMM_WORLD, &rq[3]));
        CHECK_MPI(MPI_Isend(&out[1], 1, MPI_INT, right, 98, MPI_COMM_WORLD, &rq[4]));
        MPI_Status sts5[5];
        flag = 0;
        while (!flag)
            CHECK_MPI(MPI_Request_get_status_all(5, rq, &flag, sts5));
        for (int i = 1; i < 5; i++)
            CHECK(rq[i] != MPI_REQUEST_NULL, "Request_get_status_all freed request %d", i);
        CHECK(sts5[1].MPI_SOURCE == left && sts5[1].MPI_TAG == 97 && sts5[2].MPI_TAG == 98,
              "Request_get_status_all statuses: source %d tags %d %d", sts5[1].MPI_SOURCE, sts5[1].MPI_TAG, sts5[2].MPI_TAG);
        CHECK_INT_EQ(in[0], left);
        CHECK_INT_EQ(in[1], left + 100);
        /* All complete: _any gives some index with flag, _some gives all four. */
        CHECK_MPI(MPI_Request_get_status_any(5, rq, &index, &flag, &st));
        CHECK(flag && index >= 1 && index < 5, "Request_get_status_any: flag %d index %d", flag, index);
        CHECK(rq[index] != MPI_REQUEST_NULL, "Request_get_status_any freed the request");
        int idx5[5];
        CHECK_MPI(MPI_Request_get_status_some(5, rq, &outcount, idx5, sts5));
        CHECK(outcount == 4, "Request_get_status_some: outcount %d, expected 4", outcount);
        CHECK_MPI(MPI_Waitall(5, rq, MPI_STATUSES_IGNORE));
        /* All null. */
        CHECK_MPI(MPI_Request_get_status_any(4, nulls, &index, &flag, &st));
        CHECK(flag == 1 && index == MPI_UNDEFINED, "Request_get_status_any(all null): flag %d index %d", flag, index);
        CHECK_MPI(MPI_Request_get_status_some(4, nulls, &outcount, idx, sts));
        CHECK_INT_EQ(outcount, MPI_UNDEFINED);
        CHECK_MPI(MPI_Request_get_status_all(4, nulls, &flag, MPI_STATUSES_IGNORE));
        CHECK(flag == 1, "Request_get_status_all(all null) flag %d", flag);
    }
#endif

    MPI_Finalize();
    return test_finish();
}
