/*
 * tls_alltoall.c: an alltoall loop whose blocks carry a marker text
 * (tests/testbed/run.sh, GRIDMPI_WAN_TLS): every block is the text
 * "GRIDMPI-TLS-MARKER" over and over, with the source, destination and
 * round written into each repetition, so the data are checked and the
 * text is easy to look for in a capture of the WAN.
 *
 *   tls_alltoall ROUNDS [BYTES_PER_PEER]
 *
 * Prints "tls_alltoall: R rounds of B bytes per peer on N ranks, wrong W".
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char MARK[] = "GRIDMPI-TLS-MARKER";

/* Byte i of the block from `from` to `to` in round `r`. */
static unsigned char at(int from, int to, int r, long i)
{
    long k = i % 24;
    if (k < 18)
        return (unsigned char)MARK[k];
    if (k == 18)
        return (unsigned char)('a' + from % 26);
    if (k == 19)
        return (unsigned char)('a' + to % 26);
    if (k == 20)
        return (unsigned char)('a' + r % 26);
    return (unsigned char)(i / 24 % 251);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int rounds = argc > 1 ? atoi(argv[1]) : 10;
    long block = argc > 2 ? atol(argv[2]) : 65536;
    unsigned char *s = malloc(block * size), *r = malloc(block * size);
    long wrong = 0;
    for (int round = 0; round < rounds; round++) {
        for (int to = 0; to < size; to++)
            for (long i = 0; i < block; i++)
                s[to * block + i] = at(rank, to, round, i);
        memset(r, 0, block * size);
        MPI_Alltoall(s, (int)block, MPI_BYTE, r, (int)block, MPI_BYTE, MPI_COMM_WORLD);
        for (int from = 0; from < size; from++)
            for (long i = 0; i < block; i++)
                wrong += r[from * block + i] != at(from, rank, round, i);
    }
    long total = 0;
    MPI_Reduce(&wrong, &total, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0)
        printf("tls_alltoall: %d rounds of %ld bytes per peer on %d ranks, wrong %ld\n", rounds, block, size, total);
    free(s);
    free(r);
    MPI_Finalize();
    return total != 0;
}
