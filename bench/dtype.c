/*
 * dtype.c: derived datatypes, MPI_Pack and MPI_Unpack on one rank.
 *
 *   pack_indexed    MPI_Pack of one MPI_Type_create_indexed_block of
 *                   SIZE/8 doubles, one per block, at element i*3 + i%3
 *                   (so every third block touches the next: runs of 8 and
 *                   16 bytes mixed, the shape of a gather list)
 *   unpack_indexed  MPI_Unpack of the same
 *   pack_vector     MPI_Pack of MPI_Type_vector(SIZE/8, 1, 3, MPI_DOUBLE)
 *   pack_struct     MPI_Pack of a struct of 2 MPI_INT32_T and that vector
 *                   (at absolute addresses, MPI_BOTTOM), as halo codes
 *                   build their messages
 *   manual_indexed  the indexed gather written by hand (out[i] =
 *                   in[disp[i]]): the speed of the memory, the same for
 *                   every MPI
 *
 * One rank (run it with -n 1). SIZE is the packed bytes. Value of a rep: microseconds per call. The last
 * rep of each benchmark is checked against the hand-written copy.
 */
#include "common.h"

struct dt_ctx {
    MPI_Datatype type;
    const void *inbuf; /* what is packed (MPI_BOTTOM for the struct) */
    double *user;      /* the user buffer the type describes */
    double *packed;
    int packed_bytes;
    int unpack;        /* 1: MPI_Unpack from packed into user */
    const int *disp;   /* manual_indexed: element displacements */
    long n;
};

static double dt_loop(void *vctx, long iters)
{
    struct dt_ctx *c = vctx;
    double t0 = now();
    for (long i = 0; i < iters; i++) {
        int pos = 0;
        if (c->disp) {
            for (long k = 0; k < c->n; k++)
                c->packed[k] = c->user[c->disp[k]];
        } else if (c->unpack) {
            CHK(MPI_Unpack(c->packed, c->packed_bytes, &pos, c->user, 1, c->type, MPI_COMM_SELF));
        } else {
            CHK(MPI_Pack(c->inbuf, 1, c->type, c->packed, c->packed_bytes, &pos, MPI_COMM_SELF));
        }
    }
    return now() - t0;
}

/* Times one benchmark, then checks what the last call left against the
 * packed bytes `expect` (or, for an unpack, the user buffer `want_user`). */
static void run_one(const char *name, long size, struct dt_ctx *c, const double *expect, const double *want_user,
                    long user_len)
{
    bx_bench = name;
    bx_cur_size = size;
    struct plan pl = warm_up(dt_loop, c, 100000, 3, 10000000, 1);
    measure(name, size, dt_loop, c, pl, 1e6, 1, NULL, 1, "us");
    if (expect) {
        for (long k = 0; k < size / 8; k++)
            if (c->packed[k] != expect[k]) {
                bx_data_error("packed element", k, (unsigned)c->packed[k], (unsigned)expect[k]);
                break;
            }
    }
    if (want_user) {
        for (long k = 0; k < user_len; k++)
            if (c->user[k] != want_user[k]) {
                bx_data_error("unpacked element", k, (unsigned)c->user[k], (unsigned)want_user[k]);
                break;
            }
    }
}

static void run_size(long size)
{
    long n = size / 8;
    long user_len = 3 * n + 3;
    int *disp = xmalloc(sizeof(int) * (size_t)n);
    double *user = xmalloc(sizeof(double) * (size_t)user_len);
    double *packed = xmalloc((size_t)size + 64);
    double *expect = xmalloc((size_t)size + 64);
    double *want_user = xmalloc(sizeof(double) * (size_t)user_len);
    for (long i = 0; i < n; i++)
        disp[i] = (int)(i * 3 + i % 3);
    for (long k = 0; k < user_len; k++)
        user[k] = (double)k;
    for (long i = 0; i < n; i++)
        expect[i] = user[disp[i]];

    MPI_Datatype indexed, vector, strct;
    CHK(MPI_Type_create_indexed_block((int)n, 1, disp, MPI_DOUBLE, &indexed));
    CHK(MPI_Type_commit(&indexed));
    CHK(MPI_Type_vector((int)n, 1, 3, MPI_DOUBLE, &vector));
    CHK(MPI_Type_commit(&vector));
    static int32_t counts[2] = {7, 8};
    int bl[2] = {2, 1};
    MPI_Aint at[2];
    MPI_Datatype types[2] = {MPI_INT32_T, vector};
    CHK(MPI_Get_address(counts, &at[0]));
    CHK(MPI_Get_address(user, &at[1]));
    CHK(MPI_Type_create_struct(2, bl, at, types, &strct));
    CHK(MPI_Type_commit(&strct));

    struct dt_ctx c = {indexed, user, user, packed, (int)size, 0, NULL, n};
    if (want("pack_indexed"))
        run_one("pack_indexed", size, &c, expect, NULL, 0);
    if (want("unpack_indexed")) {
        /* Unpack the expected bytes into a zeroed buffer: the blocks must
         * come back, the gaps stay 0. */
        double *back = xmalloc(sizeof(double) * (size_t)user_len);
        memset(back, 0, sizeof(double) * (size_t)user_len);
        memset(want_user, 0, sizeof(double) * (size_t)user_len);
        for (long i = 0; i < n; i++)
            want_user[disp[i]] = expect[i];
        memcpy(packed, expect, (size_t)size);
        struct dt_ctx u = {indexed, NULL, back, packed, (int)size, 1, NULL, n};
        run_one("unpack_indexed", size, &u, NULL, want_user, user_len);
        free(back);
    }
    if (want("pack_vector")) {
        for (long i = 0; i < n; i++)
            expect[i] = user[3 * i];
        struct dt_ctx v = {vector, user, user, packed, (int)size, 0, NULL, n};
        run_one("pack_vector", size, &v, expect, NULL, 0);
    }
    if (want("pack_struct")) {
        int ps;
        CHK(MPI_Pack_size(1, strct, MPI_COMM_SELF, &ps));
        double *sp = xmalloc((size_t)ps);
        struct dt_ctx s = {strct, MPI_BOTTOM, user, sp, ps, 0, NULL, n};
        run_one("pack_struct", size, &s, NULL, NULL, 0);
        if (memcmp(sp, counts, sizeof counts) != 0)
            bx_data_error("struct header", 0, 0, 0);
        for (long i = 0; i < n; i++) {
            double got;
            memcpy(&got, (char *)sp + sizeof counts + 8 * i, 8);
            if (got != user[3 * i]) {
                bx_data_error("struct element", i, (unsigned)got, (unsigned)user[3 * i]);
                break;
            }
        }
        free(sp);
    }
    if (want("manual_indexed")) {
        for (long i = 0; i < n; i++)
            expect[i] = user[disp[i]];
        struct dt_ctx m = {MPI_DATATYPE_NULL, user, user, packed, (int)size, 0, disp, n};
        run_one("manual_indexed", size, &m, expect, NULL, 0);
    }
    CHK(MPI_Type_free(&strct));
    CHK(MPI_Type_free(&vector));
    CHK(MPI_Type_free(&indexed));
    free(disp);
    free(user);
    free(packed);
    free(expect);
    free(want_user);
}

int main(int argc, char **argv)
{
    opt_min_size = 1024;
    opt_max_size = 1L << 20;
    opt_pow4 = 1;
    bench_init(&argc, &argv);
    for (long s = opt_nsizes ? opt_sizes[0] : opt_min_size; s > 0 && s <= opt_max_size; s = next_size(s))
        run_size(s);
    return bench_finish();
}
