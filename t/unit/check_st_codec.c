/*
 * check_st_codec: unit tests of the key and record encodings
 * (storage/st_codec.h): the inline and digest forms of a key reference
 * for names from 0 bytes to 1 MiB, the SCAN hash's range, big-endian
 * helpers and the record header codec, corrupt records included. Pure
 * functions: no environment.
 */
#include "storage/st_codec.h"
#include "storage/st_err.h"
#include "t/unit/unit_st.h"

#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NOW UNIT_ST_NOW
#define TIMEOUT_S 30
#define NAME_SIZE 64
#define KIB 1024
#define MIB (1024 * 1024)
#define HASH_SAMPLES 100000
#define TOP_BIT 0x8000000000000000ull

START_TEST(test_keyref_forms)
{
    uint8_t *name = unit_st_make_name(MIB, 3);
    st_keyref k;

    st_codec_keyref_init(&k, 0, name, 0);
    ck_assert(!k.is_long);
    ck_assert_uint_eq(k.enc_len, ST_KEY_HEAD_BYTES);

    st_codec_keyref_init(&k, 513, name, 1);
    ck_assert(!k.is_long);
    ck_assert_uint_eq(k.enc_len, ST_KEY_HEAD_BYTES + 1);
    ck_assert_uint_eq(st_codec_get_be16(k.enc), 513);
    ck_assert_uint_eq(st_codec_get_be64(k.enc + ST_KEY_DB_BYTES), k.hash);
    ck_assert_uint_eq(k.hash, st_codec_scan_hash(name, 1));
    ck_assert_uint_eq(k.enc[ST_KEY_HEAD_BYTES], name[0]);
    ck_assert_uint_eq(k.db, 513);
    ck_assert_ptr_eq(k.name, name);
    ck_assert_uint_eq(k.len, 1);

    st_codec_keyref_init(&k, ST_KEY_MAXDB, name, ST_KEY_INLINE_MAX);
    ck_assert(!k.is_long);
    ck_assert_uint_eq(k.enc_len, ST_KEY_HEAD_BYTES + ST_KEY_INLINE_MAX);
    ck_assert_uint_lt(k.enc_len, ST_LMDB_MAXKEY);
    ck_assert_uint_eq(st_codec_get_be16(k.enc), ST_KEY_MAXDB);
    ck_assert_int_eq(memcmp(k.enc + ST_KEY_HEAD_BYTES, name, ST_KEY_INLINE_MAX),
                     0);

    for (size_t len = ST_KEY_INLINE_MAX + 1; len <= MIB;
         len = len < 2 * KIB ? len + 1 : len * 2) {
        st_codec_keyref_init(&k, 1, name, len);
        ck_assert(k.is_long);
        ck_assert_uint_eq(k.enc_len, ST_LMDB_MAXKEY);
        ck_assert_uint_eq(st_codec_get_be16(k.enc), 1);
        ck_assert_uint_eq(st_codec_get_be64(k.enc + ST_KEY_DB_BYTES), k.hash);
        ck_assert_uint_eq(k.hash, st_codec_scan_hash(name, len));
        ck_assert_int_eq(memcmp(k.enc + ST_KEY_LONG_STEM + ST_KEY_PROBE_BYTES,
                                name, ST_KEY_LONG_PREFIX),
                         0);
    }
    /* The digest form is exactly LMDB's key limit. */
    ck_assert_uint_eq(ST_KEY_LONG_STEM + ST_KEY_PROBE_BYTES +
                          ST_KEY_LONG_PREFIX,
                      ST_LMDB_MAXKEY);
    free(name);
}
END_TEST

START_TEST(test_keyref_digest_differs)
{
    /* Two long names with the same prefix get different stems. */
    uint8_t *a = unit_st_make_name(4 * KIB, 9), *b = malloc(4 * KIB);
    st_keyref ka, kb;

    ck_assert_ptr_nonnull(b);
    memcpy(b, a, 4 * KIB);
    b[4 * KIB - 1] ^= 1;
    st_codec_keyref_init(&ka, 0, a, 4 * KIB);
    st_codec_keyref_init(&kb, 0, b, 4 * KIB);
    ck_assert_int_ne(memcmp(ka.enc, kb.enc, ST_KEY_LONG_STEM), 0);
    ck_assert_int_eq(memcmp(ka.enc + ST_KEY_LONG_STEM + ST_KEY_PROBE_BYTES,
                            kb.enc + ST_KEY_LONG_STEM + ST_KEY_PROBE_BYTES,
                            ST_KEY_LONG_PREFIX),
                     0);
    free(a);
    free(b);
}
END_TEST

START_TEST(test_scan_hash_range)
{
    char name[NAME_SIZE];
    uint64_t ored = 0, anded = UINT64_MAX;

    ck_assert_uint_ne(st_codec_scan_hash("", 0), 0);
    ck_assert_uint_eq(st_codec_scan_hash("", 0) & TOP_BIT, 0);
    for (int i = 0; i < HASH_SAMPLES; i++) {
        int n = snprintf(name, sizeof name, "key:%d", i);
        uint64_t h = st_codec_scan_hash(name, (size_t)n);
        ck_assert_uint_ne(h, 0);
        ck_assert_uint_eq(h & TOP_BIT, 0);
        ck_assert_uint_eq(h, st_codec_scan_hash(name, (size_t)n)); /* stable */
        ored |= h;
        anded &= h;
    }
    /* Every one of the 63 bits varies (bit 0 may be forced on). */
    ck_assert_uint_eq(ored, ~TOP_BIT);
    ck_assert_uint_le(anded, 1);
    /* The hash covers length and content; seeds separate hashes. */
    ck_assert_uint_ne(st_codec_scan_hash("a", 1), st_codec_scan_hash("a\0", 2));
    ck_assert_uint_ne(st_codec_hash64("abc", 3, 1),
                      st_codec_hash64("abc", 3, 2));
    ck_assert_uint_eq(st_codec_hash64("abc", 3, 1),
                      st_codec_hash64("abc", 3, 1));
}
END_TEST

START_TEST(test_big_endian)
{
    uint8_t b[8];
    static const uint8_t want64[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };

    st_codec_put_be16(b, 0x0102);
    ck_assert_uint_eq(b[0], 1);
    ck_assert_uint_eq(b[1], 2);
    ck_assert_uint_eq(st_codec_get_be16(b), 0x0102);
    st_codec_put_be16(b, 0xffff);
    ck_assert_uint_eq(st_codec_get_be16(b), 0xffff);
    st_codec_put_be64(b, 0x0102030405060708ull);
    ck_assert_mem_eq(b, want64, 8);
    ck_assert_uint_eq(st_codec_get_be64(b), 0x0102030405060708ull);
    st_codec_put_be64(b, UINT64_MAX);
    ck_assert_uint_eq(st_codec_get_be64(b), UINT64_MAX);
    st_codec_put_be64(b, 0);
    ck_assert_uint_eq(st_codec_get_be64(b), 0);
    /* Big-endian bytes sort like the numbers (memcmp order). */
    {
        uint8_t lo[8], hi[8];
        st_codec_put_be64(lo, 0x00ffffffffffffffull);
        st_codec_put_be64(hi, 0x0100000000000000ull);
        ck_assert_int_lt(memcmp(lo, hi, 8), 0);
    }
}
END_TEST

START_TEST(test_record_codec)
{
    uint8_t buf[ST_REC_HEADER + 600 + 8];
    uint8_t *name = unit_st_make_name(600, 4);
    st_keyref k;
    st_rec r;
    uint8_t *payload;

    /* Short name: header then payload. */
    st_codec_keyref_init(&k, 0, "abc", 3);
    ck_assert_uint_eq(st_codec_rec_size(&k, 5), ST_REC_HEADER + 5);
    payload = st_codec_rec_encode_head(buf, &k, ST_TYPE_STRING, 0, 42, NOW);
    ck_assert_ptr_eq(payload, buf + ST_REC_HEADER);
    memcpy(payload, "hello", 5);
    ck_assert_int_eq(st_codec_rec_decode(buf, ST_REC_HEADER + 5, &r), 0);
    ck_assert_int_eq(r.type, ST_TYPE_STRING);
    ck_assert_uint_eq(r.flags, 0);
    ck_assert_uint_eq(r.version, 42);
    ck_assert_int_eq(r.expire_at, NOW);
    ck_assert_ptr_null(r.name);
    ck_assert_uint_eq(r.payload_len, 5);
    ck_assert_mem_eq(r.payload, "hello", 5);

    /* Long name: the full name sits between header and payload. */
    st_codec_keyref_init(&k, 0, name, 600);
    ck_assert_uint_eq(st_codec_rec_size(&k, 8), ST_REC_HEADER + 600 + 8);
    payload = st_codec_rec_encode_head(buf, &k, ST_TYPE_HASH, ST_REC_ZSTD, 7,
                                       0);
    ck_assert_ptr_eq(payload, buf + ST_REC_HEADER + 600);
    memset(payload, 'p', 8);
    ck_assert_int_eq(st_codec_rec_decode(buf, sizeof buf, &r), 0);
    ck_assert_int_eq(r.type, ST_TYPE_HASH);
    ck_assert_uint_eq(r.flags, ST_REC_LONGNAME | ST_REC_ZSTD);
    ck_assert_uint_eq(r.name_len, 600);
    ck_assert_int_eq(memcmp(r.name, name, 600), 0);
    ck_assert_uint_eq(r.payload_len, 8);

    /* Corrupt records are refused. */
    ck_assert_int_eq(st_codec_rec_decode(buf, ST_REC_HEADER - 1, &r),
                     ST_ECORRUPT);
    ck_assert_int_eq(st_codec_rec_decode(buf, ST_REC_HEADER + 599, &r),
                     ST_ECORRUPT);
    buf[0] = 0;
    ck_assert_int_eq(st_codec_rec_decode(buf, sizeof buf, &r), ST_ECORRUPT);
    buf[0] = ST_TYPE_STREAM + 1;
    ck_assert_int_eq(st_codec_rec_decode(buf, sizeof buf, &r), ST_ECORRUPT);
    free(name);
}
END_TEST

static Suite *codec_suite(void)
{
    Suite *s = suite_create("st_codec");
    TCase *tc = tcase_create("encoding");

    tcase_set_timeout(tc, TIMEOUT_S);
    tcase_add_test(tc, test_keyref_forms);
    tcase_add_test(tc, test_keyref_digest_differs);
    tcase_add_test(tc, test_scan_hash_range);
    tcase_add_test(tc, test_big_endian);
    tcase_add_test(tc, test_record_codec);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(codec_suite());
    int failed;

    srunner_run_all(sr, CK_ENV);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
