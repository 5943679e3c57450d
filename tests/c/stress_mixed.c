/* gridmpi-test: ranks=4,8 timeout=120 */
/*
 * Mixed stress: every rank derives the same seeded random plan of messages
 * (source, destination, communicator, tag, size from 0 B to 256 KiB) over
 * several communicators (MPI_COMM_WORLD, a duplicate, a split into halves
 * and a split in reverse order). Each rank posts its receives (some with
 * MPI_ANY_SOURCE on unique tags, the rest with a specific source and tags
 * that repeat, relying on non-overtaking) and then its sends (Isend and
 * Issend) in a random order, completes everything with one Waitall, and
 * checks every byte and every status. Several rounds.
 */
#include "testutil.h"

#define ROUNDS 6
#define MSGS_PER_RANK 40
#define NCOMMS 4

struct msg {
    int src, dst;   /* world ranks */
    int comm;       /* index */
    int tag;
    int any_source; /* receive with MPI_ANY_SOURCE (then tag is unique) */
    int size;       /* bytes */
    int mode;       /* 0 Isend, 1 Issend */
};

int main(int argc, char **argv)
{
    int size;
    int rank = test_init(&argc, &argv, &size);
    MPI_Comm comms[NCOMMS];
    comms[0] = MPI_COMM_WORLD;
    MPI_Comm_dup(MPI_COMM_WORLD, &comms[1]);
    MPI_Comm_split(MPI_COMM_WORLD, rank < size / 2, rank, &comms[2]);
    MPI_Comm_split(MPI_COMM_WORLD, 0, size - rank, &comms[3]);
    /* World rank -> rank in each communicator (same on every rank by construction). */
    int half = size / 2;

    for (int round = 0; round < ROUNDS; round++) {
        tu_rng rng = {0x5eed0000ull + (uint64_t)round};
        int nmsg = MSGS_PER_RANK * size;
        struct msg *plan = tu_malloc(sizeof(struct msg) * nmsg);
        for (int i = 0; i < nmsg; i++) {
            struct msg *m = &plan[i];
            m->src = (int)tu_rng_below(&rng, size);
            m->comm = (int)tu_rng_below(&rng, NCOMMS);
            if (m->comm == 2) {
                /* Same half as the source. */
                int lo = m->src < half ? 0 : half, n = m->src < half ? half : size - half;
                m->dst = lo + (int)tu_rng_below(&rng, n);
            } else {
                m->dst = (int)tu_rng_below(&rng, size);
            }
            m->any_source = tu_rng_below(&rng, 4) == 0;
            /* Rounds are not separated by a barrier: a rank may send the
             * next round's messages while a wildcard receive of this round
             * is still posted, so wildcard tags are unique across rounds. */
            m->tag = m->any_source ? 1000 + round * nmsg + i : (int)tu_rng_below(&rng, 4);
            uint32_t kind = tu_rng_below(&rng, 10);
            m->size = kind < 6 ? (int)tu_rng_below(&rng, 64) : kind < 9 ? (int)tu_rng_below(&rng, 16384) : (int)tu_rng_below(&rng, 262144);
            m->mode = tu_rng_below(&rng, 5) == 0;
        }
        /* My receives, in plan order (non-overtaking matches them in order
         * for a given (source, tag, comm)). */
        int nrecv = 0, nsend = 0;
        for (int i = 0; i < nmsg; i++) {
            nrecv += plan[i].dst == rank;
            nsend += plan[i].src == rank;
        }
        MPI_Request *reqs = tu_malloc(sizeof(MPI_Request) * (nrecv + nsend + 1));
        MPI_Status *sts = tu_malloc(sizeof(MPI_Status) * (nrecv + nsend + 1));
        int *recv_of = tu_malloc(sizeof(int) * (nrecv + 1));
        char **rbufs = tu_malloc(sizeof(char *) * (nrecv + 1));
        char **sbufs = tu_malloc(sizeof(char *) * (nsend + 1));
        int r = 0;
        for (int i = 0; i < nmsg; i++) {
            struct msg *m = &plan[i];
            if (m->dst != rank)
                continue;
            int src_in_comm;
            if (m->comm == 2)
                src_in_comm = m->src < half ? m->src : m->src - half;
            else if (m->comm == 3)
                src_in_comm = size - 1 - m->src;
            else
                src_in_comm = m->src;
            rbufs[r] = tu_malloc(m->size + 1);
            memset(rbufs[r], 0xEE, m->size + 1);
            recv_of[r] = i;
            CHECK_MPI(MPI_Irecv(rbufs[r], m->size, MPI_BYTE, m->any_source ? MPI_ANY_SOURCE : src_in_comm, m->tag,
                                comms[m->comm], &reqs[r]));
            r++;
        }
        /* My sends, posted in a random order that keeps the plan order
         * among sends with the same (destination, tag, communicator), since
         * that order defines which receive each one matches. */
        int *mine = tu_malloc(sizeof(int) * (nsend + 1)), *order = tu_malloc(sizeof(int) * (nsend + 1));
        int *taken = calloc(nsend + 1, sizeof(int));
        int ns = 0;
        for (int i = 0; i < nmsg; i++)
            if (plan[i].src == rank)
                mine[ns++] = i;
        tu_rng srng = {0xabcd0000ull + (uint64_t)round * 131 + (uint64_t)rank};
        for (int k = 0; k < nsend; k++)
            order[k] = mine[k];
        for (int k = nsend - 1; k > 0; k--) {
            int j = (int)tu_rng_below(&srng, k + 1), t = order[k];
            order[k] = order[j];
            order[j] = t;
        }
        /* Each slot gets the earliest not-yet-used message of its key. */
        for (int k = 0; k < nsend; k++) {
            struct msg *o = &plan[order[k]];
            for (int j = 0; j < nsend; j++) {
                struct msg *c = &plan[mine[j]];
                if (!taken[j] && c->dst == o->dst && c->tag == o->tag && c->comm == o->comm) {
                    taken[j] = 1;
                    order[k] = mine[j];
                    break;
                }
            }
        }
        int s = 0;
        for (int k = 0; k < nsend; k++) {
            int i = order[k];
            struct msg *m = &plan[i];
            int dst_in_comm;
            if (m->comm == 2)
                dst_in_comm = m->dst < half ? m->dst : m->dst - half;
            else if (m->comm == 3)
                dst_in_comm = size - 1 - m->dst;
            else
                dst_in_comm = m->dst;
            sbufs[s] = tu_malloc(m->size + 1);
            fill_pattern(sbufs[s], m->size, tu_seed(round, i, m->size));
            if (m->mode)
                CHECK_MPI(MPI_Issend(sbufs[s], m->size, MPI_BYTE, dst_in_comm, m->tag, comms[m->comm], &reqs[nrecv + s]));
            else
                CHECK_MPI(MPI_Isend(sbufs[s], m->size, MPI_BYTE, dst_in_comm, m->tag, comms[m->comm], &reqs[nrecv + s]));
            s++;
        }
        free(mine);
        free(order);
        free(taken);
        CHECK_MPI(MPI_Waitall(nrecv + nsend, reqs, sts));
        for (int k = 0; k < nrecv; k++) {
            struct msg *m = &plan[recv_of[k]];
            int count;
            MPI_Get_count(&sts[k], MPI_BYTE, &count);
            char what[128];
            snprintf(what, sizeof what, "round %d message %d (%d -> %d, comm %d, tag %d, %d bytes)", round, recv_of[k],
                     m->src, m->dst, m->comm, m->tag, m->size);
            if (!CHECK(count == m->size && sts[k].MPI_TAG == m->tag, "%s: got count %d tag %d", what, count, sts[k].MPI_TAG))
                continue;
            if (m->any_source) {
                int src_in_comm = m->comm == 2 ? (m->src < half ? m->src : m->src - half)
                                  : m->comm == 3 ? size - 1 - m->src : m->src;
                CHECK(sts[k].MPI_SOURCE == src_in_comm, "%s: status source %d", what, sts[k].MPI_SOURCE);
            }
            check_pattern(rbufs[k], m->size, tu_seed(round, recv_of[k], m->size), what);
            CHECK((unsigned char)rbufs[k][m->size] == 0xEE, "%s: wrote past the message", what);
        }
        for (int k = 0; k < nrecv; k++)
            free(rbufs[k]);
        for (int k = 0; k < nsend; k++)
            free(sbufs[k]);
        free(rbufs);
        free(sbufs);
        free(recv_of);
        free(reqs);
        free(sts);
        free(plan);
        if (tu_errors > 20)
            break;
    }
    for (int c = 1; c < NCOMMS; c++)
        MPI_Comm_free(&comms[c]);
    MPI_Finalize();
    return test_finish();
}
