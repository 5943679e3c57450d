/* gridmpi-test: ranks=1,2 timeout=60 */
/*
 * The tool information interface (MPI 4.1, ch. 15) without MPI itself,
 * then with it: calls before MPI_T_init_thread fail with
 * MPI_T_ERR_NOT_INITIALIZED; MPI_T_init_thread before MPI_Init and nested
 * (init twice, finalize twice); every control variable's info (names that
 * MPI_T_cvar_get_index finds again, the string convention: a NULL buffer
 * or a zero length gives the length with the NUL, a short buffer a
 * truncated, terminated string), enumerations of enumerated variables,
 * every control variable read through a handle of its count; the same for
 * performance variables (MPI_T_pvar_get_index by name and class) and
 * categories (their members are valid indices); events (none need exist:
 * an unknown name gives MPI_T_ERR_INVALID_NAME) and sources (timestamps do
 * not go back); bad indices give MPI_T_ERR_INVALID_INDEX, a freed handle
 * MPI_T_ERR_INVALID_HANDLE. For GridMPI: every setting is a control
 * variable, the TCP performance variables and the category tree exist.
 */
#include "testutil.h"

static void check_string_convention(int cvar)
{
    int len = 0;
    CHECK_MPI(MPI_T_cvar_get_info(cvar, NULL, &len, NULL, NULL, NULL, NULL, NULL, NULL, NULL));
    CHECK(len >= 2, "name length %d", len);
    char full[512], part[4];
    int full_len = sizeof full, part_len = sizeof part;
    CHECK_MPI(MPI_T_cvar_get_info(cvar, full, &full_len, NULL, NULL, NULL, NULL, NULL, NULL, NULL));
    CHECK_INT_EQ(full_len, len);
    CHECK_INT_EQ((int)strlen(full) + 1, len);
    CHECK_MPI(MPI_T_cvar_get_info(cvar, part, &part_len, NULL, NULL, NULL, NULL, NULL, NULL, NULL));
    CHECK_INT_EQ((int)strlen(part), 3);
    CHECK(strncmp(part, full, 3) == 0, "truncated name \"%s\" is not the start of \"%s\"", part, full);
    int zero = 0;
    CHECK_MPI(MPI_T_cvar_get_info(cvar, part, &zero, NULL, NULL, NULL, NULL, NULL, NULL, NULL));
    CHECK_INT_EQ(zero, len);
}

static void all_cvars(int before_init)
{
    int n = -1;
    CHECK_MPI(MPI_T_cvar_get_num(&n));
    CHECK(n > 0, "%d control variables", n);
    for (int i = 0; i < n; i++) {
        char name[256], desc[1024];
        int name_len = sizeof name, desc_len = sizeof desc, verbosity, bind, scope;
        MPI_Datatype dt;
        MPI_T_enum et;
        if (!CHECK_MPI(MPI_T_cvar_get_info(i, name, &name_len, &verbosity, &dt, &et, desc, &desc_len, &bind, &scope)))
            continue;
        int back = -1;
        CHECK_MPI(MPI_T_cvar_get_index(name, &back));
        CHECK(back == i, "cvar %d (%s) is found at index %d", i, name, back);
        CHECK(verbosity >= MPI_T_VERBOSITY_USER_BASIC && verbosity <= MPI_T_VERBOSITY_MPIDEV_ALL, "%s: verbosity %d", name, verbosity);
        CHECK(scope >= MPI_T_SCOPE_CONSTANT && scope <= MPI_T_SCOPE_ALL_EQ, "%s: scope %d", name, scope);
        if (et != MPI_T_ENUM_NULL) {
            int items = 0;
            char ename[256];
            int elen = sizeof ename;
            CHECK_MPI(MPI_T_enum_get_info(et, &items, ename, &elen));
            CHECK(items > 0, "%s: enumeration with %d items", name, items);
            for (int k = 0; k < items; k++) {
                int v;
                char iname[256];
                int ilen = sizeof iname;
                CHECK_MPI(MPI_T_enum_get_item(et, k, &v, iname, &ilen));
            }
            int v, ilen = 0;
            if (!TU_PEER_MPICH) /* as below */
                CHECK_INT_EQ(MPI_T_enum_get_item(et, items, &v, NULL, &ilen), MPI_T_ERR_INVALID_INDEX);
        }
        /* Read it (before MPI_Init only where the variable needs no object). */
        if (bind == MPI_T_BIND_NO_OBJECT) {
            MPI_T_cvar_handle h;
            int count = 0;
            if (!CHECK_MPI(MPI_T_cvar_handle_alloc(i, NULL, &h, &count)))
                continue;
            CHECK(count >= 1, "%s: count %d", name, count);
            /* Room for `count` items of any MPI_T type (no MPI_Type_size:
             * MPI may not be initialized). */
            char *buf = calloc((size_t)count + 1, 16);
            int rc = MPI_T_cvar_read(h, buf);
            CHECK(rc == MPI_SUCCESS, "reading %s (%s MPI_Init) failed: %d", name, before_init ? "before" : "after", rc);
            free(buf);
            CHECK_MPI(MPI_T_cvar_handle_free(&h));
            CHECK(h == MPI_T_CVAR_HANDLE_NULL, "the freed handle is not MPI_T_CVAR_HANDLE_NULL");
        }
    }
    check_string_convention(0);
    int idx, dummy;
    char nm[64], ds[64];
    int nl = sizeof nm, dl = sizeof ds, vb, bd, sc;
    MPI_Datatype dt;
    MPI_T_enum et;
    /* MPICH 5.0.2 does not check MPI_T indices: it crashes on bad ones. */
    if (!TU_PEER_MPICH) {
        CHECK_INT_EQ(MPI_T_cvar_get_info(n, nm, &nl, &vb, &dt, &et, ds, &dl, &bd, &sc), MPI_T_ERR_INVALID_INDEX);
        CHECK_INT_EQ(MPI_T_cvar_get_info(-1, nm, &nl, &vb, &dt, &et, ds, &dl, &bd, &sc), MPI_T_ERR_INVALID_INDEX);
        MPI_T_cvar_handle h;
        CHECK_INT_EQ(MPI_T_cvar_handle_alloc(-1, NULL, &h, &dummy), MPI_T_ERR_INVALID_INDEX);
    }
    CHECK_INT_EQ(MPI_T_cvar_get_index("no such variable, surely", &idx), MPI_T_ERR_INVALID_NAME);
}

static void all_pvars(void)
{
    int n = -1;
    CHECK_MPI(MPI_T_pvar_get_num(&n));
    CHECK(n >= 0, "%d performance variables", n);
    for (int i = 0; i < n; i++) {
        char name[256];
        int name_len = sizeof name, verbosity, var_class, bind, readonly, continuous, atomic, desc_len = 0;
        MPI_Datatype dt;
        MPI_T_enum et;
        if (!CHECK_MPI(MPI_T_pvar_get_info(i, name, &name_len, &verbosity, &var_class, &dt, &et, NULL, &desc_len, &bind, &readonly, &continuous, &atomic)))
            continue;
        int back = -1;
        CHECK_MPI(MPI_T_pvar_get_index(name, var_class, &back));
        CHECK(back == i, "pvar %d (%s) is found at index %d", i, name, back);
        CHECK(var_class >= MPI_T_PVAR_CLASS_STATE && var_class <= MPI_T_PVAR_CLASS_GENERIC, "%s: class %d", name, var_class);
    }
    int idx;
    CHECK_INT_EQ(MPI_T_pvar_get_index("no such variable, surely", MPI_T_PVAR_CLASS_COUNTER, &idx), MPI_T_ERR_INVALID_NAME);
    char nm[64], ds[64];
    int nl = sizeof nm, dl = sizeof ds, vb, vc, bd, ro, co, at;
    MPI_Datatype dt;
    MPI_T_enum et;
    if (!TU_PEER_MPICH) { /* as for control variables */
        CHECK_INT_EQ(MPI_T_pvar_get_info(n, nm, &nl, &vb, &vc, &dt, &et, ds, &dl, &bd, &ro, &co, &at), MPI_T_ERR_INVALID_INDEX);
        CHECK_INT_EQ(MPI_T_pvar_get_info(-1, nm, &nl, &vb, &vc, &dt, &et, ds, &dl, &bd, &ro, &co, &at), MPI_T_ERR_INVALID_INDEX);
    }
}

static void all_categories(void)
{
    int n = -1, ncvar = 0, npvar = 0;
    MPI_T_cvar_get_num(&ncvar);
    MPI_T_pvar_get_num(&npvar);
    CHECK_MPI(MPI_T_category_get_num(&n));
    for (int i = 0; i < n; i++) {
        char name[256], desc[1024];
        int nl = sizeof name, dl = sizeof desc, nc, np, ncat, nev = -1;
        if (!CHECK_MPI(MPI_T_category_get_info(i, name, &nl, desc, &dl, &nc, &np, &ncat)))
            continue;
        int back = -1;
        CHECK_MPI(MPI_T_category_get_index(name, &back));
        CHECK_INT_EQ(back, i);
        int *v = malloc(sizeof(int) * (size_t)(nc + np + ncat + 1));
        CHECK_MPI(MPI_T_category_get_cvars(i, nc, v));
        for (int k = 0; k < nc; k++)
            CHECK(v[k] >= 0 && v[k] < ncvar, "category %s lists cvar %d of %d", name, v[k], ncvar);
        CHECK_MPI(MPI_T_category_get_pvars(i, np, v));
        for (int k = 0; k < np; k++)
            CHECK(v[k] >= 0 && v[k] < npvar, "category %s lists pvar %d of %d", name, v[k], npvar);
        CHECK_MPI(MPI_T_category_get_categories(i, ncat, v));
        for (int k = 0; k < ncat; k++)
            CHECK(v[k] >= 0 && v[k] < n, "category %s lists category %d of %d", name, v[k], n);
        CHECK_MPI(MPI_T_category_get_num_events(i, &nev));
        CHECK(nev >= 0, "category %s: %d events", name, nev);
        free(v);
    }
    int changed = -1;
    CHECK_MPI(MPI_T_category_changed(&changed));
    int idx;
    CHECK_INT_EQ(MPI_T_category_get_index("no such category, surely", &idx), MPI_T_ERR_INVALID_NAME);
}

static void events_and_sources(void)
{
    int nev = -1, idx;
    CHECK_MPI(MPI_T_event_get_num(&nev));
    CHECK(nev >= 0, "%d event types", nev);
    CHECK_INT_EQ(MPI_T_event_get_index("no such event, surely", &idx), MPI_T_ERR_INVALID_NAME);
    int ns = -1;
    CHECK_MPI(MPI_T_source_get_num(&ns));
    for (int i = 0; i < ns; i++) {
        char name[256];
        int nl = sizeof name, dl = 0;
        MPI_T_source_order order;
        MPI_Count tps, maxt, t1 = 0, t2 = 0;
        MPI_Info info = MPI_INFO_NULL;
        CHECK_MPI(MPI_T_source_get_info(i, name, &nl, NULL, &dl, &order, &tps, &maxt, &info));
        if (info != MPI_INFO_NULL)
            MPI_Info_free(&info);
        CHECK_MPI(MPI_T_source_get_timestamp(i, &t1));
        CHECK_MPI(MPI_T_source_get_timestamp(i, &t2));
        if (order == MPI_T_SOURCE_ORDERED)
            CHECK(t2 >= t1, "source %s went back in time (%lld then %lld)", name, (long long)t1, (long long)t2);
    }
}

static void gridmpi_names(void)
{
    int idx = -1;
    CHECK_MPI(MPI_T_cvar_get_index("GRIDMPI_EAGER_LIMIT", &idx));
    CHECK_MPI(MPI_T_cvar_get_index("GRIDMPI_COLL_ALLREDUCE", &idx));
    const char *tcp[] = {"gridmpi_tcp_total_retrans", "gridmpi_tcp_total_rto"};
    for (int i = 0; i < 2; i++)
        CHECK_MPI(MPI_T_pvar_get_index(tcp[i], MPI_T_PVAR_CLASS_COUNTER, &idx));
    CHECK_MPI(MPI_T_pvar_get_index("gridmpi_tcp_cwnd", MPI_T_PVAR_CLASS_LEVEL, &idx));
    CHECK_MPI(MPI_T_pvar_get_index("gridmpi_unexpected_messages", MPI_T_PVAR_CLASS_LEVEL, &idx));
    CHECK_INT_EQ(MPI_T_pvar_get_index("gridmpi_tcp_cwnd", MPI_T_PVAR_CLASS_COUNTER, &idx), MPI_T_ERR_INVALID_NAME);
    int root = -1, nsub = 0;
    CHECK_MPI(MPI_T_category_get_index("gridmpi", &root));
    CHECK_MPI(MPI_T_category_get_info(root, NULL, NULL, NULL, NULL, NULL, NULL, &nsub));
    int ncat = 0;
    MPI_T_category_get_num(&ncat);
    CHECK_INT_EQ(nsub, ncat - 1);
}

int main(int argc, char **argv)
{
    int provided = -1, n;
    CHECK_INT_EQ(MPI_T_cvar_get_num(&n), MPI_T_ERR_NOT_INITIALIZED);
    CHECK_INT_EQ(MPI_T_finalize(), MPI_T_ERR_NOT_INITIALIZED);
    CHECK_MPI(MPI_T_init_thread(MPI_THREAD_SINGLE, &provided));
    CHECK(provided >= MPI_THREAD_SINGLE && provided <= MPI_THREAD_MULTIPLE, "provided %d", provided);
    CHECK_MPI(MPI_T_init_thread(MPI_THREAD_SINGLE, &provided));
    all_cvars(1);
    all_categories();

    test_init(&argc, &argv, NULL);
    all_cvars(0);
    all_pvars();
    all_categories();
    events_and_sources();
    if (TEST_IMPL_GRIDMPI)
        gridmpi_names();
    CHECK_MPI(MPI_T_finalize());
    CHECK_MPI(MPI_T_cvar_get_num(&n)); /* still initialized once */
    CHECK_MPI(MPI_T_finalize());
    /* MPICH 5.0.2 does not check that MPI_T is initialized after it was. */
    if (!TU_PEER_MPICH)
        CHECK_INT_EQ(MPI_T_cvar_get_num(&n), MPI_T_ERR_NOT_INITIALIZED);
    MPI_Finalize();
    return test_finish();
}
