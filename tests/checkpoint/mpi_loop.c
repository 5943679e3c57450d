/*
 * mpi_loop.c: an MPI program to checkpoint at any moment (tests/checkpoint/mpi.sh).
 *
 *   mpi_loop ITERATIONS [PAUSE_US]
 *
 * Each iteration every rank sends a ring neighbour a message whose size
 * cycles through eager and rendezvous sizes (8 B to 1 MiB), nonblocking,
 * with contents that depend on the sender, the iteration and the offset;
 * then an MPI_Alltoall of ints and an MPI_Allreduce of a running checksum,
 * on a communicator of its own (MPI_Comm_split), with a derived datatype,
 * a persistent request for the ring and a one-sided window (a put to the
 * neighbour and an accumulate to rank 0 in fence epochs). Every byte
 * received is checked.
 * After the last iteration rank 0 prints the checksum and the number of
 * wrong bytes: a run checkpointed, killed and restarted must print exactly
 * what an uninterrupted run prints.
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const int sizes[] = {8, 4000, 70000, 300000, 1 << 20};
#define NSIZES (int)(sizeof sizes / sizeof sizes[0])

static unsigned char byte_of(int from, int it, long i)
{
    return (unsigned char)(from * 131 + it * 7 + i * 13 + (i >> 9));
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc < 2) {
        if (rank == 0)
            fprintf(stderr, "usage: mpi_loop ITERATIONS [PAUSE_US]\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int iters = atoi(argv[1]);
    int pause_us = argc > 2 ? atoi(argv[2]) : 2000;

    /* State a restart must bring back: a communicator, a datatype, a
     * persistent request. */
    MPI_Comm comm;
    MPI_Comm_split(MPI_COMM_WORLD, 0, size - 1 - rank, &comm); /* reversed ranks */
    int me, n;
    MPI_Comm_rank(comm, &me);
    MPI_Comm_size(comm, &n);
    MPI_Datatype pair;
    MPI_Type_contiguous(2, MPI_UNSIGNED_CHAR, &pair);
    MPI_Type_commit(&pair);
    int to = (me + 1) % n, from = (me + n - 1) % n;
    int max = sizes[NSIZES - 1];
    unsigned char *out = malloc(max), *in = malloc(max);
    int *a2a_out = malloc(n * sizeof(int)), *a2a_in = malloc(n * sizeof(int));
    /* A window: every iteration each rank puts a value into its right
     * neighbour's slot and adds to rank 0's counter (fence epochs). */
    long *slots;
    MPI_Win win;
    MPI_Win_allocate(2 * sizeof(long), sizeof(long), MPI_INFO_NULL, comm, &slots, &win);
    slots[0] = slots[1] = 0;
    MPI_Win_fence(0, win);
    int token_out = 0, token_in = -1;
    MPI_Request ring_token[2];
    MPI_Send_init(&token_out, 1, MPI_INT, to, 7, comm, &ring_token[0]);
    MPI_Recv_init(&token_in, 1, MPI_INT, from, 7, comm, &ring_token[1]);

    uint64_t sum = 0;
    long wrong = 0;
    for (int it = 0; it < iters; it++) {
        int len = sizes[it % NSIZES];
        for (long i = 0; i < len; i++)
            out[i] = byte_of(me, it, i);
        MPI_Request rq[2];
        MPI_Irecv(in, len / 2, pair, from, it, comm, &rq[0]);
        MPI_Isend(out, len / 2, pair, to, it, comm, &rq[1]);
        MPI_Waitall(2, rq, MPI_STATUSES_IGNORE);
        for (long i = 0; i < len; i++) {
            if (in[i] != byte_of(from, it, i))
                wrong++;
            sum = sum * 1000003 + in[i];
        }
        for (int j = 0; j < n; j++)
            a2a_out[j] = me * 1000 + j + it;
        MPI_Alltoall(a2a_out, 1, MPI_INT, a2a_in, 1, MPI_INT, comm);
        for (int j = 0; j < n; j++) {
            if (a2a_in[j] != j * 1000 + me + it)
                wrong++;
            sum = sum * 31 + (uint64_t)a2a_in[j];
        }
        token_out = it * n + me;
        MPI_Startall(2, ring_token);
        MPI_Waitall(2, ring_token, MPI_STATUSES_IGNORE);
        if (token_in != it * n + from)
            wrong++;
        long put = (long)it * 1000 + me, one = 1;
        MPI_Put(&put, 1, MPI_LONG, to, 0, 1, MPI_LONG, win);
        MPI_Accumulate(&one, 1, MPI_LONG, 0, 1, 1, MPI_LONG, MPI_SUM, win);
        MPI_Win_fence(0, win);
        if (slots[0] != (long)it * 1000 + from || (me == 0 && slots[1] != (long)(it + 1) * n))
            wrong++;
        MPI_Win_fence(0, win);
        uint64_t all;
        MPI_Allreduce(&sum, &all, 1, MPI_UINT64_T, MPI_BXOR, comm);
        sum ^= all >> 7;
        if (pause_us > 0)
            usleep(pause_us);
    }
    uint64_t total;
    long wrong_all;
    MPI_Reduce(&sum, &total, 1, MPI_UINT64_T, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Reduce(&wrong, &wrong_all, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0)
        printf("mpi_loop: %d ranks, %d iterations, checksum %016llx, wrong %ld\n", size, iters,
               (unsigned long long)total, wrong_all);
    MPI_Win_free(&win);
    MPI_Request_free(&ring_token[0]);
    MPI_Request_free(&ring_token[1]);
    MPI_Type_free(&pair);
    MPI_Comm_free(&comm);
    free(out);
    free(in);
    free(a2a_out);
    free(a2a_in);
    MPI_Finalize();
    return rank != 0 || wrong_all == 0 ? 0 : 1;
}
