/* What a tool sees through MPI_T (the tool information interface): rank 0
 * lists every control variable with its value and every performance
 * variable; then the ranks pass messages around a ring and every rank
 * prints the TCP variables of its connections (one element per peer).
 *
 *   mpicc -o mpit_list examples/mpit_list.c
 *   GRIDMPI_TRANSPORT=tcp gridmpirun -n 2 ./mpit_list
 *
 * It runs under any MPI; the TCP part shows GridMPI's gridmpi_tcp_*
 * variables (docs/mpit.md lists them all). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *type_name(MPI_Datatype dt)
{
    if (dt == MPI_INT) return "int";
    if (dt == MPI_UNSIGNED) return "unsigned";
    if (dt == MPI_UNSIGNED_LONG) return "unsigned long";
    if (dt == MPI_UNSIGNED_LONG_LONG) return "unsigned long long";
    if (dt == MPI_COUNT) return "count";
    if (dt == MPI_DOUBLE) return "double";
    if (dt == MPI_CHAR) return "string";
    return "?";
}

static const char *scope_name(int scope)
{
    switch (scope) {
    case MPI_T_SCOPE_CONSTANT: return "constant";
    case MPI_T_SCOPE_READONLY: return "readonly";
    case MPI_T_SCOPE_LOCAL: return "local";
    case MPI_T_SCOPE_GROUP: return "group";
    case MPI_T_SCOPE_GROUP_EQ: return "group_eq";
    case MPI_T_SCOPE_ALL: return "all";
    case MPI_T_SCOPE_ALL_EQ: return "all_eq";
    }
    return "?";
}

static const char *class_name(int c)
{
    switch (c) {
    case MPI_T_PVAR_CLASS_STATE: return "state";
    case MPI_T_PVAR_CLASS_LEVEL: return "level";
    case MPI_T_PVAR_CLASS_SIZE: return "size";
    case MPI_T_PVAR_CLASS_PERCENTAGE: return "percentage";
    case MPI_T_PVAR_CLASS_HIGHWATERMARK: return "highwatermark";
    case MPI_T_PVAR_CLASS_LOWWATERMARK: return "lowwatermark";
    case MPI_T_PVAR_CLASS_COUNTER: return "counter";
    case MPI_T_PVAR_CLASS_AGGREGATE: return "aggregate";
    case MPI_T_PVAR_CLASS_TIMER: return "timer";
    case MPI_T_PVAR_CLASS_GENERIC: return "generic";
    }
    return "?";
}

/* The value of control variable i as text (scalars of the MPI_T types). */
static void cvar_value(int i, MPI_Datatype dt, MPI_T_enum et, int bind, char *out, size_t room)
{
    snprintf(out, room, "-");
    if (bind != MPI_T_BIND_NO_OBJECT)
        return;
    MPI_T_cvar_handle h;
    int count;
    if (MPI_T_cvar_handle_alloc(i, NULL, &h, &count) != MPI_SUCCESS)
        return;
    void *buf = calloc((size_t)count + 1, 16);
    if (MPI_T_cvar_read(h, buf) == MPI_SUCCESS) {
        if (dt == MPI_CHAR)
            snprintf(out, room, "\"%s\"", (char *)buf);
        else if (dt == MPI_INT && et != MPI_T_ENUM_NULL) {
            int n, v, len;
            char name[128] = "?";
            MPI_T_enum_get_info(et, &n, NULL, NULL);
            for (int k = 0; k < n; k++) {
                len = sizeof name;
                MPI_T_enum_get_item(et, k, &v, name, &len);
                if (v == *(int *)buf)
                    break;
            }
            snprintf(out, room, "%s", name);
        } else if (dt == MPI_INT)
            snprintf(out, room, "%d", *(int *)buf);
        else if (dt == MPI_UNSIGNED)
            snprintf(out, room, "%u", *(unsigned *)buf);
        else if (dt == MPI_UNSIGNED_LONG)
            snprintf(out, room, "%lu", *(unsigned long *)buf);
        else if (dt == MPI_UNSIGNED_LONG_LONG)
            snprintf(out, room, "%llu", *(unsigned long long *)buf);
        else if (dt == MPI_COUNT)
            snprintf(out, room, "%lld", (long long)*(MPI_Count *)buf);
        else if (dt == MPI_DOUBLE)
            snprintf(out, room, "%g", *(double *)buf);
    }
    free(buf);
    MPI_T_cvar_handle_free(&h);
}

static void list_variables(void)
{
    int n;
    MPI_T_cvar_get_num(&n);
    printf("%d control variables (name, type, scope, value: description)\n", n);
    for (int i = 0; i < n; i++) {
        char name[256], desc[1024], value[1100];
        int nl = sizeof name, dl = sizeof desc, verbosity, bind, scope;
        MPI_Datatype dt;
        MPI_T_enum et;
        if (MPI_T_cvar_get_info(i, name, &nl, &verbosity, &dt, &et, desc, &dl, &bind, &scope) != MPI_SUCCESS)
            continue;
        cvar_value(i, dt, et, bind, value, sizeof value);
        printf("  %-36s %-18s %-8s %s: %s\n", name, type_name(dt), scope_name(scope), value, desc);
    }
    MPI_T_pvar_get_num(&n);
    printf("%d performance variables (name, class, type: description)\n", n);
    for (int i = 0; i < n; i++) {
        char name[256], desc[1024];
        int nl = sizeof name, dl = sizeof desc, verbosity, cls, bind, ro, cont, atomic;
        MPI_Datatype dt;
        MPI_T_enum et;
        if (MPI_T_pvar_get_info(i, name, &nl, &verbosity, &cls, &dt, &et, desc, &dl, &bind, &ro, &cont, &atomic) != MPI_SUCCESS)
            continue;
        printf("  %-36s %-13s %-18s%s%s: %s\n", name, class_name(cls), type_name(dt), ro ? " readonly" : "", cont ? " continuous" : "", desc);
    }
}

/* Every gridmpi_tcp_* variable, one element per peer. */
static void show_tcp(int rank, int size)
{
    MPI_T_pvar_session s;
    MPI_T_pvar_session_create(&s);
    int n;
    MPI_T_pvar_get_num(&n);
    char report[8192];
    size_t at = 0;
    at += snprintf(report + at, sizeof report - at, "rank %d: TCP connections to ranks 0..%d\n", rank, size - 1);
    for (int i = 0; i < n; i++) {
        char name[256];
        int nl = sizeof name, verbosity, cls, bind, ro, cont, atomic, count;
        MPI_Datatype dt;
        MPI_T_enum et;
        MPI_T_pvar_get_info(i, name, &nl, &verbosity, &cls, &dt, &et, NULL, NULL, &bind, &ro, &cont, &atomic);
        if (strncmp(name, "gridmpi_tcp_", 12) != 0 || bind != MPI_T_BIND_NO_OBJECT)
            continue;
        MPI_T_pvar_handle h;
        if (MPI_T_pvar_handle_alloc(s, i, NULL, &h, &count) != MPI_SUCCESS)
            continue;
        if (!cont)
            MPI_T_pvar_start(s, h);
        unsigned long long *v = calloc((size_t)count, sizeof *v);
        int *iv = calloc((size_t)count, sizeof *iv);
        int ok = MPI_T_pvar_read(s, h, dt == MPI_INT ? (void *)iv : (void *)v) == MPI_SUCCESS;
        at += snprintf(report + at, sizeof report - at, "  %-28s", name);
        for (int k = 0; ok && k < count && at < sizeof report - 32; k++)
            at += snprintf(report + at, sizeof report - at, " %12llu", dt == MPI_INT ? (unsigned long long)iv[k] : v[k]);
        at += snprintf(report + at, sizeof report - at, "\n");
        free(v);
        free(iv);
        MPI_T_pvar_handle_free(s, &h);
    }
    MPI_T_pvar_session_free(&s);
    fputs(report, stdout);
    fflush(stdout);
}

int main(int argc, char **argv)
{
    int provided, rank, size;
    MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (rank == 0) {
        list_variables();
        fflush(stdout);
    }

    /* Some traffic around the ring, so the connections have a history. */
    size_t len = 4 << 20;
    char *out = malloc(len), *in = malloc(len);
    memset(out, rank, len);
    for (int round = 0; round < 5; round++)
        MPI_Sendrecv(out, (int)len, MPI_BYTE, (rank + 1) % size, round, in, (int)len, MPI_BYTE, (rank + size - 1) % size, round,
                     MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    free(out);
    free(in);

    /* One rank after the other. */
    for (int r = 0; r < size; r++) {
        if (r == rank)
            show_tcp(rank, size);
        MPI_Barrier(MPI_COMM_WORLD);
    }
    MPI_T_finalize();
    MPI_Finalize();
    return 0;
}
