/* gridmpi-test: ranks=1,2 timeout=90 */
/*
 * MPI_Comm_spawn_multiple with a "wdir" per program (MPI 4.1, 11.8.4: the
 * key applies to the processes of the program whose info carries it): the
 * first program runs in a fresh temporary directory, the second (no wdir)
 * in the spawning processes' own directory, the third in "/". gridmpirun
 * refused different directories in one spawn (MPICH's spawn/spawnminfo1).
 * Each child sends its working directory to parent 0, which compares.
 */
#define _GNU_SOURCE
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    MPI_Comm parent, inter;
    char cwd[4096];
    MPI_Init(&argc, &argv);
    MPI_Comm_get_parent(&parent);
    if (!getcwd(cwd, sizeof cwd)) {
        perror("getcwd");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    if (parent != MPI_COMM_NULL) {
        MPI_Send(cwd, (int)strlen(cwd) + 1, MPI_CHAR, 0, 0, parent);
        MPI_Comm_disconnect(&parent);
        MPI_Finalize();
        return 0;
    }
    int rank, errs = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    char tmp[] = "/tmp/gridmpi-wdir-XXXXXX";
    if (rank == 0 && !mkdtemp(tmp)) {
        perror("mkdtemp");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    MPI_Bcast(tmp, sizeof tmp, MPI_CHAR, 0, MPI_COMM_WORLD);
    char self[4200];
    snprintf(self, sizeof self, "%s/%s", cwd, argv[0]);
    if (argv[0][0] == '/')
        snprintf(self, sizeof self, "%s", argv[0]);
    char *cmds[3] = {self, self, self};
    int np[3] = {1, 1, 1}, codes[3];
    MPI_Info infos[3];
    for (int i = 0; i < 3; i++)
        MPI_Info_create(&infos[i]);
    MPI_Info_set(infos[0], "wdir", tmp);
    MPI_Info_set(infos[2], "wdir", "/");
    int rc = MPI_Comm_spawn_multiple(3, cmds, MPI_ARGVS_NULL, np, infos, 0, MPI_COMM_WORLD, &inter, codes);
    if (rc != MPI_SUCCESS) {
        printf("FAILED: MPI_Comm_spawn_multiple returned %d\n", rc);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    if (rank == 0) {
        const char *want[3] = {tmp, cwd, "/"};
        for (int i = 0; i < 3; i++) {
            char got[4096], real_got[4096], real_want[4096];
            MPI_Recv(got, sizeof got, MPI_CHAR, i, 0, inter, MPI_STATUS_IGNORE);
            if (!realpath(got, real_got) || !realpath(want[i], real_want) || strcmp(real_got, real_want) != 0) {
                printf("FAILED: program %d ran in %s, not %s\n", i, got, want[i]);
                errs++;
            }
        }
    }
    for (int i = 0; i < 3; i++)
        MPI_Info_free(&infos[i]);
    MPI_Comm_disconnect(&inter);
    if (rank == 0)
        rmdir(tmp);
    MPI_Finalize();
    return errs ? 1 : 0;
}
