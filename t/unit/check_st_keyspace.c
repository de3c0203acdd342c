/*
 * check_st_keyspace: unit tests of the keyspace (storage/st_keyspace.h),
 * core operations: string round trips (binary, empty, reserved, 4 MiB
 * values; also with writemap), delete, rename and copy (TTL carried,
 * NX / REPLACE, across databases), the per-db counters and their
 * rollback, lazy and active expiry (oldest first, in bounded batches),
 * SCAN completeness and stability under concurrent writes, RANDOMKEY,
 * and FLUSHDB / FLUSHALL in chunks.
 *
 * Long names: check_st_keyspace_names; compression and the shared cache:
 * check_st_keyspace_cache; a random-operation model check:
 * check_st_keyspace_model.
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

#define NOW UNIT_ST_NOW
#define SEC UNIT_ST_SEC
#define TIMEOUT_S 30
#define SCAN_KEYS 10000
#define SCAN_COUNT 10
#define STABLE_KEYS 2000
#define NAME_SIZE 64
#define MIB (1024 * 1024)
#define TOP_BIT 0x8000000000000000ull
#define RANDOM_DRAWS 1000
#define MANY_DUE 20
#define FAR_FUTURE (NOW + 1000000 * SEC)
#define BATCH_ALL 100000 /* an expiry batch bigger than any test */
#define CURSOR_KEYS 500
#define CURSOR_COUNT 7
#define ONE_KEY_DRAWS 50
#define MANY_KEYS 100
#define MIN_DISTINCT 80 /* of MANY_KEYS, over RANDOM_DRAWS */

/* ------------------------------------------------------------------ */
/* strings */

START_TEST(test_string_round_trip)
{
    static const char binary[] = "a\0b\r\n\xff\x00z";
    st_txn *t = unit_st_wbegin();
    st_rec r;
    uint8_t *dst;
    st_keyref k;

    ck_assert_int_eq(unit_st_put(t, 0, "plain", "hello", 0), 0);
    ck_assert_int_eq(unit_st_putn(t, 0, "bin", 3, binary, sizeof binary, 0), 0);
    ck_assert_int_eq(unit_st_putn(t, 0, "empty", 5, "", 0, 0), 0);
    ck_assert_int_eq(unit_st_putn(t, 0, "a\0b", 3, "nul in name", 11, 0), 0);
    st_codec_keyref_init(&k, 0, "reserved", 8);
    ck_assert_int_eq(st_keyspace_string_reserve(t, &k, 4, 0, &dst), 0);
    memcpy(dst, "wxyz", 4);
    /* Visible inside the writing transaction. */
    ck_assert_int_eq(unit_st_lookup(t, 0, "plain", NOW, &r), 0);
    ck_assert_uint_eq(r.payload_len, 5);
    unit_st_commit(&t);

    t = unit_st_rbegin();
    ck_assert_int_eq(unit_st_lookup(t, 0, "plain", NOW, &r), 0);
    ck_assert_int_eq(r.type, ST_TYPE_STRING);
    ck_assert_int_eq(r.expire_at, 0);
    ck_assert_uint_eq(r.flags & ST_REC_LONGNAME, 0);
    ck_assert_mem_eq(r.payload, "hello", 5);
    ck_assert_int_eq(unit_st_lookup(t, 0, "bin", NOW, &r), 0);
    ck_assert_uint_eq(r.payload_len, sizeof binary);
    ck_assert_mem_eq(r.payload, binary, sizeof binary);
    ck_assert_int_eq(unit_st_lookup(t, 0, "empty", NOW, &r), 0);
    ck_assert_uint_eq(r.payload_len, 0);
    ck_assert_int_eq(unit_st_lookupn(t, 0, "a\0b", 3, NOW, &r), 0);
    ck_assert_mem_eq(r.payload, "nul in name", 11);
    ck_assert_int_eq(unit_st_lookupn(t, 0, "a", 1, NOW, &r), ST_ENOTFOUND);
    ck_assert_int_eq(unit_st_lookup(t, 0, "reserved", NOW, &r), 0);
    ck_assert_mem_eq(r.payload, "wxyz", 4);
    ck_assert_int_eq(unit_st_lookup(t, 0, "absent", NOW, &r), ST_ENOTFOUND);
    /* Databases are separate keyspaces. */
    ck_assert_int_eq(unit_st_lookup(t, 1, "plain", NOW, &r), ST_ENOTFOUND);
    unit_st_commit(&t);

    /* Overwrite, shorter and longer. */
    unit_st_put1(0, "plain", "hi", 0);
    unit_st_expect(0, "plain", "hi");
    unit_st_put1(0, "plain", "a much longer value than before", 0);
    unit_st_expect(0, "plain", "a much longer value than before");
    unit_st_counts(0, 5, 0);
}
END_TEST

START_TEST(test_string_big_value)
{
    size_t n = 4 * MIB;
    uint8_t *v = unit_st_make_name(n, 7);
    st_txn *t = unit_st_wbegin();
    st_rec r;

    ck_assert_int_eq(unit_st_putn(t, 0, "big", 3, v, n, 0), 0);
    unit_st_commit(&t);
    t = unit_st_rbegin();
    ck_assert_int_eq(unit_st_lookup(t, 0, "big", NOW, &r), 0);
    size_t got;
    const uint8_t *p = unit_st_bytes(t, &r, &got);
    ck_assert_uint_eq(got, n);
    ck_assert_int_eq(memcmp(p, v, n), 0);
    unit_st_commit(&t);
    free(v);
}
END_TEST

/* ------------------------------------------------------------------ */
/* expiry */

START_TEST(test_lazy_expiry)
{
    st_txn *t;
    st_rec r;
    size_t done;

    unit_st_put1(0, "soon", "v", NOW + SEC);
    unit_st_put1(0, "never", "v", 0);
    unit_st_counts(0, 2, 1);
    ck_assert_int_eq(unit_st_ttl_of(0, "soon"), NOW + SEC);
    unit_st_expect_at(0, "soon", "v", NOW + SEC - 1);
    /* Due exactly at expire-at. */
    unit_st_expect_at(0, "soon", NULL, NOW + SEC);
    /* A read transaction only reports it; the key is still stored. */
    unit_st_counts(0, 2, 1);
    unit_st_expect_at(0, "soon", "v", NOW);

    /* A write transaction deletes it on the spot. */
    t = unit_st_wbegin();
    ck_assert_int_eq(unit_st_lookup(t, 0, "soon", NOW + SEC, &r), ST_ENOTFOUND);
    unit_st_commit(&t);
    unit_st_counts(0, 1, 0);
    unit_st_expect_at(0, "soon", NULL, NOW);

    /* Keys a reader saw expired are reaped on request. */
    unit_st_put1(0, "soon2", "v", NOW + SEC);
    unit_st_expect_at(0, "soon2", NULL, NOW + 2 * SEC);
    ck_assert_int_eq(st_keyspace_reap_seen(unit_st_env, NOW + 2 * SEC, &done),
                     0);
    ck_assert_uint_eq(done, 1);
    unit_st_counts(0, 1, 0);
    ck_assert_int_eq(st_keyspace_reap_seen(unit_st_env, NOW + 2 * SEC, &done),
                     0);
    ck_assert_uint_eq(done, 0);
}
END_TEST

START_TEST(test_reap_seen_rechecks)
{
    /* A key seen expired but rewritten since is not reaped. */
    size_t done;

    unit_st_put1(0, "k", "old", NOW + SEC);
    unit_st_expect_at(0, "k", NULL, NOW + 2 * SEC);
    unit_st_put1(0, "k", "new", 0);
    ck_assert_int_eq(st_keyspace_reap_seen(unit_st_env, NOW + 2 * SEC, &done),
                     0);
    ck_assert_uint_eq(done, 0);
    unit_st_expect(0, "k", "new");
    unit_st_counts(0, 1, 0);
}
END_TEST

START_TEST(test_overwrite_changes_ttl)
{
    size_t done;
    uint64_t ver;

    unit_st_put1(0, "k", "v1", NOW + SEC);
    unit_st_put1(0, "k", "v2", 0); /* SET drops the TTL */
    unit_st_counts(0, 1, 0);
    done = unit_st_expire_due(FAR_FUTURE, BATCH_ALL, &ver);
    ck_assert_uint_eq(done, 0);
    unit_st_expect(0, "k", "v2");
    unit_st_put1(0, "k", "v3", NOW + 5 * SEC);
    unit_st_put1(0, "k", "v4", NOW + 9 * SEC); /* and a new TTL replaces it */
    unit_st_counts(0, 1, 1);
    done = unit_st_expire_due(NOW + 6 * SEC, BATCH_ALL, &ver);
    ck_assert_uint_eq(done, 0);
    unit_st_expect(0, "k", "v4");
    done = unit_st_expire_due(NOW + 9 * SEC, BATCH_ALL, &ver);
    ck_assert_uint_eq(done, 1);
    unit_st_counts(0, 0, 0);
}
END_TEST

START_TEST(test_delete)
{
    st_txn *t;
    st_keyref k;

    unit_st_put1(0, "a", "1", 0);
    unit_st_put1(0, "b", "2", NOW + SEC);
    unit_st_put1(3, "a", "3", 0);
    unit_st_counts(0, 2, 1);
    t = unit_st_wbegin();
    st_codec_keyref_init(&k, 0, "a", 1);
    ck_assert_int_eq(st_keyspace_delete(t, &k, NOW), 0);
    ck_assert_int_eq(st_keyspace_delete(t, &k, NOW), ST_ENOTFOUND);
    st_codec_keyref_init(&k, 0, "b", 1);
    ck_assert_int_eq(st_keyspace_delete(t, &k, NOW), 0);
    st_codec_keyref_init(&k, 0, "zzz", 3);
    ck_assert_int_eq(st_keyspace_delete(t, &k, NOW), ST_ENOTFOUND);
    unit_st_commit(&t);
    unit_st_expect(0, "a", NULL);
    unit_st_expect(0, "b", NULL);
    unit_st_expect(3, "a", "3");
    unit_st_counts(0, 0, 0);
    unit_st_counts(3, 1, 0);

    /* Deleting an expired key finds nothing, and still cleans up. */
    unit_st_put1(0, "e", "v", NOW + SEC);
    t = unit_st_wbegin();
    st_codec_keyref_init(&k, 0, "e", 1);
    ck_assert_int_eq(st_keyspace_delete(t, &k, NOW + SEC), ST_ENOTFOUND);
    unit_st_commit(&t);
    unit_st_counts(0, 0, 0);
}
END_TEST

START_TEST(test_expire_set)
{
    st_txn *t;
    st_keyref k;
    size_t done;
    uint64_t ver;

    unit_st_put1(0, "k", "value", 0);
    t = unit_st_wbegin();
    st_codec_keyref_init(&k, 0, "k", 1);
    ck_assert_int_eq(st_keyspace_expire_set(t, &k, NOW, NOW + 10 * SEC), 0);
    unit_st_commit(&t);
    ck_assert_int_eq(unit_st_ttl_of(0, "k"), NOW + 10 * SEC);
    unit_st_counts(0, 1, 1);
    unit_st_expect(0, "k", "value");

    /* Change it, then persist it (0). */
    t = unit_st_wbegin();
    ck_assert_int_eq(st_keyspace_expire_set(t, &k, NOW, NOW + 20 * SEC), 0);
    unit_st_commit(&t);
    ck_assert_int_eq(unit_st_ttl_of(0, "k"), NOW + 20 * SEC);
    unit_st_counts(0, 1, 1);
    t = unit_st_wbegin();
    ck_assert_int_eq(st_keyspace_expire_set(t, &k, NOW, 0), 0);
    unit_st_commit(&t);
    ck_assert_int_eq(unit_st_ttl_of(0, "k"), 0);
    unit_st_counts(0, 1, 0);
    unit_st_expect(0, "k", "value");
    /* The persisted key is no longer due anywhere. */
    done = unit_st_expire_due(FAR_FUTURE, BATCH_ALL, &ver);
    ck_assert_uint_eq(done, 0);
    unit_st_expect(0, "k", "value");

    /* Persisting a key without TTL, or touching an absent one. */
    t = unit_st_wbegin();
    ck_assert_int_eq(st_keyspace_expire_set(t, &k, NOW, 0), 0);
    st_codec_keyref_init(&k, 0, "nope", 4);
    ck_assert_int_eq(st_keyspace_expire_set(t, &k, NOW, NOW + SEC),
                     ST_ENOTFOUND);
    unit_st_commit(&t);
    unit_st_counts(0, 1, 0);
}
END_TEST

START_TEST(test_expire_due)
{
    static const struct {
        const char *name;
        int64_t at;
    } keys[] = {
        { "c", NOW + 30 }, { "a", NOW + 10 }, { "e", NOW + 50 },
        { "b", NOW + 20 }, { "d", NOW + 40 }, { "later", NOW + 10 * SEC },
        { "never", 0 },
    };
    size_t done;
    uint64_t ver, last = 0;
    st_txn *t = unit_st_wbegin();

    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        ck_assert_int_eq(unit_st_put(t, (unsigned)i % 3, keys[i].name, "v",
                                     keys[i].at),
                         0);
    unit_st_commit(&t);

    /* Nothing due yet. */
    done = unit_st_expire_due(NOW, BATCH_ALL, &ver);
    ck_assert_uint_eq(done, 0);

    /* Oldest first, at most `max`. */
    done = unit_st_expire_due(NOW + SEC, 2, &ver);
    ck_assert_uint_eq(done, 2);
    ck_assert_uint_gt(ver, last);
    last = ver;
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        unsigned db = (unsigned)i % 3;
        int gone = keys[i].at == NOW + 10 || keys[i].at == NOW + 20;
        unit_st_expect_at(db, keys[i].name, gone ? NULL : "v", NOW);
    }
    done = unit_st_expire_due(NOW + SEC, 1, &ver);
    ck_assert_uint_eq(done, 1);
    ck_assert_uint_gt(ver, last);
    unit_st_expect_at(0, "c", NULL, NOW); /* NOW + 30 */
    unit_st_expect_at(1, "d", "v", NOW);

    /* Only due keys, however large max is. */
    done = unit_st_expire_due(NOW + 45, BATCH_ALL, &ver);
    ck_assert_uint_eq(done, 1);
    unit_st_expect_at(1, "d", NULL, NOW);
    unit_st_expect_at(2, "e", "v", NOW);
    done = unit_st_expire_due(NOW + SEC, BATCH_ALL, &ver);
    ck_assert_uint_eq(done, 1);
    unit_st_expect_at(2, "later", "v", NOW);
    unit_st_expect_at(0, "never", "v", NOW);
    unit_st_counts(0, 1, 0);
    unit_st_counts(1, 0, 0);
    unit_st_counts(2, 1, 1);
}
END_TEST

START_TEST(test_expire_due_many)
{
    /* More due keys than one batch: repeated calls get them all. */
    char name[NAME_SIZE];
    size_t done, total = 0;
    uint64_t ver;
    st_txn *t = unit_st_wbegin();

    for (int i = 0; i < MANY_DUE; i++) {
        snprintf(name, sizeof name, "k%d", i);
        ck_assert_int_eq(unit_st_put(t, 0, name, "v", NOW + i), 0);
    }
    unit_st_commit(&t);
    for (int round = 0; round < MANY_DUE; round++) {
        done = unit_st_expire_due(NOW + MANY_DUE, 3, &ver);
        ck_assert_uint_le(done, 3);
        total += done;
        /* Oldest first: the survivors are the youngest. */
        for (int i = 0; i < MANY_DUE; i++) {
            snprintf(name, sizeof name, "k%d", i);
            unit_st_expect_at(0, name, (size_t)i < total ? NULL : "v", NOW);
        }
        if (done == 0)
            break;
    }
    ck_assert_uint_eq(total, MANY_DUE);
    unit_st_counts(0, 0, 0);
}
END_TEST

START_TEST(test_expire_due_chunk_bound)
{
    /*
     * st_keyspace.h: ST_CHUNK_KEYS is the "largest number of keys one
     * st_keyspace_flush chunk or expiry batch deletes" (DESIGN: no write
     * transaction grows without bound), whatever max the caller passes.
     */
    const int due = ST_CHUNK_KEYS + ST_CHUNK_KEYS / 10;
    char name[NAME_SIZE];
    size_t done, total = 0;
    st_txn *t = unit_st_wbegin();

    for (int i = 0; i < due; i++) {
        snprintf(name, sizeof name, "d%d", i);
        ck_assert_int_eq(unit_st_put(t, 0, name, "v", NOW + i % SEC), 0);
    }
    unit_st_commit(&t);
    done = unit_st_expire_due(NOW + SEC, BATCH_ALL, NULL);
    ck_assert_msg(done <= ST_CHUNK_KEYS, "one batch deleted %zu keys (> %d)",
                  done, ST_CHUNK_KEYS);
    total += done;
    while ((done = unit_st_expire_due(NOW + SEC, BATCH_ALL, NULL)) > 0)
        total += done;
    ck_assert_uint_eq(total, (size_t)due);
    unit_st_counts(0, 0, 0);
}
END_TEST

/* ------------------------------------------------------------------ */
/* rename / copy */

START_TEST(test_rename)
{
    size_t done;
    uint64_t ver;

    unit_st_put1(0, "src", "value", NOW + 10 * SEC);
    ck_assert_int_eq(unit_st_rename(0, "src", "dst", 0), 0);
    unit_st_expect(0, "src", NULL);
    unit_st_expect(0, "dst", "value");
    ck_assert_int_eq(unit_st_ttl_of(0, "dst"),
                     NOW + 10 * SEC); /* TTL carried */
    unit_st_counts(0, 1, 1);

    /* Absent source. */
    ck_assert_int_eq(unit_st_rename(0, "src", "x", 0), ST_ENOTFOUND);
    ck_assert_int_eq(unit_st_rename(0, "src", "x", 1), ST_ENOTFOUND);

    /* Same key: no-op (RENAMENX answers 0). */
    ck_assert_int_eq(unit_st_rename(0, "dst", "dst", 0), 0);
    ck_assert_int_eq(unit_st_rename(0, "dst", "dst", 1), ST_EEXISTS);
    unit_st_expect(0, "dst", "value");
    unit_st_counts(0, 1, 1);

    /* NX onto an existing key changes nothing. */
    unit_st_put1(0, "other", "o", 0);
    ck_assert_int_eq(unit_st_rename(0, "dst", "other", 1), ST_EEXISTS);
    unit_st_expect(0, "dst", "value");
    unit_st_expect(0, "other", "o");
    unit_st_counts(0, 2, 1);

    /* Without NX the destination is replaced, TTL included. */
    ck_assert_int_eq(unit_st_rename(0, "other", "dst", 0), 0);
    unit_st_expect(0, "other", NULL);
    unit_st_expect(0, "dst", "o");
    ck_assert_int_eq(unit_st_ttl_of(0, "dst"), 0);
    unit_st_counts(0, 1, 0);
    /* No stale expiry entry can delete the new dst. */
    done = unit_st_expire_due(FAR_FUTURE, BATCH_ALL, &ver);
    ck_assert_uint_eq(done, 0);
    unit_st_expect(0, "dst", "o");

    /* The TTL moves with the key to its new name in the expiry index. */
    unit_st_put1(0, "t1", "v", NOW + SEC);
    ck_assert_int_eq(unit_st_rename(0, "t1", "t2", 0), 0);
    done = unit_st_expire_due(NOW + SEC, BATCH_ALL, &ver);
    ck_assert_uint_eq(done, 1);
    unit_st_expect(0, "t2", NULL);
    unit_st_counts(0, 1, 0);

    /* Across databases (MOVE is RENAMENX to another db). */
    unit_st_put1(0, "mv", "m", NOW + 2 * SEC);
    {
        st_txn *t = unit_st_wbegin();
        st_keyref s, d;
        st_codec_keyref_init(&s, 0, "mv", 2);
        st_codec_keyref_init(&d, 7, "mv", 2);
        ck_assert_int_eq(st_keyspace_rename(t, &s, &d, NOW, 1), 0);
        unit_st_commit(&t);
    }
    unit_st_expect(0, "mv", NULL);
    unit_st_expect(7, "mv", "m");
    unit_st_counts(0, 1, 0);
    unit_st_counts(7, 1, 1);
    done = unit_st_expire_due(NOW + 2 * SEC, BATCH_ALL, &ver);
    ck_assert_uint_eq(done, 1);
    unit_st_counts(7, 0, 0);

    /* An expired source is absent. */
    unit_st_put1(0, "old", "v", NOW - 1);
    ck_assert_int_eq(unit_st_rename(0, "old", "new", 0), ST_ENOTFOUND);
    unit_st_expect(0, "new", NULL);
}
END_TEST

START_TEST(test_copy)
{
    unit_st_put1(0, "src", "value", NOW + 10 * SEC);
    ck_assert_int_eq(unit_st_copy(0, "src", 0, "dst", 0), 0);
    unit_st_expect(0, "src", "value");
    unit_st_expect(0, "dst", "value");
    ck_assert_int_eq(unit_st_ttl_of(0, "dst"), NOW + 10 * SEC);
    unit_st_counts(0, 2, 2);

    /* Without REPLACE an existing destination stays. */
    unit_st_put1(0, "taken", "t", 0);
    ck_assert_int_eq(unit_st_copy(0, "src", 0, "taken", 0), ST_EEXISTS);
    unit_st_expect(0, "taken", "t");
    /* With REPLACE it is overwritten, TTL included. */
    ck_assert_int_eq(unit_st_copy(0, "src", 0, "taken", 1), 0);
    unit_st_expect(0, "taken", "value");
    ck_assert_int_eq(unit_st_ttl_of(0, "taken"), NOW + 10 * SEC);
    unit_st_counts(0, 3, 3);

    /* To another database. */
    ck_assert_int_eq(unit_st_copy(0, "src", 5, "src", 0), 0);
    unit_st_expect(5, "src", "value");
    unit_st_counts(5, 1, 1);
    unit_st_counts(0, 3, 3);
    unit_st_put1(5, "p", "five", 0);
    ck_assert_int_eq(unit_st_copy(5, "p", 0, "p", 0), 0);
    unit_st_expect(0, "p", "five");

    /* Same key, absent source. */
    ck_assert_int_eq(unit_st_copy(0, "src", 0, "src", 1), ST_EEXISTS);
    ck_assert_int_eq(unit_st_copy(0, "nope", 0, "x", 0), ST_ENOTFOUND);
    unit_st_expect(0, "x", NULL);
}
END_TEST

/* ------------------------------------------------------------------ */
/* counters */

START_TEST(test_dbsize)
{
    st_txn *t;
    uint64_t keys, exp;
    char name[NAME_SIZE];

    unit_st_counts(0, 0, 0);
    t = unit_st_wbegin();
    ck_assert_int_eq(unit_st_put(t, 0, "a", "1", 0), 0);
    ck_assert_int_eq(unit_st_put(t, 0, "b", "2", NOW + SEC), 0);
    ck_assert_int_eq(unit_st_put(t, 0, "c", "3", NOW + 2 * SEC), 0);
    ck_assert_int_eq(unit_st_put(t, 7, "a", "1", 0), 0);
    ck_assert_int_eq(unit_st_put(t, 15, "z", "1", NOW + SEC), 0);
    /* The writer sees its own pending changes. */
    ck_assert_int_eq(st_keyspace_dbsize(t, 0, &keys, &exp), 0);
    ck_assert_uint_eq(keys, 3);
    ck_assert_uint_eq(exp, 2);
    unit_st_commit(&t);
    unit_st_counts(0, 3, 2);
    unit_st_counts(7, 1, 0);
    unit_st_counts(15, 1, 1);
    unit_st_counts(1, 0, 0);

    /* Abort discards count changes. */
    t = unit_st_wbegin();
    for (int i = 0; i < 10; i++) {
        snprintf(name, sizeof name, "tmp%d", i);
        ck_assert_int_eq(unit_st_put(t, 0, name, "v", i % 2 ? NOW + SEC : 0),
                         0);
    }
    ck_assert_int_eq(st_keyspace_dbsize(t, 0, &keys, &exp), 0);
    ck_assert_uint_eq(keys, 13);
    ck_assert_uint_eq(exp, 7);
    st_txn_abort(&t);
    unit_st_counts(0, 3, 2);
    /* ...and the next transaction starts from clean deltas. */
    t = unit_st_wbegin();
    ck_assert_int_eq(st_keyspace_dbsize(t, 0, &keys, &exp), 0);
    ck_assert_uint_eq(keys, 3);
    ck_assert_uint_eq(exp, 2);
    ck_assert_int_eq(unit_st_put(t, 0, "d", "4", 0), 0);
    unit_st_commit(&t);
    unit_st_counts(0, 4, 2);

    /* Expired-but-not-reaped keys still count. */
    unit_st_counts(15, 1, 1);
    unit_st_expect_at(15, "z", NULL, NOW + 5 * SEC);
    unit_st_counts(15, 1, 1);

    /* Counters survive a reopen. */
    st_env_close(&unit_st_env);
    unit_st_env_open();
    unit_st_counts(0, 4, 2);
    unit_st_counts(7, 1, 0);
}
END_TEST

/* ------------------------------------------------------------------ */
/* scan */

static int key_index(const unit_st_name *n, const char *prefix)
{
    size_t pl = strlen(prefix);
    char tmp[NAME_SIZE];

    if (n->len <= pl || n->len >= sizeof tmp || memcmp(n->p, prefix, pl))
        return -1;
    memcpy(tmp, n->p + pl, n->len - pl);
    tmp[n->len - pl] = '\0';
    return atoi(tmp);
}

START_TEST(test_scan_complete)
{
    char name[NAME_SIZE];
    unit_st_names c = { 0 };
    int *seen = calloc(SCAN_KEYS, sizeof *seen);
    st_txn *t = unit_st_wbegin();
    size_t steps;

    ck_assert_ptr_nonnull(seen);
    for (int i = 0; i < SCAN_KEYS; i++) {
        snprintf(name, sizeof name, "key:%d", i);
        ck_assert_int_eq(unit_st_put(t, 2, name, "v", 0), 0);
    }
    /* Neighbours in other databases must not leak in. */
    ck_assert_int_eq(unit_st_put(t, 1, "key:-1", "v", 0), 0);
    ck_assert_int_eq(unit_st_put(t, 3, "key:-2", "v", 0), 0);
    unit_st_commit(&t);

    steps = unit_st_scan_all(2, SCAN_COUNT, NOW, &c);
    ck_assert_uint_eq(c.n, SCAN_KEYS);
    for (size_t i = 0; i < c.n; i++) {
        int idx = key_index(&c.v[i], "key:");
        ck_assert_int_ge(idx, 0);
        ck_assert_int_lt(idx, SCAN_KEYS);
        ck_assert_int_eq(c.v[i].type, ST_TYPE_STRING);
        seen[idx]++;
    }
    for (int i = 0; i < SCAN_KEYS; i++)
        ck_assert_msg(seen[i] == 1, "key:%d seen %d times", i, seen[i]);
    /* COUNT is honoured roughly: many steps, not one. */
    ck_assert_uint_ge(steps, SCAN_KEYS / SCAN_COUNT / 2);
    ck_assert_uint_le(steps, SCAN_KEYS / SCAN_COUNT * 2);
    unit_st_names_free(&c);

    /* One big step gets everything. */
    steps = unit_st_scan_all(2, SCAN_KEYS * 2, NOW, &c);
    ck_assert_uint_eq(steps, 1);
    ck_assert_uint_eq(c.n, SCAN_KEYS);
    unit_st_names_free(&c);

    /* Empty database. */
    steps = unit_st_scan_all(9, SCAN_COUNT, NOW, &c);
    ck_assert_uint_eq(steps, 1);
    ck_assert_uint_eq(c.n, 0);
    unit_st_names_free(&c);
    free(seen);
}
END_TEST

START_TEST(test_scan_skips_expired)
{
    unit_st_names c = { 0 };

    unit_st_put1(0, "live", "v", 0);
    unit_st_put1(0, "dead", "v", NOW - 1);
    unit_st_put1(0, "later", "v", NOW + SEC);
    unit_st_scan_all(0, SCAN_COUNT, NOW, &c);
    ck_assert_uint_eq(c.n, 2);
    ck_assert_int_eq(unit_st_times_seen(&c, "live", 4), 1);
    ck_assert_int_eq(unit_st_times_seen(&c, "later", 5), 1);
    for (size_t i = 0; i < c.n; i++)
        if (c.v[i].len == 5)
            ck_assert_int_eq(c.v[i].at, NOW + SEC);
    unit_st_names_free(&c);
}
END_TEST

START_TEST(test_scan_concurrent_writes)
{
    /*
     * Keys present for the whole iteration are returned exactly once even
     * while, between steps, other keys are added and deleted.
     */
    char name[NAME_SIZE];
    unit_st_names c = { 0 };
    int *seen = calloc(STABLE_KEYS, sizeof *seen);
    st_txn *t = unit_st_wbegin();
    uint64_t cursor = 0;
    int step = 0, added = 0, deleted = 0;

    ck_assert_ptr_nonnull(seen);
    for (int i = 0; i < STABLE_KEYS; i++) {
        snprintf(name, sizeof name, "stable:%d", i);
        ck_assert_int_eq(unit_st_put(t, 0, name, "v", 0), 0);
        snprintf(name, sizeof name, "doomed:%d", i);
        ck_assert_int_eq(unit_st_put(t, 0, name, "v", 0), 0);
    }
    unit_st_commit(&t);
    do {
        t = unit_st_rbegin();
        ck_assert_int_eq(st_keyspace_scan(t, 0, cursor, SCAN_COUNT, NOW,
                                          unit_st_collect, &c, &cursor),
                         0);
        unit_st_commit(&t);
        /* Between steps: add some keys, delete some others. */
        t = unit_st_wbegin();
        for (int j = 0; j < 3; j++) {
            snprintf(name, sizeof name, "fresh:%d", added++);
            ck_assert_int_eq(unit_st_put(t, 0, name, "v", 0), 0);
        }
        for (int j = 0; j < 2 && deleted < STABLE_KEYS; j++) {
            st_keyref k;
            snprintf(name, sizeof name, "doomed:%d", deleted++);
            st_codec_keyref_init(&k, 0, name, strlen(name));
            ck_assert_int_eq(st_keyspace_delete(t, &k, NOW), 0);
        }
        unit_st_commit(&t);
        ck_assert_int_lt(++step, STABLE_KEYS * 10);
    } while (cursor != 0);

    for (size_t i = 0; i < c.n; i++) {
        int idx = key_index(&c.v[i], "stable:");
        if (idx >= 0)
            seen[idx]++;
    }
    for (int i = 0; i < STABLE_KEYS; i++)
        ck_assert_msg(seen[i] == 1, "stable:%d seen %d times", i, seen[i]);
    /* No key at all is returned twice. */
    for (size_t i = 0; i < c.n; i++)
        ck_assert_int_eq(unit_st_times_seen(&c, c.v[i].p, c.v[i].len), 1);
    unit_st_names_free(&c);
    free(seen);
}
END_TEST

START_TEST(test_scan_cursor_positive)
{
    /* Cursors are positive 63-bit integers, 0 only at the end. */
    char name[NAME_SIZE];
    uint64_t cursor = 0;
    st_txn *t = unit_st_wbegin();
    unit_st_names c = { 0 };

    for (int i = 0; i < CURSOR_KEYS; i++) {
        snprintf(name, sizeof name, "n%d", i);
        ck_assert_int_eq(unit_st_put(t, 0, name, "v", 0), 0);
    }
    unit_st_commit(&t);
    do {
        t = unit_st_rbegin();
        ck_assert_int_eq(st_keyspace_scan(t, 0, cursor, CURSOR_COUNT, NOW,
                                          unit_st_collect, &c, &cursor),
                         0);
        unit_st_commit(&t);
        ck_assert_uint_eq(cursor & TOP_BIT, 0);
    } while (cursor);
    ck_assert_uint_eq(c.n, CURSOR_KEYS);
    unit_st_names_free(&c);
}
END_TEST

/* ------------------------------------------------------------------ */
/* random key */

static int random_key(unsigned db, uint64_t r, int64_t now, unit_st_names *c)
{
    st_txn *t = unit_st_rbegin();
    int rc = st_keyspace_random_key(t, db, r, now, unit_st_collect, c);

    unit_st_commit(&t);
    return rc;
}

START_TEST(test_random_key)
{
    char name[NAME_SIZE];
    unit_st_names c = { 0 };
    st_txn *t;
    uint64_t r = 0x9e3779b97f4a7c15ull;
    size_t distinct = 0;

    ck_assert_int_eq(random_key(0, 1, NOW, &c), ST_ENOTFOUND);
    ck_assert_uint_eq(c.n, 0);

    unit_st_put1(0, "only", "v", 0);
    unit_st_put1(1, "elsewhere", "v", 0);
    for (int i = 0; i < ONE_KEY_DRAWS; i++) {
        ck_assert_int_eq(random_key(0, r, NOW, &c), 0);
        r = r * 6364136223846793005ull + 1;
    }
    ck_assert_uint_eq(c.n, ONE_KEY_DRAWS);
    ck_assert_int_eq(unit_st_times_seen(&c, "only", 4), ONE_KEY_DRAWS);
    unit_st_names_free(&c);
    ck_assert_int_eq(random_key(0, 0, NOW, &c), 0);
    ck_assert_int_eq(random_key(0, UINT64_MAX, NOW, &c), 0);
    ck_assert_int_eq(unit_st_times_seen(&c, "only", 4), 2);
    unit_st_names_free(&c);

    t = unit_st_wbegin();
    for (int i = 0; i < MANY_KEYS; i++) {
        snprintf(name, sizeof name, "k%d", i);
        ck_assert_int_eq(unit_st_put(t, 2, name, "v", 0), 0);
    }
    unit_st_commit(&t);
    for (int i = 0; i < RANDOM_DRAWS; i++) {
        ck_assert_int_eq(random_key(2, r, NOW, &c), 0);
        r = r * 6364136223846793005ull + 1442695040888963407ull;
    }
    ck_assert_uint_eq(c.n, RANDOM_DRAWS);
    for (int i = 0; i < MANY_KEYS; i++) {
        snprintf(name, sizeof name, "k%d", i);
        if (unit_st_times_seen(&c, name, strlen(name)))
            distinct++;
    }
    /* 1000 draws over 100 keys should hit most of them. */
    ck_assert_uint_ge(distinct, MIN_DISTINCT);
    for (size_t i = 0; i < c.n; i++)
        ck_assert_int_ge(key_index(&c.v[i], "k"), 0);
    unit_st_names_free(&c);

    /* Only expired keys: none. */
    unit_st_put1(3, "gone", "v", NOW - 1);
    ck_assert_int_eq(random_key(3, r, NOW, &c), ST_ENOTFOUND);
    unit_st_names_free(&c);
}
END_TEST

/* ------------------------------------------------------------------ */
/* flush */

START_TEST(test_flush_one_db)
{
    const int big = ST_CHUNK_KEYS * 2 + 123;
    char name[NAME_SIZE];
    unit_st_names c = { 0 };
    uint64_t ver, before;
    size_t done;
    st_txn *t = unit_st_wbegin();

    before = st_txn_version(t);
    for (int i = 0; i < big; i++) {
        snprintf(name, sizeof name, "big:%d", i);
        ck_assert_int_eq(unit_st_put(t, 1, name, "v", i % 10 ? 0 : NOW + SEC),
                         0);
    }
    ck_assert_int_eq(unit_st_put(t, 0, "keep0", "a", 0), 0);
    ck_assert_int_eq(unit_st_put(t, 0, "keep0ttl", "b", NOW + SEC), 0);
    ck_assert_int_eq(unit_st_put(t, 2, "keep2", "c", 0), 0);
    unit_st_commit(&t);
    unit_st_counts(1, (uint64_t)big, (uint64_t)(big + 9) / 10);

    ck_assert_int_eq(st_keyspace_flush(unit_st_env, 1, &ver), 0);
    ck_assert_uint_gt(ver, before);
    unit_st_counts(1, 0, 0);
    unit_st_scan_all(1, MANY_KEYS, NOW, &c);
    ck_assert_uint_eq(c.n, 0);
    unit_st_names_free(&c);
    unit_st_expect(1, "big:0", NULL);
    /* Other databases untouched, TTLs included. */
    unit_st_expect(0, "keep0", "a");
    unit_st_expect(0, "keep0ttl", "b");
    unit_st_expect(2, "keep2", "c");
    unit_st_counts(0, 2, 1);
    unit_st_counts(2, 1, 0);
    ck_assert_int_eq(unit_st_ttl_of(0, "keep0ttl"), NOW + SEC);
    /* The flushed keys left nothing in the expiry index. */
    done = unit_st_expire_due(NOW + SEC, 100000, &ver);
    ck_assert_uint_eq(done, 1);
    unit_st_expect(0, "keep0ttl", NULL);
    /* The database is usable afterwards. */
    unit_st_put1(1, "again", "v", 0);
    unit_st_expect(1, "again", "v");
    unit_st_counts(1, 1, 0);
}
END_TEST

START_TEST(test_flush_only_db_with_keys)
{
    /* The database holding every key (a fast path may drop it whole). */
    uint64_t ver;

    unit_st_put1(4, "a", "1", NOW + SEC);
    unit_st_put1(4, "b", "2", 0);
    ck_assert_int_eq(st_keyspace_flush(unit_st_env, 4, &ver), 0);
    unit_st_counts(4, 0, 0);
    unit_st_expect(4, "a", NULL);
    /* Flushing an empty database is fine. */
    ck_assert_int_eq(st_keyspace_flush(unit_st_env, 4, &ver), 0);
    ck_assert_int_eq(st_keyspace_flush(unit_st_env, 9, &ver), 0);
    unit_st_put1(4, "c", "3", 0);
    unit_st_expect(4, "c", "3");
    unit_st_counts(4, 1, 0);
}
END_TEST

START_TEST(test_flush_all)
{
    uint64_t ver;
    size_t done;

    for (unsigned db = 0; db < UNIT_ST_DATABASES; db++) {
        unit_st_put1(db, "a", "1", 0);
        unit_st_put1(db, "t", "2", NOW + SEC);
    }
    ck_assert_int_eq(st_keyspace_flush(unit_st_env, -1, &ver), 0);
    for (unsigned db = 0; db < UNIT_ST_DATABASES; db++) {
        unit_st_counts(db, 0, 0);
        unit_st_expect(db, "a", NULL);
    }
    done = unit_st_expire_due(FAR_FUTURE, BATCH_ALL, &ver);
    ck_assert_uint_eq(done, 0);
    unit_st_put1(3, "after", "v", 0);
    unit_st_counts(3, 1, 0);
    st_env_close(&unit_st_env);
    unit_st_env_open();
    unit_st_counts(3, 1, 0);
    unit_st_expect(3, "after", "v");
}
END_TEST

static Suite *keyspace_suite(void)
{
    Suite *s = suite_create("st_keyspace");
    TCase *tc;

    tc = tcase_create("core");
    unit_st_fixture(tc, UNIT_ST_PLAIN);
    tcase_set_timeout(tc, TIMEOUT_S);
    tcase_add_test(tc, test_string_round_trip);
    tcase_add_test(tc, test_string_big_value);
    tcase_add_test(tc, test_delete);
    tcase_add_test(tc, test_rename);
    tcase_add_test(tc, test_copy);
    tcase_add_test(tc, test_dbsize);
    suite_add_tcase(s, tc);

    tc = tcase_create("expiry");
    unit_st_fixture(tc, UNIT_ST_PLAIN);
    tcase_set_timeout(tc, TIMEOUT_S);
    tcase_add_test(tc, test_lazy_expiry);
    tcase_add_test(tc, test_reap_seen_rechecks);
    tcase_add_test(tc, test_overwrite_changes_ttl);
    tcase_add_test(tc, test_expire_set);
    tcase_add_test(tc, test_expire_due);
    tcase_add_test(tc, test_expire_due_many);
    tcase_add_test(tc, test_expire_due_chunk_bound);
    suite_add_tcase(s, tc);

    tc = tcase_create("iterate");
    unit_st_fixture(tc, UNIT_ST_PLAIN);
    tcase_set_timeout(tc, TIMEOUT_S);
    tcase_add_test(tc, test_scan_complete);
    tcase_add_test(tc, test_scan_skips_expired);
    tcase_add_test(tc, test_scan_concurrent_writes);
    tcase_add_test(tc, test_scan_cursor_positive);
    tcase_add_test(tc, test_random_key);
    tcase_add_test(tc, test_flush_one_db);
    tcase_add_test(tc, test_flush_only_db_with_keys);
    tcase_add_test(tc, test_flush_all);
    suite_add_tcase(s, tc);

    tc = tcase_create("writemap");
    unit_st_fixture(tc, UNIT_ST_WRITEMAP);
    tcase_set_timeout(tc, TIMEOUT_S);
    tcase_add_test(tc, test_string_round_trip);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(keyspace_suite());
    int failed;

    srunner_run_all(sr, CK_ENV);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
