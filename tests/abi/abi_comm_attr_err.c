/*
 * The MPI-5 standard ABI, communicators and callbacks: MPI_Comm_split and
 * MPI_Comm_dup (MPI_UNDEFINED gives MPI_COMM_NULL), MPI_Comm_compare's
 * constants, attributes with a user copy callback (it must get the old
 * communicator's handle and the keyval) and MPI_COMM_DUP_FN, predefined
 * attributes, an error handler callback (it must get the communicator it
 * is attached to and an error code of the right class), MPI_ERRORS_RETURN,
 * user error classes, MPI_Abi_get_version / MPI_Abi_get_info, and
 * MPI_X_toint / MPI_X_fromint. Prints "abi_comm_attr_err OK" on rank 0.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, size;

#define CHECK(cond, ...)                                                   \
    do {                                                                   \
        if (!(cond)) {                                                     \
            fprintf(stderr, "rank %d: %s:%d: ", rank, __FILE__, __LINE__); \
            fprintf(stderr, __VA_ARGS__);                                  \
            fprintf(stderr, "\n");                                         \
            MPI_Abort(MPI_COMM_WORLD, 1);                                  \
        }                                                                  \
    } while (0)

static MPI_Comm copied_from;
static int my_keyval = MPI_KEYVAL_INVALID, copies, deletes;
static int extra_marker;

static int copy_cb(MPI_Comm oldcomm, int keyval, void *extra, void *in, void *out, int *flag)
{
    CHECK(oldcomm == copied_from, "copy callback got comm %p, expected %p", (void *)oldcomm, (void *)copied_from);
    CHECK(keyval == my_keyval, "copy callback got keyval %d, expected %d", keyval, my_keyval);
    CHECK(extra == &extra_marker, "copy callback extra_state");
    *(void **)out = (char *)in + 1;
    *flag = 1;
    copies++;
    return MPI_SUCCESS;
}

static int delete_cb(MPI_Comm comm, int keyval, void *val, void *extra)
{
    (void)val;
    CHECK(comm != MPI_COMM_NULL && keyval == my_keyval && extra == &extra_marker, "delete callback arguments");
    deletes++;
    return MPI_SUCCESS;
}

static MPI_Comm errh_expected;
static int errh_calls, errh_last_class;

static void errh_cb(MPI_Comm *comm, int *code, ...)
{
    CHECK(*comm == errh_expected, "error handler got comm %p, expected %p", (void *)*comm, (void *)errh_expected);
    MPI_Error_class(*code, &errh_last_class);
    errh_calls++;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    /* The ABI's version and its info. */
    int major = -1, minor = -1;
    MPI_Abi_get_version(&major, &minor);
    CHECK(major == 1 && minor == 0, "MPI_Abi_get_version %d.%d", major, minor);
    MPI_Info info = MPI_INFO_NULL;
    MPI_Abi_get_info(&info);
    CHECK(info != MPI_INFO_NULL, "MPI_Abi_get_info gave MPI_INFO_NULL");
    char val[64];
    int flag = 0, len = sizeof val;
    MPI_Info_get_string(info, "mpi_aint_size", &len, val, &flag);
    CHECK(flag && atoi(val) == (int)sizeof(MPI_Aint), "mpi_aint_size %s", flag ? val : "(absent)");
    MPI_Info_free(&info);
    CHECK(info == MPI_INFO_NULL, "Info_free");
    int version, subversion;
    MPI_Get_version(&version, &subversion);
    CHECK(version >= 4, "MPI_Get_version %d.%d", version, subversion);

    /* Split by parity, dup, compare. */
    MPI_Comm half, dup;
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, -rank, &half);
    int hsize, hrank;
    MPI_Comm_size(half, &hsize);
    MPI_Comm_rank(half, &hrank);
    CHECK(hsize == (size + 1 - rank % 2) / 2, "split size %d", hsize);
    CHECK((intptr_t)half >= 0x400, "user comm %p collides with predefined handles", (void *)half);
    int result = -1;
    MPI_Comm_compare(MPI_COMM_WORLD, MPI_COMM_WORLD, &result);
    CHECK(result == MPI_IDENT, "compare world world %d", result);
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    MPI_Comm_compare(MPI_COMM_WORLD, dup, &result);
    CHECK(result == MPI_CONGRUENT, "compare world dup %d", result);
    if (size > 1) {
        MPI_Comm_compare(MPI_COMM_WORLD, half, &result);
        CHECK(result == MPI_UNEQUAL, "compare world half %d", result);
    }
    MPI_Comm none;
    MPI_Comm_split(MPI_COMM_WORLD, rank == 0 ? MPI_UNDEFINED : 1, 0, &none);
    CHECK(rank != 0 || none == MPI_COMM_NULL, "MPI_UNDEFINED color gave %p", (void *)none);
    if (none != MPI_COMM_NULL) MPI_Comm_free(&none);
    int sum = 0, one = 1;
    MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, half);
    CHECK(sum == hsize, "traffic on split comm %d", sum);

    /* Attributes: a user copy callback, and MPI_COMM_DUP_FN. */
    MPI_Comm_create_keyval(copy_cb, delete_cb, &my_keyval, &extra_marker);
    CHECK(my_keyval != MPI_KEYVAL_INVALID, "keyval invalid");
    static char base[4];
    MPI_Comm_set_attr(dup, my_keyval, base);
    int kv2;
    MPI_Comm_create_keyval(MPI_COMM_DUP_FN, MPI_COMM_NULL_DELETE_FN, &kv2, NULL);
    MPI_Comm_set_attr(dup, kv2, (void *)&kv2);
    copied_from = dup;
    MPI_Comm dup2;
    MPI_Comm_dup(dup, &dup2);
    CHECK(copies == 1, "copy callback called %d times", copies);
    void *got = NULL;
    MPI_Comm_get_attr(dup2, my_keyval, &got, &flag);
    CHECK(flag && got == base + 1, "copied attribute %p (flag %d), expected %p", got, flag, (void *)(base + 1));
    MPI_Comm_get_attr(dup2, kv2, &got, &flag);
    CHECK(flag && got == (void *)&kv2, "MPI_COMM_DUP_FN attribute");
    MPI_Comm_free(&dup2);
    CHECK(dup2 == MPI_COMM_NULL && deletes == 1, "free: handle %p, %d deletes", (void *)dup2, deletes);
    MPI_Comm_delete_attr(dup, my_keyval);
    CHECK(deletes == 2, "delete_attr: %d deletes", deletes);
    MPI_Comm_free_keyval(&my_keyval);
    CHECK(my_keyval == MPI_KEYVAL_INVALID, "free_keyval left %d", my_keyval);
    MPI_Comm_free_keyval(&kv2);
    /* Predefined attributes. */
    int *tag_ub = NULL;
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &tag_ub, &flag);
    CHECK(flag && *tag_ub >= 32767, "MPI_TAG_UB");

    /* An error handler callback: a send to a rank that does not exist. */
    MPI_Errhandler eh;
    MPI_Comm_create_errhandler(errh_cb, &eh);
    MPI_Comm_set_errhandler(dup, eh);
    MPI_Errhandler_free(&eh);
    CHECK(eh == MPI_ERRHANDLER_NULL, "Errhandler_free");
    errh_expected = dup;
    int x = 0;
    MPI_Send(&x, 1, MPI_INT, size + 5, 0, dup);
    CHECK(errh_calls == 1 && errh_last_class == MPI_ERR_RANK, "error handler: %d calls, class %d (MPI_ERR_RANK is %d)", errh_calls, errh_last_class, MPI_ERR_RANK);
    MPI_Send(&x, 1, MPI_INT, 0, -7, dup);
    CHECK(errh_calls == 2 && errh_last_class == MPI_ERR_TAG, "error handler: %d calls, class %d", errh_calls, errh_last_class);
    /* MPI_Comm_call_errhandler with a user error class. */
    int myclass, mycode, cls;
    MPI_Add_error_class(&myclass);
    MPI_Add_error_code(myclass, &mycode);
    MPI_Error_class(mycode, &cls);
    CHECK(cls == myclass, "user code's class %d, expected %d", cls, myclass);
    MPI_Comm_call_errhandler(dup, mycode);
    CHECK(errh_calls == 3 && errh_last_class == myclass, "call_errhandler: class %d", errh_last_class);
    MPI_Errhandler cur;
    MPI_Comm_get_errhandler(dup, &cur);
    CHECK(cur != MPI_ERRHANDLER_NULL && cur != MPI_ERRORS_ARE_FATAL && cur != MPI_ERRORS_RETURN, "get_errhandler %p", (void *)cur);
    MPI_Errhandler_free(&cur);

    /* MPI_ERRORS_RETURN: the code comes back, of the right class, with a message. */
    MPI_Comm_set_errhandler(half, MPI_ERRORS_RETURN);
    int rc = MPI_Recv(&x, -1, MPI_INT, 0, 0, half, MPI_STATUS_IGNORE);
    MPI_Error_class(rc, &cls);
    CHECK(rc != MPI_SUCCESS && cls == MPI_ERR_COUNT, "negative count: rc %d class %d", rc, cls);
    char msg[MPI_MAX_ERROR_STRING];
    int mlen = 0;
    MPI_Error_string(rc, msg, &mlen);
    CHECK(mlen > 0 && strlen(msg) == (size_t)mlen, "error string");
    /* An error without a communicator goes to MPI_COMM_SELF's handler (GridMPI) or MPI_COMM_WORLD's. */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    rc = MPI_Comm_rank(MPI_COMM_NULL, &x);
    CHECK(rc != MPI_SUCCESS, "MPI_Comm_rank(MPI_COMM_NULL) succeeded");
    MPI_Comm_get_errhandler(half, &cur);
    CHECK(cur == MPI_ERRORS_RETURN, "get_errhandler gave %p, expected MPI_ERRORS_RETURN", (void *)cur);

    /* Handles as integers and back. */
    int wi = MPI_Comm_toint(MPI_COMM_WORLD);
    CHECK(MPI_Comm_fromint(wi) == MPI_COMM_WORLD, "Comm toint/fromint");
    CHECK(MPI_Comm_fromint(MPI_Comm_toint(half)) == half, "user comm toint/fromint");
    CHECK(MPI_Type_fromint(MPI_Type_toint(MPI_DOUBLE)) == MPI_DOUBLE, "Type toint/fromint");
    CHECK(MPI_Op_fromint(MPI_Op_toint(MPI_SUM)) == MPI_SUM, "Op toint/fromint");
    CHECK(MPI_Comm_fromint(MPI_Comm_toint(MPI_COMM_NULL)) == MPI_COMM_NULL, "null toint/fromint");

    /* MPI_Comm_split_type, the standard's constant. */
    MPI_Comm node;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    int nsize;
    MPI_Comm_size(node, &nsize);
    CHECK(nsize == size, "split_type shared size %d", nsize);
    MPI_Comm_free(&node);

    int topo = -1;
    MPI_Topo_test(MPI_COMM_WORLD, &topo);
    CHECK(topo == MPI_UNDEFINED, "topo_test %d", topo);

    MPI_Comm_free(&half);
    MPI_Comm_free(&dup);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("abi_comm_attr_err OK (%d ranks)\n", size);
    MPI_Finalize();
    return 0;
}
