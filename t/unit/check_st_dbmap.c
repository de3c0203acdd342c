/*
 * check_st_dbmap: unit tests of the database map (storage/st_dbmap.h):
 * SWAPDB exchanges what two numbers hold (values, TTLs, collections,
 * DBSIZE, SCAN, RANDOMKEY, FLUSHDB and expiry follow), twice restores
 * the identity (swap counts kept), later calls of the same transaction see
 * it at once, an abort forgets it, a reader's snapshot keeps the map it
 * began with, another process sees the swap whole at its commit, the
 * shared cache never serves one number's value for the other, the hidden
 * numbers and the staging record, the inverse map, reopening with fewer
 * databases, and a hot backup carrying the map.
 */
#include "storage/st_coll.h"
#include "storage/st_dbmap.h"
#include "storage/st_err.h"
#include "storage/st_hash.h"
#include "storage/st_keyspace.h"
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
#define NKEYS 300

static void swap1(unsigned a, unsigned b)
{
    st_txn *t = unit_st_wbegin();

    ck_assert_int_eq(st_dbmap_swap(t, a, b), 0);
    unit_st_commit(&t);
}

START_TEST(test_swap_values_and_counts)
{
    unit_st_put1(0, "a", "zero", 0);
    unit_st_put1(0, "b", "zero-b", NOW + 100 * SEC);
    unit_st_put1(1, "a", "one", 0);
    swap1(0, 1);
    unit_st_expect(0, "a", "one");
    unit_st_expect(0, "b", NULL);
    unit_st_expect(1, "a", "zero");
    unit_st_expect(1, "b", "zero-b");
    ck_assert(unit_st_ttl_of(1, "b") == NOW + 100 * SEC);
    unit_st_counts(0, 1, 0);
    unit_st_counts(1, 2, 1);
    /* Writes after the swap land where the number now points. */
    unit_st_put1(0, "c", "new", 0);
    swap1(0, 1);
    unit_st_expect(0, "a", "zero");
    unit_st_expect(1, "c", "new");
    unit_st_counts(1, 2, 0);
    /* Back to the identity; the swap counts remember (for WATCH). */
    swap1(0, 1);
    swap1(0, 1);
    st_txn *t = unit_st_rbegin();
    unsigned s;
    uint32_t swaps;
    ck_assert_int_eq(st_dbmap_resolve(t, 0, &s), 0);
    ck_assert_uint_eq(s, 0);
    ck_assert_int_eq(st_dbmap_resolve(t, 5, &s), 0);
    ck_assert_uint_eq(s, 5);
    ck_assert_int_eq(st_dbmap_swaps(t, 0, &swaps), 0);
    ck_assert_uint_eq(swaps, 4);
    ck_assert_int_eq(st_dbmap_swaps(t, 1, &swaps), 0);
    ck_assert_uint_eq(swaps, 4);
    ck_assert_int_eq(st_dbmap_swaps(t, 5, &swaps), 0);
    ck_assert_uint_eq(swaps, 0);
    unit_st_commit(&t);
    /* Three-way: 0<->2 then 0<->1: 0 has 1's, 1 has 2's, 2 has 0's. */
    unit_st_put1(2, "a", "two", 0);
    swap1(0, 2);
    swap1(0, 1);
    unit_st_expect(0, "a", "one");
    unit_st_expect(1, "a", "two");
    unit_st_expect(2, "a", "zero");
    /* The inverse names each stored database by its number now. */
    t = unit_st_rbegin();
    for (unsigned db = 0; db < 6; db++) {
        unsigned n;
        ck_assert_int_eq(st_dbmap_resolve(t, db, &s), 0);
        ck_assert_int_eq(st_dbmap_number(t, s, &n), 0);
        ck_assert_uint_eq(n, db);
    }
    ck_assert_int_eq(st_dbmap_number(t, 0, &s), 0);
    ck_assert_uint_eq(s, 2); /* 2 holds what 0 held */
    unit_st_commit(&t);
}
END_TEST

START_TEST(test_swap_collections_scan_random_flush)
{
    st_txn *t = unit_st_wbegin();
    st_keyref k;
    st_obj o;

    for (int i = 0; i < NKEYS; i++) {
        char n[16];
        snprintf(n, sizeof n, "k%d", i);
        ck_assert_int_eq(unit_st_put(t, 3, n, "v", 0), 0);
    }
    st_codec_keyref_init(&k, 3, "h", 1);
    ck_assert_int_eq(st_coll_open(t, &k, ST_TYPE_HASH, NOW, &o), ST_ENOTFOUND);
    ck_assert_int_eq(st_coll_create(t, &o), 0);
    int created;
    ck_assert_int_eq(st_hash_set(t, &o, "f", 1, "x", 1, 0, &created), 0);
    ck_assert_int_eq(st_coll_save(t, &o, NOW), 0);
    unit_st_commit(&t);
    swap1(3, 7);
    unit_st_counts(7, NKEYS + 1, 0);
    unit_st_counts(3, 0, 0);
    unit_st_names c = { 0 };
    unit_st_scan_all(7, 10, NOW, &c);
    ck_assert_uint_eq(c.n, NKEYS + 1);
    unit_st_names_free(&c);
    unit_st_scan_all(3, 10, NOW, &c);
    ck_assert_uint_eq(c.n, 0);
    unit_st_names_free(&c);
    t = unit_st_rbegin();
    ck_assert_int_eq(st_keyspace_random_key(t, 7, 12345, NOW, unit_st_collect,
                                            &c),
                     0);
    ck_assert_int_eq(st_keyspace_random_key(t, 3, 12345, NOW, unit_st_collect,
                                            &c),
                     ST_ENOTFOUND);
    st_codec_keyref_init(&k, 7, "h", 1);
    ck_assert_int_eq(st_coll_open(t, &k, ST_TYPE_HASH, NOW, &o), 0);
    const uint8_t *v;
    size_t vn;
    ck_assert_int_eq(st_hash_get(t, &o, "f", 1, &v, &vn), 0);
    ck_assert_uint_eq(vn, 1);
    unit_st_commit(&t);
    unit_st_names_free(&c);
    /* FLUSHDB of the number empties what it names, not the other. */
    unit_st_put1(3, "other", "x", 0);
    uint64_t ver;
    ck_assert_int_eq(st_keyspace_flush(unit_st_env, 7, &ver), 0);
    unit_st_counts(7, 0, 0);
    unit_st_expect(3, "other", "x");
}
END_TEST

START_TEST(test_swap_in_txn_abort_and_snapshot)
{
    unit_st_put1(0, "a", "zero", 0);
    unit_st_put1(1, "a", "one", 0);
    /* The same transaction sees the swap at once, key refs rebind. */
    st_txn *t = unit_st_wbegin();
    st_keyref k;
    st_rec r;
    st_codec_keyref_init(&k, 0, "a", 1);
    ck_assert_int_eq(st_keyspace_lookup(t, &k, NOW, &r), 0);
    ck_assert_int_eq(memcmp(r.payload, "zero", 4), 0);
    ck_assert_int_eq(st_dbmap_swap(t, 0, 1), 0);
    ck_assert_int_eq(st_keyspace_lookup(t, &k, NOW, &r), 0);
    ck_assert_uint_eq(r.payload_len, 3);
    ck_assert_int_eq(memcmp(r.payload, "one", 3), 0);
    st_txn_abort(&t);
    unit_st_expect(0, "a", "zero");
    /* A read snapshot keeps the map it began with. */
    st_txn *rt = unit_st_rbegin();
    pid_t pid = fork();
    if (pid == 0) {
        st_env *e = unit_st_child_env();
        st_txn *w;
        if (st_txn_begin(e, 1, &w) || st_dbmap_swap(w, 0, 1) ||
            st_txn_commit(&w))
            _exit(UNIT_ST_CHILD_FAILED);
        st_env_close(&e);
        _exit(0);
    }
    unit_st_wait_ok(pid);
    st_codec_keyref_init(&k, 0, "a", 1);
    ck_assert_int_eq(st_keyspace_lookup(rt, &k, NOW, &r), 0);
    ck_assert_int_eq(memcmp(r.payload, "zero", 4), 0);
    unit_st_commit(&rt);
    /* A new snapshot sees the other process's swap. */
    unit_st_expect(0, "a", "one");
    unit_st_expect(1, "a", "zero");
}
END_TEST

START_TEST(test_cache_follows_swap)
{
    /* Fill the cache with db 0's value, swap, read again: the cache is
     * keyed by stored database, so db 0 now gets db 1's value. */
    unit_st_put1(0, "k", "zero", 0);
    unit_st_put1(1, "k", "one", 0);
    unit_st_expect(0, "k", "zero");
    unit_st_expect(0, "k", "zero"); /* a hit */
    unit_st_expect(1, "k", "one");
    unit_st_expect(1, "k", "one");
    swap1(0, 1);
    for (int i = 0; i < 3; i++) {
        unit_st_expect(0, "k", "one");
        unit_st_expect(1, "k", "zero");
    }
    /* A write through the new number invalidates the stored key. */
    unit_st_put1(0, "k", "after", 0);
    unit_st_expect(0, "k", "after");
    unit_st_expect(1, "k", "zero");
    swap1(0, 1);
    unit_st_expect(1, "k", "after");
    unit_st_expect(0, "k", "zero");
}
END_TEST

START_TEST(test_hidden_and_stage)
{
    st_txn *t = unit_st_wbegin();
    unsigned n, s;

    /* Hidden numbers resolve; past the space they do not. */
    ck_assert_int_eq(st_dbmap_resolve(t, UNIT_ST_DATABASES, &s), 0);
    ck_assert_int_eq(st_dbmap_resolve(t, 2 * UNIT_ST_DATABASES - 1, &s), 0);
    ck_assert_int_eq(st_dbmap_resolve(t, 2 * UNIT_ST_DATABASES, &s),
                     ST_ESCHEMA);
    ck_assert_int_eq(st_dbmap_stage_get(t, &n), 0);
    ck_assert_uint_eq(n, 0);
    ck_assert_int_eq(st_dbmap_stage_set(t, 5), 0);
    ck_assert_int_eq(st_dbmap_stage_get(t, &n), 0);
    ck_assert_uint_eq(n, 5);
    ck_assert_int_eq(unit_st_put(t, UNIT_ST_DATABASES + 2, "x", "staged", 0),
                     0);
    ck_assert_int_eq(st_dbmap_swap(t, 2, UNIT_ST_DATABASES + 2), 0);
    ck_assert_int_eq(st_dbmap_stage_set(t, 0), 0);
    unit_st_commit(&t);
    unit_st_expect(2, "x", "staged");
    t = unit_st_rbegin();
    ck_assert_int_eq(st_dbmap_stage_get(t, &n), 0);
    ck_assert_uint_eq(n, 0);
    unit_st_commit(&t);
}
END_TEST

START_TEST(test_reopen_keeps_map)
{
    unit_st_put1(0, "a", "zero", 0);
    unit_st_put1(UNIT_ST_DATABASES + 1, "a", "hidden", 0);
    swap1(0, UNIT_ST_DATABASES + 1);
    /* Fewer databases: the map still names stored database 17. */
    ck_assert_int_eq(unit_st_env_reopen(4, UNIT_ST_MAP_SIZE), 0);
    unit_st_expect(0, "a", "hidden");
    unit_st_put1(0, "b", "more", 0);
    unit_st_counts(0, 2, 0);
    ck_assert_int_eq(unit_st_env_reopen(UNIT_ST_DATABASES, UNIT_ST_MAP_SIZE),
                     0);
    unit_st_expect(0, "b", "more");
    unit_st_expect(UNIT_ST_DATABASES + 1, "a", "zero");
}
END_TEST

START_TEST(test_backup_keeps_map)
{
    /* A hot backup (LMDB's compacting copy) carries the map along. */
    char file[UNIT_ST_DIR_SIZE + 32], bdir[UNIT_ST_DIR_SIZE + 32],
        data[UNIT_ST_DIR_SIZE + 48];
    st_env_opts o = { .map_size = UNIT_ST_MAP_SIZE,
                      .databases = UNIT_ST_DATABASES,
                      .nosync = 1 };
    st_env *saved = unit_st_env;

    unit_st_put1(0, "k", "zero", 0);
    unit_st_put1(6, "k", "six", 0);
    swap1(0, 6);
    snprintf(file, sizeof file, "%s/backup.mdb", unit_st_root);
    ck_assert_int_eq(st_env_backup(unit_st_env, file), 0);
    snprintf(bdir, sizeof bdir, "%s/restore.XXXXXX", unit_st_root);
    ck_assert_ptr_nonnull(mkdtemp(bdir));
    snprintf(data, sizeof data, "%s/data.mdb", bdir);
    ck_assert_int_eq(rename(file, data), 0);
    o.dir = bdir;
    ck_assert_int_eq(st_env_open(&o, &unit_st_env), 0);
    unit_st_expect(0, "k", "six");
    unit_st_expect(6, "k", "zero");
    st_env_close(&unit_st_env);
    unit_st_env = saved;
}
END_TEST

static Suite *dbmap_suite(void)
{
    Suite *s = suite_create("st_dbmap");
    TCase *tc = tcase_create("core");

    unit_st_fixture(tc, UNIT_ST_PLAIN);
    tcase_set_timeout(tc, TIMEOUT_S);
    tcase_add_test(tc, test_swap_values_and_counts);
    tcase_add_test(tc, test_swap_collections_scan_random_flush);
    tcase_add_test(tc, test_swap_in_txn_abort_and_snapshot);
    tcase_add_test(tc, test_hidden_and_stage);
    tcase_add_test(tc, test_reopen_keeps_map);
    tcase_add_test(tc, test_backup_keeps_map);
    suite_add_tcase(s, tc);
    tc = tcase_create("cache");
    unit_st_fixture(tc, UNIT_ST_CACHE);
    tcase_set_timeout(tc, TIMEOUT_S);
    tcase_add_test(tc, test_cache_follows_swap);
    tcase_add_test(tc, test_swap_values_and_counts);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(dbmap_suite());
    int failed;

    srunner_run_all(sr, CK_ENV);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
