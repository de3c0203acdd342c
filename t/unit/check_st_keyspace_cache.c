/*
 * check_st_keyspace_cache: unit tests of the keyspace's read path
 * (storage/st_keyspace.h) with compression and with the shared cache in
 * front of LMDB: values round trip compressed (rename, copy and expiry
 * keep them whole); reads through the cache never return what a
 * committed write superseded (overwrite, TTL change, delete, rename,
 * copy, expiry, FLUSHDB, FLUSHALL, an abort, a write by another
 * process), value shapes from a miss and from a hit, the biggest item
 * the cache takes, and one snapshot per read transaction.
 */
#include "storage/st_codec.h"
#include "storage/st_err.h"
#include "storage/st_keyspace.h"
#include "storage/st_string.h"
#include "storage/st_txn.h"
#include "t/unit/unit_st.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

#define NOW UNIT_ST_NOW
#define SEC UNIT_ST_SEC
#define TIMEOUT_S 30
#define NAME_SIZE 64
#define KIB 1024

/* ------------------------------------------------------------------ */
/* compression (fixture UNIT_ST_COMPRESS) */

START_TEST(test_compress_round_trip)
{
    const size_t big = 64 * KIB;
    uint8_t *zv = unit_st_compressible(big, 'a');
    uint8_t *rnd = unit_st_make_name(big, 5); /* incompressible */
    uint8_t *edge = unit_st_compressible(UNIT_ST_COMPRESS_THRESHOLD, 'q');
    st_txn *t = unit_st_wbegin();

    ck_assert_int_eq(unit_st_putn(t, 0, "z", 1, zv, big, 0), 0);
    ck_assert_int_eq(unit_st_putn(t, 0, "rnd", 3, rnd, big, 0), 0);
    ck_assert_int_eq(unit_st_putn(t, 0, "edge", 4, edge,
                                  UNIT_ST_COMPRESS_THRESHOLD, 0),
                     0);
    ck_assert_int_eq(unit_st_put(t, 0, "small", "tiny", 0), 0);
    /* The writer reads its own compressed write back whole. */
    {
        st_rec r;
        ck_assert_int_eq(unit_st_lookup(t, 0, "z", NOW, &r), 0);
        size_t n;
        const uint8_t *p = unit_st_bytes(t, &r, &n);
        ck_assert_uint_eq(n, big);
        ck_assert_int_eq(memcmp(p, zv, big), 0);
    }
    unit_st_commit(&t);
    unit_st_expect_bytes(0, "z", zv, big);
    unit_st_expect_bytes(0, "rnd", rnd, big);
    unit_st_expect_bytes(0, "edge", edge, UNIT_ST_COMPRESS_THRESHOLD);
    unit_st_expect(0, "small", "tiny");

    /* Rename, copy and expire keep the value whole. */
    ck_assert_int_eq(unit_st_rename(0, "z", "z2", 0), 0);
    ck_assert_int_eq(unit_st_copy(0, "z2", 3, "z3", 0), 0);
    {
        st_keyref k;
        t = unit_st_wbegin();
        st_codec_keyref_init(&k, 3, "z3", 2);
        ck_assert_int_eq(st_keyspace_expire_set(t, &k, NOW, NOW + SEC), 0);
        unit_st_commit(&t);
    }
    unit_st_expect_bytes(0, "z2", zv, big);
    unit_st_expect_bytes(3, "z3", zv, big);
    ck_assert_int_eq(unit_st_ttl_of(3, "z3"), NOW + SEC);
    free(zv);
    free(rnd);
    free(edge);
}
END_TEST

/* ------------------------------------------------------------------ */
/* the shared cache (fixture UNIT_ST_CACHE) */

START_TEST(test_cache_sees_writes)
{
    /* Reads through the cache never return what a committed write
     * superseded: overwrite, TTL change, delete, rename, flush. */
    uint64_t ver;
    size_t done;

    unit_st_put1(0, "k", "v1", 0);
    unit_st_expect(0, "k", "v1"); /* miss, fill */
    unit_st_expect(0, "k", "v1"); /* hit */
    unit_st_put1(0, "k", "v2", 0);
    unit_st_expect(0, "k", "v2");
    unit_st_expect(0, "k", "v2");
    unit_st_put1(0, "k", "v3", NOW + SEC);
    unit_st_expect(0, "k", "v3");
    ck_assert_int_eq(unit_st_ttl_of(0, "k"), NOW + SEC);
    unit_st_expect_at(0, "k", NULL, NOW + SEC); /* a cached entry expires too */
    {
        st_keyref kr;
        st_txn *t = unit_st_wbegin();
        st_codec_keyref_init(&kr, 0, "k", 1);
        ck_assert_int_eq(st_keyspace_expire_set(t, &kr, NOW, 0), 0);
        unit_st_commit(&t);
    }
    ck_assert_int_eq(unit_st_ttl_of(0, "k"), 0);
    unit_st_expect_at(0, "k", "v3", NOW + 2 * SEC);
    {
        st_keyref kr;
        st_txn *t = unit_st_wbegin();
        st_codec_keyref_init(&kr, 0, "k", 1);
        ck_assert_int_eq(st_keyspace_delete(t, &kr, NOW), 0);
        unit_st_commit(&t);
    }
    unit_st_expect(0, "k", NULL);

    unit_st_put1(0, "src", "s", 0);
    unit_st_put1(0, "dst", "d", 0);
    unit_st_expect(0, "src", "s");
    unit_st_expect(0, "dst", "d");
    ck_assert_int_eq(unit_st_rename(0, "src", "dst", 0), 0);
    unit_st_expect(0, "dst", "s");
    unit_st_expect(0, "src", NULL);
    unit_st_put1(0, "c", "c1", 0);
    unit_st_expect(0, "c", "c1");
    unit_st_put1(1, "c", "other", 0);
    ck_assert_int_eq(unit_st_copy(1, "c", 0, "c", 1), 0);
    unit_st_expect(0, "c", "other");

    /* The same name in two databases is two cache entries. */
    unit_st_put1(2, "same", "two", 0);
    unit_st_put1(3, "same", "three", 0);
    unit_st_expect(2, "same", "two");
    unit_st_expect(3, "same", "three");
    unit_st_expect(2, "same", "two");

    /* Active expiry, FLUSHALL. */
    unit_st_put1(4, "e", "v", NOW + SEC);
    unit_st_expect(4, "e", "v");
    done = unit_st_expire_due(NOW + SEC, 10, &ver);
    ck_assert_uint_eq(done, 1);
    unit_st_expect_at(4, "e", NULL, NOW + SEC);
    ck_assert_int_eq(st_keyspace_flush(unit_st_env, -1, &ver), 0);
    unit_st_expect(3, "same", NULL);
    unit_st_expect(0, "c", NULL);
}
END_TEST

START_TEST(test_cache_flushdb)
{
    /*
     * FLUSHDB of one database while others hold keys (the chunked path)
     * must drop that database's cached values too.
     */
    uint64_t ver;

    unit_st_put1(0, "bystander", "v", 0);
    unit_st_put1(2, "same", "two", 0);
    unit_st_put1(3, "same", "three", 0);
    unit_st_expect(2, "same", "two"); /* now cached */
    unit_st_expect(3, "same", "three");
    ck_assert_int_eq(st_keyspace_flush(unit_st_env, 2, &ver), 0);
    unit_st_counts(2, 0, 0);
    unit_st_expect(2, "same", NULL);
    unit_st_expect(3, "same", "three");
    unit_st_expect(0, "bystander", "v");
}
END_TEST

START_TEST(test_cache_expire_due_early_reader)
{
    /*
     * The reaper deletes a due key; a reader whose clock is a little
     * behind the reaper's (another process, another moment) must not get
     * it back from the cache: the key is gone from LMDB.
     */
    uint64_t ver;
    size_t done;

    unit_st_put1(0, "bystander", "v", 0);
    unit_st_put1(4, "e", "v", NOW + SEC);
    unit_st_expect(4, "e", "v"); /* cached with its expire-at */
    done = unit_st_expire_due(NOW + SEC, 10, &ver);
    ck_assert_uint_eq(done, 1);
    unit_st_counts(4, 0, 0);
    unit_st_expect_at(4, "e", NULL, NOW + SEC - 1);
}
END_TEST

START_TEST(test_cache_value_shapes)
{
    /* Empty, binary and biggish values come back the same from a miss
     * and from a hit. */
    static const char binary[] = "a\0b\r\n\xff";
    uint8_t *big = unit_st_make_name(100 * KIB, 9);
    st_txn *t = unit_st_wbegin();

    ck_assert_int_eq(unit_st_putn(t, 0, "empty", 5, "", 0, 0), 0);
    ck_assert_int_eq(unit_st_putn(t, 0, "bin", 3, binary, sizeof binary, 0), 0);
    ck_assert_int_eq(unit_st_putn(t, 0, "big", 3, big, 100 * KIB, 0), 0);
    unit_st_commit(&t);
    for (int round = 0; round < 2; round++) {
        unit_st_expect_bytes(0, "empty", "", 0);
        unit_st_expect_bytes(0, "bin", binary, sizeof binary);
        unit_st_expect_bytes(0, "big", big, 100 * KIB);
    }
    free(big);
}
END_TEST

START_TEST(test_cache_big_hit)
{
    /*
     * A cached value as big as the cache takes, read back when the read
     * transaction's buffer is mostly used by smaller ones before it (the
     * "buffer too small, ask again" path); the earlier ones stay intact.
     */
    const size_t small_len = 1000;
    const int nsmall = 62; /* ~62 KB: most of a 64 KiB chunk */
    size_t big = shm_cache_max_item(unit_st_cache) - NAME_SIZE;
    uint8_t *v = unit_st_make_name(big, 21);
    uint8_t *small = unit_st_make_name(small_len, 22);
    char name[NAME_SIZE];
    st_txn *t = unit_st_wbegin();
    st_rec r, rs;

    ck_assert_uint_gt(big, small_len);
    ck_assert_int_eq(unit_st_putn(t, 0, "big", 3, v, big, 0), 0);
    for (int i = 0; i < nsmall; i++) {
        snprintf(name, sizeof name, "s%d", i);
        ck_assert_int_eq(unit_st_putn(t, 0, name, strlen(name), small,
                                      small_len, 0),
                         0);
    }
    unit_st_commit(&t);
    for (int round = 0; round < 3; round++) { /* fill, then hits */
        t = unit_st_rbegin();
        ck_assert_int_eq(unit_st_lookup(t, 0, "s0", NOW, &rs), 0);
        for (int i = 1; i < nsmall; i++) {
            snprintf(name, sizeof name, "s%d", i);
            ck_assert_int_eq(unit_st_lookup(t, 0, name, NOW, &r), 0);
            ck_assert_int_eq(memcmp(r.payload, small, small_len), 0);
        }
        ck_assert_int_eq(unit_st_lookup(t, 0, "big", NOW, &r), 0);
        size_t n;
        const uint8_t *p = unit_st_bytes(t, &r, &n);
        ck_assert_uint_eq(n, big);
        ck_assert_int_eq(memcmp(p, v, big), 0);
        ck_assert_int_eq(memcmp(rs.payload, small, small_len), 0);
        unit_st_commit(&t);
    }
    free(v);
    free(small);
}
END_TEST

START_TEST(test_cache_aborted_write)
{
    unit_st_put1(0, "k", "v1", 0);
    unit_st_expect(0, "k", "v1");
    {
        st_txn *t = unit_st_wbegin();
        ck_assert_int_eq(unit_st_put(t, 0, "k", "lost", 0), 0);
        st_txn_abort(&t);
    }
    unit_st_expect(0, "k", "v1");
    unit_st_expect(0, "k", "v1");
}
END_TEST

START_TEST(test_cache_other_process_writes)
{
    /*
     * DESIGN's invariant across processes: after another process commits
     * a write (overwrite, delete, FLUSHDB), this process never gets the
     * old value from the cache it filled before.
     */
    static const char *const ops[] = { "set", "del", "flushdb" };
    uint64_t ver;

    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
        pid_t pid;

        unit_st_put1(0, "bystander", "v", 0);
        unit_st_put1(1, "k", "old", 0);
        unit_st_expect(1, "k", "old"); /* cached here */
        unit_st_expect(1, "k", "old");
        pid = fork();
        ck_assert_int_ge(pid, 0);
        if (pid == 0) {
            st_env_opts o = { .dir = unit_st_dir,
                              .map_size = UNIT_ST_MAP_SIZE,
                              .databases = UNIT_ST_DATABASES,
                              .nosync = 1,
                              .cache = unit_st_cache };
            st_env *e = NULL;
            st_txn *t;
            st_keyref k;
            int rc;
            if (st_env_open(&o, &e))
                _exit(UNIT_ST_CHILD_FAILED);
            if (i == 2) {
                rc = st_keyspace_flush(e, 1, &ver);
            } else {
                st_codec_keyref_init(&k, 1, "k", 1);
                rc = st_txn_begin(e, 1, &t);
                if (rc == 0)
                    rc = i == 0 ? st_keyspace_string_set(t, &k, "new", 3, 0)
                                : st_keyspace_delete(t, &k, NOW);
                if (rc == 0)
                    rc = st_txn_commit(&t);
            }
            _exit(rc ? UNIT_ST_CHILD_FAILED : 0);
        }
        unit_st_wait_ok(pid);
        unit_st_expect(1, "k", i == 0 ? "new" : NULL);
        unit_st_expect(1, "k", i == 0 ? "new" : NULL);
    }
}
END_TEST

START_TEST(test_cache_snapshot_isolation)
{
    /*
     * One read transaction must see one snapshot (MGET during a
     * concurrent MSET; the comment on cache_invalidate promises "a
     * multi-key read never mixes cached new values with an older
     * snapshot"). Reader R starts, reads a; a write replaces a and b in
     * one transaction; another process, reading after that commit, fills
     * the cache with the new b; R then reads b and must get the old one.
     */
    st_txn *r = NULL;
    st_rec rec;
    pid_t pid;

    unit_st_put1(0, "a", "old-a", 0);
    unit_st_put1(0, "b", "old-b", 0);
    r = unit_st_rbegin();
    ck_assert_int_eq(unit_st_lookup(r, 0, "a", NOW, &rec), 0);
    ck_assert_mem_eq(rec.payload, "old-a", 5);
    {
        st_txn *w = unit_st_wbegin();
        ck_assert_int_eq(unit_st_put(w, 0, "a", "new-a", 0), 0);
        ck_assert_int_eq(unit_st_put(w, 0, "b", "new-b", 0), 0);
        unit_st_commit(&w);
    }
    pid = fork(); /* inherits the cache mapping */
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        st_env_opts o = { .dir = unit_st_dir,
                          .map_size = UNIT_ST_MAP_SIZE,
                          .databases = UNIT_ST_DATABASES,
                          .nosync = 1,
                          .cache = unit_st_cache };
        st_env *e = NULL;
        st_txn *t;
        st_keyref k;
        if (st_env_open(&o, &e) || st_txn_begin(e, 0, &t))
            _exit(UNIT_ST_CHILD_FAILED);
        st_codec_keyref_init(&k, 0, "b", 1);
        if (st_keyspace_lookup(t, &k, NOW, &rec) || rec.payload_len != 5 ||
            memcmp(rec.payload, "new-b", 5))
            _exit(UNIT_ST_CHILD_FAILED);
        _exit(0);
    }
    unit_st_wait_ok(pid);
    ck_assert_int_eq(unit_st_lookup(r, 0, "b", NOW, &rec), 0);
    ck_assert_uint_eq(rec.payload_len, 5);
    ck_assert_msg(memcmp(rec.payload, "old-b", 5) == 0,
                  "a read transaction saw old-a and then %.5s",
                  (const char *)rec.payload);
    unit_st_commit(&r);
}
END_TEST

static Suite *cache_suite(void)
{
    Suite *s = suite_create("st_keyspace_cache");
    TCase *tc;

    tc = tcase_create("compress");
    unit_st_fixture(tc, UNIT_ST_COMPRESS);
    tcase_set_timeout(tc, TIMEOUT_S);
    tcase_add_test(tc, test_compress_round_trip);
    suite_add_tcase(s, tc);

    tc = tcase_create("cache");
    unit_st_fixture(tc, UNIT_ST_CACHE);
    tcase_set_timeout(tc, TIMEOUT_S);
    tcase_add_test(tc, test_cache_sees_writes);
    tcase_add_test(tc, test_cache_aborted_write);
    tcase_add_test(tc, test_cache_value_shapes);
    tcase_add_test(tc, test_cache_big_hit);
    tcase_add_test(tc, test_cache_flushdb);
    tcase_add_test(tc, test_cache_expire_due_early_reader);
    tcase_add_test(tc, test_cache_snapshot_isolation);
    tcase_add_test(tc, test_cache_other_process_writes);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(cache_suite());
    int failed;

    srunner_run_all(sr, CK_ENV);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
