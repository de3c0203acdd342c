/*
 * check_storage: unit tests of the LMDB keyspace (storage/st_env.h,
 * storage/st_keyspace.h, storage/st_codec.h).
 *
 * Each test gets a fresh environment in its own temp dir, removed after.
 * Covered: open/close/reopen, the schema stamp, backups, string round
 * trips, versions, lazy and active expiry, delete/expire/rename/copy,
 * per-db counters (and their rollback), SCAN completeness and stability
 * under concurrent writes, RANDOMKEY, FLUSHDB/FLUSHALL in chunks, names
 * from 0 bytes to 1 MiB, compression, the shared cache in front of reads
 * (consistency across processes and within one snapshot), concurrent and
 * crashing processes, a random-operation model check, and the key
 * encoding itself.
 */
#include "t/unit/unit_tmp.h"
#include <check.h>
#include <errno.h>
#include <ftw.h>
#include <lmdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "shm/shm_cache.h"
#include "storage/st_env.h"
#include "storage/st_err.h"
#include "storage/st_codec.h"
#include "storage/st_keyspace.h"
#include "storage/st_txn.h"

#define ROOT_SIZE 1024
#define DIR_SIZE 2048
#define MAP_SIZE (1ull << 30)
#define DATABASES 16
#define NOW 1700000000000LL             /* the tests' clock, ms */
#define SEC 1000
#define TIMEOUT_S 30
#define SCAN_KEYS 10000
#define SCAN_COUNT 10
#define STABLE_KEYS 2000
#define NAME_SIZE 64
#define KIB 1024
#define MIB (1024 * 1024)
#define HASH_SAMPLES 100000
#define TOP_BIT 0x8000000000000000ull
#define RANDOM_DRAWS 1000
#define MANY_DUE 20
#define FAR_FUTURE (NOW + 1000000 * SEC)
#define COMPRESS_THRESHOLD 64
#define BATCH_ALL 100000            /* an expiry batch bigger than any test */
#define FILL_TRIES 1000
#define REUSE_ROUNDS 100
#define CURSOR_KEYS 500
#define CURSOR_COUNT 7
#define ONE_KEY_DRAWS 50
#define MANY_KEYS 100
#define MIN_DISTINCT 80             /* of MANY_KEYS, over RANDOM_DRAWS */
#define RENAME_SALT 1000
#define COMPRESS_LEVEL 1
#define CACHE_BUDGET (4u << 20)
#define WRITERS 4
#define WRITES_EACH 300
#define CHILD_FAILED 3

/*
 * Each TCase gets a root temp dir (unchecked fixture: made and removed by
 * the runner process, so it is removed even when a test dies early), and
 * each test a fresh environment directory inside it (checked fixture).
 */
static char root[ROOT_SIZE];
static char dir[DIR_SIZE];
static st_env *env;

/* Options of the fixture's environment: a cache, compression, or neither. */
static shm_cache_t *cache;
static size_t compress_threshold;
static int writemap;

static void env_open(void)
{
    st_env_opts o = {
        .dir = dir, .map_size = MAP_SIZE, .databases = DATABASES,
        .max_readers = 0, .nosync = 1, .writemap = writemap,
        .cache = cache, .compress_threshold = compress_threshold,
        .compress_level = COMPRESS_LEVEL,
    };
    int rc = st_env_open(&o, &env);

    ck_assert_msg(rc == 0, "st_env_open: %s", st_strerror(rc));
}

/* Reopen the fixture's directory with another size or database count. */
static int env_reopen(unsigned databases, uint64_t map_size)
{
    st_env_opts o = {
        .dir = dir, .map_size = map_size, .databases = databases,
        .max_readers = 0, .nosync = 1, .writemap = writemap,
        .cache = cache, .compress_threshold = compress_threshold,
        .compress_level = COMPRESS_LEVEL,
    };

    st_env_close(&env);
    return st_env_open(&o, &env);
}

static void root_setup(void)
{
    unit_tmp_make(root, sizeof root, "check_storage");
}

static void root_teardown(void)
{
    unit_tmp_remove(root);
}

static void setup(void)
{
    snprintf(dir, sizeof dir, "%s/env.XXXXXX", root);
    ck_assert_ptr_nonnull(mkdtemp(dir));
    env_open();
}

static void rm_env_files(void)
{
    char path[DIR_SIZE + 16];

    snprintf(path, sizeof path, "%s/data.mdb", dir);
    unlink(path);
    snprintf(path, sizeof path, "%s/lock.mdb", dir);
    unlink(path);
}

static void teardown(void)
{
    st_env_close(&env);
    rm_env_files();
    rmdir(dir);
}

static void setup_compress(void)
{
    compress_threshold = COMPRESS_THRESHOLD;
    setup();
}

static void setup_writemap(void)
{
    writemap = 1;
    setup();
}

static void setup_cache(void)
{
    shm_cache_opts_t co = { .budget_bytes = CACHE_BUDGET };

    ck_assert_int_eq(shm_cache_create(&co, &cache), 0);
    ck_assert(shm_cache_enabled(cache));
    compress_threshold = COMPRESS_THRESHOLD;
    setup();
}

static void teardown_cache(void)
{
    teardown();
    shm_cache_destroy(&cache);
}

/* ------------------------------------------------------------------ */
/* helpers */

static st_txn *wbegin(void)
{
    st_txn *t;

    ck_assert_int_eq(st_txn_begin(env, 1, &t), 0);
    return t;
}

static st_txn *rbegin(void)
{
    st_txn *t;

    ck_assert_int_eq(st_txn_begin(env, 0, &t), 0);
    return t;
}

static void commit(st_txn **t)
{
    int rc = st_txn_commit(t);

    ck_assert_msg(rc == 0, "commit: %s", st_strerror(rc));
    ck_assert_ptr_null(*t);
}

static int putn(st_txn *t, unsigned db, const void *name, size_t nlen,
                const void *val, size_t vlen, int64_t at)
{
    st_keyref k;

    st_codec_keyref_init(&k, db, name, nlen);
    return st_keyspace_string_set(t, &k, val, vlen, at);
}

static int put(st_txn *t, unsigned db, const char *name, const char *val,
               int64_t at)
{
    return putn(t, db, name, strlen(name), val, strlen(val), at);
}

/* Set one key in its own transaction. */
static void put1(unsigned db, const char *name, const char *val, int64_t at)
{
    st_txn *t = wbegin();

    ck_assert_int_eq(put(t, db, name, val, at), 0);
    commit(&t);
}

static int lookupn(st_txn *t, unsigned db, const void *name, size_t nlen,
                   int64_t now, st_rec *r)
{
    st_keyref k;

    st_codec_keyref_init(&k, db, name, nlen);
    return st_keyspace_lookup(t, &k, now, r);
}

static int lookup(st_txn *t, unsigned db, const char *name, int64_t now,
                  st_rec *r)
{
    return lookupn(t, db, name, strlen(name), now, r);
}

/* In a read txn at `now`: is `name` there with value `val` (NULL: absent)? */
static void expect_at(unsigned db, const char *name, const char *val,
                      int64_t now)
{
    st_txn *t = rbegin();
    st_rec r;
    int rc = lookup(t, db, name, now, &r);

    if (!val) {
        ck_assert_msg(rc == ST_ENOTFOUND, "db %u '%s': rc %d, want absent",
                      db, name, rc);
    } else {
        ck_assert_msg(rc == 0, "db %u '%s': %s", db, name, st_strerror(rc));
        ck_assert_int_eq(r.type, ST_TYPE_STRING);
        ck_assert_uint_eq(r.payload_len, strlen(val));
        ck_assert_mem_eq(r.payload, val, strlen(val));
    }
    commit(&t);
}

static void expect(unsigned db, const char *name, const char *val)
{
    expect_at(db, name, val, NOW);
}

/* expire-at of an existing key, read at NOW. */
static int64_t ttl_of(unsigned db, const char *name)
{
    st_txn *t = rbegin();
    st_rec r;

    ck_assert_int_eq(lookup(t, db, name, NOW, &r), 0);
    int64_t at = r.expire_at;
    commit(&t);
    return at;
}

static void counts(unsigned db, uint64_t want_keys, uint64_t want_expires)
{
    st_txn *t = rbegin();
    uint64_t keys, expires;

    ck_assert_int_eq(st_keyspace_dbsize(t, db, &keys, &expires), 0);
    commit(&t);
    ck_assert_msg(keys == want_keys && expires == want_expires,
                  "db %u: %llu keys, %llu with TTL; want %llu, %llu", db,
                  (unsigned long long)keys, (unsigned long long)expires,
                  (unsigned long long)want_keys,
                  (unsigned long long)want_expires);
}

/* One active-expiry batch; returns how many keys it deleted. */
static size_t expire_due(int64_t now, size_t max, uint64_t *ver)
{
    size_t done = 0;
    uint64_t v;
    int rc = st_keyspace_expire_due(env, now, max, &done, ver ? ver : &v);

    ck_assert_msg(rc == 0, "st_keyspace_expire_due: %s", st_strerror(rc));
    return done;
}

/* A collected key name. */
typedef struct name_buf {
    uint8_t *p;
    size_t len;
    int type;
    int64_t at;
} name_buf;

typedef struct collector {
    name_buf *v;
    size_t n, cap;
} collector;

static int collect(void *ctx, const uint8_t *name, size_t len, int type,
                   int64_t at)
{
    collector *c = ctx;

    if (c->n == c->cap) {
        c->cap = c->cap ? c->cap * 2 : 64;
        c->v = realloc(c->v, c->cap * sizeof *c->v);
        ck_assert_ptr_nonnull(c->v);
    }
    c->v[c->n].p = malloc(len ? len : 1);
    ck_assert_ptr_nonnull(c->v[c->n].p);
    if (len)
        memcpy(c->v[c->n].p, name, len);
    c->v[c->n].len = len;
    c->v[c->n].type = type;
    c->v[c->n].at = at;
    c->n++;
    return 0;
}

static void collector_free(collector *c)
{
    for (size_t i = 0; i < c->n; i++)
        free(c->v[i].p);
    free(c->v);
    memset(c, 0, sizeof *c);
}

/* Count how many collected names equal (name, len). */
static int times_seen(const collector *c, const void *name, size_t len)
{
    int n = 0;

    for (size_t i = 0; i < c->n; i++)
        if (c->v[i].len == len && (len == 0 ||
                                   memcmp(c->v[i].p, name, len) == 0))
            n++;
    return n;
}

/* A whole SCAN of `db` at `now`, each step in its own read txn. */
static size_t scan_all(unsigned db, size_t count, int64_t now, collector *c)
{
    uint64_t cursor = 0;
    size_t steps = 0;

    do {
        st_txn *t = rbegin();
        int rc = st_keyspace_scan(t, db, cursor, count, now, collect, c, &cursor);
        ck_assert_msg(rc == 0, "scan: %s", st_strerror(rc));
        commit(&t);
        steps++;
        ck_assert_uint_le(steps, SCAN_KEYS * 10);
    } while (cursor != 0);
    return steps;
}

/* A deterministic name of `len` bytes; `salt` varies its content. */
static uint8_t *make_name(size_t len, unsigned salt)
{
    uint8_t *p = malloc(len ? len : 1);
    uint32_t x = 2463534242u ^ salt;

    ck_assert_ptr_nonnull(p);
    for (size_t i = 0; i < len; i++) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        p[i] = (uint8_t)x;
    }
    return p;
}

/* ------------------------------------------------------------------ */
/* env */

START_TEST(test_open_close_reopen)
{
    st_env_stat st;

    ck_assert_uint_eq(st_env_databases(env), DATABASES);
    put1(0, "persist", "me", 0);
    ck_assert_int_eq(st_env_sync(env), 0);
    ck_assert_int_eq(st_env_stat_get(env, &st), 0);
    ck_assert_uint_eq(st.map_size, MAP_SIZE);
    ck_assert_uint_gt(st.used_bytes, 0);
    ck_assert_uint_gt(st.file_bytes, 0);
    ck_assert_uint_gt(st.last_txn, 0);
    ck_assert_uint_gt(st.readers_max, 0);
    st_env_close(&env);
    ck_assert_ptr_null(env);
    st_env_close(&env);                 /* closing NULL is harmless */

    env_open();
    expect(0, "persist", "me");
    counts(0, 1, 0);
    st_env_close(&env);
    env_open();
    expect(0, "persist", "me");

    /* Versions keep growing across a reopen (WATCH relies on it). */
    {
        st_txn *t = wbegin();
        uint64_t v = st_txn_version(t);
        st_txn_abort(&t);
        ck_assert_uint_gt(v, st.last_txn);
    }
}
END_TEST

START_TEST(test_reopen_other_databases)
{
    /*
     * The operator restarts with fewer databases, writes, then goes back.
     * Either the smaller open is refused (Redis refuses to load a data set
     * using a db index >= databases) or the keys of the databases out of
     * range keep their counts; in no case may FLUSHDB of another database
     * delete them.
     */
    uint64_t ver;
    int rc;

    put1(0, "zero", "v", 0);
    put1(5, "five", "v", NOW + 100 * SEC);
    rc = env_reopen(4, MAP_SIZE);
    if (rc == 0) {
        put1(0, "zero2", "v", 0);
        counts(0, 2, 0);
        /* FLUSHDB 0 holds every key of dbs 0..3, not of db 5. */
        ck_assert_int_eq(st_keyspace_flush(env, 0, &ver), 0);
        put1(0, "zero", "v", 0);
    }
    ck_assert_int_eq(env_reopen(DATABASES, MAP_SIZE), 0);
    counts(5, 1, 1);
    expect(5, "five", "v");
    ck_assert_int_eq(st_keyspace_flush(env, 0, &ver), 0);
    expect(5, "five", "v");
    counts(5, 1, 1);
    counts(0, 0, 0);
}
END_TEST

START_TEST(test_map_full)
{
    /* A full map fails writes with ST_EFULL; reads and deletes go on. */
    const size_t vlen = 16 * KIB;
    uint8_t *v = make_name(vlen, 11);
    char name[NAME_SIZE];
    int rc = 0, i, stored = 0;

    ck_assert_int_eq(env_reopen(DATABASES, MIB), 0);
    for (i = 0; rc == 0 && i < FILL_TRIES; i++) {
        st_txn *t = wbegin();
        snprintf(name, sizeof name, "fill%d", i);
        rc = putn(t, 0, name, strlen(name), v, vlen, 0);
        if (rc == 0)
            rc = st_txn_commit(&t);
        else
            st_txn_abort(&t);
        if (rc == 0)
            stored++;
    }
    ck_assert_msg(rc == ST_EFULL, "rc %d (%s) after %d writes", rc,
                  st_strerror(rc), i);
    ck_assert_int_gt(stored, 0);
    counts(0, (uint64_t)stored, 0);
    {
        st_txn *t = rbegin();
        st_rec r;
        ck_assert_int_eq(lookup(t, 0, "fill0", NOW, &r), 0);
        ck_assert_uint_eq(r.payload_len, vlen);
        ck_assert_int_eq(memcmp(r.payload, v, vlen), 0);
        commit(&t);
    }
    /* Deleting makes room again. */
    {
        st_txn *t = wbegin();
        st_keyref k;
        for (int j = 0; j < stored; j++) {
            snprintf(name, sizeof name, "fill%d", j);
            st_codec_keyref_init(&k, 0, name, strlen(name));
            ck_assert_int_eq(st_keyspace_delete(t, &k, NOW), 0);
        }
        commit(&t);
    }
    counts(0, 0, 0);
    /*
     * LMDB reuses pages freed by transaction N from N + 2 on (and a big
     * value wants a contiguous run), so one small write goes first.
     */
    put1(0, "tick", "v", 0);
    {
        st_txn *t = wbegin();
        ck_assert_int_eq(putn(t, 0, "again", 5, v, vlen, 0), 0);
        commit(&t);
    }
    free(v);
}
END_TEST

/* Read the schema stamp straight from LMDB's meta database. */
static int raw_schema(uint32_t *ver, int overwrite_with)
{
    MDB_env *e;
    MDB_txn *txn;
    MDB_dbi dbi;
    MDB_val k = { 6, "schema" }, v;
    int rc;

    ck_assert_int_eq(mdb_env_create(&e), 0);
    mdb_env_set_maxdbs(e, 16);
    ck_assert_int_eq(mdb_env_open(e, dir, 0, 0600), 0);
    ck_assert_int_eq(mdb_txn_begin(e, NULL, 0, &txn), 0);
    ck_assert_int_eq(mdb_dbi_open(txn, "meta", 0, &dbi), 0);
    rc = mdb_get(txn, dbi, &k, &v);
    if (rc == 0 && v.mv_size == sizeof *ver)
        memcpy(ver, v.mv_data, sizeof *ver);
    else
        rc = -1;
    if (rc == 0 && overwrite_with) {
        uint32_t nv = (uint32_t)overwrite_with;
        v.mv_size = sizeof nv;
        v.mv_data = &nv;
        ck_assert_int_eq(mdb_put(txn, dbi, &k, &v, 0), 0);
    }
    ck_assert_int_eq(mdb_txn_commit(txn), 0);
    mdb_env_close(e);
    return rc;
}

START_TEST(test_schema_stamp)
{
    uint32_t ver = 0;
    st_env_opts o = { .dir = dir, .map_size = MAP_SIZE,
                      .databases = DATABASES, .nosync = 1 };
    int rc;

    st_env_close(&env);
    ck_assert_int_eq(raw_schema(&ver, 0), 0);
    ck_assert_uint_eq(ver, ST_SCHEMA_VERSION);
    /* A newer schema on disk is refused, not used. */
    ck_assert_int_eq(raw_schema(&ver, ST_SCHEMA_VERSION + 1), 0);
    rc = st_env_open(&o, &env);
    ck_assert_int_eq(rc, ST_ESCHEMA);
    ck_assert_ptr_null(env);
}
END_TEST

START_TEST(test_open_errors)
{
    char path[DIR_SIZE + 16];
    st_env_opts o = { .dir = path, .nosync = 1 };
    st_env *e = NULL;
    FILE *f;

    /* The directory is a plain file. */
    snprintf(path, sizeof path, "%s/file", dir);
    f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fclose(f);
    ck_assert_int_gt(st_env_open(&o, &e), 0);
    ck_assert_ptr_null(e);
    unlink(path);
    /* Its parent does not exist. */
    snprintf(path, sizeof path, "%s/no/such", dir);
    ck_assert_int_eq(st_env_open(&o, &e), ENOENT);
    ck_assert_ptr_null(e);
}
END_TEST

/* Open a backup file as an environment of its own and check it. */
static void check_backup(const char *file, int want_keys)
{
    char bdir[DIR_SIZE + 32], data[DIR_SIZE + 48];
    st_env_opts o = { .map_size = MAP_SIZE, .databases = DATABASES,
                      .nosync = 1 };
    st_env *saved = env;
    uint64_t keys, exp;
    st_txn *t;
    st_rec r;

    snprintf(bdir, sizeof bdir, "%s/restore.XXXXXX", root);
    ck_assert_ptr_nonnull(mkdtemp(bdir));
    snprintf(data, sizeof data, "%s/data.mdb", bdir);
    ck_assert_int_eq(rename(file, data), 0);
    o.dir = bdir;
    ck_assert_int_eq(st_env_open(&o, &env), 0);
    t = rbegin();
    ck_assert_int_eq(st_keyspace_dbsize(t, 0, &keys, &exp), 0);
    ck_assert_uint_eq(keys, (uint64_t)want_keys);
    ck_assert_int_eq(lookup(t, 0, "k0", NOW, &r), 0);
    ck_assert_mem_eq(r.payload, "v", 1);
    commit(&t);
    st_env_close(&env);
    env = saved;
}

START_TEST(test_backup)
{
    char file[DIR_SIZE + 32], name[NAME_SIZE];
    st_txn *t = wbegin(), *r;
    st_rec rec;

    for (int i = 0; i < MANY_KEYS; i++) {
        snprintf(name, sizeof name, "k%d", i);
        ck_assert_int_eq(put(t, 0, name, "v", 0), 0);
    }
    commit(&t);
    snprintf(file, sizeof file, "%s/backup.mdb", root);
    ck_assert_int_eq(st_env_backup(env, file), 0);
    check_backup(file, MANY_KEYS);

    /* After a read transaction of the caller ended (LMDB keeps its
     * reader slot for reuse). */
    expect(0, "k1", "v");
    ck_assert_int_eq(st_env_backup(env, file), 0);
    check_backup(file, MANY_KEYS);

    /* The caller's own read transaction may be open meanwhile. */
    put1(0, "extra", "v", 0);
    r = rbegin();
    ck_assert_int_eq(lookup(r, 0, "k1", NOW, &rec), 0);
    {
        int rc = st_env_backup(env, file);
        ck_assert_msg(rc == 0, "backup with a read txn open: %s",
                      st_strerror(rc));
    }
    ck_assert_int_eq(lookup(r, 0, "k2", NOW, &rec), 0);
    commit(&r);
    check_backup(file, MANY_KEYS + 1);

    /* A path that cannot be written: an error, no file left behind. */
    snprintf(file, sizeof file, "%s/no/such/dir/backup.mdb", root);
    ck_assert_int_eq(st_env_backup(env, file), ENOENT);
}
END_TEST

START_TEST(test_txn_rules)
{
    st_txn *w = wbegin(), *w2, *r = rbegin(), *r2;

    ck_assert_int_eq(st_txn_begin(env, 1, &w2), ST_EBUSY);
    ck_assert_int_eq(st_txn_begin(env, 0, &r2), ST_EBUSY);
    ck_assert(st_txn_is_write(w));
    ck_assert(!st_txn_is_write(r));
    ck_assert_int_eq(put(w, 0, "a", "1", 0), 0);
    /* The read snapshot does not see the uncommitted write. */
    st_rec rec;
    ck_assert_int_eq(lookup(r, 0, "a", NOW, &rec), ST_ENOTFOUND);
    commit(&w);
    ck_assert_int_eq(lookup(r, 0, "a", NOW, &rec), ST_ENOTFOUND);
    commit(&r);
    expect(0, "a", "1");
    /* Read transactions are reused: many in a row. */
    for (int i = 0; i < REUSE_ROUNDS; i++)
        expect(0, "a", "1");
    for (int i = ST_OK; i >= ST_EBUSY; i--)
        ck_assert_ptr_nonnull(st_strerror(i));
    ck_assert_ptr_nonnull(st_strerror(ENOMEM));
}
END_TEST

/* ------------------------------------------------------------------ */
/* strings */

START_TEST(test_string_round_trip)
{
    static const char binary[] = "a\0b\r\n\xff\x00z";
    st_txn *t = wbegin();
    st_rec r;
    uint8_t *dst;
    st_keyref k;

    ck_assert_int_eq(put(t, 0, "plain", "hello", 0), 0);
    ck_assert_int_eq(putn(t, 0, "bin", 3, binary, sizeof binary, 0), 0);
    ck_assert_int_eq(putn(t, 0, "empty", 5, "", 0, 0), 0);
    ck_assert_int_eq(putn(t, 0, "a\0b", 3, "nul in name", 11, 0), 0);
    st_codec_keyref_init(&k, 0, "reserved", 8);
    ck_assert_int_eq(st_keyspace_string_reserve(t, &k, 4, 0, &dst), 0);
    memcpy(dst, "wxyz", 4);
    /* Visible inside the writing transaction. */
    ck_assert_int_eq(lookup(t, 0, "plain", NOW, &r), 0);
    ck_assert_uint_eq(r.payload_len, 5);
    commit(&t);

    t = rbegin();
    ck_assert_int_eq(lookup(t, 0, "plain", NOW, &r), 0);
    ck_assert_int_eq(r.type, ST_TYPE_STRING);
    ck_assert_int_eq(r.expire_at, 0);
    ck_assert_uint_eq(r.flags & ST_REC_LONGNAME, 0);
    ck_assert_mem_eq(r.payload, "hello", 5);
    ck_assert_int_eq(lookup(t, 0, "bin", NOW, &r), 0);
    ck_assert_uint_eq(r.payload_len, sizeof binary);
    ck_assert_mem_eq(r.payload, binary, sizeof binary);
    ck_assert_int_eq(lookup(t, 0, "empty", NOW, &r), 0);
    ck_assert_uint_eq(r.payload_len, 0);
    ck_assert_int_eq(lookupn(t, 0, "a\0b", 3, NOW, &r), 0);
    ck_assert_mem_eq(r.payload, "nul in name", 11);
    ck_assert_int_eq(lookupn(t, 0, "a", 1, NOW, &r), ST_ENOTFOUND);
    ck_assert_int_eq(lookup(t, 0, "reserved", NOW, &r), 0);
    ck_assert_mem_eq(r.payload, "wxyz", 4);
    ck_assert_int_eq(lookup(t, 0, "absent", NOW, &r), ST_ENOTFOUND);
    /* Databases are separate keyspaces. */
    ck_assert_int_eq(lookup(t, 1, "plain", NOW, &r), ST_ENOTFOUND);
    commit(&t);

    /* Overwrite, shorter and longer. */
    put1(0, "plain", "hi", 0);
    expect(0, "plain", "hi");
    put1(0, "plain", "a much longer value than before", 0);
    expect(0, "plain", "a much longer value than before");
    counts(0, 5, 0);
}
END_TEST

START_TEST(test_string_big_value)
{
    size_t n = 4 * MIB;
    uint8_t *v = make_name(n, 7);
    st_txn *t = wbegin();
    st_rec r;

    ck_assert_int_eq(putn(t, 0, "big", 3, v, n, 0), 0);
    commit(&t);
    t = rbegin();
    ck_assert_int_eq(lookup(t, 0, "big", NOW, &r), 0);
    ck_assert_uint_eq(r.payload_len, n);
    ck_assert_int_eq(memcmp(r.payload, v, n), 0);
    commit(&t);
    free(v);
}
END_TEST

START_TEST(test_versions)
{
    st_txn *t = wbegin();
    uint64_t v1 = st_txn_version(t), v2, v3, v4;
    st_rec r;

    ck_assert_int_eq(put(t, 0, "a", "1", 0), 0);
    ck_assert_int_eq(lookup(t, 0, "a", NOW, &r), 0);
    ck_assert_uint_eq(r.version, v1);
    commit(&t);

    t = rbegin();
    ck_assert_uint_eq(st_txn_version(t), v1);   /* the snapshot it sees */
    commit(&t);

    t = wbegin();
    v2 = st_txn_version(t);
    ck_assert_uint_gt(v2, v1);
    ck_assert_int_eq(put(t, 0, "b", "2", 0), 0);
    commit(&t);

    /* An aborted transaction leaves no trace. */
    t = wbegin();
    ck_assert_int_eq(put(t, 0, "a", "lost", 0), 0);
    st_txn_abort(&t);
    ck_assert_ptr_null(t);
    expect(0, "a", "1");

    t = wbegin();
    v3 = st_txn_version(t);
    ck_assert_uint_gt(v3, v2);
    ck_assert_int_eq(put(t, 0, "a", "3", 0), 0);
    commit(&t);

    t = rbegin();
    ck_assert_int_eq(lookup(t, 0, "a", NOW, &r), 0);
    ck_assert_uint_eq(r.version, v3);
    ck_assert_int_eq(lookup(t, 0, "b", NOW, &r), 0);
    ck_assert_uint_eq(r.version, v2);
    commit(&t);

    /* Every committed write transaction moves the version forward. */
    for (int i = 0; i < 10; i++) {
        t = wbegin();
        v4 = st_txn_version(t);
        ck_assert_uint_gt(v4, v3);
        ck_assert_int_eq(put(t, 0, "c", "x", 0), 0);
        commit(&t);
        v3 = v4;
    }
}
END_TEST

/* ------------------------------------------------------------------ */
/* expiry */

START_TEST(test_lazy_expiry)
{
    st_txn *t;
    st_rec r;
    size_t done;

    put1(0, "soon", "v", NOW + SEC);
    put1(0, "never", "v", 0);
    counts(0, 2, 1);
    ck_assert_int_eq(ttl_of(0, "soon"), NOW + SEC);
    expect_at(0, "soon", "v", NOW + SEC - 1);
    /* Due exactly at expire-at. */
    expect_at(0, "soon", NULL, NOW + SEC);
    /* A read transaction only reports it; the key is still stored. */
    counts(0, 2, 1);
    expect_at(0, "soon", "v", NOW);

    /* A write transaction deletes it on the spot. */
    t = wbegin();
    ck_assert_int_eq(lookup(t, 0, "soon", NOW + SEC, &r), ST_ENOTFOUND);
    commit(&t);
    counts(0, 1, 0);
    expect_at(0, "soon", NULL, NOW);

    /* Keys a reader saw expired are reaped on request. */
    put1(0, "soon2", "v", NOW + SEC);
    expect_at(0, "soon2", NULL, NOW + 2 * SEC);
    ck_assert_int_eq(st_keyspace_reap_seen(env, NOW + 2 * SEC, &done), 0);
    ck_assert_uint_eq(done, 1);
    counts(0, 1, 0);
    ck_assert_int_eq(st_keyspace_reap_seen(env, NOW + 2 * SEC, &done), 0);
    ck_assert_uint_eq(done, 0);
}
END_TEST

START_TEST(test_reap_seen_rechecks)
{
    /* A key seen expired but rewritten since is not reaped. */
    size_t done;

    put1(0, "k", "old", NOW + SEC);
    expect_at(0, "k", NULL, NOW + 2 * SEC);
    put1(0, "k", "new", 0);
    ck_assert_int_eq(st_keyspace_reap_seen(env, NOW + 2 * SEC, &done), 0);
    ck_assert_uint_eq(done, 0);
    expect(0, "k", "new");
    counts(0, 1, 0);
}
END_TEST

START_TEST(test_overwrite_changes_ttl)
{
    size_t done;
    uint64_t ver;

    put1(0, "k", "v1", NOW + SEC);
    put1(0, "k", "v2", 0);              /* SET drops the TTL */
    counts(0, 1, 0);
    done = expire_due(FAR_FUTURE, BATCH_ALL, &ver);
    ck_assert_uint_eq(done, 0);
    expect(0, "k", "v2");
    put1(0, "k", "v3", NOW + 5 * SEC);
    put1(0, "k", "v4", NOW + 9 * SEC);  /* and a new TTL replaces it */
    counts(0, 1, 1);
    done = expire_due(NOW + 6 * SEC, BATCH_ALL, &ver);
    ck_assert_uint_eq(done, 0);
    expect(0, "k", "v4");
    done = expire_due(NOW + 9 * SEC, BATCH_ALL, &ver);
    ck_assert_uint_eq(done, 1);
    counts(0, 0, 0);
}
END_TEST

START_TEST(test_delete)
{
    st_txn *t;
    st_keyref k;

    put1(0, "a", "1", 0);
    put1(0, "b", "2", NOW + SEC);
    put1(3, "a", "3", 0);
    counts(0, 2, 1);
    t = wbegin();
    st_codec_keyref_init(&k, 0, "a", 1);
    ck_assert_int_eq(st_keyspace_delete(t, &k, NOW), 0);
    ck_assert_int_eq(st_keyspace_delete(t, &k, NOW), ST_ENOTFOUND);
    st_codec_keyref_init(&k, 0, "b", 1);
    ck_assert_int_eq(st_keyspace_delete(t, &k, NOW), 0);
    st_codec_keyref_init(&k, 0, "zzz", 3);
    ck_assert_int_eq(st_keyspace_delete(t, &k, NOW), ST_ENOTFOUND);
    commit(&t);
    expect(0, "a", NULL);
    expect(0, "b", NULL);
    expect(3, "a", "3");
    counts(0, 0, 0);
    counts(3, 1, 0);

    /* Deleting an expired key finds nothing, and still cleans up. */
    put1(0, "e", "v", NOW + SEC);
    t = wbegin();
    st_codec_keyref_init(&k, 0, "e", 1);
    ck_assert_int_eq(st_keyspace_delete(t, &k, NOW + SEC), ST_ENOTFOUND);
    commit(&t);
    counts(0, 0, 0);
}
END_TEST

START_TEST(test_expire_set)
{
    st_txn *t;
    st_keyref k;
    size_t done;
    uint64_t ver;

    put1(0, "k", "value", 0);
    t = wbegin();
    st_codec_keyref_init(&k, 0, "k", 1);
    ck_assert_int_eq(st_keyspace_expire_set(t, &k, NOW, NOW + 10 * SEC), 0);
    commit(&t);
    ck_assert_int_eq(ttl_of(0, "k"), NOW + 10 * SEC);
    counts(0, 1, 1);
    expect(0, "k", "value");

    /* Change it, then persist it (0). */
    t = wbegin();
    ck_assert_int_eq(st_keyspace_expire_set(t, &k, NOW, NOW + 20 * SEC), 0);
    commit(&t);
    ck_assert_int_eq(ttl_of(0, "k"), NOW + 20 * SEC);
    counts(0, 1, 1);
    t = wbegin();
    ck_assert_int_eq(st_keyspace_expire_set(t, &k, NOW, 0), 0);
    commit(&t);
    ck_assert_int_eq(ttl_of(0, "k"), 0);
    counts(0, 1, 0);
    expect(0, "k", "value");
    /* The persisted key is no longer due anywhere. */
    done = expire_due(FAR_FUTURE, BATCH_ALL, &ver);
    ck_assert_uint_eq(done, 0);
    expect(0, "k", "value");

    /* Persisting a key without TTL, or touching an absent one. */
    t = wbegin();
    ck_assert_int_eq(st_keyspace_expire_set(t, &k, NOW, 0), 0);
    st_codec_keyref_init(&k, 0, "nope", 4);
    ck_assert_int_eq(st_keyspace_expire_set(t, &k, NOW, NOW + SEC), ST_ENOTFOUND);
    commit(&t);
    counts(0, 1, 0);
}
END_TEST

START_TEST(test_expire_due)
{
    static const struct { const char *name; int64_t at; } keys[] = {
        {"c", NOW + 30}, {"a", NOW + 10}, {"e", NOW + 50}, {"b", NOW + 20},
        {"d", NOW + 40}, {"later", NOW + 10 * SEC}, {"never", 0},
    };
    size_t done;
    uint64_t ver, last = 0;
    st_txn *t = wbegin();

    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        ck_assert_int_eq(put(t, (unsigned)i % 3, keys[i].name, "v",
                             keys[i].at), 0);
    commit(&t);

    /* Nothing due yet. */
    done = expire_due(NOW, BATCH_ALL, &ver);
    ck_assert_uint_eq(done, 0);

    /* Oldest first, at most `max`. */
    done = expire_due(NOW + SEC, 2, &ver);
    ck_assert_uint_eq(done, 2);
    ck_assert_uint_gt(ver, last);
    last = ver;
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        unsigned db = (unsigned)i % 3;
        int gone = keys[i].at == NOW + 10 || keys[i].at == NOW + 20;
        expect_at(db, keys[i].name, gone ? NULL : "v", NOW);
    }
    done = expire_due(NOW + SEC, 1, &ver);
    ck_assert_uint_eq(done, 1);
    ck_assert_uint_gt(ver, last);
    expect_at(0, "c", NULL, NOW);       /* NOW + 30 */
    expect_at(1, "d", "v", NOW);

    /* Only due keys, however large max is. */
    done = expire_due(NOW + 45, BATCH_ALL, &ver);
    ck_assert_uint_eq(done, 1);
    expect_at(1, "d", NULL, NOW);
    expect_at(2, "e", "v", NOW);
    done = expire_due(NOW + SEC, BATCH_ALL, &ver);
    ck_assert_uint_eq(done, 1);
    expect_at(2, "later", "v", NOW);
    expect_at(0, "never", "v", NOW);
    counts(0, 1, 0);
    counts(1, 0, 0);
    counts(2, 1, 1);
}
END_TEST

START_TEST(test_expire_due_many)
{
    /* More due keys than one batch: repeated calls get them all. */
    char name[NAME_SIZE];
    size_t done, total = 0;
    uint64_t ver;
    st_txn *t = wbegin();

    for (int i = 0; i < MANY_DUE; i++) {
        snprintf(name, sizeof name, "k%d", i);
        ck_assert_int_eq(put(t, 0, name, "v", NOW + i), 0);
    }
    commit(&t);
    for (int round = 0; round < MANY_DUE; round++) {
        done = expire_due(NOW + MANY_DUE, 3, &ver);
        ck_assert_uint_le(done, 3);
        total += done;
        /* Oldest first: the survivors are the youngest. */
        for (int i = 0; i < MANY_DUE; i++) {
            snprintf(name, sizeof name, "k%d", i);
            expect_at(0, name, (size_t)i < total ? NULL : "v", NOW);
        }
        if (done == 0)
            break;
    }
    ck_assert_uint_eq(total, MANY_DUE);
    counts(0, 0, 0);
}
END_TEST

START_TEST(test_expire_due_chunk_bound)
{
    /*
     * st_keyspace.h: ST_CHUNK_KEYS is the "largest number of keys one st_keyspace_flush
     * chunk or expiry batch deletes" (DESIGN: no write transaction grows
     * without bound), whatever max the caller passes.
     */
    const int due = ST_CHUNK_KEYS + ST_CHUNK_KEYS / 10;
    char name[NAME_SIZE];
    size_t done, total = 0;
    st_txn *t = wbegin();

    for (int i = 0; i < due; i++) {
        snprintf(name, sizeof name, "d%d", i);
        ck_assert_int_eq(put(t, 0, name, "v", NOW + i % SEC), 0);
    }
    commit(&t);
    done = expire_due(NOW + SEC, BATCH_ALL, NULL);
    ck_assert_msg(done <= ST_CHUNK_KEYS, "one batch deleted %zu keys (> %d)",
                  done, ST_CHUNK_KEYS);
    total += done;
    while ((done = expire_due(NOW + SEC, BATCH_ALL, NULL)) > 0)
        total += done;
    ck_assert_uint_eq(total, (size_t)due);
    counts(0, 0, 0);
}
END_TEST

/* ------------------------------------------------------------------ */
/* rename / copy */

static int do_rename(unsigned db, const char *src, const char *dst, int nx)
{
    st_txn *t = wbegin();
    st_keyref s, d;
    int rc;

    st_codec_keyref_init(&s, db, src, strlen(src));
    st_codec_keyref_init(&d, db, dst, strlen(dst));
    rc = st_keyspace_rename(t, &s, &d, NOW, nx);
    commit(&t);
    return rc;
}

static int do_copy(unsigned sdb, const char *src, unsigned ddb,
                   const char *dst, int replace)
{
    st_txn *t = wbegin();
    st_keyref s, d;
    int rc;

    st_codec_keyref_init(&s, sdb, src, strlen(src));
    st_codec_keyref_init(&d, ddb, dst, strlen(dst));
    rc = st_keyspace_copy(t, &s, &d, NOW, replace);
    commit(&t);
    return rc;
}

START_TEST(test_rename)
{
    size_t done;
    uint64_t ver;

    put1(0, "src", "value", NOW + 10 * SEC);
    ck_assert_int_eq(do_rename(0, "src", "dst", 0), 0);
    expect(0, "src", NULL);
    expect(0, "dst", "value");
    ck_assert_int_eq(ttl_of(0, "dst"), NOW + 10 * SEC);   /* TTL carried */
    counts(0, 1, 1);

    /* Absent source. */
    ck_assert_int_eq(do_rename(0, "src", "x", 0), ST_ENOTFOUND);
    ck_assert_int_eq(do_rename(0, "src", "x", 1), ST_ENOTFOUND);

    /* Same key: no-op (RENAMENX answers 0). */
    ck_assert_int_eq(do_rename(0, "dst", "dst", 0), 0);
    ck_assert_int_eq(do_rename(0, "dst", "dst", 1), ST_EEXISTS);
    expect(0, "dst", "value");
    counts(0, 1, 1);

    /* NX onto an existing key changes nothing. */
    put1(0, "other", "o", 0);
    ck_assert_int_eq(do_rename(0, "dst", "other", 1), ST_EEXISTS);
    expect(0, "dst", "value");
    expect(0, "other", "o");
    counts(0, 2, 1);

    /* Without NX the destination is replaced, TTL included. */
    ck_assert_int_eq(do_rename(0, "other", "dst", 0), 0);
    expect(0, "other", NULL);
    expect(0, "dst", "o");
    ck_assert_int_eq(ttl_of(0, "dst"), 0);
    counts(0, 1, 0);
    /* No stale expiry entry can delete the new dst. */
    done = expire_due(FAR_FUTURE, BATCH_ALL, &ver);
    ck_assert_uint_eq(done, 0);
    expect(0, "dst", "o");

    /* The TTL moves with the key to its new name in the expiry index. */
    put1(0, "t1", "v", NOW + SEC);
    ck_assert_int_eq(do_rename(0, "t1", "t2", 0), 0);
    done = expire_due(NOW + SEC, BATCH_ALL, &ver);
    ck_assert_uint_eq(done, 1);
    expect(0, "t2", NULL);
    counts(0, 1, 0);

    /* Across databases (MOVE is RENAMENX to another db). */
    put1(0, "mv", "m", NOW + 2 * SEC);
    {
        st_txn *t = wbegin();
        st_keyref s, d;
        st_codec_keyref_init(&s, 0, "mv", 2);
        st_codec_keyref_init(&d, 7, "mv", 2);
        ck_assert_int_eq(st_keyspace_rename(t, &s, &d, NOW, 1), 0);
        commit(&t);
    }
    expect(0, "mv", NULL);
    expect(7, "mv", "m");
    counts(0, 1, 0);
    counts(7, 1, 1);
    done = expire_due(NOW + 2 * SEC, BATCH_ALL, &ver);
    ck_assert_uint_eq(done, 1);
    counts(7, 0, 0);

    /* An expired source is absent. */
    put1(0, "old", "v", NOW - 1);
    ck_assert_int_eq(do_rename(0, "old", "new", 0), ST_ENOTFOUND);
    expect(0, "new", NULL);
}
END_TEST

START_TEST(test_copy)
{
    put1(0, "src", "value", NOW + 10 * SEC);
    ck_assert_int_eq(do_copy(0, "src", 0, "dst", 0), 0);
    expect(0, "src", "value");
    expect(0, "dst", "value");
    ck_assert_int_eq(ttl_of(0, "dst"), NOW + 10 * SEC);
    counts(0, 2, 2);

    /* Without REPLACE an existing destination stays. */
    put1(0, "taken", "t", 0);
    ck_assert_int_eq(do_copy(0, "src", 0, "taken", 0), ST_EEXISTS);
    expect(0, "taken", "t");
    /* With REPLACE it is overwritten, TTL included. */
    ck_assert_int_eq(do_copy(0, "src", 0, "taken", 1), 0);
    expect(0, "taken", "value");
    ck_assert_int_eq(ttl_of(0, "taken"), NOW + 10 * SEC);
    counts(0, 3, 3);

    /* To another database. */
    ck_assert_int_eq(do_copy(0, "src", 5, "src", 0), 0);
    expect(5, "src", "value");
    counts(5, 1, 1);
    counts(0, 3, 3);
    put1(5, "p", "five", 0);
    ck_assert_int_eq(do_copy(5, "p", 0, "p", 0), 0);
    expect(0, "p", "five");

    /* Same key, absent source. */
    ck_assert_int_eq(do_copy(0, "src", 0, "src", 1), ST_EEXISTS);
    ck_assert_int_eq(do_copy(0, "nope", 0, "x", 0), ST_ENOTFOUND);
    expect(0, "x", NULL);
}
END_TEST

/* ------------------------------------------------------------------ */
/* counters */

START_TEST(test_dbsize)
{
    st_txn *t;
    uint64_t keys, exp;
    char name[NAME_SIZE];

    counts(0, 0, 0);
    t = wbegin();
    ck_assert_int_eq(put(t, 0, "a", "1", 0), 0);
    ck_assert_int_eq(put(t, 0, "b", "2", NOW + SEC), 0);
    ck_assert_int_eq(put(t, 0, "c", "3", NOW + 2 * SEC), 0);
    ck_assert_int_eq(put(t, 7, "a", "1", 0), 0);
    ck_assert_int_eq(put(t, 15, "z", "1", NOW + SEC), 0);
    /* The writer sees its own pending changes. */
    ck_assert_int_eq(st_keyspace_dbsize(t, 0, &keys, &exp), 0);
    ck_assert_uint_eq(keys, 3);
    ck_assert_uint_eq(exp, 2);
    commit(&t);
    counts(0, 3, 2);
    counts(7, 1, 0);
    counts(15, 1, 1);
    counts(1, 0, 0);

    /* Abort discards count changes. */
    t = wbegin();
    for (int i = 0; i < 10; i++) {
        snprintf(name, sizeof name, "tmp%d", i);
        ck_assert_int_eq(put(t, 0, name, "v", i % 2 ? NOW + SEC : 0), 0);
    }
    ck_assert_int_eq(st_keyspace_dbsize(t, 0, &keys, &exp), 0);
    ck_assert_uint_eq(keys, 13);
    ck_assert_uint_eq(exp, 7);
    st_txn_abort(&t);
    counts(0, 3, 2);
    /* ...and the next transaction starts from clean deltas. */
    t = wbegin();
    ck_assert_int_eq(st_keyspace_dbsize(t, 0, &keys, &exp), 0);
    ck_assert_uint_eq(keys, 3);
    ck_assert_uint_eq(exp, 2);
    ck_assert_int_eq(put(t, 0, "d", "4", 0), 0);
    commit(&t);
    counts(0, 4, 2);

    /* Expired-but-not-reaped keys still count. */
    counts(15, 1, 1);
    expect_at(15, "z", NULL, NOW + 5 * SEC);
    counts(15, 1, 1);

    /* Counters survive a reopen. */
    st_env_close(&env);
    env_open();
    counts(0, 4, 2);
    counts(7, 1, 0);
}
END_TEST

/* ------------------------------------------------------------------ */
/* scan */

static int key_index(const name_buf *n, const char *prefix)
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
    collector c = {0};
    int *seen = calloc(SCAN_KEYS, sizeof *seen);
    st_txn *t = wbegin();
    size_t steps;

    ck_assert_ptr_nonnull(seen);
    for (int i = 0; i < SCAN_KEYS; i++) {
        snprintf(name, sizeof name, "key:%d", i);
        ck_assert_int_eq(put(t, 2, name, "v", 0), 0);
    }
    /* Neighbours in other databases must not leak in. */
    ck_assert_int_eq(put(t, 1, "key:-1", "v", 0), 0);
    ck_assert_int_eq(put(t, 3, "key:-2", "v", 0), 0);
    commit(&t);

    steps = scan_all(2, SCAN_COUNT, NOW, &c);
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
    collector_free(&c);

    /* One big step gets everything. */
    steps = scan_all(2, SCAN_KEYS * 2, NOW, &c);
    ck_assert_uint_eq(steps, 1);
    ck_assert_uint_eq(c.n, SCAN_KEYS);
    collector_free(&c);

    /* Empty database. */
    steps = scan_all(9, SCAN_COUNT, NOW, &c);
    ck_assert_uint_eq(steps, 1);
    ck_assert_uint_eq(c.n, 0);
    collector_free(&c);
    free(seen);
}
END_TEST

START_TEST(test_scan_skips_expired)
{
    collector c = {0};

    put1(0, "live", "v", 0);
    put1(0, "dead", "v", NOW - 1);
    put1(0, "later", "v", NOW + SEC);
    scan_all(0, SCAN_COUNT, NOW, &c);
    ck_assert_uint_eq(c.n, 2);
    ck_assert_int_eq(times_seen(&c, "live", 4), 1);
    ck_assert_int_eq(times_seen(&c, "later", 5), 1);
    for (size_t i = 0; i < c.n; i++)
        if (c.v[i].len == 5)
            ck_assert_int_eq(c.v[i].at, NOW + SEC);
    collector_free(&c);
}
END_TEST

START_TEST(test_scan_concurrent_writes)
{
    /*
     * Keys present for the whole iteration are returned exactly once even
     * while, between steps, other keys are added and deleted.
     */
    char name[NAME_SIZE];
    collector c = {0};
    int *seen = calloc(STABLE_KEYS, sizeof *seen);
    st_txn *t = wbegin();
    uint64_t cursor = 0;
    int step = 0, added = 0, deleted = 0;

    ck_assert_ptr_nonnull(seen);
    for (int i = 0; i < STABLE_KEYS; i++) {
        snprintf(name, sizeof name, "stable:%d", i);
        ck_assert_int_eq(put(t, 0, name, "v", 0), 0);
        snprintf(name, sizeof name, "doomed:%d", i);
        ck_assert_int_eq(put(t, 0, name, "v", 0), 0);
    }
    commit(&t);
    do {
        t = rbegin();
        ck_assert_int_eq(st_keyspace_scan(t, 0, cursor, SCAN_COUNT, NOW, collect, &c,
                                 &cursor), 0);
        commit(&t);
        /* Between steps: add some keys, delete some others. */
        t = wbegin();
        for (int j = 0; j < 3; j++) {
            snprintf(name, sizeof name, "fresh:%d", added++);
            ck_assert_int_eq(put(t, 0, name, "v", 0), 0);
        }
        for (int j = 0; j < 2 && deleted < STABLE_KEYS; j++) {
            st_keyref k;
            snprintf(name, sizeof name, "doomed:%d", deleted++);
            st_codec_keyref_init(&k, 0, name, strlen(name));
            ck_assert_int_eq(st_keyspace_delete(t, &k, NOW), 0);
        }
        commit(&t);
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
        ck_assert_int_eq(times_seen(&c, c.v[i].p, c.v[i].len), 1);
    collector_free(&c);
    free(seen);
}
END_TEST

START_TEST(test_scan_cursor_positive)
{
    /* Cursors are positive 63-bit integers, 0 only at the end. */
    char name[NAME_SIZE];
    uint64_t cursor = 0;
    st_txn *t = wbegin();
    collector c = {0};

    for (int i = 0; i < CURSOR_KEYS; i++) {
        snprintf(name, sizeof name, "n%d", i);
        ck_assert_int_eq(put(t, 0, name, "v", 0), 0);
    }
    commit(&t);
    do {
        t = rbegin();
        ck_assert_int_eq(st_keyspace_scan(t, 0, cursor, CURSOR_COUNT, NOW, collect, &c,
                                 &cursor),
                         0);
        commit(&t);
        ck_assert_uint_eq(cursor & TOP_BIT, 0);
    } while (cursor);
    ck_assert_uint_eq(c.n, CURSOR_KEYS);
    collector_free(&c);
}
END_TEST

/* ------------------------------------------------------------------ */
/* random key */

static int random_key(unsigned db, uint64_t r, int64_t now, collector *c)
{
    st_txn *t = rbegin();
    int rc = st_keyspace_random_key(t, db, r, now, collect, c);

    commit(&t);
    return rc;
}

START_TEST(test_random_key)
{
    char name[NAME_SIZE];
    collector c = {0};
    st_txn *t;
    uint64_t r = 0x9e3779b97f4a7c15ull;
    size_t distinct = 0;

    ck_assert_int_eq(random_key(0, 1, NOW, &c), ST_ENOTFOUND);
    ck_assert_uint_eq(c.n, 0);

    put1(0, "only", "v", 0);
    put1(1, "elsewhere", "v", 0);
    for (int i = 0; i < ONE_KEY_DRAWS; i++) {
        ck_assert_int_eq(random_key(0, r, NOW, &c), 0);
        r = r * 6364136223846793005ull + 1;
    }
    ck_assert_uint_eq(c.n, ONE_KEY_DRAWS);
    ck_assert_int_eq(times_seen(&c, "only", 4), ONE_KEY_DRAWS);
    collector_free(&c);
    ck_assert_int_eq(random_key(0, 0, NOW, &c), 0);
    ck_assert_int_eq(random_key(0, UINT64_MAX, NOW, &c), 0);
    ck_assert_int_eq(times_seen(&c, "only", 4), 2);
    collector_free(&c);

    t = wbegin();
    for (int i = 0; i < MANY_KEYS; i++) {
        snprintf(name, sizeof name, "k%d", i);
        ck_assert_int_eq(put(t, 2, name, "v", 0), 0);
    }
    commit(&t);
    for (int i = 0; i < RANDOM_DRAWS; i++) {
        ck_assert_int_eq(random_key(2, r, NOW, &c), 0);
        r = r * 6364136223846793005ull + 1442695040888963407ull;
    }
    ck_assert_uint_eq(c.n, RANDOM_DRAWS);
    for (int i = 0; i < MANY_KEYS; i++) {
        snprintf(name, sizeof name, "k%d", i);
        if (times_seen(&c, name, strlen(name)))
            distinct++;
    }
    /* 1000 draws over 100 keys should hit most of them. */
    ck_assert_uint_ge(distinct, MIN_DISTINCT);
    for (size_t i = 0; i < c.n; i++)
        ck_assert_int_ge(key_index(&c.v[i], "k"), 0);
    collector_free(&c);

    /* Only expired keys: none. */
    put1(3, "gone", "v", NOW - 1);
    ck_assert_int_eq(random_key(3, r, NOW, &c), ST_ENOTFOUND);
    collector_free(&c);
}
END_TEST

/* ------------------------------------------------------------------ */
/* flush */

START_TEST(test_flush_one_db)
{
    const int big = ST_CHUNK_KEYS * 2 + 123;
    char name[NAME_SIZE];
    collector c = {0};
    uint64_t ver, before;
    size_t done;
    st_txn *t = wbegin();

    before = st_txn_version(t);
    for (int i = 0; i < big; i++) {
        snprintf(name, sizeof name, "big:%d", i);
        ck_assert_int_eq(put(t, 1, name, "v", i % 10 ? 0 : NOW + SEC), 0);
    }
    ck_assert_int_eq(put(t, 0, "keep0", "a", 0), 0);
    ck_assert_int_eq(put(t, 0, "keep0ttl", "b", NOW + SEC), 0);
    ck_assert_int_eq(put(t, 2, "keep2", "c", 0), 0);
    commit(&t);
    counts(1, (uint64_t)big, (uint64_t)(big + 9) / 10);

    ck_assert_int_eq(st_keyspace_flush(env, 1, &ver), 0);
    ck_assert_uint_gt(ver, before);
    counts(1, 0, 0);
    scan_all(1, MANY_KEYS, NOW, &c);
    ck_assert_uint_eq(c.n, 0);
    collector_free(&c);
    expect(1, "big:0", NULL);
    /* Other databases untouched, TTLs included. */
    expect(0, "keep0", "a");
    expect(0, "keep0ttl", "b");
    expect(2, "keep2", "c");
    counts(0, 2, 1);
    counts(2, 1, 0);
    ck_assert_int_eq(ttl_of(0, "keep0ttl"), NOW + SEC);
    /* The flushed keys left nothing in the expiry index. */
    done = expire_due(NOW + SEC, 100000, &ver);
    ck_assert_uint_eq(done, 1);
    expect(0, "keep0ttl", NULL);
    /* The database is usable afterwards. */
    put1(1, "again", "v", 0);
    expect(1, "again", "v");
    counts(1, 1, 0);
}
END_TEST

START_TEST(test_flush_only_db_with_keys)
{
    /* The database holding every key (a fast path may drop it whole). */
    uint64_t ver;

    put1(4, "a", "1", NOW + SEC);
    put1(4, "b", "2", 0);
    ck_assert_int_eq(st_keyspace_flush(env, 4, &ver), 0);
    counts(4, 0, 0);
    expect(4, "a", NULL);
    /* Flushing an empty database is fine. */
    ck_assert_int_eq(st_keyspace_flush(env, 4, &ver), 0);
    ck_assert_int_eq(st_keyspace_flush(env, 9, &ver), 0);
    put1(4, "c", "3", 0);
    expect(4, "c", "3");
    counts(4, 1, 0);
}
END_TEST

START_TEST(test_flush_all)
{
    uint64_t ver;
    size_t done;

    for (unsigned db = 0; db < DATABASES; db++) {
        put1(db, "a", "1", 0);
        put1(db, "t", "2", NOW + SEC);
    }
    ck_assert_int_eq(st_keyspace_flush(env, -1, &ver), 0);
    for (unsigned db = 0; db < DATABASES; db++) {
        counts(db, 0, 0);
        expect(db, "a", NULL);
    }
    done = expire_due(FAR_FUTURE, BATCH_ALL, &ver);
    ck_assert_uint_eq(done, 0);
    put1(3, "after", "v", 0);
    counts(3, 1, 0);
    st_env_close(&env);
    env_open();
    counts(3, 1, 0);
    expect(3, "after", "v");
}
END_TEST

/* ------------------------------------------------------------------ */
/* long names */

static const size_t name_lengths[] = {
    0, 1, 493, 494, 499, ST_KEY_INLINE_MAX, ST_KEY_INLINE_MAX + 1,
    ST_LMDB_MAXKEY, ST_LMDB_MAXKEY + 1, 64 * KIB, MIB,
};
#define N_LENGTHS (sizeof name_lengths / sizeof name_lengths[0])

START_TEST(test_long_names)
{
    uint8_t *names[N_LENGTHS], *renamed[N_LENGTHS];
    char val[NAME_SIZE];
    collector c = {0};
    st_txn *t = wbegin();
    st_rec r;

    for (size_t i = 0; i < N_LENGTHS; i++) {
        size_t len = name_lengths[i];
        names[i] = make_name(len, (unsigned)i);
        renamed[i] = make_name(len, (unsigned)i + RENAME_SALT);
        if (len && memcmp(names[i], renamed[i], len) == 0)
            renamed[i][0] ^= 0xff;
        snprintf(val, sizeof val, "value of %zu", len);
        ck_assert_msg(putn(t, 6, names[i], len, val, strlen(val), 0) == 0,
                      "set of a %zu-byte name", len);
    }
    commit(&t);
    counts(6, N_LENGTHS, 0);

    t = rbegin();
    for (size_t i = 0; i < N_LENGTHS; i++) {
        size_t len = name_lengths[i];
        snprintf(val, sizeof val, "value of %zu", len);
        ck_assert_msg(lookupn(t, 6, names[i], len, NOW, &r) == 0,
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
            ck_assert_int_eq(lookupn(t, 6, names[i], len, NOW, &r),
                             ST_ENOTFOUND);
            names[i][len - 1] ^= 1;
        }
    }
    commit(&t);

    /* SCAN returns every name in full. */
    scan_all(6, 3, NOW, &c);
    ck_assert_uint_eq(c.n, N_LENGTHS);
    for (size_t i = 0; i < N_LENGTHS; i++)
        ck_assert_msg(times_seen(&c, names[i], name_lengths[i]) == 1,
                      "scan: %zu-byte name", name_lengths[i]);
    collector_free(&c);

    /* RANDOMKEY hands out full names too. */
    {
        uint64_t draw = 1;
        for (int i = 0; i < RANDOM_DRAWS / 10; i++) {
            st_txn *rt = rbegin();
            ck_assert_int_eq(st_keyspace_random_key(rt, 6, draw, NOW, collect, &c),
                             0);
            commit(&rt);
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
        collector_free(&c);
    }

    /* RENAME each to another name of the same length. */
    t = wbegin();
    for (size_t i = 0; i < N_LENGTHS; i++) {
        size_t len = name_lengths[i];
        st_keyref s, d;
        if (len == 0)
            continue;                   /* only one empty name */
        st_codec_keyref_init(&s, 6, names[i], len);
        st_codec_keyref_init(&d, 6, renamed[i], len);
        ck_assert_msg(st_keyspace_rename(t, &s, &d, NOW, 0) == 0,
                      "rename of a %zu-byte name", len);
    }
    commit(&t);
    t = rbegin();
    for (size_t i = 0; i < N_LENGTHS; i++) {
        size_t len = name_lengths[i];
        if (len == 0)
            continue;
        snprintf(val, sizeof val, "value of %zu", len);
        ck_assert_int_eq(lookupn(t, 6, names[i], len, NOW, &r), ST_ENOTFOUND);
        ck_assert_int_eq(lookupn(t, 6, renamed[i], len, NOW, &r), 0);
        ck_assert_mem_eq(r.payload, val, strlen(val));
    }
    commit(&t);
    counts(6, N_LENGTHS, 0);

    /* DELETE them all. */
    t = wbegin();
    for (size_t i = 0; i < N_LENGTHS; i++) {
        st_keyref k;
        uint8_t *n = name_lengths[i] ? renamed[i] : names[i];
        st_codec_keyref_init(&k, 6, n, name_lengths[i]);
        ck_assert_msg(st_keyspace_delete(t, &k, NOW) == 0, "delete of a %zu-byte name",
                      name_lengths[i]);
    }
    commit(&t);
    counts(6, 0, 0);
    scan_all(6, 3, NOW, &c);
    ck_assert_uint_eq(c.n, 0);
    collector_free(&c);

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
    st_txn *t = wbegin();
    size_t done;
    uint64_t ver;
    st_rec r;

    for (size_t i = 0; i < N_LENGTHS; i++) {
        names[i] = make_name(name_lengths[i], (unsigned)i + 77);
        ck_assert_int_eq(putn(t, 0, names[i], name_lengths[i], "v", 1,
                              NOW + (int64_t)i), 0);
    }
    commit(&t);
    counts(0, N_LENGTHS, N_LENGTHS);
    done = expire_due(NOW + (int64_t)N_LENGTHS, BATCH_ALL, &ver);
    ck_assert_uint_eq(done, N_LENGTHS);
    counts(0, 0, 0);
    t = rbegin();
    for (size_t i = 0; i < N_LENGTHS; i++)
        ck_assert_int_eq(lookupn(t, 0, names[i], name_lengths[i], NOW, &r),
                         ST_ENOTFOUND);
    commit(&t);

    /* Lazily, in a write transaction, too. */
    t = wbegin();
    for (size_t i = 0; i < N_LENGTHS; i++)
        ck_assert_int_eq(putn(t, 1, names[i], name_lengths[i], "v", 1,
                              NOW + SEC), 0);
    commit(&t);
    t = wbegin();
    for (size_t i = 0; i < N_LENGTHS; i++)
        ck_assert_int_eq(lookupn(t, 1, names[i], name_lengths[i], NOW + SEC,
                                 &r), ST_ENOTFOUND);
    commit(&t);
    counts(1, 0, 0);
    done = expire_due(FAR_FUTURE, BATCH_ALL, &ver);
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
    uint8_t *a = make_name(len, 1), *b = malloc(len), *c2 = malloc(len);
    st_txn *t;
    st_rec r;
    st_keyref k;
    collector c = {0};

    ck_assert_ptr_nonnull(b);
    ck_assert_ptr_nonnull(c2);
    memcpy(b, a, len);
    b[len - 1] ^= 0x55;                 /* differs in the last byte */
    memcpy(c2, a, len);
    c2[ST_KEY_LONG_PREFIX + 3] ^= 0x55; /* differs just past the prefix */

    t = wbegin();
    ck_assert_int_eq(putn(t, 0, a, len, "A", 1, 0), 0);
    ck_assert_int_eq(putn(t, 0, b, len, "B", 1, NOW + SEC), 0);
    ck_assert_int_eq(putn(t, 0, c2, len, "C", 1, 0), 0);
    ck_assert_int_eq(putn(t, 0, a, ST_KEY_INLINE_MAX, "short", 5, 0), 0);
    ck_assert_int_eq(putn(t, 0, a, len - 1, "minus1", 6, 0), 0);
    commit(&t);
    counts(0, 5, 1);

    t = rbegin();
    ck_assert_int_eq(lookupn(t, 0, a, len, NOW, &r), 0);
    ck_assert_mem_eq(r.payload, "A", 1);
    ck_assert_int_eq(lookupn(t, 0, b, len, NOW, &r), 0);
    ck_assert_mem_eq(r.payload, "B", 1);
    ck_assert_int_eq(r.expire_at, NOW + SEC);
    ck_assert_int_eq(lookupn(t, 0, c2, len, NOW, &r), 0);
    ck_assert_mem_eq(r.payload, "C", 1);
    ck_assert_int_eq(lookupn(t, 0, a, ST_KEY_INLINE_MAX, NOW, &r), 0);
    ck_assert_mem_eq(r.payload, "short", 5);
    ck_assert_int_eq(lookupn(t, 0, a, len - 1, NOW, &r), 0);
    ck_assert_mem_eq(r.payload, "minus1", 6);
    commit(&t);

    scan_all(0, 2, NOW, &c);
    ck_assert_uint_eq(c.n, 5);
    ck_assert_int_eq(times_seen(&c, a, len), 1);
    ck_assert_int_eq(times_seen(&c, b, len), 1);
    ck_assert_int_eq(times_seen(&c, c2, len), 1);
    collector_free(&c);

    /* Deleting one leaves the others. */
    t = wbegin();
    st_codec_keyref_init(&k, 0, a, len);
    ck_assert_int_eq(st_keyspace_delete(t, &k, NOW), 0);
    commit(&t);
    t = rbegin();
    ck_assert_int_eq(lookupn(t, 0, a, len, NOW, &r), ST_ENOTFOUND);
    ck_assert_int_eq(lookupn(t, 0, b, len, NOW, &r), 0);
    ck_assert_int_eq(lookupn(t, 0, c2, len, NOW, &r), 0);
    commit(&t);

    /* Overwriting one long name does not touch its neighbour. */
    t = wbegin();
    ck_assert_int_eq(putn(t, 0, c2, len, "C2", 2, 0), 0);
    commit(&t);
    t = rbegin();
    ck_assert_int_eq(lookupn(t, 0, c2, len, NOW, &r), 0);
    ck_assert_mem_eq(r.payload, "C2", 2);
    ck_assert_int_eq(lookupn(t, 0, b, len, NOW, &r), 0);
    ck_assert_mem_eq(r.payload, "B", 1);
    commit(&t);
    counts(0, 4, 1);

    /* Copy and rename between long and short names. */
    t = wbegin();
    {
        st_keyref s, d;
        st_codec_keyref_init(&s, 0, b, len);
        st_codec_keyref_init(&d, 0, "short-b", 7);
        ck_assert_int_eq(st_keyspace_copy(t, &s, &d, NOW, 0), 0);
        st_codec_keyref_init(&s, 0, "short-b", 7);
        st_codec_keyref_init(&d, 2, a, len);
        ck_assert_int_eq(st_keyspace_copy(t, &s, &d, NOW, 0), 0);
    }
    commit(&t);
    expect(0, "short-b", "B");
    ck_assert_int_eq(ttl_of(0, "short-b"), NOW + SEC);
    t = rbegin();
    ck_assert_int_eq(lookupn(t, 2, a, len, NOW, &r), 0);
    ck_assert_mem_eq(r.payload, "B", 1);
    ck_assert_int_eq(r.expire_at, NOW + SEC);
    commit(&t);
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
    st_txn *t = wbegin();

    for (size_t i = 0; i < N_LENGTHS; i++) {
        names[i] = make_name(name_lengths[i], (unsigned)i + 5);
        ck_assert_int_eq(putn(t, 8, names[i], name_lengths[i], "v", 1,
                              i % 2 ? NOW + SEC : 0), 0);
    }
    ck_assert_int_eq(put(t, 0, "bystander", "v", 0), 0);
    commit(&t);
    ck_assert_int_eq(st_keyspace_flush(env, 8, &ver), 0);
    counts(8, 0, 0);
    counts(0, 1, 0);
    done = expire_due(FAR_FUTURE, BATCH_ALL, &ver);
    ck_assert_uint_eq(done, 0);
    for (size_t i = 0; i < N_LENGTHS; i++)
        free(names[i]);
}
END_TEST

static void wait_ok(pid_t pid);

/* ------------------------------------------------------------------ */
/* compression and the shared cache (fixtures setup_compress, setup_cache) */

/* A compressible value: `len` bytes of a short repeating pattern. */
static uint8_t *compressible(size_t len, char c)
{
    uint8_t *v = malloc(len ? len : 1);

    ck_assert_ptr_nonnull(v);
    for (size_t i = 0; i < len; i++)
        v[i] = (uint8_t)(c + (char)(i % 7));
    return v;
}

static void expect_bytes(unsigned db, const char *name, const void *val,
                         size_t len)
{
    st_txn *t = rbegin();
    st_rec r;

    ck_assert_int_eq(lookup(t, db, name, NOW, &r), 0);
    ck_assert_uint_eq(r.payload_len, len);
    ck_assert_int_eq(memcmp(r.payload, val, len), 0);
    ck_assert_uint_eq(r.flags & ST_REC_ZSTD, 0);    /* handed out inflated */
    commit(&t);
}

START_TEST(test_compress_round_trip)
{
    const size_t big = 64 * KIB;
    uint8_t *zv = compressible(big, 'a');
    uint8_t *rnd = make_name(big, 5);         /* incompressible */
    uint8_t *edge = compressible(COMPRESS_THRESHOLD, 'q');
    st_txn *t = wbegin();

    ck_assert_int_eq(putn(t, 0, "z", 1, zv, big, 0), 0);
    ck_assert_int_eq(putn(t, 0, "rnd", 3, rnd, big, 0), 0);
    ck_assert_int_eq(putn(t, 0, "edge", 4, edge, COMPRESS_THRESHOLD, 0), 0);
    ck_assert_int_eq(put(t, 0, "small", "tiny", 0), 0);
    /* The writer reads its own compressed write back whole. */
    {
        st_rec r;
        ck_assert_int_eq(lookup(t, 0, "z", NOW, &r), 0);
        ck_assert_uint_eq(r.payload_len, big);
        ck_assert_int_eq(memcmp(r.payload, zv, big), 0);
    }
    commit(&t);
    expect_bytes(0, "z", zv, big);
    expect_bytes(0, "rnd", rnd, big);
    expect_bytes(0, "edge", edge, COMPRESS_THRESHOLD);
    expect(0, "small", "tiny");

    /* Rename, copy and expire keep the value whole. */
    ck_assert_int_eq(do_rename(0, "z", "z2", 0), 0);
    ck_assert_int_eq(do_copy(0, "z2", 3, "z3", 0), 0);
    {
        st_keyref k;
        t = wbegin();
        st_codec_keyref_init(&k, 3, "z3", 2);
        ck_assert_int_eq(st_keyspace_expire_set(t, &k, NOW, NOW + SEC), 0);
        commit(&t);
    }
    expect_bytes(0, "z2", zv, big);
    expect_bytes(3, "z3", zv, big);
    ck_assert_int_eq(ttl_of(3, "z3"), NOW + SEC);
    free(zv);
    free(rnd);
    free(edge);
}
END_TEST

/*
 * st_keyspace.h: "Records returned borrow LMDB's memory until the transaction
 * ends or writes." A handler that looks up two keys (LCS, MSETNX-style
 * checks, ...) must still see the first record after the second lookup,
 * also when the values were decompressed or copied out of the cache.
 */
static void two_lookups(const uint8_t *a, size_t alen, const uint8_t *b,
                        size_t blen, int rounds)
{
    st_txn *t = wbegin();
    st_rec ra, rb;

    ck_assert_int_eq(putn(t, 0, "a", 1, a, alen, 0), 0);
    ck_assert_int_eq(putn(t, 0, "b", 1, b, blen, 0), 0);
    commit(&t);
    for (int round = 0; round < rounds; round++) {
        t = rbegin();
        ck_assert_int_eq(lookup(t, 0, "a", NOW, &ra), 0);
        ck_assert_int_eq(lookup(t, 0, "b", NOW, &rb), 0);
        ck_assert_uint_eq(rb.payload_len, blen);
        ck_assert_int_eq(memcmp(rb.payload, b, blen), 0);
        ck_assert_uint_eq(ra.payload_len, alen);
        ck_assert_msg(ra.payload != rb.payload &&
                      memcmp(ra.payload, a, alen) == 0,
                      "round %d (%s): the first record's payload changed "
                      "under the second lookup", round,
                      round ? "cache hits" : "first reads");
        commit(&t);
    }
}

START_TEST(test_two_lookups_compressed)
{
    uint8_t *a = compressible(4 * KIB, 'a');
    uint8_t *b = compressible(64 * KIB, 'b');  /* bigger: buffers regrow */

    two_lookups(a, 4 * KIB, b, 64 * KIB, 1);
    free(a);
    free(b);
}
END_TEST

START_TEST(test_two_lookups_cached)
{
    uint8_t *a = make_name(100, 1);          /* incompressible */
    uint8_t *b = make_name(3 * KIB, 2);

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
    uint8_t *a = compressible(alen, 'a');
    uint8_t *b = compressible(blen, 'b');
    st_txn *r, *w;
    st_rec ra, rb;
    size_t done;
    uint64_t ver;

    w = wbegin();
    ck_assert_int_eq(putn(w, 0, "a", 1, a, alen, 0), 0);
    ck_assert_int_eq(putn(w, 0, "b", 1, b, blen, 0), 0);
    commit(&w);
    expect_bytes(0, "a", a, alen);      /* cached, where there is a cache */
    expect_bytes(0, "b", b, blen);

    r = rbegin();
    ck_assert_int_eq(lookup(r, 0, "a", NOW, &ra), 0);
    w = wbegin();
    ck_assert_int_eq(put(w, 0, "other", "v", 0), 0);
    commit(&w);
    ck_assert_int_eq(st_keyspace_expire_due(env, NOW, BATCH_ALL, &done, &ver), 0);
    ck_assert_int_eq(lookup(r, 0, "b", NOW, &rb), 0);
    ck_assert_uint_eq(rb.payload_len, blen);
    ck_assert_int_eq(memcmp(rb.payload, b, blen), 0);
    ck_assert_uint_eq(ra.payload_len, alen);
    ck_assert_msg(memcmp(ra.payload, a, alen) == 0,
                  "a record of the open read transaction changed when a "
                  "write transaction of the same process ended");
    commit(&r);
    free(a);
    free(b);
}

/* The other way round: a write transaction's record outlives a read
 * transaction of the same process ending. */
START_TEST(test_write_survives_read)
{
    const size_t len = 4 * KIB;
    uint8_t *a = compressible(len, 'a');
    uint8_t *b = compressible(len, 'b');
    st_txn *r, *w;
    st_rec ra, rb;

    w = wbegin();
    ck_assert_int_eq(putn(w, 0, "a", 1, a, len, 0), 0);
    ck_assert_int_eq(putn(w, 0, "b", 1, b, len, 0), 0);
    commit(&w);
    w = wbegin();
    ck_assert_int_eq(lookup(w, 0, "a", NOW, &ra), 0);
    r = rbegin();
    ck_assert_int_eq(lookup(r, 0, "b", NOW, &rb), 0);
    commit(&r);
    r = rbegin();
    ck_assert_int_eq(lookup(r, 0, "b", NOW, &rb), 0);
    ck_assert_msg(memcmp(ra.payload, a, len) == 0,
                  "a record of the open write transaction changed when a "
                  "read transaction of the same process ended");
    commit(&r);
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
    read_survives_writes(256 * KIB, 4 * KIB);   /* bigger than a chunk */
}
END_TEST

START_TEST(test_cache_sees_writes)
{
    /* Reads through the cache never return what a committed write
     * superseded: overwrite, TTL change, delete, rename, flush. */
    uint64_t ver;
    size_t done;

    put1(0, "k", "v1", 0);
    expect(0, "k", "v1");               /* miss, fill */
    expect(0, "k", "v1");               /* hit */
    put1(0, "k", "v2", 0);
    expect(0, "k", "v2");
    expect(0, "k", "v2");
    put1(0, "k", "v3", NOW + SEC);
    expect(0, "k", "v3");
    ck_assert_int_eq(ttl_of(0, "k"), NOW + SEC);
    expect_at(0, "k", NULL, NOW + SEC); /* a cached entry expires too */
    {
        st_keyref kr;
        st_txn *t = wbegin();
        st_codec_keyref_init(&kr, 0, "k", 1);
        ck_assert_int_eq(st_keyspace_expire_set(t, &kr, NOW, 0), 0);
        commit(&t);
    }
    ck_assert_int_eq(ttl_of(0, "k"), 0);
    expect_at(0, "k", "v3", NOW + 2 * SEC);
    {
        st_keyref kr;
        st_txn *t = wbegin();
        st_codec_keyref_init(&kr, 0, "k", 1);
        ck_assert_int_eq(st_keyspace_delete(t, &kr, NOW), 0);
        commit(&t);
    }
    expect(0, "k", NULL);

    put1(0, "src", "s", 0);
    put1(0, "dst", "d", 0);
    expect(0, "src", "s");
    expect(0, "dst", "d");
    ck_assert_int_eq(do_rename(0, "src", "dst", 0), 0);
    expect(0, "dst", "s");
    expect(0, "src", NULL);
    put1(0, "c", "c1", 0);
    expect(0, "c", "c1");
    put1(1, "c", "other", 0);
    ck_assert_int_eq(do_copy(1, "c", 0, "c", 1), 0);
    expect(0, "c", "other");

    /* The same name in two databases is two cache entries. */
    put1(2, "same", "two", 0);
    put1(3, "same", "three", 0);
    expect(2, "same", "two");
    expect(3, "same", "three");
    expect(2, "same", "two");

    /* Active expiry, FLUSHALL. */
    put1(4, "e", "v", NOW + SEC);
    expect(4, "e", "v");
    done = expire_due(NOW + SEC, 10, &ver);
    ck_assert_uint_eq(done, 1);
    expect_at(4, "e", NULL, NOW + SEC);
    ck_assert_int_eq(st_keyspace_flush(env, -1, &ver), 0);
    expect(3, "same", NULL);
    expect(0, "c", NULL);
}
END_TEST

START_TEST(test_cache_flushdb)
{
    /*
     * FLUSHDB of one database while others hold keys (the chunked path)
     * must drop that database's cached values too.
     */
    uint64_t ver;

    put1(0, "bystander", "v", 0);
    put1(2, "same", "two", 0);
    put1(3, "same", "three", 0);
    expect(2, "same", "two");           /* now cached */
    expect(3, "same", "three");
    ck_assert_int_eq(st_keyspace_flush(env, 2, &ver), 0);
    counts(2, 0, 0);
    expect(2, "same", NULL);
    expect(3, "same", "three");
    expect(0, "bystander", "v");
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

    put1(0, "bystander", "v", 0);
    put1(4, "e", "v", NOW + SEC);
    expect(4, "e", "v");                /* cached with its expire-at */
    done = expire_due(NOW + SEC, 10, &ver);
    ck_assert_uint_eq(done, 1);
    counts(4, 0, 0);
    expect_at(4, "e", NULL, NOW + SEC - 1);
}
END_TEST

START_TEST(test_cache_value_shapes)
{
    /* Empty, binary and biggish values come back the same from a miss
     * and from a hit. */
    static const char binary[] = "a\0b\r\n\xff";
    uint8_t *big = make_name(100 * KIB, 9);
    st_txn *t = wbegin();

    ck_assert_int_eq(putn(t, 0, "empty", 5, "", 0, 0), 0);
    ck_assert_int_eq(putn(t, 0, "bin", 3, binary, sizeof binary, 0), 0);
    ck_assert_int_eq(putn(t, 0, "big", 3, big, 100 * KIB, 0), 0);
    commit(&t);
    for (int round = 0; round < 2; round++) {
        expect_bytes(0, "empty", "", 0);
        expect_bytes(0, "bin", binary, sizeof binary);
        expect_bytes(0, "big", big, 100 * KIB);
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
    const int nsmall = 62;              /* ~62 KB: most of a 64 KiB chunk */
    size_t big = shm_cache_max_item(cache) - NAME_SIZE;
    uint8_t *v = make_name(big, 21);
    uint8_t *small = make_name(small_len, 22);
    char name[NAME_SIZE];
    st_txn *t = wbegin();
    st_rec r, rs;

    ck_assert_uint_gt(big, small_len);
    ck_assert_int_eq(putn(t, 0, "big", 3, v, big, 0), 0);
    for (int i = 0; i < nsmall; i++) {
        snprintf(name, sizeof name, "s%d", i);
        ck_assert_int_eq(putn(t, 0, name, strlen(name), small, small_len, 0),
                         0);
    }
    commit(&t);
    for (int round = 0; round < 3; round++) {   /* fill, then hits */
        t = rbegin();
        ck_assert_int_eq(lookup(t, 0, "s0", NOW, &rs), 0);
        for (int i = 1; i < nsmall; i++) {
            snprintf(name, sizeof name, "s%d", i);
            ck_assert_int_eq(lookup(t, 0, name, NOW, &r), 0);
            ck_assert_int_eq(memcmp(r.payload, small, small_len), 0);
        }
        ck_assert_int_eq(lookup(t, 0, "big", NOW, &r), 0);
        ck_assert_uint_eq(r.payload_len, big);
        ck_assert_int_eq(memcmp(r.payload, v, big), 0);
        ck_assert_int_eq(memcmp(rs.payload, small, small_len), 0);
        commit(&t);
    }
    free(v);
    free(small);
}
END_TEST

START_TEST(test_cache_aborted_write)
{
    put1(0, "k", "v1", 0);
    expect(0, "k", "v1");
    {
        st_txn *t = wbegin();
        ck_assert_int_eq(put(t, 0, "k", "lost", 0), 0);
        st_txn_abort(&t);
    }
    expect(0, "k", "v1");
    expect(0, "k", "v1");
}
END_TEST

START_TEST(test_cache_other_process_writes)
{
    /*
     * DESIGN's invariant across processes: after another process commits
     * a write (overwrite, delete, FLUSHDB), this process never gets the
     * old value from the cache it filled before.
     */
    static const char *const ops[] = {"set", "del", "flushdb"};
    uint64_t ver;

    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
        pid_t pid;

        put1(0, "bystander", "v", 0);
        put1(1, "k", "old", 0);
        expect(1, "k", "old");          /* cached here */
        expect(1, "k", "old");
        pid = fork();
        ck_assert_int_ge(pid, 0);
        if (pid == 0) {
            st_env_opts o = { .dir = dir, .map_size = MAP_SIZE,
                              .databases = DATABASES, .nosync = 1,
                              .cache = cache };
            st_env *e = NULL;
            st_txn *t;
            st_keyref k;
            int rc;
            if (st_env_open(&o, &e))
                _exit(CHILD_FAILED);
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
            _exit(rc ? CHILD_FAILED : 0);
        }
        wait_ok(pid);
        expect(1, "k", i == 0 ? "new" : NULL);
        expect(1, "k", i == 0 ? "new" : NULL);
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

    put1(0, "a", "old-a", 0);
    put1(0, "b", "old-b", 0);
    r = rbegin();
    ck_assert_int_eq(lookup(r, 0, "a", NOW, &rec), 0);
    ck_assert_mem_eq(rec.payload, "old-a", 5);
    {
        st_txn *w = wbegin();
        ck_assert_int_eq(put(w, 0, "a", "new-a", 0), 0);
        ck_assert_int_eq(put(w, 0, "b", "new-b", 0), 0);
        commit(&w);
    }
    pid = fork();                       /* inherits the cache mapping */
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        st_env_opts o = { .dir = dir, .map_size = MAP_SIZE,
                          .databases = DATABASES, .nosync = 1,
                          .cache = cache };
        st_env *e = NULL;
        st_txn *t;
        st_keyref k;
        if (st_env_open(&o, &e) || st_txn_begin(e, 0, &t))
            _exit(CHILD_FAILED);
        st_codec_keyref_init(&k, 0, "b", 1);
        if (st_keyspace_lookup(t, &k, NOW, &rec) || rec.payload_len != 5 ||
            memcmp(rec.payload, "new-b", 5))
            _exit(CHILD_FAILED);
        _exit(0);
    }
    wait_ok(pid);
    ck_assert_int_eq(lookup(r, 0, "b", NOW, &rec), 0);
    ck_assert_uint_eq(rec.payload_len, 5);
    ck_assert_msg(memcmp(rec.payload, "old-b", 5) == 0,
                  "a read transaction saw old-a and then %.5s",
                  (const char *)rec.payload);
    commit(&r);
}
END_TEST

/* ------------------------------------------------------------------ */
/* model: random operations against a plain in-memory model */

#define MODEL_DBS 3
#define MODEL_SHORT 20
#define MODEL_LONG 4
#define MODEL_NAMES (MODEL_SHORT + MODEL_LONG)
#define MODEL_LONG_LEN 600
#define MODEL_OPS 3000
#define MODEL_CHECK_EVERY 50
#define MODEL_STEP_MS 10
#define MODEL_TTL_MS 2000
#define MODEL_VAL 2200              /* values up to this long */
#define MODEL_SEED 0x5eed1234u
#define MODEL_FLUSH_ODDS 20          /* one idle step in this many flushes */

typedef struct model_key {
    int present;                    /* stored (maybe expired, not reaped) */
    int64_t at;
    size_t len;
    char val[MODEL_VAL];
} model_key;

typedef struct model {
    model_key k[MODEL_DBS][MODEL_NAMES];
    uint8_t *names[MODEL_NAMES];
    size_t lens[MODEL_NAMES];
    int64_t now;
    uint32_t rng;
} model;

static uint32_t model_rand(model *m)
{
    m->rng ^= m->rng << 13;
    m->rng ^= m->rng >> 17;
    m->rng ^= m->rng << 5;
    return m->rng;
}

static int model_live(const model *m, const model_key *k)
{
    return k->present && (k->at == 0 || k->at > m->now);
}

/* A write transaction's lookup: an expired key is deleted on the spot. */
static int model_touch(model *m, model_key *k)
{
    if (k->present && !model_live(m, k))
        k->present = 0;
    return k->present;
}

/* An expire-at in the future that no stored key has (no ties). */
static int64_t model_unique_at(model *m)
{
    int64_t at = m->now + 1 + model_rand(m) % MODEL_TTL_MS;

    for (;;) {
        int clash = 0;
        for (int d = 0; d < MODEL_DBS; d++)
            for (int i = 0; i < MODEL_NAMES; i++)
                clash |= m->k[d][i].present && m->k[d][i].at == at;
        if (!clash)
            return at;
        at++;
    }
}

static void model_keyref(const model *m, st_keyref *k, int db, int i)
{
    st_codec_keyref_init(k, (unsigned)db, m->names[i], m->lens[i]);
}

static void model_verify(model *m)
{
    for (int d = 0; d < MODEL_DBS; d++) {
        uint64_t keys = 0, exps = 0, live = 0;
        collector c = {0};
        st_txn *t = rbegin();
        for (int i = 0; i < MODEL_NAMES; i++) {
            model_key *mk = &m->k[d][i];
            st_keyref k;
            st_rec r;
            int rc;
            model_keyref(m, &k, d, i);
            rc = st_keyspace_lookup(t, &k, m->now, &r);
            keys += mk->present;
            exps += mk->present && mk->at;
            live += model_live(m, mk);
            if (!model_live(m, mk)) {
                ck_assert_msg(rc == ST_ENOTFOUND,
                              "db %d name %d: rc %d, model says absent", d,
                              i, rc);
                continue;
            }
            ck_assert_msg(rc == 0, "db %d name %d: %s, model says present",
                          d, i, st_strerror(rc));
            ck_assert_int_eq(r.expire_at, mk->at);
            ck_assert_uint_eq(r.payload_len, mk->len);
            ck_assert_int_eq(memcmp(r.payload, mk->val, mk->len), 0);
        }
        commit(&t);
        counts((unsigned)d, keys, exps);
        scan_all((unsigned)d, 5, m->now, &c);
        ck_assert_uint_eq(c.n, live);
        for (int i = 0; i < MODEL_NAMES; i++)
            ck_assert_int_eq(times_seen(&c, m->names[i], m->lens[i]),
                             model_live(m, &m->k[d][i]));
        collector_free(&c);
    }
}

static void model_step(model *m, int op)
{
    int db = (int)(model_rand(m) % MODEL_DBS);
    int i = (int)(model_rand(m) % MODEL_NAMES);
    int db2 = (int)(model_rand(m) % MODEL_DBS);
    int j = (int)(model_rand(m) % MODEL_NAMES);
    int flag = (int)(model_rand(m) % 2);
    model_key *a = &m->k[db][i], *b = &m->k[db2][j];
    st_keyref ka, kb;
    st_txn *t;
    int rc, want;

    model_keyref(m, &ka, db, i);
    model_keyref(m, &kb, db2, j);
    switch (model_rand(m) % 8) {
    case 0:
    case 1: {                                   /* SET [PX] */
        int64_t at = flag ? model_unique_at(m) : 0;
        size_t len = model_rand(m) % 8 ? (size_t)snprintf(a->val,
                         sizeof a->val, "v%d", op)
                                       : MODEL_VAL;
        if (len == MODEL_VAL)
            for (size_t x = 0; x < len; x++)
                a->val[x] = (char)('a' + (op + (int)x / 50) % 26);
        t = wbegin();
        ck_assert_int_eq(st_keyspace_string_set(t, &ka, a->val, len, at), 0);
        commit(&t);
        a->present = 1;
        a->at = at;
        a->len = len;
        break;
    }
    case 2:                                     /* DEL */
        want = model_touch(m, a) ? 0 : ST_ENOTFOUND;
        t = wbegin();
        rc = st_keyspace_delete(t, &ka, m->now);
        commit(&t);
        ck_assert_int_eq(rc, want);
        a->present = 0;
        break;
    case 3: {                                   /* PEXPIREAT / PERSIST */
        int64_t at = flag ? model_unique_at(m) : 0;
        want = model_touch(m, a) ? 0 : ST_ENOTFOUND;
        t = wbegin();
        rc = st_keyspace_expire_set(t, &ka, m->now, at);
        commit(&t);
        ck_assert_int_eq(rc, want);
        if (rc == 0)
            a->at = at;
        break;
    }
    case 4:                                     /* RENAME[NX] in db */
        b = &m->k[db][j];
        model_keyref(m, &kb, db, j);
        if (!model_touch(m, a))
            want = ST_ENOTFOUND;
        else if (i == j)
            want = flag ? ST_EEXISTS : 0;
        else if (model_touch(m, b) && flag)
            want = ST_EEXISTS;
        else
            want = 0;
        t = wbegin();
        rc = st_keyspace_rename(t, &ka, &kb, m->now, flag);
        commit(&t);
        ck_assert_msg(rc == want, "op %d rename: rc %d want %d", op, rc,
                      want);
        if (rc == 0 && i != j) {
            *b = *a;
            a->present = 0;
        }
        break;
    case 5:                                     /* COPY [REPLACE] */
        if (!model_touch(m, a))
            want = ST_ENOTFOUND;
        else if (model_touch(m, b) && (!flag || a == b))
            want = ST_EEXISTS;
        else
            want = 0;
        t = wbegin();
        rc = st_keyspace_copy(t, &ka, &kb, m->now, flag);
        commit(&t);
        ck_assert_msg(rc == want, "op %d copy: rc %d want %d", op, rc, want);
        if (rc == 0)
            *b = *a;
        break;
    case 6: {                                   /* active expiry */
        size_t due = 0;
        for (int d = 0; d < MODEL_DBS; d++)
            for (int x = 0; x < MODEL_NAMES; x++)
                if (m->k[d][x].present && m->k[d][x].at &&
                    m->k[d][x].at <= m->now) {
                    m->k[d][x].present = 0;
                    due++;
                }
        ck_assert_uint_eq(expire_due(m->now, BATCH_ALL, NULL), due);
        break;
    }
    default:                            /* time passes; rarely a flush */
        if (model_rand(m) % MODEL_FLUSH_ODDS == 0) {
            uint64_t ver;
            ck_assert_int_eq(st_keyspace_flush(env, db, &ver), 0);
            for (int x = 0; x < MODEL_NAMES; x++)
                m->k[db][x].present = 0;
        }
        break;
    }
    m->now += MODEL_STEP_MS;
}

START_TEST(test_model_random_ops)
{
    model *m = calloc(1, sizeof *m);

    ck_assert_ptr_nonnull(m);
    m->rng = MODEL_SEED;
    m->now = NOW;
    for (int i = 0; i < MODEL_NAMES; i++) {
        if (i < MODEL_SHORT) {
            char tmp[NAME_SIZE];
            m->lens[i] = (size_t)snprintf(tmp, sizeof tmp, "k%d", i);
            m->names[i] = malloc(m->lens[i]);
            ck_assert_ptr_nonnull(m->names[i]);
            memcpy(m->names[i], tmp, m->lens[i]);
        } else {
            /* Long names sharing a long prefix, differing at the end. */
            m->lens[i] = MODEL_LONG_LEN;
            m->names[i] = make_name(MODEL_LONG_LEN, 42);
            m->names[i][MODEL_LONG_LEN - 1] = (uint8_t)i;
        }
    }
    for (int op = 0; op < MODEL_OPS; op++) {
        model_step(m, op);
        if (op % MODEL_CHECK_EVERY == 0)
            model_verify(m);
    }
    model_verify(m);
    for (int i = 0; i < MODEL_NAMES; i++)
        free(m->names[i]);
    free(m);
}
END_TEST

/* ------------------------------------------------------------------ */
/* processes: concurrent writers, crashes */

/* Open a private environment in a forked child (never the parent's). */
static st_env *child_env(void)
{
    st_env_opts o = { .dir = dir, .map_size = MAP_SIZE,
                      .databases = DATABASES, .nosync = 1 };
    st_env *e = NULL;

    if (st_env_open(&o, &e) != 0)
        _exit(CHILD_FAILED);
    return e;
}

static void wait_ok(pid_t pid)
{
    int status;

    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
                  "child status %d", status);
}

START_TEST(test_concurrent_writers)
{
    /* Processes writing at once: every write and every count lands. */
    pid_t pids[WRITERS];

    st_env_close(&env);                 /* no handle crosses fork */
    for (int w = 0; w < WRITERS; w++) {
        pids[w] = fork();
        ck_assert_int_ge(pids[w], 0);
        if (pids[w] == 0) {
            st_env *e = child_env();
            char name[NAME_SIZE];
            for (int i = 0; i < WRITES_EACH; i++) {
                st_txn *t;
                st_keyref k;
                snprintf(name, sizeof name, "w%d:%d", w, i);
                st_codec_keyref_init(&k, 0, name, strlen(name));
                if (st_txn_begin(e, 1, &t) ||
                    st_keyspace_string_set(t, &k, "v", 1, i % 2 ? NOW + SEC : 0) ||
                    st_txn_commit(&t))
                    _exit(CHILD_FAILED);
            }
            st_env_close(&e);
            _exit(0);
        }
    }
    for (int w = 0; w < WRITERS; w++)
        wait_ok(pids[w]);
    env_open();
    counts(0, WRITERS * WRITES_EACH, WRITERS * WRITES_EACH / 2);
    expect(0, "w3:299", "v");
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
    put1(0, "before", "v", 0);
    pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        st_env *e = child_env();
        st_txn *t;
        st_keyref k;
        st_codec_keyref_init(&k, 0, "ghost", 5);
        if (st_txn_begin(e, 1, &t) || st_keyspace_string_set(t, &k, "v", 1, 0))
            _exit(CHILD_FAILED);
        _exit(0);                       /* dies holding the writer lock */
    }
    wait_ok(pid);
    ck_assert_int_eq(st_env_reader_check(env, &dead), 0);
    {
        st_txn *t = wbegin();
        ck_assert_int_eq(lookup(t, 0, "ghost", NOW, &r), ST_ENOTFOUND);
        ck_assert_int_eq(put(t, 0, "after", "v", 0), 0);
        commit(&t);
    }
    expect(0, "before", "v");
    expect(0, "after", "v");
    counts(0, 2, 0);
}
END_TEST

START_TEST(test_reader_dies_in_txn)
{
    /* The reader slot of a dead process is found and cleared. */
    pid_t pid;
    int dead = 0;

    put1(0, "k", "v", 0);
    pid = fork();                       /* parent keeps env open, as above */
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        st_env *e = child_env();
        st_txn *t;
        if (st_txn_begin(e, 0, &t))
            _exit(CHILD_FAILED);
        _exit(0);                       /* dies holding a reader slot */
    }
    wait_ok(pid);
    ck_assert_int_eq(st_env_reader_check(env, &dead), 0);
    ck_assert_int_eq(dead, 1);
    ck_assert_int_eq(st_env_reader_check(env, &dead), 0);
    ck_assert_int_eq(dead, 0);
    expect(0, "k", "v");
}
END_TEST

/* ------------------------------------------------------------------ */
/* encoding units */

START_TEST(test_keyref_forms)
{
    uint8_t *name = make_name(MIB, 3);
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
    ck_assert_int_eq(memcmp(k.enc + ST_KEY_HEAD_BYTES, name,
                            ST_KEY_INLINE_MAX), 0);

    for (size_t len = ST_KEY_INLINE_MAX + 1; len <= MIB;
         len = len < 2 * KIB ? len + 1 : len * 2) {
        st_codec_keyref_init(&k, 1, name, len);
        ck_assert(k.is_long);
        ck_assert_uint_eq(k.enc_len, ST_LMDB_MAXKEY);
        ck_assert_uint_eq(st_codec_get_be16(k.enc), 1);
        ck_assert_uint_eq(st_codec_get_be64(k.enc + ST_KEY_DB_BYTES), k.hash);
        ck_assert_uint_eq(k.hash, st_codec_scan_hash(name, len));
        ck_assert_int_eq(memcmp(k.enc + ST_KEY_LONG_STEM +
                                    ST_KEY_PROBE_BYTES,
                                name, ST_KEY_LONG_PREFIX), 0);
    }
    /* The digest form is exactly LMDB's key limit. */
    ck_assert_uint_eq(ST_KEY_LONG_STEM + ST_KEY_PROBE_BYTES +
                          ST_KEY_LONG_PREFIX, ST_LMDB_MAXKEY);
    free(name);
}
END_TEST

START_TEST(test_keyref_digest_differs)
{
    /* Two long names with the same prefix get different stems. */
    uint8_t *a = make_name(4 * KIB, 9), *b = malloc(4 * KIB);
    st_keyref ka, kb;

    ck_assert_ptr_nonnull(b);
    memcpy(b, a, 4 * KIB);
    b[4 * KIB - 1] ^= 1;
    st_codec_keyref_init(&ka, 0, a, 4 * KIB);
    st_codec_keyref_init(&kb, 0, b, 4 * KIB);
    ck_assert_int_ne(memcmp(ka.enc, kb.enc, ST_KEY_LONG_STEM), 0);
    ck_assert_int_eq(memcmp(ka.enc + ST_KEY_LONG_STEM + ST_KEY_PROBE_BYTES,
                            kb.enc + ST_KEY_LONG_STEM + ST_KEY_PROBE_BYTES,
                            ST_KEY_LONG_PREFIX), 0);
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
    ck_assert_uint_ne(st_codec_hash64("abc", 3, 1), st_codec_hash64("abc", 3, 2));
    ck_assert_uint_eq(st_codec_hash64("abc", 3, 1), st_codec_hash64("abc", 3, 1));
}
END_TEST

START_TEST(test_big_endian)
{
    uint8_t b[8];
    static const uint8_t want64[8] = {1, 2, 3, 4, 5, 6, 7, 8};

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
    uint8_t *name = make_name(600, 4);
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
    payload = st_codec_rec_encode_head(buf, &k, ST_TYPE_HASH, ST_REC_ZSTD, 7, 0);
    ck_assert_ptr_eq(payload, buf + ST_REC_HEADER + 600);
    memset(payload, 'p', 8);
    ck_assert_int_eq(st_codec_rec_decode(buf, sizeof buf, &r), 0);
    ck_assert_int_eq(r.type, ST_TYPE_HASH);
    ck_assert_uint_eq(r.flags, ST_REC_LONGNAME | ST_REC_ZSTD);
    ck_assert_uint_eq(r.name_len, 600);
    ck_assert_int_eq(memcmp(r.name, name, 600), 0);
    ck_assert_uint_eq(r.payload_len, 8);

    /* Corrupt records are refused. */
    ck_assert_int_eq(st_codec_rec_decode(buf, ST_REC_HEADER - 1, &r), ST_ECORRUPT);
    ck_assert_int_eq(st_codec_rec_decode(buf, ST_REC_HEADER + 599, &r),
                     ST_ECORRUPT);
    buf[0] = 0;
    ck_assert_int_eq(st_codec_rec_decode(buf, sizeof buf, &r), ST_ECORRUPT);
    buf[0] = ST_TYPE_HASH + 1;
    ck_assert_int_eq(st_codec_rec_decode(buf, sizeof buf, &r), ST_ECORRUPT);
    free(name);
}
END_TEST

static Suite *storage_suite(void)
{
    Suite *s = suite_create("storage");
    TCase *tc;

    tc = tcase_create("env");
    tcase_add_unchecked_fixture(tc, root_setup, root_teardown);
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, TIMEOUT_S);
    tcase_add_test(tc, test_open_close_reopen);
    tcase_add_test(tc, test_schema_stamp);
    tcase_add_test(tc, test_reopen_other_databases);
    tcase_add_test(tc, test_map_full);
    tcase_add_test(tc, test_open_errors);
    tcase_add_test(tc, test_txn_rules);
    tcase_add_test(tc, test_backup);
    suite_add_tcase(s, tc);

    tc = tcase_create("core");
    tcase_add_unchecked_fixture(tc, root_setup, root_teardown);
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, TIMEOUT_S);
    tcase_add_test(tc, test_string_round_trip);
    tcase_add_test(tc, test_string_big_value);
    tcase_add_test(tc, test_versions);
    tcase_add_test(tc, test_delete);
    tcase_add_test(tc, test_rename);
    tcase_add_test(tc, test_copy);
    tcase_add_test(tc, test_dbsize);
    suite_add_tcase(s, tc);

    tc = tcase_create("expiry");
    tcase_add_unchecked_fixture(tc, root_setup, root_teardown);
    tcase_add_checked_fixture(tc, setup, teardown);
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
    tcase_add_unchecked_fixture(tc, root_setup, root_teardown);
    tcase_add_checked_fixture(tc, setup, teardown);
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

    tc = tcase_create("limits");
    tcase_add_unchecked_fixture(tc, root_setup, root_teardown);
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, TIMEOUT_S);
    tcase_add_test(tc, test_long_names);
    tcase_add_test(tc, test_long_names_expiry);
    tcase_add_test(tc, test_long_names_shared_prefix);
    tcase_add_test(tc, test_long_names_flush);
    suite_add_tcase(s, tc);

    tc = tcase_create("compress");
    tcase_add_unchecked_fixture(tc, root_setup, root_teardown);
    tcase_add_checked_fixture(tc, setup_compress, teardown);
    tcase_set_timeout(tc, TIMEOUT_S);
    tcase_add_test(tc, test_compress_round_trip);
    tcase_add_test(tc, test_two_lookups_compressed);
    tcase_add_test(tc, test_read_survives_write_small);
    tcase_add_test(tc, test_read_survives_write_big);
    tcase_add_test(tc, test_write_survives_read);
    suite_add_tcase(s, tc);

    tc = tcase_create("cache");
    tcase_add_unchecked_fixture(tc, root_setup, root_teardown);
    tcase_add_checked_fixture(tc, setup_cache, teardown_cache);
    tcase_set_timeout(tc, TIMEOUT_S);
    tcase_add_test(tc, test_two_lookups_cached);
    tcase_add_test(tc, test_read_survives_write_small);
    tcase_add_test(tc, test_read_survives_write_big);
    tcase_add_test(tc, test_write_survives_read);
    tcase_add_test(tc, test_cache_sees_writes);
    tcase_add_test(tc, test_cache_aborted_write);
    tcase_add_test(tc, test_cache_value_shapes);
    tcase_add_test(tc, test_cache_big_hit);
    tcase_add_test(tc, test_cache_flushdb);
    tcase_add_test(tc, test_cache_expire_due_early_reader);
    tcase_add_test(tc, test_cache_snapshot_isolation);
    tcase_add_test(tc, test_cache_other_process_writes);
    suite_add_tcase(s, tc);

    tc = tcase_create("model");
    tcase_add_unchecked_fixture(tc, root_setup, root_teardown);
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, TIMEOUT_S);
    tcase_add_test(tc, test_model_random_ops);
    suite_add_tcase(s, tc);

    tc = tcase_create("writemap");
    tcase_add_unchecked_fixture(tc, root_setup, root_teardown);
    tcase_add_checked_fixture(tc, setup_writemap, teardown);
    tcase_set_timeout(tc, TIMEOUT_S);
    tcase_add_test(tc, test_string_round_trip);
    tcase_add_test(tc, test_map_full);
    tcase_add_test(tc, test_model_random_ops);
    suite_add_tcase(s, tc);

    tc = tcase_create("model_cache");
    tcase_add_unchecked_fixture(tc, root_setup, root_teardown);
    tcase_add_checked_fixture(tc, setup_cache, teardown_cache);
    tcase_set_timeout(tc, TIMEOUT_S);
    tcase_add_test(tc, test_model_random_ops);
    suite_add_tcase(s, tc);

    tc = tcase_create("processes");
    tcase_add_unchecked_fixture(tc, root_setup, root_teardown);
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, TIMEOUT_S);
    tcase_add_test(tc, test_concurrent_writers);
    tcase_add_test(tc, test_writer_dies_in_txn);
    tcase_add_test(tc, test_reader_dies_in_txn);
    suite_add_tcase(s, tc);

    tc = tcase_create("encoding");
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
    SRunner *sr = srunner_create(storage_suite());
    int failed;

    srunner_run_all(sr, CK_ENV);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
