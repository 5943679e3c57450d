/* MPI-IO: the shared file pointer and the other access forms.
 * Concurrent MPI_File_write_shared from all ranks (every record present
 * exactly once), get_position_shared, seek_shared; ordered writes and
 * reads (rank order); split collectives (_begin/_end, one at a time per
 * file, errors otherwise); nonblocking accesses (iwrite_at, iread,
 * iwrite_all, iread_at_all, iread_shared) completed with MPI_Waitall and
 * MPI_Test, their statuses counted. */
/* gridmpi-test: ranks=1,2,4 timeout=60 */
#include <mpi.h>
#include "testutil.h"
#include "ioutil.h"

#define RECORDS 20 /* per rank */
#define RLEN 4     /* ints per record: rank, index, rank, index */

int main(int argc, char **argv)
{
    int size, rank = test_init(&argc, &argv, &size);
    io_setup();
    MPI_File fh;
    MPI_Status st;
    MPI_Offset pos;
    int count, rc;
    CHECK_MPI(MPI_File_open(MPI_COMM_WORLD, io_path("shared"), MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh));
    MPI_Datatype rec;
    MPI_Type_contiguous(RLEN, MPI_INT, &rec);
    MPI_Type_commit(&rec);
    CHECK_MPI(MPI_File_set_view(fh, 0, rec, rec, "native", MPI_INFO_NULL));

    /* Concurrent shared-pointer writes: every record lands once, somewhere. */
    for (int i = 0; i < RECORDS; i++) {
        int r[RLEN] = {rank, i, rank, i};
        CHECK_MPI(MPI_File_write_shared(fh, r, 1, rec, &st));
        MPI_Get_count(&st, rec, &count);
        CHECK_INT_EQ(count, 1);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK_MPI(MPI_File_get_position_shared(fh, &pos));
    CHECK_INT_EQ((int)pos, size * RECORDS);
    int n = size * RECORDS;
    int *all = malloc((size_t)n * RLEN * sizeof(int));
    int *seen = calloc((size_t)n, sizeof(int));
    CHECK_MPI(MPI_File_read_at(fh, 0, all, n, rec, &st));
    MPI_Get_count(&st, rec, &count);
    CHECK_INT_EQ(count, n);
    for (int k = 0; k < n; k++) {
        int *r = all + k * RLEN;
        if (r[0] < 0 || r[0] >= size || r[1] < 0 || r[1] >= RECORDS || r[2] != r[0] || r[3] != r[1]) {
            CHECK(0, "record %d is torn or foreign: %d %d %d %d", k, r[0], r[1], r[2], r[3]);
            continue;
        }
        seen[r[0] * RECORDS + r[1]]++;
    }
    for (int k = 0; k < n; k++)
        if (seen[k] != 1)
            CHECK(0, "record %d of rank %d is there %d times", k % RECORDS, k / RECORDS, seen[k]);

    /* seek_shared is collective; then a shared read from there. */
    /* (MPICH's seek_shared returns on rank 1 before rank 0 has moved the
     * pointer, and a seek to -1 errs on rank 0 only and hangs the others;
     * see README.) */
    if (TU_PEER_MPICH)
        MPI_Barrier(MPI_COMM_WORLD); /* MPICH moves it before the others have read it */
    CHECK_MPI(MPI_File_seek_shared(fh, 2, MPI_SEEK_SET));
    if (TU_PEER_MPICH)
        MPI_Barrier(MPI_COMM_WORLD);
    CHECK_MPI(MPI_File_get_position_shared(fh, &pos));
    CHECK_INT_EQ((int)pos, 2);
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK_MPI(MPI_File_seek_shared(fh, 0, MPI_SEEK_END));
    if (TU_PEER_MPICH)
        MPI_Barrier(MPI_COMM_WORLD);
    CHECK_MPI(MPI_File_get_position_shared(fh, &pos));
    CHECK_INT_EQ((int)pos, n);
    if (!TU_PEER_MPICH) {
        rc = MPI_File_seek_shared(fh, -1, MPI_SEEK_SET);
        CHECK(rc != MPI_SUCCESS, "seek_shared to -1 succeeded");
    }

    /* Ordered: rank order, one after another, from the shared pointer. */
    CHECK_MPI(MPI_File_set_view(fh, 0, MPI_INT, MPI_INT, "native", MPI_INFO_NULL));
    CHECK_MPI(MPI_File_set_size(fh, 0));
    int mine[8];
    for (int i = 0; i <= rank; i++)
        mine[i] = 100 * rank + i; /* rank r writes r+1 ints */
    CHECK_MPI(MPI_File_write_ordered(fh, mine, rank + 1, MPI_INT, &st));
    MPI_Get_count(&st, MPI_INT, &count);
    CHECK_INT_EQ(count, rank + 1);
    CHECK_MPI(MPI_File_get_position_shared(fh, &pos));
    CHECK_INT_EQ((int)pos, size * (size + 1) / 2);
    int total = size * (size + 1) / 2;
    CHECK_MPI(MPI_File_sync(fh)); /* everyone's ordered writes are in before anyone reads */
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK_MPI(MPI_File_sync(fh));
    int *ord = malloc((size_t)total * sizeof(int));
    CHECK_MPI(MPI_File_read_at(fh, 0, ord, total, MPI_INT, &st));
    for (int r = 0, k = 0; r < size; r++)
        for (int i = 0; i <= r; i++, k++)
            if (ord[k] != 100 * r + i)
                CHECK(0, "ordered int %d: %d, expected %d", k, ord[k], 100 * r + i);
    CHECK_MPI(MPI_File_seek_shared(fh, 0, MPI_SEEK_SET));
    int back[8] = {0};
    CHECK_MPI(MPI_File_read_ordered(fh, back, rank + 1, MPI_INT, &st));
    for (int i = 0; i <= rank; i++)
        CHECK_INT_EQ(back[i], 100 * rank + i);

    /* Split collectives: ordered begin/end, then all and at_all. */
    CHECK_MPI(MPI_File_seek_shared(fh, 0, MPI_SEEK_SET));
    memset(back, 0, sizeof back);
    CHECK_MPI(MPI_File_read_ordered_begin(fh, back, rank + 1, MPI_INT));
    /* A second split collective on the file while one is active is an error. */
    rc = MPI_File_read_all_begin(fh, back, 1, MPI_INT);
    CHECK(rc != MPI_SUCCESS, "a second split collective began while one was active");
    CHECK_MPI(MPI_File_read_ordered_end(fh, back, &st));
    MPI_Get_count(&st, MPI_INT, &count);
    CHECK_INT_EQ(count, rank + 1);
    for (int i = 0; i <= rank; i++)
        CHECK_INT_EQ(back[i], 100 * rank + i);
    rc = MPI_File_read_all_end(fh, back, &st);
    CHECK(rc != MPI_SUCCESS, "an _end without its _begin succeeded");
    int v = 7000 + rank;
    CHECK_MPI(MPI_File_write_at_all_begin(fh, total + rank, &v, 1, MPI_INT));
    CHECK_MPI(MPI_File_write_at_all_end(fh, &v, &st));
    MPI_Get_count(&st, MPI_INT, &count);
    CHECK_INT_EQ(count, 1);
    CHECK_MPI(MPI_File_seek(fh, total + rank, MPI_SEEK_SET));
    int w = 0;
    CHECK_MPI(MPI_File_read_all_begin(fh, &w, 1, MPI_INT));
    CHECK_MPI(MPI_File_read_all_end(fh, &w, &st));
    CHECK_INT_EQ(w, 7000 + rank);
    CHECK_MPI(MPI_File_write_all_begin(fh, &v, 1, MPI_INT));
    CHECK_MPI(MPI_File_write_all_end(fh, &v, &st));
    CHECK_MPI(MPI_File_get_position(fh, &pos));
    CHECK_INT_EQ((int)pos, total + rank + 2);
    MPI_Barrier(MPI_COMM_WORLD);

    /* Nonblocking accesses, completed together. */
    int base = total + size;
    int a = 1, b = 2, c = 3;
    MPI_Request reqs[3];
    MPI_Status sts[3];
    CHECK_MPI(MPI_File_iwrite_at(fh, base + 3 * rank, &a, 1, MPI_INT, &reqs[0]));
    CHECK_MPI(MPI_File_iwrite_at_all(fh, base + 3 * rank + 1, &b, 1, MPI_INT, &reqs[1]));
    CHECK_MPI(MPI_File_seek(fh, base + 3 * rank + 2, MPI_SEEK_SET));
    CHECK_MPI(MPI_File_iwrite_all(fh, &c, 1, MPI_INT, &reqs[2]));
    CHECK_MPI(MPI_Waitall(3, reqs, sts));
    for (int i = 0; i < 3; i++) {
        CHECK(reqs[i] == MPI_REQUEST_NULL, "request %d not freed", i);
        MPI_Get_count(&sts[i], MPI_INT, &count);
        CHECK_INT_EQ(count, 1);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    int got3[3] = {0, 0, 0};
    MPI_Request rq;
    int flag = 0;
    CHECK_MPI(MPI_File_iread_at_all(fh, base + 3 * rank, got3, 3, MPI_INT, &rq));
    while (!flag)
        CHECK_MPI(MPI_Test(&rq, &flag, &st));
    MPI_Get_count(&st, MPI_INT, &count);
    CHECK_INT_EQ(count, 3);
    CHECK(got3[0] == 1 && got3[1] == 2 && got3[2] == 3, "iread_at_all got %d %d %d", got3[0], got3[1], got3[2]);
    CHECK_MPI(MPI_File_seek(fh, base + 3 * rank, MPI_SEEK_SET));
    memset(got3, 0, sizeof got3);
    CHECK_MPI(MPI_File_iread(fh, got3, 2, MPI_INT, &rq));
    CHECK_MPI(MPI_Wait(&rq, &st));
    CHECK(got3[0] == 1 && got3[1] == 2, "iread got %d %d", got3[0], got3[1]);
    CHECK_MPI(MPI_File_iread_all(fh, got3, 1, MPI_INT, &rq));
    CHECK_MPI(MPI_Wait(&rq, &st));
    CHECK_INT_EQ(got3[0], 3);
    /* Nonblocking shared: each rank reads one int; all of them are distinct positions. */
    CHECK_MPI(MPI_File_seek_shared(fh, 0, MPI_SEEK_SET));
    int one = -1;
    CHECK_MPI(MPI_File_iread_shared(fh, &one, 1, MPI_INT, &rq));
    CHECK_MPI(MPI_Wait(&rq, MPI_STATUS_IGNORE));
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK_MPI(MPI_File_get_position_shared(fh, &pos));
    CHECK_INT_EQ((int)pos, size);
    CHECK(one >= 0 && one < 100 * size, "iread_shared got %d", one);

    free(all);
    free(seen);
    free(ord);
    MPI_Type_free(&rec);
    CHECK_MPI(MPI_File_close(&fh));
    io_teardown();
    MPI_Finalize();
    return test_finish();
}
