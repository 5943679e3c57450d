/* MPI-IO: file views and the individual and explicit-offset accesses.
 * A vector filetype interleaves the ranks (each writes its stripes with
 * holes between them), every rank reads the whole file back and checks
 * every byte; a displacement and a resized filetype; get_view (handles of
 * derived types are new), get_byte_offset, get_type_extent; seek and
 * get_position (SET, CUR, END in etypes); explicit offsets (_at, _at_all);
 * collective _all accesses; a read past the end of the file gives a short
 * count (MPI_Get_count and MPI_Get_elements on the file status). */
/* gridmpi-test: ranks=1,2,4 timeout=60 */
#include <mpi.h>
#include "testutil.h"
#include "ioutil.h"

#define BLOCK 3   /* ints per stripe */
#define STRIPES 5 /* stripes per rank */

int main(int argc, char **argv)
{
    int size, rank = test_init(&argc, &argv, &size);
    io_setup();
    const char *path = io_path("view");
    MPI_File fh;
    MPI_Status st;
    int count;
    const int disp = 16; /* bytes before the first tile */
    CHECK_MPI(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh));

    /* Rank r owns ints [r*BLOCK, (r+1)*BLOCK) of every tile of size*BLOCK ints. */
    MPI_Datatype stripe, filetype;
    MPI_Type_contiguous(BLOCK, MPI_INT, &stripe);
    MPI_Aint lb = 0, ext = (MPI_Aint)size * BLOCK * sizeof(int);
    int bl = 1;
    MPI_Aint d = (MPI_Aint)rank * BLOCK * sizeof(int);
    MPI_Datatype placed;
    MPI_Type_create_hindexed(1, &bl, &d, stripe, &placed);
    MPI_Type_create_resized(placed, lb, ext, &filetype);
    MPI_Type_commit(&filetype);
    MPI_Type_free(&placed);
    MPI_Type_free(&stripe);
    CHECK_MPI(MPI_File_set_view(fh, disp, MPI_INT, filetype, "native", MPI_INFO_NULL));

    /* get_view: the same displacement, datarep; the filetype a new handle of the same layout. */
    MPI_Offset gdisp;
    MPI_Datatype ge, gf;
    char rep[MPI_MAX_DATAREP_STRING];
    CHECK_MPI(MPI_File_get_view(fh, &gdisp, &ge, &gf, rep));
    CHECK_INT_EQ((int)gdisp, disp);
    CHECK(ge == MPI_INT, "the etype came back as another handle");
    CHECK_STR_EQ(rep, "native");
    MPI_Count gsize;
    MPI_Aint glb, gext;
    MPI_Type_size_c(gf, &gsize);
    MPI_Type_get_extent(gf, &glb, &gext);
    CHECK_INT_EQ((int)gsize, BLOCK * (int)sizeof(int));
    CHECK_INT_EQ((int)gext, (int)ext);
    MPI_Type_free(&gf);

    /* get_byte_offset: etype k of stripe j is at disp + j*ext + rank*BLOCK*4 + k*4. */
    MPI_Offset bo;
    CHECK_MPI(MPI_File_get_byte_offset(fh, BLOCK + 1, &bo));
    CHECK_INT_EQ((int)bo, disp + (int)ext + rank * BLOCK * 4 + 4);
    MPI_Aint te;
    CHECK_MPI(MPI_File_get_type_extent(fh, filetype, &te));
    CHECK_INT_EQ((int)te, (int)ext);

    /* Each rank writes its stripes: two individual writes (the pointer moves). */
    int wbuf[STRIPES * BLOCK];
    for (int i = 0; i < STRIPES * BLOCK; i++)
        wbuf[i] = rank * 1000 + i;
    CHECK_MPI(MPI_File_write(fh, wbuf, 2 * BLOCK, MPI_INT, &st));
    MPI_Get_count(&st, MPI_INT, &count);
    CHECK_INT_EQ(count, 2 * BLOCK);
    MPI_Offset pos;
    CHECK_MPI(MPI_File_get_position(fh, &pos));
    CHECK_INT_EQ((int)pos, 2 * BLOCK);
    CHECK_MPI(MPI_File_write_all(fh, wbuf + 2 * BLOCK, (STRIPES - 2) * BLOCK, MPI_INT, &st));
    CHECK_MPI(MPI_File_get_position(fh, &pos));
    CHECK_INT_EQ((int)pos, STRIPES * BLOCK);
    CHECK_MPI(MPI_File_sync(fh));
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK_MPI(MPI_File_sync(fh));

    /* Back in the default view, every rank reads the whole file. */
    CHECK_MPI(MPI_File_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL));
    MPI_Offset fsize;
    CHECK_MPI(MPI_File_get_size(fh, &fsize));
    int nints = size * STRIPES * BLOCK;
    CHECK_INT_EQ((int)fsize, disp + nints * 4);
    int *all = malloc((size_t)nints * sizeof(int));
    CHECK_MPI(MPI_File_read_at_all(fh, disp, all, nints, MPI_INT, &st));
    MPI_Get_count(&st, MPI_INT, &count);
    CHECK_INT_EQ(count, nints);
    int bad = 0;
    for (int s = 0; s < STRIPES; s++)
        for (int r = 0; r < size; r++)
            for (int k = 0; k < BLOCK; k++) {
                int v = all[(s * size + r) * BLOCK + k], want = r * 1000 + s * BLOCK + k;
                if (v != want && bad++ < 5)
                    CHECK(0, "stripe %d of rank %d, int %d: %d, expected %d", s, r, k, v, want);
            }
    CHECK_INT_EQ(bad, 0);

    /* Reading back through the view gives this rank's own data. */
    CHECK_MPI(MPI_File_set_view(fh, disp, MPI_INT, filetype, "native", MPI_INFO_NULL));
    int rbuf[STRIPES * BLOCK + 4];
    memset(rbuf, 0xff, sizeof rbuf);
    CHECK_MPI(MPI_File_read_all(fh, rbuf, STRIPES * BLOCK, MPI_INT, &st));
    for (int i = 0; i < STRIPES * BLOCK; i++)
        if (rbuf[i] != wbuf[i]) {
            CHECK(0, "own int %d: %d, expected %d", i, rbuf[i], wbuf[i]);
            break;
        }
    /* Seek: SET, CUR, END (in etypes of the view). */
    CHECK_MPI(MPI_File_seek(fh, 2, MPI_SEEK_SET));
    CHECK_MPI(MPI_File_seek(fh, 3, MPI_SEEK_CUR));
    CHECK_MPI(MPI_File_get_position(fh, &pos));
    CHECK_INT_EQ((int)pos, 5);
    CHECK_MPI(MPI_File_read(fh, rbuf, 1, MPI_INT, &st));
    CHECK_INT_EQ(rbuf[0], wbuf[5]);
    CHECK_MPI(MPI_File_seek(fh, 0, MPI_SEEK_END));
    CHECK_MPI(MPI_File_get_position(fh, &pos));
    CHECK_INT_EQ((int)pos, STRIPES * BLOCK);
    /* At the end: a read gives nothing, a read across the end a short count.
     * (MPICH counts the whole request when the view has holes; see README.) */
    int holes = size > 1;
    CHECK_MPI(MPI_File_read(fh, rbuf, 2, MPI_INT, &st));
    MPI_Get_count(&st, MPI_INT, &count);
    if (!(TU_PEER_MPICH && holes))
        CHECK_INT_EQ(count, 0);
    CHECK_MPI(MPI_File_read_at(fh, STRIPES * BLOCK - 2, rbuf, 4, MPI_INT, &st));
    MPI_Get_count(&st, MPI_INT, &count);
    if (!(TU_PEER_MPICH && holes))
        CHECK_INT_EQ(count, 2);
    MPI_Get_elements(&st, MPI_INT, &count);
    if (!(TU_PEER_MPICH && holes))
        CHECK_INT_EQ(count, 2);
    CHECK_INT_EQ(rbuf[1], wbuf[STRIPES * BLOCK - 1]);
    /* A derived memory type: every other int of the buffer. */
    MPI_Datatype every_other;
    MPI_Type_vector(BLOCK, 1, 2, MPI_INT, &every_other);
    MPI_Type_commit(&every_other);
    int spread[2 * BLOCK];
    memset(spread, 0, sizeof spread);
    CHECK_MPI(MPI_File_read_at(fh, BLOCK, spread, 1, every_other, &st));
    MPI_Get_count(&st, every_other, &count);
    CHECK_INT_EQ(count, 1);
    MPI_Get_elements(&st, every_other, &count);
    CHECK_INT_EQ(count, BLOCK);
    for (int k = 0; k < BLOCK; k++) {
        CHECK_INT_EQ(spread[2 * k], wbuf[BLOCK + k]);
        CHECK_INT_EQ(spread[2 * k + 1], 0);
    }
    /* A datatype that is not a whole number of etypes is refused. */
    int rc = MPI_File_read_at(fh, 0, rbuf, 1, MPI_SHORT, &st);
    CHECK(rc != MPI_SUCCESS, "a read of a short in an int view succeeded");
    MPI_Type_free(&every_other);

    /* Explicit offsets write into the view too (and leave the pointer alone). */
    CHECK_MPI(MPI_File_seek(fh, 1, MPI_SEEK_SET));
    int one = -rank - 1;
    CHECK_MPI(MPI_File_write_at_all(fh, 4, &one, 1, MPI_INT, &st));
    CHECK_MPI(MPI_File_get_position(fh, &pos));
    CHECK_INT_EQ((int)pos, 1);
    CHECK_MPI(MPI_File_read_at(fh, 4, rbuf, 1, MPI_INT, &st));
    CHECK_INT_EQ(rbuf[0], one);

    /* The large-count forms (MPI_Count counts, MPI_Count extent). */
    MPI_Count ccount = 2, cext = 0, cgot = 0;
    int two[2] = {11 + rank, 22 + rank}, two_back[2] = {0, 0};
    CHECK_MPI(MPI_File_write_at_c(fh, 6, two, ccount, MPI_INT, &st));
    MPI_Get_count_c(&st, MPI_INT, &cgot);
    CHECK_INT_EQ((int)cgot, 2);
    MPI_Request creq;
    CHECK_MPI(MPI_File_iread_at_c(fh, 6, two_back, ccount, MPI_INT, &creq));
    CHECK_MPI(MPI_Wait(&creq, &st));
    MPI_Get_elements_c(&st, MPI_INT, &cgot);
    CHECK_INT_EQ((int)cgot, 2);
    CHECK(two_back[0] == two[0] && two_back[1] == two[1], "read_at_c got %d %d", two_back[0], two_back[1]);
    CHECK_MPI(MPI_File_get_type_extent_c(fh, filetype, &cext));
    CHECK_INT_EQ((int)cext, (int)ext);
    CHECK_MPI(MPI_File_read_at_all_c(fh, 6, two_back, ccount, MPI_INT, &st));
    CHECK_INT_EQ(two_back[1], two[1]);

    MPI_Type_free(&filetype);
    free(all);
    CHECK_MPI(MPI_File_close(&fh));
    io_teardown();
    MPI_Finalize();
    return test_finish();
}
