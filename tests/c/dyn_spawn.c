/* gridmpi-test: ranks=1,2,3 timeout=90 */
/*
 * MPI_Comm_spawn and MPI_Comm_spawn_multiple of this program itself, and
 * the name service.
 *
 * The parents spawn two children with arguments ("child", "x y"); the
 * children check their arguments, that MPI_Comm_get_parent gives an
 * intercommunicator with the parents as remote group, and MPI_APPNUM 0.
 * Both sides check the intercommunicator (sizes, an allreduce across, in
 * which each side gets the other's sum, a message from every child to
 * every parent), a merge with the parents low, then disconnect (the
 * children's parent handle is MPI_COMM_NULL after it). Then
 * MPI_Comm_spawn_multiple of two programs of one process each (arguments
 * "multi", "0"/"1"): each child's MPI_APPNUM is its program's index. A
 * program that does not exist fails with MPI_ERR_SPAWN at every parent
 * under MPI_ERRORS_RETURN, and the error codes say so; so does maxprocs 0
 * at the root (the other processes' arguments do not matter). Rank 0 publishes a
 * port name, looks it up, unpublishes it; the lookup of an unpublished
 * name fails with MPI_ERR_NAME.
 */
#include "testutil.h"

static int appnum(void)
{
    int *v, flag;
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_APPNUM, &v, &flag);
    return flag ? *v : -1;
}

static int child(int argc, char **argv, MPI_Comm parent)
{
    int rank, size, psize, inter;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_test_inter(parent, &inter);
    CHECK(inter, "the parent communicator is not an intercommunicator");
    MPI_Comm_remote_size(parent, &psize);
    if (strcmp(argv[1], "child") == 0) {
        CHECK(argc == 3 && strcmp(argv[2], "x y") == 0, "arguments: %d, second '%s'", argc, argc > 2 ? argv[2] : "");
        CHECK(size == 2, "%d children, expected 2", size);
        CHECK(appnum() == 0, "MPI_APPNUM %d", appnum());
        int mine = 100 + rank, theirs = 0;
        MPI_Allreduce(&mine, &theirs, 1, MPI_INT, MPI_SUM, parent);
        CHECK(theirs == psize * (psize - 1) / 2, "the parents' sum is %d", theirs);
        for (int p = 0; p < psize; p++) {
            int v = rank * 1000 + p;
            MPI_Send(&v, 1, MPI_INT, p, 7, parent);
        }
        MPI_Comm merged;
        MPI_Intercomm_merge(parent, 1, &merged);
        int mrank;
        MPI_Comm_rank(merged, &mrank);
        CHECK(mrank == psize + rank, "merged rank %d", mrank);
        MPI_Comm_free(&merged);
    } else {
        CHECK(argc == 3 && strcmp(argv[1], "multi") == 0, "arguments: %d", argc);
        CHECK(size == 2, "%d children of spawn_multiple, expected 2", size);
        CHECK(argc == 3 && appnum() == atoi(argv[2]), "MPI_APPNUM %d for program %s", appnum(), argc == 3 ? argv[2] : "?");
        MPI_Barrier(parent);
    }
    MPI_Comm_disconnect(&parent);
    CHECK(parent == MPI_COMM_NULL, "disconnect left the handle");
    MPI_Comm_get_parent(&parent);
    CHECK(parent == MPI_COMM_NULL, "the parent is still there after disconnect");
    return 0;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm parent;
    MPI_Comm_get_parent(&parent);
    if (parent != MPI_COMM_NULL) {
        child(argc, argv, parent);
        MPI_Finalize();
        return test_finish();
    }
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    /* One program, two processes; the arguments matter at the root only. */
    char *args[] = {"child", "x y", NULL};
    int codes[2] = {-1, -1};
    MPI_Comm inter;
    MPI_Comm_spawn(rank == 0 ? argv[0] : NULL, rank == 0 ? args : MPI_ARGV_NULL, rank == 0 ? 2 : -1, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &inter, codes);
    CHECK(codes[0] == MPI_SUCCESS && codes[1] == MPI_SUCCESS, "error codes %d %d", codes[0], codes[1]);
    int rsize, lsize, isinter;
    MPI_Comm_test_inter(inter, &isinter);
    CHECK(isinter, "spawn did not give an intercommunicator");
    MPI_Comm_remote_size(inter, &rsize);
    MPI_Comm_size(inter, &lsize);
    CHECK(rsize == 2 && lsize == size, "sizes: local %d remote %d", lsize, rsize);
    int theirs = 0;
    MPI_Allreduce(&rank, &theirs, 1, MPI_INT, MPI_SUM, inter);
    CHECK(theirs == 201, "the children's sum is %d", theirs);
    for (int c = 0; c < 2; c++) {
        int v = -1;
        MPI_Recv(&v, 1, MPI_INT, c, 7, inter, MPI_STATUS_IGNORE);
        CHECK(v == c * 1000 + rank, "child %d sent %d", c, v);
    }
    MPI_Comm merged;
    MPI_Intercomm_merge(inter, 0, &merged);
    int mrank, msize;
    MPI_Comm_rank(merged, &mrank);
    MPI_Comm_size(merged, &msize);
    CHECK(mrank == rank && msize == size + 2, "merged: rank %d of %d", mrank, msize);
    MPI_Comm_free(&merged);
    MPI_Comm_disconnect(&inter);
    CHECK(inter == MPI_COMM_NULL, "disconnect left the handle");

    /* Two programs of one process each: MPI_APPNUM tells them apart. */
    char *cmds[2] = {argv[0], argv[0]};
    char *a0[] = {"multi", "0", NULL}, *a1[] = {"multi", "1", NULL};
    char **argvs[2] = {a0, a1};
    int procs[2] = {1, 1};
    MPI_Info infos[2] = {MPI_INFO_NULL, MPI_INFO_NULL};
    MPI_Comm_spawn_multiple(2, cmds, argvs, procs, infos, 0, MPI_COMM_WORLD, &inter, MPI_ERRCODES_IGNORE);
    MPI_Comm_remote_size(inter, &rsize);
    CHECK(rsize == 2, "spawn_multiple: %d children", rsize);
    MPI_Barrier(inter);
    MPI_Comm_disconnect(&inter);

    /* A program that cannot start. */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    codes[0] = codes[1] = MPI_SUCCESS;
    inter = MPI_COMM_NULL;
    int rc = MPI_Comm_spawn("/nonexistent/gridmpi-no-such-program", MPI_ARGV_NULL, 2, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &inter, codes);
    int cls = -1;
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_SPAWN, "spawning a missing program: class %d", cls);
    CHECK(codes[0] != MPI_SUCCESS && codes[1] != MPI_SUCCESS, "error codes %d %d", codes[0], codes[1]);

    /* A bad argument at the root fails at every process. */
    rc = MPI_Comm_spawn(argv[0], MPI_ARGV_NULL, rank == 0 ? 0 : 1, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &inter, MPI_ERRCODES_IGNORE);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_SPAWN, "maxprocs 0 at the root: class %d", cls);

    /* The name service. */
    if (rank == 0) {
        char port[MPI_MAX_PORT_NAME], found[MPI_MAX_PORT_NAME];
        MPI_Open_port(MPI_INFO_NULL, port);
        CHECK(MPI_Publish_name("gridmpi-test-service", MPI_INFO_NULL, port) == MPI_SUCCESS, "publish failed");
        CHECK(MPI_Lookup_name("gridmpi-test-service", MPI_INFO_NULL, found) == MPI_SUCCESS && strcmp(found, port) == 0, "lookup gave '%s'", found);
        CHECK(MPI_Unpublish_name("gridmpi-test-service", MPI_INFO_NULL, port) == MPI_SUCCESS, "unpublish failed");
        MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
        rc = MPI_Lookup_name("gridmpi-test-service", MPI_INFO_NULL, found);
        MPI_Error_class(rc, &cls);
        CHECK(cls == MPI_ERR_NAME, "lookup of an unpublished name: class %d", cls);
        MPI_Close_port(port);
    }
    MPI_Finalize();
    return test_finish();
}
