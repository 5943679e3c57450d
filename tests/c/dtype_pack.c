/* gridmpi-test: ranks=1,2 timeout=30 */
/*
 * Pack/Unpack: several pieces packed into one buffer with an advancing
 * position (Pack_size is an upper bound), unpacked with different but
 * signature-equal types, and sent as MPI_PACKED to another rank which unpacks
 * it; Pack_external/Unpack_external with "external32": big-endian,
 * standard-sized representation (checked byte by byte), round trip,
 * Pack_external_size.
 */
#include "testutil.h"

int main(int argc, char **argv)
{
    int size;
    int rank = test_init(&argc, &argv, &size);
    MPI_Comm comm = MPI_COMM_WORLD;

    /* Pack an int array through a vector type, a double, and a char string. */
    int ints[20];
    for (int i = 0; i < 20; i++)
        ints[i] = i * i;
    double d = -3.75;
    char text[] = "packed text";
    MPI_Datatype every2;
    MPI_Type_vector(10, 1, 2, MPI_INT, &every2);
    MPI_Type_commit(&every2);
    int s1, s2, s3;
    CHECK_MPI(MPI_Pack_size(1, every2, comm, &s1));
    CHECK_MPI(MPI_Pack_size(1, MPI_DOUBLE, comm, &s2));
    CHECK_MPI(MPI_Pack_size((int)sizeof text, MPI_CHAR, comm, &s3));
    CHECK(s1 >= 10 * (int)sizeof(int) && s2 >= (int)sizeof(double) && s3 >= (int)sizeof text,
          "Pack_size too small: %d %d %d", s1, s2, s3);
    int cap = s1 + s2 + s3;
    char *packbuf = tu_malloc(cap);
    int pos = 0;
    CHECK_MPI(MPI_Pack(ints, 1, every2, packbuf, cap, &pos, comm));
    int p1 = pos;
    CHECK(p1 > 0 && p1 <= s1, "position after first Pack %d (Pack_size %d)", p1, s1);
    CHECK_MPI(MPI_Pack(&d, 1, MPI_DOUBLE, packbuf, cap, &pos, comm));
    CHECK(pos > p1 && pos - p1 <= s2, "position after second Pack %d", pos);
    CHECK_MPI(MPI_Pack(text, (int)sizeof text, MPI_CHAR, packbuf, cap, &pos, comm));
    int packed = pos;
    CHECK(packed <= cap, "packed %d bytes into a %d byte buffer", packed, cap);

    /* Unpack locally: the 10 ints contiguous. */
    {
        int out[10];
        double dd = 0;
        char tt[sizeof text];
        int upos = 0;
        CHECK_MPI(MPI_Unpack(packbuf, packed, &upos, out, 10, MPI_INT, comm));
        CHECK_MPI(MPI_Unpack(packbuf, packed, &upos, &dd, 1, MPI_DOUBLE, comm));
        CHECK_MPI(MPI_Unpack(packbuf, packed, &upos, tt, (int)sizeof text, MPI_CHAR, comm));
        CHECK_INT_EQ(upos, packed);
        for (int i = 0; i < 10; i++)
            CHECK(out[i] == (2 * i) * (2 * i), "unpacked int %d = %d", i, out[i]);
        CHECK(dd == -3.75, "unpacked double %g", dd);
        CHECK_STR_EQ(tt, text);
    }

    /* Send the packed buffer as MPI_PACKED around the ring; unpack into a
     * strided layout. */
    {
        int right = (rank + 1) % size, left = (rank + size - 1) % size;
        char *in = tu_malloc(cap);
        MPI_Status st;
        CHECK_MPI(MPI_Sendrecv(packbuf, packed, MPI_PACKED, right, 1, in, cap, MPI_PACKED, left, 1, comm, &st));
        int n;
        MPI_Get_count(&st, MPI_PACKED, &n);
        CHECK_INT_EQ(n, packed);
        int out[20];
        for (int i = 0; i < 20; i++)
            out[i] = -1;
        int upos = 0;
        MPI_Datatype every2b;
        MPI_Type_vector(5, 2, 4, MPI_INT, &every2b);
        MPI_Type_commit(&every2b);
        CHECK_MPI(MPI_Unpack(in, n, &upos, out, 1, every2b, comm));
        for (int k = 0; k < 10; k++) {
            int at = (k / 2) * 4 + k % 2;
            CHECK(out[at] == (2 * k) * (2 * k), "unpacked through vector: out[%d] = %d", at, out[at]);
        }
        CHECK(out[2] == -1 && out[3] == -1, "unpack wrote into a gap");
        double dd;
        CHECK_MPI(MPI_Unpack(in, n, &upos, &dd, 1, MPI_DOUBLE, comm));
        CHECK(dd == -3.75, "double after MPI_PACKED transfer: %g", dd);
        MPI_Type_free(&every2b);
        free(in);
    }

    /* A message sent with a datatype can be received as MPI_PACKED and
     * unpacked with the same datatype. */
    {
        int out[20], back[20];
        char pk[256];
        MPI_Request req;
        for (int i = 0; i < 20; i++)
            back[i] = 0;
        CHECK_MPI(MPI_Isend(ints, 1, every2, 0, 2, MPI_COMM_SELF, &req));
        CHECK_MPI(MPI_Recv(pk, sizeof pk, MPI_PACKED, 0, 2, MPI_COMM_SELF, MPI_STATUS_IGNORE));
        CHECK_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
        int upos = 0;
        CHECK_MPI(MPI_Unpack(pk, sizeof pk, &upos, back, 1, every2, MPI_COMM_SELF));
        for (int i = 0; i < 20; i += 2)
            CHECK(back[i] == ints[i], "received as MPI_PACKED, unpacked: [%d] = %d", i, back[i]);
        (void)out;
    }

    /* external32 */
    {
        int32_t i32 = 0x01020304;
        double one = 1.0;
        int16_t i16[2] = {-2, 0x0A0B};
        uint64_t u64 = 0x1122334455667788ull;
        float f = -2.0f;
        unsigned char buf[64];
        MPI_Aint ep = 0, sz;
        CHECK_MPI(MPI_Pack_external_size("external32", 1, MPI_INT, &sz));
        CHECK_INT_EQ(sz, 4);
        CHECK_MPI(MPI_Pack_external_size("external32", 3, MPI_DOUBLE, &sz));
        CHECK_INT_EQ(sz, 24);
        CHECK_MPI(MPI_Pack_external_size("external32", 2, MPI_SHORT, &sz));
        CHECK_INT_EQ(sz, 4);
        memset(buf, 0, sizeof buf);
        CHECK_MPI(MPI_Pack_external("external32", &i32, 1, MPI_INT32_T, buf, sizeof buf, &ep));
        CHECK_MPI(MPI_Pack_external("external32", &one, 1, MPI_DOUBLE, buf, sizeof buf, &ep));
        CHECK_MPI(MPI_Pack_external("external32", i16, 2, MPI_INT16_T, buf, sizeof buf, &ep));
        CHECK_MPI(MPI_Pack_external("external32", &u64, 1, MPI_UINT64_T, buf, sizeof buf, &ep));
        CHECK_MPI(MPI_Pack_external("external32", &f, 1, MPI_FLOAT, buf, sizeof buf, &ep));
        CHECK_INT_EQ(ep, 4 + 8 + 4 + 8 + 4);
        const unsigned char expect[] = {
            0x01, 0x02, 0x03, 0x04,                         /* int32 */
            0x3F, 0xF0, 0, 0, 0, 0, 0, 0,                   /* 1.0 */
            0xFF, 0xFE, 0x0A, 0x0B,                         /* -2, 0x0A0B */
            0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, /* u64 */
            0xC0, 0x00, 0x00, 0x00,                         /* -2.0f */
        };
        for (size_t i = 0; i < sizeof expect; i++)
            if (!CHECK(buf[i] == expect[i], "external32 byte %zu is 0x%02x, expected 0x%02x", i, buf[i], expect[i]))
                break;
        int32_t ri;
        double rd;
        int16_t r16[2];
        uint64_t r64;
        float rf;
        MPI_Aint up = 0;
        CHECK_MPI(MPI_Unpack_external("external32", buf, ep, &up, &ri, 1, MPI_INT32_T));
        CHECK_MPI(MPI_Unpack_external("external32", buf, ep, &up, &rd, 1, MPI_DOUBLE));
        CHECK_MPI(MPI_Unpack_external("external32", buf, ep, &up, r16, 2, MPI_INT16_T));
        CHECK_MPI(MPI_Unpack_external("external32", buf, ep, &up, &r64, 1, MPI_UINT64_T));
        CHECK_MPI(MPI_Unpack_external("external32", buf, ep, &up, &rf, 1, MPI_FLOAT));
        CHECK_INT_EQ(up, ep);
        CHECK(ri == i32 && rd == one && r16[0] == -2 && r16[1] == 0x0A0B && r64 == u64 && rf == f,
              "external32 round trip changed values");
        /* A derived type in external32: every other int of 4. */
        MPI_Datatype v;
        MPI_Type_vector(2, 1, 2, MPI_INT, &v);
        MPI_Type_commit(&v);
        int src4[4] = {0x0A0B0C0D, 7, -1, 9};
        CHECK_MPI(MPI_Pack_external_size("external32", 1, v, &sz));
        CHECK_INT_EQ(sz, 8);
        ep = 0;
        CHECK_MPI(MPI_Pack_external("external32", src4, 1, v, buf, sizeof buf, &ep));
        const unsigned char ev[] = {0x0A, 0x0B, 0x0C, 0x0D, 0xFF, 0xFF, 0xFF, 0xFF};
        CHECK(ep == 8 && memcmp(buf, ev, 8) == 0, "external32 of a vector type");
        int dst4[4] = {0, 0, 0, 0};
        up = 0;
        CHECK_MPI(MPI_Unpack_external("external32", buf, ep, &up, dst4, 1, v));
        CHECK(dst4[0] == 0x0A0B0C0D && dst4[1] == 0 && dst4[2] == -1 && dst4[3] == 0, "external32 unpack into vector");
        MPI_Type_free(&v);
    }

    MPI_Type_free(&every2);
    free(packbuf);
    MPI_Finalize();
    return test_finish();
}
