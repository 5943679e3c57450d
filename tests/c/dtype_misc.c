/* gridmpi-test: ranks=1 timeout=30 */
/*
 * Datatype odds and ends: Get_address and MPI_Aint_add / MPI_Aint_diff
 * (struct member offsets, absolute addressing with MPI_BOTTOM); Type_set_name
 * / Type_get_name on derived types (empty by default) and on a predefined
 * one; commit is idempotent; Type_free of a committed type in use by a
 * pending receive; Type_dup of a named type keeps its layout.
 */
#include "testutil.h"

int main(int argc, char **argv)
{
    test_init(&argc, &argv, NULL);

    /* Addresses. */
    struct s { char c; double d; int i[3]; } obj;
    MPI_Aint a0, ad, ai2;
    CHECK_MPI(MPI_Get_address(&obj, &a0));
    CHECK_MPI(MPI_Get_address(&obj.d, &ad));
    CHECK_MPI(MPI_Get_address(&obj.i[2], &ai2));
    CHECK_INT_EQ(MPI_Aint_diff(ad, a0), offsetof(struct s, d));
    CHECK_INT_EQ(MPI_Aint_diff(ai2, a0), offsetof(struct s, i) + 2 * sizeof(int));
    CHECK(MPI_Aint_add(a0, offsetof(struct s, d)) == ad, "MPI_Aint_add(base, offset) != address of member");
    CHECK(MPI_Aint_diff(a0, ad) == -(MPI_Aint)offsetof(struct s, d), "MPI_Aint_diff negative");

    /* Absolute addresses with MPI_BOTTOM: send obj.i[2] and obj.d. */
    {
        obj.i[2] = 4242;
        obj.d = 6.5;
        int bl[2] = {1, 1};
        MPI_Aint disp[2] = {ai2, ad};
        MPI_Datatype ty[2] = {MPI_INT, MPI_DOUBLE}, abs_t;
        MPI_Type_create_struct(2, bl, disp, ty, &abs_t);
        MPI_Type_commit(&abs_t);
        struct { int i; double d; } r = {0, 0};
        int rbl[2] = {1, 1};
        MPI_Aint rdisp[2] = {offsetof(__typeof__(r), i), offsetof(__typeof__(r), d)};
        MPI_Datatype rt;
        MPI_Type_create_struct(2, rbl, rdisp, ty, &rt);
        MPI_Type_commit(&rt);
        CHECK_MPI(MPI_Sendrecv(MPI_BOTTOM, 1, abs_t, 0, 0, &r, 1, rt, 0, 0, MPI_COMM_SELF, MPI_STATUS_IGNORE));
        CHECK(r.i == 4242 && r.d == 6.5, "MPI_BOTTOM-relative send delivered %d %g", r.i, r.d);
        MPI_Type_free(&abs_t);
        MPI_Type_free(&rt);
    }

    /* Names. */
    {
        MPI_Datatype t;
        char name[MPI_MAX_OBJECT_NAME];
        int len = -1;
        MPI_Type_contiguous(4, MPI_INT, &t);
        name[0] = 'X';
        CHECK_MPI(MPI_Type_get_name(t, name, &len));
        CHECK(len == 0 && name[0] == '\0', "unnamed derived type has name \"%s\" (len %d)", name, len);
        CHECK_MPI(MPI_Type_set_name(t, "four ints"));
        CHECK_MPI(MPI_Type_get_name(t, name, &len));
        CHECK_STR_EQ(name, "four ints");
        CHECK_INT_EQ(len, 9);
        CHECK_MPI(MPI_Type_set_name(t, "renamed"));
        CHECK_MPI(MPI_Type_get_name(t, name, &len));
        CHECK_STR_EQ(name, "renamed");
        /* A name of the maximum length is kept whole. */
        char longname[MPI_MAX_OBJECT_NAME];
        memset(longname, 'n', sizeof longname - 1);
        longname[sizeof longname - 1] = '\0';
        CHECK_MPI(MPI_Type_set_name(t, longname));
        CHECK_MPI(MPI_Type_get_name(t, name, &len));
        CHECK(len == MPI_MAX_OBJECT_NAME - 1 && strcmp(name, longname) == 0, "long name kept as %d chars", len);
        MPI_Type_free(&t);
        /* Predefined types can be renamed too. */
        CHECK_MPI(MPI_Type_get_name(MPI_DOUBLE, name, &len));
        CHECK_STR_EQ(name, "MPI_DOUBLE");
        CHECK_MPI(MPI_Type_set_name(MPI_DOUBLE, "my double"));
        CHECK_MPI(MPI_Type_get_name(MPI_DOUBLE, name, &len));
        CHECK_STR_EQ(name, "my double");
        CHECK_MPI(MPI_Type_set_name(MPI_DOUBLE, "MPI_DOUBLE"));
    }

    /* Commit twice is fine; free a type while a receive using it is pending. */
    {
        MPI_Datatype v;
        MPI_Type_vector(100, 1, 2, MPI_INT, &v);
        CHECK_MPI(MPI_Type_commit(&v));
        CHECK_MPI(MPI_Type_commit(&v));
        int out[100], in[200];
        for (int i = 0; i < 200; i++)
            in[i] = -1;
        fill_ints(out, 100, 9);
        MPI_Request req;
        CHECK_MPI(MPI_Irecv(in, 1, v, 0, 3, MPI_COMM_SELF, &req));
        CHECK_MPI(MPI_Type_free(&v));
        CHECK(v == MPI_DATATYPE_NULL, "Type_free did not null the handle");
        CHECK_MPI(MPI_Send(out, 100, MPI_INT, 0, 3, MPI_COMM_SELF));
        CHECK_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
        int bad = 0;
        for (int i = 0; i < 100; i++)
            bad += in[2 * i] != out[i] || in[2 * i + 1] != -1;
        CHECK(bad == 0, "receive with a datatype freed while pending: %d wrong", bad);
    }

    MPI_Finalize();
    return test_finish();
}
