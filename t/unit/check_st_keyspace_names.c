/*
 * check_st_keyspace_names: unit tests of the keyspace
 * (storage/st_keyspace.h) with names of 0, 1, 493..499, the inline
 * limit and one past it, LMDB's key limit and one past it, 64 KiB and
 * 1 MiB bytes: set, lookup, SCAN and RANDOMKEY return them whole,
 * rename, delete, expiry (active and lazy), long names sharing a long
 * prefix, copies between long and short names, and a chunked flush.
 */
#include "storage/st_codec.h"
#include "storage/st_err.h"
#include "storage/st_keyspace.h"
#include "storage/st_txn.h"
#include "t/unit/unit_st.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NOW UNIT_ST_NOW
#define SEC UNIT_ST_SEC
#define TIMEOUT_S 30
#define NAME_SIZE 64
#define KIB 1024
#define MIB (1024 * 1024)
#define RANDOM_DRAWS 1000
#define FAR_FUTURE (NOW + 1000000 * SEC)
#define BATCH_ALL 100000 /* an expiry batch bigger than any test */
#define RENAME_SALT 1000

static const size_t name_lengths[] = {
    0,
    1,
    493,
    494,
    499,
    ST_KEY_INLINE_MAX,
    ST_KEY_INLINE_MAX + 1,
    ST_LMDB_MAXKEY,
    ST_LMDB_MAXKEY + 1,
    64 * KIB,
    MIB,
};
#define N_LENGTHS (sizeof name_lengths / sizeof name_lengths[0])

START_TEST(test_long_names)
{
    uint8_t *names[N_LENGTHS], *renamed[N_LENGTHS];
    char val[NAME_SIZE];
    unit_st_names c = { 0 };
    st_txn *t = unit_st_wbegin();
    st_rec r;

    for (size_t i = 0; i < N_LENGTHS; i++) {
        size_t len = name_lengths[i];
        names[i] = unit_st_make_name(len, (unsigned)i);
        renamed[i] = unit_st_make_name(len, (unsigned)i + RENAME_SALT);
        if (len && memcmp(names[i], renamed[i], len) == 0)
            renamed[i][0] ^= 0xff;
        snprintf(val, sizeof val, "value of %zu", len);
        ck_assert_msg(unit_st_putn(t, 6, names[i], len, val, strlen(val), 0) ==
                          0,
                      "set of a %zu-byte name", len);
    }
    unit_st_commit(&t);
    unit_st_counts(6, N_LENGTHS, 0);

    t = unit_st_rbegin();
    for (size_t i = 0; i < N_LENGTHS; i++) {
        size_t len = name_lengths[i];
        snprintf(val, sizeof val, "value of %zu", len);
        ck_assert_msg(unit_st_lookupn(t, 6, names[i], len, NOW, &r) == 0,
                      "lookup of a %zu-byte name", len);
        ck_assert_uint_eq(r.payload_len, strlen(val));
        ck_assert_mem_eq(r.payload, val, strlen(val));
        if (len > ST_KEY_INLINE_MAX) {
            ck_assert(r.flags & ST_REC_LONGNAME);
            ck_assert_uint_eq(r.name_len, len);
            ck_assert_int_eq(memcmp(r.name, names[i], len), 0);
        }
        /* A name differing only in its last byte is another key. */
        if (len) {
            names[i][len - 1] ^= 1;
            ck_assert_int_eq(unit_st_lookupn(t, 6, names[i], len, NOW, &r),
                             ST_ENOTFOUND);
            names[i][len - 1] ^= 1;
        }
    }
    unit_st_commit(&t);

    /* SCAN returns every name in full. */
    unit_st_scan_all(6, 3, NOW, &c);
    ck_assert_uint_eq(c.n, N_LENGTHS);
    for (size_t i = 0; i < N_LENGTHS; i++)
        ck_assert_msg(unit_st_times_seen(&c, names[i], name_lengths[i]) == 1,
                      "scan: %zu-byte name", name_lengths[i]);
    unit_st_names_free(&c);

    /* RANDOMKEY hands out full names too. */
    {
        uint64_t draw = 1;
        for (int i = 0; i < RANDOM_DRAWS / 10; i++) {
            st_txn *rt = unit_st_rbegin();
            ck_assert_int_eq(st_keyspace_random_key(rt, 6, draw, NOW,
                                                    unit_st_collect, &c),
                             0);
            unit_st_commit(&rt);
            draw = draw * 6364136223846793005ull + 1442695040888963407ull;
        }
        for (size_t j = 0; j < c.n; j++) {
            int known = 0;
            for (size_t i = 0; i < N_LENGTHS; i++)
                known |= c.v[j].len == name_lengths[i] &&
                         (c.v[j].len == 0 ||
                          memcmp(c.v[j].p, names[i], c.v[j].len) == 0);
            ck_assert_msg(known, "random key of %zu bytes is no stored name",
                          c.v[j].len);
        }
        unit_st_names_free(&c);
    }

    /* RENAME each to another name of the same length. */
    t = unit_st_wbegin();
    for (size_t i = 0; i < N_LENGTHS; i++) {
        size_t len = name_lengths[i];
        st_keyref s, d;
        if (len == 0)
            continue; /* only one empty name */
        st_codec_keyref_init(&s, 6, names[i], len);
        st_codec_keyref_init(&d, 6, renamed[i], len);
        ck_assert_msg(st_keyspace_rename(t, &s, &d, NOW, 0) == 0,
                      "rename of a %zu-byte name", len);
    }
    unit_st_commit(&t);
    t = unit_st_rbegin();
    for (size_t i = 0; i < N_LENGTHS; i++) {
        size_t len = name_lengths[i];
        if (len == 0)
            continue;
        snprintf(val, sizeof val, "value of %zu", len);
        ck_assert_int_eq(unit_st_lookupn(t, 6, names[i], len, NOW, &r),
                         ST_ENOTFOUND);
        ck_assert_int_eq(unit_st_lookupn(t, 6, renamed[i], len, NOW, &r), 0);
        ck_assert_mem_eq(r.payload, val, strlen(val));
    }
    unit_st_commit(&t);
    unit_st_counts(6, N_LENGTHS, 0);

    /* DELETE them all. */
    t = unit_st_wbegin();
    for (size_t i = 0; i < N_LENGTHS; i++) {
        st_keyref k;
        uint8_t *n = name_lengths[i] ? renamed[i] : names[i];
        st_codec_keyref_init(&k, 6, n, name_lengths[i]);
        ck_assert_msg(st_keyspace_delete(t, &k, NOW) == 0,
                      "delete of a %zu-byte name", name_lengths[i]);
    }
    unit_st_commit(&t);
    unit_st_counts(6, 0, 0);
    unit_st_scan_all(6, 3, NOW, &c);
    ck_assert_uint_eq(c.n, 0);
    unit_st_names_free(&c);

    for (size_t i = 0; i < N_LENGTHS; i++) {
        free(names[i]);
        free(renamed[i]);
    }
}
END_TEST

START_TEST(test_long_names_expiry)
{
    /* Long names (and inline ones whose expiry key is cut) expire. */
    uint8_t *names[N_LENGTHS];
    st_txn *t = unit_st_wbegin();
    size_t done;
    uint64_t ver;
    st_rec r;

    for (size_t i = 0; i < N_LENGTHS; i++) {
        names[i] = unit_st_make_name(name_lengths[i], (unsigned)i + 77);
        ck_assert_int_eq(unit_st_putn(t, 0, names[i], name_lengths[i], "v", 1,
                                      NOW + (int64_t)i),
                         0);
    }
    unit_st_commit(&t);
    unit_st_counts(0, N_LENGTHS, N_LENGTHS);
    done = unit_st_expire_due(NOW + (int64_t)N_LENGTHS, BATCH_ALL, &ver);
    ck_assert_uint_eq(done, N_LENGTHS);
    unit_st_counts(0, 0, 0);
    t = unit_st_rbegin();
    for (size_t i = 0; i < N_LENGTHS; i++)
        ck_assert_int_eq(unit_st_lookupn(t, 0, names[i], name_lengths[i], NOW,
                                         &r),
                         ST_ENOTFOUND);
    unit_st_commit(&t);

    /* Lazily, in a write transaction, too. */
    t = unit_st_wbegin();
    for (size_t i = 0; i < N_LENGTHS; i++)
        ck_assert_int_eq(unit_st_putn(t, 1, names[i], name_lengths[i], "v", 1,
                                      NOW + SEC),
                         0);
    unit_st_commit(&t);
    t = unit_st_wbegin();
    for (size_t i = 0; i < N_LENGTHS; i++)
        ck_assert_int_eq(unit_st_lookupn(t, 1, names[i], name_lengths[i],
                                         NOW + SEC, &r),
                         ST_ENOTFOUND);
    unit_st_commit(&t);
    unit_st_counts(1, 0, 0);
    done = unit_st_expire_due(FAR_FUTURE, BATCH_ALL, &ver);
    ck_assert_uint_eq(done, 0);
    for (size_t i = 0; i < N_LENGTHS; i++)
        free(names[i]);
}
END_TEST

START_TEST(test_long_names_shared_prefix)
{
    /*
     * Long names equal in their first bytes (beyond the prefix the digest
     * form keeps) are different keys; so are an inline name and a long
     * name that starts with it.
     */
    const size_t len = 2 * KIB;
    uint8_t *a = unit_st_make_name(len, 1), *b = malloc(len), *c2 = malloc(len);
    st_txn *t;
    st_rec r;
    st_keyref k;
    unit_st_names c = { 0 };

    ck_assert_ptr_nonnull(b);
    ck_assert_ptr_nonnull(c2);
    memcpy(b, a, len);
    b[len - 1] ^= 0x55; /* differs in the last byte */
    memcpy(c2, a, len);
    c2[ST_KEY_LONG_PREFIX + 3] ^= 0x55; /* differs just past the prefix */

    t = unit_st_wbegin();
    ck_assert_int_eq(unit_st_putn(t, 0, a, len, "A", 1, 0), 0);
    ck_assert_int_eq(unit_st_putn(t, 0, b, len, "B", 1, NOW + SEC), 0);
    ck_assert_int_eq(unit_st_putn(t, 0, c2, len, "C", 1, 0), 0);
    ck_assert_int_eq(unit_st_putn(t, 0, a, ST_KEY_INLINE_MAX, "short", 5, 0),
                     0);
    ck_assert_int_eq(unit_st_putn(t, 0, a, len - 1, "minus1", 6, 0), 0);
    unit_st_commit(&t);
    unit_st_counts(0, 5, 1);

    t = unit_st_rbegin();
    ck_assert_int_eq(unit_st_lookupn(t, 0, a, len, NOW, &r), 0);
    ck_assert_mem_eq(r.payload, "A", 1);
    ck_assert_int_eq(unit_st_lookupn(t, 0, b, len, NOW, &r), 0);
    ck_assert_mem_eq(r.payload, "B", 1);
    ck_assert_int_eq(r.expire_at, NOW + SEC);
    ck_assert_int_eq(unit_st_lookupn(t, 0, c2, len, NOW, &r), 0);
    ck_assert_mem_eq(r.payload, "C", 1);
    ck_assert_int_eq(unit_st_lookupn(t, 0, a, ST_KEY_INLINE_MAX, NOW, &r), 0);
    ck_assert_mem_eq(r.payload, "short", 5);
    ck_assert_int_eq(unit_st_lookupn(t, 0, a, len - 1, NOW, &r), 0);
    ck_assert_mem_eq(r.payload, "minus1", 6);
    unit_st_commit(&t);

    unit_st_scan_all(0, 2, NOW, &c);
    ck_assert_uint_eq(c.n, 5);
    ck_assert_int_eq(unit_st_times_seen(&c, a, len), 1);
    ck_assert_int_eq(unit_st_times_seen(&c, b, len), 1);
    ck_assert_int_eq(unit_st_times_seen(&c, c2, len), 1);
    unit_st_names_free(&c);

    /* Deleting one leaves the others. */
    t = unit_st_wbegin();
    st_codec_keyref_init(&k, 0, a, len);
    ck_assert_int_eq(st_keyspace_delete(t, &k, NOW), 0);
    unit_st_commit(&t);
    t = unit_st_rbegin();
    ck_assert_int_eq(unit_st_lookupn(t, 0, a, len, NOW, &r), ST_ENOTFOUND);
    ck_assert_int_eq(unit_st_lookupn(t, 0, b, len, NOW, &r), 0);
    ck_assert_int_eq(unit_st_lookupn(t, 0, c2, len, NOW, &r), 0);
    unit_st_commit(&t);

    /* Overwriting one long name does not touch its neighbour. */
    t = unit_st_wbegin();
    ck_assert_int_eq(unit_st_putn(t, 0, c2, len, "C2", 2, 0), 0);
    unit_st_commit(&t);
    t = unit_st_rbegin();
    ck_assert_int_eq(unit_st_lookupn(t, 0, c2, len, NOW, &r), 0);
    ck_assert_mem_eq(r.payload, "C2", 2);
    ck_assert_int_eq(unit_st_lookupn(t, 0, b, len, NOW, &r), 0);
    ck_assert_mem_eq(r.payload, "B", 1);
    unit_st_commit(&t);
    unit_st_counts(0, 4, 1);

    /* Copy and rename between long and short names. */
    t = unit_st_wbegin();
    {
        st_keyref s, d;
        st_codec_keyref_init(&s, 0, b, len);
        st_codec_keyref_init(&d, 0, "short-b", 7);
        ck_assert_int_eq(st_keyspace_copy(t, &s, &d, NOW, 0), 0);
        st_codec_keyref_init(&s, 0, "short-b", 7);
        st_codec_keyref_init(&d, 2, a, len);
        ck_assert_int_eq(st_keyspace_copy(t, &s, &d, NOW, 0), 0);
    }
    unit_st_commit(&t);
    unit_st_expect(0, "short-b", "B");
    ck_assert_int_eq(unit_st_ttl_of(0, "short-b"), NOW + SEC);
    t = unit_st_rbegin();
    ck_assert_int_eq(unit_st_lookupn(t, 2, a, len, NOW, &r), 0);
    ck_assert_mem_eq(r.payload, "B", 1);
    ck_assert_int_eq(r.expire_at, NOW + SEC);
    unit_st_commit(&t);
    free(a);
    free(b);
    free(c2);
}
END_TEST

START_TEST(test_long_names_flush)
{
    /* A chunked flush deletes long names and their expiry entries. */
    uint8_t *names[N_LENGTHS];
    uint64_t ver;
    size_t done;
    st_txn *t = unit_st_wbegin();

    for (size_t i = 0; i < N_LENGTHS; i++) {
        names[i] = unit_st_make_name(name_lengths[i], (unsigned)i + 5);
        ck_assert_int_eq(unit_st_putn(t, 8, names[i], name_lengths[i], "v", 1,
                                      i % 2 ? NOW + SEC : 0),
                         0);
    }
    ck_assert_int_eq(unit_st_put(t, 0, "bystander", "v", 0), 0);
    unit_st_commit(&t);
    ck_assert_int_eq(st_keyspace_flush(unit_st_env, 8, &ver), 0);
    unit_st_counts(8, 0, 0);
    unit_st_counts(0, 1, 0);
    done = unit_st_expire_due(FAR_FUTURE, BATCH_ALL, &ver);
    ck_assert_uint_eq(done, 0);
    for (size_t i = 0; i < N_LENGTHS; i++)
        free(names[i]);
}
END_TEST

static Suite *names_suite(void)
{
    Suite *s = suite_create("st_keyspace_names");
    TCase *tc = tcase_create("limits");

    unit_st_fixture(tc, UNIT_ST_PLAIN);
    tcase_set_timeout(tc, TIMEOUT_S);
    tcase_add_test(tc, test_long_names);
    tcase_add_test(tc, test_long_names_expiry);
    tcase_add_test(tc, test_long_names_shared_prefix);
    tcase_add_test(tc, test_long_names_flush);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(names_suite());
    int failed;

    srunner_run_all(sr, CK_ENV);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
