/* An all-to-all and allreduce loop whose every byte is checked, run while
 * the testbed cuts and restores the WAN link: the job must come through an
 * outage with nothing lost or wrong.
 *
 *   outage SECONDS [BYTES [PAUSE]]
 *        loop for at least SECONDS (rank 0 decides when to stop, so every
 *        rank runs the same number of iterations), BYTES to each peer
 *        (default 4096), after PAUSE seconds without any communication
 *        (default 0; spent inside MPI; connections between ranks are made
 *        on first use, so none is made before the pause ends)
 *
 * Rank 0 prints "outage: N iterations, longest stall S s, data correct" at the
 * end, or "outage: WRONG ..." and exits 1; under GridMPI also how many
 * connections were re-made after resets (MPI_T gridmpi_tcp_reconnections). */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static unsigned char pattern(int from, int to, long iter, long i)
{
    return (unsigned char)(from * 131 + to * 31 + iter * 7 + i * 13);
}

/* GridMPI's MPI_T counter of connections re-made after a reset, summed
 * over this rank's peers; -1 where the variable does not exist (other MPIs). */
static long reconnections(int size)
{
    int provided, index;
    long total = -1;
    if (MPI_T_init_thread(MPI_THREAD_SINGLE, &provided) != MPI_SUCCESS)
        return -1;
    if (MPI_T_pvar_get_index("gridmpi_tcp_reconnections", MPI_T_PVAR_CLASS_COUNTER, &index) == MPI_SUCCESS) {
        MPI_T_pvar_session session;
        MPI_T_pvar_handle handle;
        int count;
        MPI_T_pvar_session_create(&session);
        if (MPI_T_pvar_handle_alloc(session, index, NULL, &handle, &count) == MPI_SUCCESS && count == size) {
            unsigned long long *v = calloc((size_t)count, sizeof *v);
            if (MPI_T_pvar_read(session, handle, v) == MPI_SUCCESS) {
                total = 0;
                for (int i = 0; i < count; i++)
                    total += (long)v[i];
            }
            free(v);
            MPI_T_pvar_handle_free(session, &handle);
        }
        MPI_T_pvar_session_free(&session);
    }
    MPI_T_finalize();
    return total;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    double seconds = argc > 1 ? atof(argv[1]) : 10;
    long bytes = argc > 2 ? atol(argv[2]) : 4096;
    double pause = argc > 3 ? atof(argv[3]) : 0;
    /* The pause is spent inside MPI (probing for nothing), so the library
     * serves its sockets meanwhile. */
    for (double t0 = MPI_Wtime(); MPI_Wtime() - t0 < pause;) {
        int flag;
        MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_SELF, &flag, MPI_STATUS_IGNORE);
        usleep(1000);
    }
    unsigned char *sendbuf = malloc((size_t)(bytes * size)), *recvbuf = malloc((size_t)(bytes * size));
    long wrong = 0, iter = 0;
    double start = MPI_Wtime(), last = start, stall = 0;
    for (int go = 1; go; iter++) {
        for (int to = 0; to < size; to++)
            for (long i = 0; i < bytes; i++)
                sendbuf[to * bytes + i] = pattern(rank, to, iter, i);
        MPI_Alltoall(sendbuf, (int)bytes, MPI_BYTE, recvbuf, (int)bytes, MPI_BYTE, MPI_COMM_WORLD);
        for (int from = 0; from < size; from++)
            for (long i = 0; i < bytes; i++)
                if (recvbuf[from * bytes + i] != pattern(from, rank, iter, i))
                    wrong++;
        long sum = 0, mine = rank + iter;
        MPI_Allreduce(&mine, &sum, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
        if (sum != (long)size * (size - 1) / 2 + (long)size * iter)
            wrong++;
        double now = MPI_Wtime();
        if (now - last > stall)
            stall = now - last;
        last = now;
        go = rank == 0 ? now - start < seconds : 0;
        MPI_Bcast(&go, 1, MPI_INT, 0, MPI_COMM_WORLD);
    }
    long all_wrong = 0;
    MPI_Reduce(&wrong, &all_wrong, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    long remade = reconnections(size), all_remade = 0;
    MPI_Reduce(&remade, &all_remade, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        if (all_wrong)
            printf("outage: WRONG: %ld bytes or sums wrong in %ld iterations\n", all_wrong, iter);
        else
            printf("outage: %ld iterations, longest stall %.1f s, data correct\n", iter, stall);
        if (all_remade >= 0)
            printf("MPI_T gridmpi_tcp_reconnections, summed over ranks and peers: %ld\n", all_remade);
    }
    free(sendbuf);
    free(recvbuf);
    MPI_Finalize();
    return all_wrong ? 1 : 0;
}
