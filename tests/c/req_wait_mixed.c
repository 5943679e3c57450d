/* gridmpi-test: ranks=2 min-ranks=2 timeout=60 */
/*
 * MPI_Waitall and MPI_Wait over requests of every kind at once: receives
 * (some already arrived, some arriving later), sends that left at once,
 * MPI_REQUEST_NULL, an inactive persistent request, and generalized
 * requests (one completed before the wait, one by another thread while
 * the wait runs). Each status must come from its own request: the
 * receives' source, tag and count, the generalized requests' from their
 * query functions (MPI 4.1, 13.2). Every request handle comes back as
 * MPI_REQUEST_NULL except the persistent one.
 */
#include "testutil.h"
#include <pthread.h>
#include <unistd.h>

#define N 8

static int query(void *extra, MPI_Status *st)
{
    int id = *(int *)extra;
    st->MPI_SOURCE = 100 + id;
    st->MPI_TAG = 200 + id;
    MPI_Status_set_elements(st, MPI_BYTE, 300 + id);
    MPI_Status_set_cancelled(st, 0);
    return MPI_SUCCESS;
}

static int freed;
static int free_fn(void *extra)
{
    (void)extra;
    freed++;
    return MPI_SUCCESS;
}

static int cancel_fn(void *extra, int complete)
{
    (void)extra;
    (void)complete;
    return MPI_SUCCESS;
}

static MPI_Request late_greq;
static void *complete_later(void *arg)
{
    (void)arg;
    usleep(50 * 1000);
    MPI_Grequest_complete(late_greq);
    return NULL;
}

int main(int argc, char **argv)
{
    int provided, rank, size;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    tu_cached_rank = rank;
    int peer = rank ^ 1;
    if (peer >= size) {
        MPI_Finalize();
        return test_finish();
    }
    int ids[2] = {1, 2};
    for (int round = 0; round < 50; round++) {
        int in[N], out[N];
        MPI_Request reqs[2 * N + 4];
        int k = 0;
        for (int i = 0; i < N; i++) {
            in[i] = -1;
            out[i] = rank * 1000 + round * 10 + i;
        }
        /* Half the receives are posted before the peer sends, half after
         * its messages are in (the barrier orders that). */
        for (int i = 0; i < N / 2; i++)
            CHECK_MPI(MPI_Irecv(&in[i], 1, MPI_INT, peer, i, MPI_COMM_WORLD, &reqs[k++]));
        for (int i = 0; i < N; i++)
            CHECK_MPI(MPI_Isend(&out[i], 1, MPI_INT, peer, i, MPI_COMM_WORLD, &reqs[k++]));
        MPI_Barrier(MPI_COMM_WORLD);
        for (int i = N / 2; i < N; i++)
            CHECK_MPI(MPI_Irecv(&in[i], 1, MPI_INT, peer, i, MPI_COMM_WORLD, &reqs[k++]));
        reqs[k++] = MPI_REQUEST_NULL;
        MPI_Request persistent;
        CHECK_MPI(MPI_Send_init(&out[0], 1, MPI_INT, peer, 99, MPI_COMM_WORLD, &persistent));
        reqs[k++] = persistent;
        int early_at = k, late_at = k + 1;
        CHECK_MPI(MPI_Grequest_start(query, free_fn, cancel_fn, &ids[0], &reqs[k++]));
        CHECK_MPI(MPI_Grequest_complete(reqs[early_at]));
        CHECK_MPI(MPI_Grequest_start(query, free_fn, cancel_fn, &ids[1], &reqs[k++]));
        late_greq = reqs[late_at];
        pthread_t t;
        pthread_create(&t, NULL, complete_later, NULL);
        MPI_Status st[2 * N + 4];
        int rc = MPI_Waitall(k, reqs, st);
        pthread_join(t, NULL);
        CHECK(rc == MPI_SUCCESS, "round %d: MPI_Waitall returned %d", round, rc);
        for (int i = 0; i < k; i++) {
            if (i == early_at - 1)
                CHECK(reqs[i] == persistent, "round %d: the inactive persistent request was freed", round);
            else
                CHECK(reqs[i] == MPI_REQUEST_NULL, "round %d: request %d not set to MPI_REQUEST_NULL", round, i);
        }
        for (int i = 0; i < N; i++)
            CHECK(in[i] == peer * 1000 + round * 10 + i, "round %d: message %d holds %d", round, i, in[i]);
        /* Receive statuses: receives are at 0..N/2-1 and N+N/2..2N-1. */
        for (int i = 0; i < 2 * N; i++) {
            int recv_i = i < N / 2 ? i : (i >= N + N / 2 ? i - N : -1);
            if (recv_i < 0)
                continue;
            int c = -1;
            MPI_Get_count(&st[i], MPI_INT, &c);
            CHECK(st[i].MPI_SOURCE == peer && st[i].MPI_TAG == recv_i && c == 1,
                  "round %d: receive status %d: source %d tag %d count %d", round, i, st[i].MPI_SOURCE, st[i].MPI_TAG, c);
        }
        for (int g = 0; g < 2; g++) {
            MPI_Status *s = &st[early_at + g];
            int c = -1;
            MPI_Get_count(s, MPI_BYTE, &c);
            CHECK(s->MPI_SOURCE == 101 + g && s->MPI_TAG == 201 + g && c == 301 + g,
                  "round %d: generalized request %d: source %d tag %d count %d", round, g, s->MPI_SOURCE, s->MPI_TAG, c);
        }
        CHECK_MPI(MPI_Request_free(&persistent));
        /* MPI_Wait on a generalized request completed by another thread. */
        CHECK_MPI(MPI_Grequest_start(query, free_fn, cancel_fn, &ids[1], &late_greq));
        MPI_Request w = late_greq;
        pthread_create(&t, NULL, complete_later, NULL);
        MPI_Status ws;
        CHECK_MPI(MPI_Wait(&w, &ws));
        pthread_join(t, NULL);
        CHECK(w == MPI_REQUEST_NULL && ws.MPI_SOURCE == 102 && ws.MPI_TAG == 202, "round %d: MPI_Wait on a generalized request: source %d tag %d", round, ws.MPI_SOURCE, ws.MPI_TAG);
    }
    CHECK(freed == 150, "free functions ran %d times, expected 150", freed);
    MPI_Finalize();
    return test_finish();
}
