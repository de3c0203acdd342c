/*
 * check_st_txn: unit tests of transactions (storage/st_txn.h): one read
 * and one write transaction per process and their isolation, versions
 * (growing, stamped on records, untouched by an abort), the arena that
 * lookups hand records out of (a record outlives a second lookup and the
 * end of the process's other transaction, with compressed and with
 * cached values), writers in several processes at once, and a writer
 * dying inside its transaction.
 */
#include "storage/st_codec.h"
#include "storage/st_err.h"
#include "storage/st_keyspace.h"
#include "storage/st_string.h"
#include "storage/st_txn.h"
#include "t/unit/unit_st.h"

#include <check.h>
#include <errno.h>
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
#define BATCH_ALL 100000 /* an expiry batch bigger than any test */
#define REUSE_ROUNDS 100
#define WRITERS 4
#define WRITES_EACH 300

START_TEST(test_txn_rules)
{
    st_txn *w = unit_st_wbegin(), *w2, *r = unit_st_rbegin(), *r2;

    ck_assert_int_eq(st_txn_begin(unit_st_env, 1, &w2), ST_EBUSY);
    ck_assert_int_eq(st_txn_begin(unit_st_env, 0, &r2), ST_EBUSY);
    ck_assert(st_txn_is_write(w));
    ck_assert(!st_txn_is_write(r));
    ck_assert_int_eq(unit_st_put(w, 0, "a", "1", 0), 0);
    /* The read snapshot does not see the uncommitted write. */
    st_rec rec;
    ck_assert_int_eq(unit_st_lookup(r, 0, "a", NOW, &rec), ST_ENOTFOUND);
    unit_st_commit(&w);
    ck_assert_int_eq(unit_st_lookup(r, 0, "a", NOW, &rec), ST_ENOTFOUND);
    unit_st_commit(&r);
    unit_st_expect(0, "a", "1");
    /* Read transactions are reused: many in a row. */
    for (int i = 0; i < REUSE_ROUNDS; i++)
        unit_st_expect(0, "a", "1");
    for (int i = ST_OK; i >= ST_EBUSY; i--)
        ck_assert_ptr_nonnull(st_strerror(i));
    ck_assert_ptr_nonnull(st_strerror(ENOMEM));
}
END_TEST

START_TEST(test_versions)
{
    st_txn *t = unit_st_wbegin();
    uint64_t v1 = st_txn_version(t), v2, v3, v4;
    st_rec r;

    ck_assert_int_eq(unit_st_put(t, 0, "a", "1", 0), 0);
    ck_assert_int_eq(unit_st_lookup(t, 0, "a", NOW, &r), 0);
    ck_assert_uint_eq(r.version, v1);
    unit_st_commit(&t);

    t = unit_st_rbegin();
    ck_assert_uint_eq(st_txn_version(t), v1); /* the snapshot it sees */
    unit_st_commit(&t);

    t = unit_st_wbegin();
    v2 = st_txn_version(t);
    ck_assert_uint_gt(v2, v1);
    ck_assert_int_eq(unit_st_put(t, 0, "b", "2", 0), 0);
    unit_st_commit(&t);

    /* An aborted transaction leaves no trace. */
    t = unit_st_wbegin();
    ck_assert_int_eq(unit_st_put(t, 0, "a", "lost", 0), 0);
    st_txn_abort(&t);
    ck_assert_ptr_null(t);
    unit_st_expect(0, "a", "1");

    t = unit_st_wbegin();
    v3 = st_txn_version(t);
    ck_assert_uint_gt(v3, v2);
    ck_assert_int_eq(unit_st_put(t, 0, "a", "3", 0), 0);
    unit_st_commit(&t);

    t = unit_st_rbegin();
    ck_assert_int_eq(unit_st_lookup(t, 0, "a", NOW, &r), 0);
    ck_assert_uint_eq(r.version, v3);
    ck_assert_int_eq(unit_st_lookup(t, 0, "b", NOW, &r), 0);
    ck_assert_uint_eq(r.version, v2);
    unit_st_commit(&t);

    /* Every committed write transaction moves the version forward. */
    for (int i = 0; i < 10; i++) {
        t = unit_st_wbegin();
        v4 = st_txn_version(t);
        ck_assert_uint_gt(v4, v3);
        ck_assert_int_eq(unit_st_put(t, 0, "c", "x", 0), 0);
        unit_st_commit(&t);
        v3 = v4;
    }
}
END_TEST

/* ------------------------------------------------------------------ */
/* the arena: records outlive other lookups and transactions */

/*
 * st_keyspace.h: "Records returned borrow LMDB's memory until the transaction
 * ends or writes." A handler that looks up two keys (LCS, MSETNX-style
 * checks, ...) must still see the first record after the second lookup,
 * also when the values were decompressed or copied out of the cache.
 */
static void two_lookups(const uint8_t *a, size_t alen, const uint8_t *b,
                        size_t blen, int rounds)
{
    st_txn *t = unit_st_wbegin();
    st_rec ra, rb;

    ck_assert_int_eq(unit_st_putn(t, 0, "a", 1, a, alen, 0), 0);
    ck_assert_int_eq(unit_st_putn(t, 0, "b", 1, b, blen, 0), 0);
    unit_st_commit(&t);
    for (int round = 0; round < rounds; round++) {
        t = unit_st_rbegin();
        ck_assert_int_eq(unit_st_lookup(t, 0, "a", NOW, &ra), 0);
        ck_assert_int_eq(unit_st_lookup(t, 0, "b", NOW, &rb), 0);
        size_t na, nb;
        const uint8_t *pb = unit_st_bytes(t, &rb, &nb);
        const uint8_t *pa = unit_st_bytes(t, &ra, &na);
        ck_assert_uint_eq(nb, blen);
        ck_assert_int_eq(memcmp(pb, b, blen), 0);
        ck_assert_uint_eq(na, alen);
        ck_assert_msg(pa != pb && memcmp(pa, a, alen) == 0,
                      "round %d (%s): the first record's payload changed "
                      "under the second lookup",
                      round, round ? "cache hits" : "first reads");
        unit_st_commit(&t);
    }
}

START_TEST(test_two_lookups_compressed)
{
    uint8_t *a = unit_st_compressible(4 * KIB, 'a');
    /* b bigger than a: the buffers regrow */
    uint8_t *b = unit_st_compressible(64 * KIB, 'b');

    two_lookups(a, 4 * KIB, b, 64 * KIB, 1);
    free(a);
    free(b);
}
END_TEST

START_TEST(test_two_lookups_cached)
{
    uint8_t *a = unit_st_make_name(100, 1); /* incompressible */
    uint8_t *b = unit_st_make_name(3 * KIB, 2);

    two_lookups(a, 100, b, 3 * KIB, 2);
    free(a);
    free(b);
}
END_TEST

/*
 * A process may hold its read and its write transaction at once (a worker
 * serving a read while a pipelined write commits; st_keyspace_expire_due or
 * st_keyspace_flush running their own write transactions). Ending the write
 * transaction must not take back what the read transaction was handed.
 */
static void read_survives_writes(size_t alen, size_t blen)
{
    uint8_t *a = unit_st_compressible(alen, 'a');
    uint8_t *b = unit_st_compressible(blen, 'b');
    st_txn *r, *w;
    st_rec ra, rb;
    size_t done;
    uint64_t ver;

    w = unit_st_wbegin();
    ck_assert_int_eq(unit_st_putn(w, 0, "a", 1, a, alen, 0), 0);
    ck_assert_int_eq(unit_st_putn(w, 0, "b", 1, b, blen, 0), 0);
    unit_st_commit(&w);
    unit_st_expect_bytes(0, "a", a, alen); /* cached, where there is a cache */
    unit_st_expect_bytes(0, "b", b, blen);

    r = unit_st_rbegin();
    ck_assert_int_eq(unit_st_lookup(r, 0, "a", NOW, &ra), 0);
    w = unit_st_wbegin();
    ck_assert_int_eq(unit_st_put(w, 0, "other", "v", 0), 0);
    unit_st_commit(&w);
    ck_assert_int_eq(st_keyspace_expire_due(unit_st_env, NOW, BATCH_ALL, &done,
                                            &ver),
                     0);
    ck_assert_int_eq(unit_st_lookup(r, 0, "b", NOW, &rb), 0);
    size_t na, nb;
    const uint8_t *pb = unit_st_bytes(r, &rb, &nb);
    const uint8_t *pa = unit_st_bytes(r, &ra, &na);
    ck_assert_uint_eq(nb, blen);
    ck_assert_int_eq(memcmp(pb, b, blen), 0);
    ck_assert_uint_eq(na, alen);
    ck_assert_msg(memcmp(pa, a, alen) == 0,
                  "a record of the open read transaction changed when a "
                  "write transaction of the same process ended");
    unit_st_commit(&r);
    free(a);
    free(b);
}

/* The other way round: a write transaction's record outlives a read
 * transaction of the same process ending. */
START_TEST(test_write_survives_read)
{
    const size_t len = 4 * KIB;
    uint8_t *a = unit_st_compressible(len, 'a');
    uint8_t *b = unit_st_compressible(len, 'b');
    st_txn *r, *w;
    st_rec ra, rb;

    w = unit_st_wbegin();
    ck_assert_int_eq(unit_st_putn(w, 0, "a", 1, a, len, 0), 0);
    ck_assert_int_eq(unit_st_putn(w, 0, "b", 1, b, len, 0), 0);
    unit_st_commit(&w);
    w = unit_st_wbegin();
    ck_assert_int_eq(unit_st_lookup(w, 0, "a", NOW, &ra), 0);
    r = unit_st_rbegin();
    ck_assert_int_eq(unit_st_lookup(r, 0, "b", NOW, &rb), 0);
    unit_st_commit(&r);
    r = unit_st_rbegin();
    ck_assert_int_eq(unit_st_lookup(r, 0, "b", NOW, &rb), 0);
    ck_assert_msg(memcmp(ra.payload, a, len) == 0,
                  "a record of the open write transaction changed when a "
                  "read transaction of the same process ended");
    unit_st_commit(&r);
    st_txn_abort(&w);
    free(a);
    free(b);
}
END_TEST

START_TEST(test_read_survives_write_small)
{
    read_survives_writes(4 * KIB, 4 * KIB);
}
END_TEST

START_TEST(test_read_survives_write_big)
{
    read_survives_writes(256 * KIB, 4 * KIB); /* bigger than a chunk */
}
END_TEST

/* ------------------------------------------------------------------ */
/* processes: concurrent writers, a crash */

START_TEST(test_concurrent_writers)
{
    /* Processes writing at once: every write and every count lands. */
    pid_t pids[WRITERS];

    st_env_close(&unit_st_env); /* no handle crosses fork */
    for (int w = 0; w < WRITERS; w++) {
        pids[w] = fork();
        ck_assert_int_ge(pids[w], 0);
        if (pids[w] == 0) {
            st_env *e = unit_st_child_env();
            char name[NAME_SIZE];
            for (int i = 0; i < WRITES_EACH; i++) {
                st_txn *t;
                st_keyref k;
                snprintf(name, sizeof name, "w%d:%d", w, i);
                st_codec_keyref_init(&k, 0, name, strlen(name));
                if (st_txn_begin(e, 1, &t) ||
                    st_keyspace_string_set(t, &k, "v", 1,
                                           i % 2 ? NOW + SEC : 0) ||
                    st_txn_commit(&t))
                    _exit(UNIT_ST_CHILD_FAILED);
            }
            st_env_close(&e);
            _exit(0);
        }
    }
    for (int w = 0; w < WRITERS; w++)
        unit_st_wait_ok(pids[w]);
    unit_st_env_open();
    unit_st_counts(0, WRITERS * WRITES_EACH, WRITERS * WRITES_EACH / 2);
    unit_st_expect(0, "w3:299", "v");
}
END_TEST

START_TEST(test_writer_dies_in_txn)
{
    /* A process dying inside a write transaction blocks no one after it. */
    pid_t pid;
    st_rec r;
    int dead = -1;

    /*
     * The parent keeps its environment open (it never uses it in the
     * child): were it closed, the next open would find the lock file
     * unused and reset it, hiding what the crash left behind.
     */
    unit_st_put1(0, "before", "v", 0);
    pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        st_env *e = unit_st_child_env();
        st_txn *t;
        st_keyref k;
        st_codec_keyref_init(&k, 0, "ghost", 5);
        if (st_txn_begin(e, 1, &t) || st_keyspace_string_set(t, &k, "v", 1, 0))
            _exit(UNIT_ST_CHILD_FAILED);
        _exit(0); /* dies holding the writer lock */
    }
    unit_st_wait_ok(pid);
    ck_assert_int_eq(st_env_reader_check(unit_st_env, &dead), 0);
    {
        st_txn *t = unit_st_wbegin();
        ck_assert_int_eq(unit_st_lookup(t, 0, "ghost", NOW, &r), ST_ENOTFOUND);
        ck_assert_int_eq(unit_st_put(t, 0, "after", "v", 0), 0);
        unit_st_commit(&t);
    }
    unit_st_expect(0, "before", "v");
    unit_st_expect(0, "after", "v");
    unit_st_counts(0, 2, 0);
}
END_TEST

static Suite *txn_suite(void)
{
    Suite *s = suite_create("st_txn");
    TCase *tc;

    tc = tcase_create("core");
    unit_st_fixture(tc, UNIT_ST_PLAIN);
    tcase_set_timeout(tc, TIMEOUT_S);
    tcase_add_test(tc, test_txn_rules);
    tcase_add_test(tc, test_versions);
    suite_add_tcase(s, tc);

    tc = tcase_create("arena_compress");
    unit_st_fixture(tc, UNIT_ST_COMPRESS);
    tcase_set_timeout(tc, TIMEOUT_S);
    tcase_add_test(tc, test_two_lookups_compressed);
    tcase_add_test(tc, test_read_survives_write_small);
    tcase_add_test(tc, test_read_survives_write_big);
    tcase_add_test(tc, test_write_survives_read);
    suite_add_tcase(s, tc);

    tc = tcase_create("arena_cache");
    unit_st_fixture(tc, UNIT_ST_CACHE);
    tcase_set_timeout(tc, TIMEOUT_S);
    tcase_add_test(tc, test_two_lookups_cached);
    tcase_add_test(tc, test_read_survives_write_small);
    tcase_add_test(tc, test_read_survives_write_big);
    tcase_add_test(tc, test_write_survives_read);
    suite_add_tcase(s, tc);

    tc = tcase_create("processes");
    unit_st_fixture(tc, UNIT_ST_PLAIN);
    tcase_set_timeout(tc, TIMEOUT_S);
    tcase_add_test(tc, test_concurrent_writers);
    tcase_add_test(tc, test_writer_dies_in_txn);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(txn_suite());
    int failed;

    srunner_run_all(sr, CK_ENV);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
