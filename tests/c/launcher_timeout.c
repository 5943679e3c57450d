/* gridmpi-test: ranks=2 timeout=30 env=MPIEXEC_TIMEOUT=2 expect=fail gridmpi-stderr='ran longer than its time limit of 2 s' */
/*
 * MPIEXEC_TIMEOUT, as MPICH's and Open MPI's mpiexec read it: a job that
 * runs longer is killed and gridmpirun exits with 124 (MPICH's
 * init/timeout, whose harness sets it, ran its 5 minutes). The ranks
 * compute for 60 s inside MPI.
 */
#include <mpi.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    double t = MPI_Wtime();
    while (MPI_Wtime() - t < 60)
        ;
    MPI_Finalize();
    return 0;
}
