/* MPI-IO: collective accesses through interleaved views, under each
 * collective-buffering setting (cb_nodes 1 and 2, collective_buffering
 * "false", a 1000-byte cb_buffer_size: many rounds; GridMPI's
 * gridmpi_file_cluster, which only matters across clusters, as in
 * io_collective_clusters.c): write_all and write_at_all of strided pieces by every rank
 * (one rank with nothing to write), bytes outside everyone's view left as
 * they were (holes are not overwritten), read_all and read_at_all of
 * other ranks' pieces, short counts at the end of the file, and the
 * split collective form. */
/* gridmpi-test: ranks=1,2,3,4 timeout=60 */
#include <mpi.h>
#include "testutil.h"
#include "ioutil.h"

#define PER 1000 /* ints per rank: two in every tile of the view */

int main(int argc, char **argv)
{
    int size, rank = test_init(&argc, &argv, &size);
    io_setup();
    const char *settings[5][2] = {{"cb_nodes", "1"}, {"cb_nodes", "2"}, {"collective_buffering", "false"}, {"cb_buffer_size", "1000"}, {"gridmpi_file_cluster", "west"}};
    /* Tile: size*2 + 1 ints; rank r owns ints 2r and 2r+1; the last int of each tile is a hole. */
    int tile = 2 * size + 1;
    MPI_Datatype pair, placed, ft;
    MPI_Type_contiguous(2, MPI_INT, &pair);
    MPI_Aint disp = (MPI_Aint)rank * 2 * sizeof(int);
    int one = 1;
    MPI_Type_create_hindexed(1, &one, &disp, pair, &placed);
    MPI_Type_create_resized(placed, 0, (MPI_Aint)tile * sizeof(int), &ft);
    MPI_Type_commit(&ft);
    MPI_Type_free(&pair);
    MPI_Type_free(&placed);
    int tiles = PER / 2;
    int nfile = tiles * tile;
    int *w = malloc(PER * sizeof(int)), *r = malloc(PER * sizeof(int)), *whole = malloc((size_t)nfile * sizeof(int));
    for (int s = 0; s < 5; s++) {
        MPI_Info info;
        MPI_Info_create(&info);
        MPI_Info_set(info, settings[s][0], settings[s][1]);
        char name[32];
        snprintf(name, sizeof name, "coll-%d", s);
        MPI_File fh;
        MPI_Status st;
        int count;
        CHECK_MPI(MPI_File_open(MPI_COMM_WORLD, io_path(name), MPI_MODE_CREATE | MPI_MODE_RDWR, info, &fh));
        /* Pre-fill the whole file with -7: the holes must keep it. */
        if (rank == 0) {
            for (int i = 0; i < nfile; i++)
                whole[i] = -7;
            CHECK_MPI(MPI_File_write_at(fh, 0, whole, nfile, MPI_INT, &st));
        }
        MPI_File_sync(fh);
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_File_sync(fh);
        CHECK_MPI(MPI_File_set_view(fh, 0, MPI_INT, ft, "native", info));
        for (int i = 0; i < PER; i++)
            w[i] = (s + 1) * 1000000 + rank * 10000 + i;
        /* The last rank writes nothing in the first call (a zero count in a collective). */
        int n1 = (rank == size - 1 && size > 1) ? 0 : PER / 2;
        CHECK_MPI(MPI_File_write_all(fh, w, n1, MPI_INT, &st));
        MPI_Get_count(&st, MPI_INT, &count);
        CHECK_INT_EQ(count, n1);
        if (n1 == 0)
            CHECK_MPI(MPI_File_seek(fh, PER / 2, MPI_SEEK_SET));
        CHECK_MPI(MPI_File_write_at_all_begin(fh, PER / 2, w + PER / 2, PER - PER / 2, MPI_INT));
        CHECK_MPI(MPI_File_write_at_all_end(fh, w + PER / 2, &st));
        if (n1 == 0)
            CHECK_MPI(MPI_File_write_at_all(fh, 0, w, PER / 2, MPI_INT, &st));
        else
            CHECK_MPI(MPI_File_write_at_all(fh, 0, w, 0, MPI_INT, &st));
        MPI_File_sync(fh);
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_File_sync(fh);
        /* Everyone reads the whole file (default view) and checks every int. */
        CHECK_MPI(MPI_File_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", info));
        CHECK_MPI(MPI_File_read_at_all(fh, 0, whole, nfile * (int)sizeof(int), MPI_BYTE, &st));
        int bad = 0;
        for (int t = 0; t < tiles; t++)
            for (int k = 0; k < tile; k++) {
                int v = whole[t * tile + k];
                int want = k == tile - 1 ? -7 : (s + 1) * 1000000 + (k / 2) * 10000 + 2 * t + k % 2;
                if (v != want && bad++ < 3)
                    CHECK(0, "setting %d: tile %d int %d is %d, expected %d", s, t, k, v, want);
            }
        /* Each rank reads its right neighbour's pieces through that rank's view. */
        int nb = (rank + 1) % size;
        MPI_Datatype nft, nplaced, npair;
        MPI_Aint nd = (MPI_Aint)nb * 2 * sizeof(int);
        MPI_Type_contiguous(2, MPI_INT, &npair);
        MPI_Type_create_hindexed(1, &one, &nd, npair, &nplaced);
        MPI_Type_create_resized(nplaced, 0, (MPI_Aint)tile * sizeof(int), &nft);
        MPI_Type_commit(&nft);
        CHECK_MPI(MPI_File_set_view(fh, 0, MPI_INT, nft, "native", info));
        memset(r, 0, PER * sizeof(int));
        CHECK_MPI(MPI_File_read_all(fh, r, PER, MPI_INT, &st));
        MPI_Get_count(&st, MPI_INT, &count);
        CHECK_INT_EQ(count, PER);
        for (int i = 0; i < PER; i++)
            if (r[i] != (s + 1) * 1000000 + nb * 10000 + i && bad++ < 6)
                CHECK(0, "setting %d: neighbour int %d is %d", s, i, r[i]);
        /* Across the end of the file: a short count. */
        CHECK_MPI(MPI_File_read_at_all(fh, PER - 3, r, 10, MPI_INT, &st));
        MPI_Get_count(&st, MPI_INT, &count);
        if (!TU_PEER_MPICH)
            CHECK_INT_EQ(count, 3); /* MPICH counts the whole request (see README) */
        CHECK_INT_EQ(r[0], (s + 1) * 1000000 + nb * 10000 + PER - 3);
        MPI_Type_free(&nft);
        MPI_Type_free(&nplaced);
        MPI_Type_free(&npair);
        CHECK_INT_EQ(bad, 0);
        CHECK_MPI(MPI_File_close(&fh));
        MPI_Info_free(&info);
    }
    MPI_Type_free(&ft);
    free(w);
    free(r);
    free(whole);
    io_teardown();
    MPI_Finalize();
    return test_finish();
}
