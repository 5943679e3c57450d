/* gridmpi-test: ranks=2,3,4,5 min-ranks=2 timeout=60 env=GRIDMPI_TRANSPORT=tcp */
/*
 * A communicator of one's own site from a session (GridMPI's process sets):
 * each rank names its cluster before starting MPI (odd and even ranks: two
 * "sites", so clusters are not rank ranges); the session then offers
 * gridmpi://cluster/site0, gridmpi://cluster/site1 and
 * gridmpi://cluster/SELF (this rank's site), with the right members and
 * sizes; the communicator made from gridmpi://cluster/SELF joins exactly
 * the ranks of this site, in world order, and carries messages; an
 * intercommunicator made from the two sites' groups joins them. Under
 * another MPI only the mpi:// sets are checked.
 */
#include "testutil.h"

int main(void)
{
    const char *r = getenv("PMI_RANK");
    int wrank_env = r ? atoi(r) : 0;
    char site[32];
    snprintf(site, sizeof site, "site%d", wrank_env % 2);
    setenv("GRIDMPI_CLUSTER", site, 1);

    MPI_Session s;
    CHECK_MPI(MPI_Session_init(MPI_INFO_NULL, MPI_ERRORS_RETURN, &s));
    MPI_Group world;
    CHECK_MPI(MPI_Group_from_session_pset(s, "mpi://WORLD", &world));
    int size, rank;
    MPI_Group_size(world, &size);
    MPI_Group_rank(world, &rank);
    tu_cached_rank = rank;

    if (TEST_IMPL_GRIDMPI) {
        int mine = rank % 2;
        MPI_Group sites[2], self_site;
        for (int k = 0; k < 2; k++) {
            char name[64];
            snprintf(name, sizeof name, "gridmpi://cluster/site%d", k);
            CHECK_MPI(MPI_Group_from_session_pset(s, name, &sites[k]));
            int n = -1;
            MPI_Group_size(sites[k], &n);
            CHECK_INT_EQ(n, k == 0 ? (size + 1) / 2 : size / 2);
            MPI_Info info;
            char v[32];
            int len = sizeof v, flag = 0;
            CHECK_MPI(MPI_Session_get_pset_info(s, name, &info));
            MPI_Info_get_string(info, "mpi_size", &len, v, &flag);
            CHECK(flag && atoi(v) == n, "mpi_size of %s is %s, the group has %d", name, flag ? v : "(none)", n);
            MPI_Info_free(&info);
            /* Members in world order: the site's ranks are k, k+2, ... */
            int *in = malloc(n * sizeof(int)), *out = malloc(n * sizeof(int));
            for (int i = 0; i < n; i++)
                in[i] = i;
            MPI_Group_translate_ranks(sites[k], n, in, world, out);
            for (int i = 0; i < n; i++)
                CHECK_INT_EQ(out[i], k + 2 * i);
            free(in);
            free(out);
        }
        CHECK_MPI(MPI_Group_from_session_pset(s, "gridmpi://cluster/SELF", &self_site));
        int cmp = MPI_UNEQUAL;
        MPI_Group_compare(self_site, sites[mine], &cmp);
        CHECK_INT_EQ(cmp, MPI_IDENT);

        MPI_Comm site_comm;
        CHECK_MPI(MPI_Comm_create_from_group(self_site, "gridmpi.test.site", MPI_INFO_NULL, MPI_ERRORS_RETURN, &site_comm));
        int n, me;
        MPI_Comm_size(site_comm, &n);
        MPI_Comm_rank(site_comm, &me);
        CHECK_INT_EQ(n, mine == 0 ? (size + 1) / 2 : size / 2);
        CHECK_INT_EQ(me, rank / 2);
        int out[16], in[16];
        fill_ints(out, 16, rank);
        int right = (me + 1) % n, left = (me + n - 1) % n;
        CHECK_MPI(MPI_Sendrecv(out, 16, MPI_INT, right, 1, in, 16, MPI_INT, left, 1, site_comm, MPI_STATUS_IGNORE));
        /* The left neighbour on the site is world rank 2*left + site. */
        check_ints(in, 16, 2 * left + mine, "message within the site");
        /* The two sites joined by an intercommunicator made from the
         * session's groups; the leaders exchange a message. */
        MPI_Comm inter;
        CHECK_MPI(MPI_Intercomm_create_from_groups(sites[mine], 0, sites[1 - mine], 0, "gridmpi.test.sites", MPI_INFO_NULL, MPI_ERRORS_RETURN, &inter));
        int rsize = -1;
        MPI_Comm_remote_size(inter, &rsize);
        CHECK_INT_EQ(rsize, mine == 0 ? size / 2 : (size + 1) / 2);
        if (me == 0) {
            int mine_v = 1000 + mine, theirs = -1;
            CHECK_MPI(MPI_Sendrecv(&mine_v, 1, MPI_INT, 0, 2, &theirs, 1, MPI_INT, 0, 2, inter, MPI_STATUS_IGNORE));
            CHECK_INT_EQ(theirs, 1000 + (1 - mine));
        }
        MPI_Comm_free(&inter);
        MPI_Comm_free(&site_comm);
        MPI_Group_free(&self_site);
        MPI_Group_free(&sites[0]);
        MPI_Group_free(&sites[1]);
    }
    MPI_Group_free(&world);
    CHECK_MPI(MPI_Session_finalize(&s));
    return test_finish();
}
