/* Each rank reports its host; rank 0 then times an all-to-all across the
 * grid so that traffic really crosses the WAN link. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size, len;
    char host[MPI_MAX_PROCESSOR_NAME];
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Get_processor_name(host, &len);
    printf("rank %d of %d on %s\n", rank, size, host);
    fflush(stdout);

    int bytes = argc > 1 ? atoi(argv[1]) : 65536; /* per peer */
    int iters = argc > 2 ? atoi(argv[2]) : 10;
    char *sendbuf = malloc((size_t)bytes * size), *recvbuf = malloc((size_t)bytes * size);
    memset(sendbuf, rank, (size_t)bytes * size);
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (int i = 0; i < iters; i++)
        MPI_Alltoall(sendbuf, bytes, MPI_BYTE, recvbuf, bytes, MPI_BYTE, MPI_COMM_WORLD);
    double t = (MPI_Wtime() - t0) / iters;
    if (rank == 0)
        printf("alltoall %d bytes per peer: %.3f ms per call\n", bytes, t * 1e3);
    free(sendbuf);
    free(recvbuf);
    MPI_Finalize();
    return 0;
}
