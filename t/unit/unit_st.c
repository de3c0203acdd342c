/*
 * unit_st.c - the storage suites' shared fixture and helpers (see
 * unit_st.h).
 */
#include "t/unit/unit_st.h"
#include "storage/st_codec.h"
#include "storage/st_err.h"
#include "storage/st_string.h"
#include "t/unit/unit_tmp.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define SCAN_STEPS_MAX 100000 /* more steps than any test's keys: a loop */
#define NAMES_FIRST_CAP 64

char unit_st_root[UNIT_ST_ROOT_SIZE];
char unit_st_dir[UNIT_ST_DIR_SIZE];
st_env *unit_st_env;
shm_cache_t *unit_st_cache;

/* The options of the fixture's environment, set by the kind's setup. */
static size_t compress_threshold;
static int writemap;

static st_env_opts fixture_opts(unsigned databases, uint64_t map_size)
{
    st_env_opts o = {
        .dir = unit_st_dir,
        .map_size = map_size,
        .databases = databases,
        .max_readers = 0,
        .nosync = 1,
        .writemap = writemap,
        .cache = unit_st_cache,
        .compress_threshold = compress_threshold,
        .compress_level = UNIT_ST_COMPRESS_LEVEL,
    };

    return o;
}

void unit_st_env_open(void)
{
    st_env_opts o = fixture_opts(UNIT_ST_DATABASES, UNIT_ST_MAP_SIZE);
    int rc = st_env_open(&o, &unit_st_env);

    ck_assert_msg(rc == 0, "st_env_open: %s", st_strerror(rc));
}

int unit_st_env_reopen(unsigned databases, uint64_t map_size)
{
    st_env_opts o = fixture_opts(databases, map_size);

    st_env_close(&unit_st_env);
    return st_env_open(&o, &unit_st_env);
}

static void root_setup(void)
{
    unit_tmp_make(unit_st_root, sizeof unit_st_root,
                  program_invocation_short_name);
}

static void root_teardown(void) { unit_tmp_remove(unit_st_root); }

/* A fresh directory for this test and an environment in it. */
static void env_setup(size_t threshold, int map_writes)
{
    compress_threshold = threshold;
    writemap = map_writes;
    snprintf(unit_st_dir, sizeof unit_st_dir, "%s/env.XXXXXX", unit_st_root);
    ck_assert_ptr_nonnull(mkdtemp(unit_st_dir));
    unit_st_env_open();
}

static void setup_plain(void) { env_setup(0, 0); }

static void setup_compress(void) { env_setup(UNIT_ST_COMPRESS_THRESHOLD, 0); }

static void setup_writemap(void) { env_setup(0, 1); }

static void setup_cache(void)
{
    shm_cache_opts_t co = { .budget_bytes = UNIT_ST_CACHE_BUDGET };

    ck_assert_int_eq(shm_cache_create(&co, &unit_st_cache), 0);
    ck_assert(shm_cache_enabled(unit_st_cache));
    env_setup(UNIT_ST_COMPRESS_THRESHOLD, 0);
}

static void rm_env_files(void)
{
    static const char *const files[] = { "data.mdb", "lock.mdb" };
    char path[UNIT_ST_DIR_SIZE + 16];

    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        snprintf(path, sizeof path, "%s/%s", unit_st_dir, files[i]);
        unlink(path);
    }
}

static void teardown(void)
{
    st_env_close(&unit_st_env);
    rm_env_files();
    rmdir(unit_st_dir);
    shm_cache_destroy(&unit_st_cache);
}

void unit_st_fixture(TCase *tc, enum unit_st_kind kind)
{
    static void (*const setups[])(void) = {
        [UNIT_ST_PLAIN] = setup_plain,
        [UNIT_ST_COMPRESS] = setup_compress,
        [UNIT_ST_WRITEMAP] = setup_writemap,
        [UNIT_ST_CACHE] = setup_cache,
    };

    tcase_add_unchecked_fixture(tc, root_setup, root_teardown);
    tcase_add_checked_fixture(tc, setups[kind], teardown);
}

st_env *unit_st_child_env(void)
{
    st_env_opts o = { .dir = unit_st_dir,
                      .map_size = UNIT_ST_MAP_SIZE,
                      .databases = UNIT_ST_DATABASES,
                      .nosync = 1 };
    st_env *e = NULL;

    if (st_env_open(&o, &e) != 0)
        _exit(UNIT_ST_CHILD_FAILED);
    return e;
}

void unit_st_wait_ok(pid_t pid)
{
    int status;

    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
                  "child status %d", status);
}

st_txn *unit_st_wbegin(void)
{
    st_txn *t;

    ck_assert_int_eq(st_txn_begin(unit_st_env, 1, &t), 0);
    return t;
}

st_txn *unit_st_rbegin(void)
{
    st_txn *t;

    ck_assert_int_eq(st_txn_begin(unit_st_env, 0, &t), 0);
    return t;
}

void unit_st_commit(st_txn **t)
{
    int rc = st_txn_commit(t);

    ck_assert_msg(rc == 0, "commit: %s", st_strerror(rc));
    ck_assert_ptr_null(*t);
}

int unit_st_putn(st_txn *t, unsigned db, const void *name, size_t nlen,
                 const void *val, size_t vlen, int64_t at)
{
    st_keyref k;

    st_codec_keyref_init(&k, db, name, nlen);
    return st_keyspace_string_set(t, &k, val, vlen, at);
}

int unit_st_put(st_txn *t, unsigned db, const char *name, const char *val,
                int64_t at)
{
    return unit_st_putn(t, db, name, strlen(name), val, strlen(val), at);
}

void unit_st_put1(unsigned db, const char *name, const char *val, int64_t at)
{
    st_txn *t = unit_st_wbegin();

    ck_assert_int_eq(unit_st_put(t, db, name, val, at), 0);
    unit_st_commit(&t);
}

int unit_st_lookupn(st_txn *t, unsigned db, const void *name, size_t nlen,
                    int64_t now, st_rec *r)
{
    st_keyref k;

    st_codec_keyref_init(&k, db, name, nlen);
    return st_keyspace_lookup(t, &k, now, r);
}

int unit_st_lookup(st_txn *t, unsigned db, const char *name, int64_t now,
                   st_rec *r)
{
    return unit_st_lookupn(t, db, name, strlen(name), now, r);
}

void unit_st_expect_at(unsigned db, const char *name, const char *val,
                       int64_t now)
{
    st_txn *t = unit_st_rbegin();
    st_rec r;
    int rc = unit_st_lookup(t, db, name, now, &r);

    if (!val) {
        ck_assert_msg(rc == ST_ENOTFOUND, "db %u '%s': rc %d, want absent", db,
                      name, rc);
    } else {
        ck_assert_msg(rc == 0, "db %u '%s': %s", db, name, st_strerror(rc));
        ck_assert_int_eq(r.type, ST_TYPE_STRING);
        size_t n;
        const uint8_t *p = unit_st_bytes(t, &r, &n);
        ck_assert_uint_eq(n, strlen(val));
        ck_assert_mem_eq(p, val, strlen(val));
    }
    unit_st_commit(&t);
}

void unit_st_expect(unsigned db, const char *name, const char *val)
{
    unit_st_expect_at(db, name, val, UNIT_ST_NOW);
}

void unit_st_expect_bytes(unsigned db, const char *name, const void *val,
                          size_t len)
{
    st_txn *t = unit_st_rbegin();
    st_rec r;

    ck_assert_int_eq(unit_st_lookup(t, db, name, UNIT_ST_NOW, &r), 0);
    size_t n;
    const uint8_t *p = unit_st_bytes(t, &r, &n);
    ck_assert_uint_eq(n, len);
    ck_assert_int_eq(memcmp(p, val, len), 0);
    ck_assert_uint_eq(r.flags & ST_REC_ZSTD, 0); /* handed out inflated */
    unit_st_commit(&t);
}

const uint8_t *unit_st_bytes(st_txn *t, const st_rec *r, size_t *len)
{
    const uint8_t *p;

    ck_assert_int_eq(st_string_flat(t, r, &p, len), 0);
    return p;
}

int64_t unit_st_ttl_of(unsigned db, const char *name)
{
    st_txn *t = unit_st_rbegin();
    st_rec r;
    int64_t at;

    ck_assert_int_eq(unit_st_lookup(t, db, name, UNIT_ST_NOW, &r), 0);
    at = r.expire_at;
    unit_st_commit(&t);
    return at;
}

void unit_st_counts(unsigned db, uint64_t want_keys, uint64_t want_expires)
{
    st_txn *t = unit_st_rbegin();
    uint64_t keys, expires;

    ck_assert_int_eq(st_keyspace_dbsize(t, db, &keys, &expires), 0);
    unit_st_commit(&t);
    ck_assert_msg(keys == want_keys && expires == want_expires,
                  "db %u: %llu keys, %llu with TTL; want %llu, %llu", db,
                  (unsigned long long)keys, (unsigned long long)expires,
                  (unsigned long long)want_keys,
                  (unsigned long long)want_expires);
}

size_t unit_st_expire_due(int64_t now, size_t max, uint64_t *ver)
{
    size_t done = 0;
    uint64_t v;
    int rc = st_keyspace_expire_due(unit_st_env, now, max, &done,
                                    ver ? ver : &v);

    ck_assert_msg(rc == 0, "st_keyspace_expire_due: %s", st_strerror(rc));
    return done;
}

int unit_st_rename(unsigned db, const char *src, const char *dst, int nx)
{
    st_txn *t = unit_st_wbegin();
    st_keyref s, d;
    int rc;

    st_codec_keyref_init(&s, db, src, strlen(src));
    st_codec_keyref_init(&d, db, dst, strlen(dst));
    rc = st_keyspace_rename(t, &s, &d, UNIT_ST_NOW, nx);
    unit_st_commit(&t);
    return rc;
}

int unit_st_copy(unsigned sdb, const char *src, unsigned ddb, const char *dst,
                 int replace)
{
    st_txn *t = unit_st_wbegin();
    st_keyref s, d;
    int rc;

    st_codec_keyref_init(&s, sdb, src, strlen(src));
    st_codec_keyref_init(&d, ddb, dst, strlen(dst));
    rc = st_keyspace_copy(t, &s, &d, UNIT_ST_NOW, replace);
    unit_st_commit(&t);
    return rc;
}

int unit_st_collect(void *ctx, const uint8_t *name, size_t len, int type,
                    int64_t at)
{
    unit_st_names *c = ctx;

    if (c->n == c->cap) {
        c->cap = c->cap ? c->cap * 2 : NAMES_FIRST_CAP;
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

void unit_st_names_free(unit_st_names *c)
{
    for (size_t i = 0; i < c->n; i++)
        free(c->v[i].p);
    free(c->v);
    memset(c, 0, sizeof *c);
}

int unit_st_times_seen(const unit_st_names *c, const void *name, size_t len)
{
    int n = 0;

    for (size_t i = 0; i < c->n; i++)
        if (c->v[i].len == len &&
            (len == 0 || memcmp(c->v[i].p, name, len) == 0))
            n++;
    return n;
}

size_t unit_st_scan_all(unsigned db, size_t count, int64_t now,
                        unit_st_names *c)
{
    uint64_t cursor = 0;
    size_t steps = 0;

    do {
        st_txn *t = unit_st_rbegin();
        int rc = st_keyspace_scan(t, db, cursor, count, now, unit_st_collect, c,
                                  &cursor);

        ck_assert_msg(rc == 0, "scan: %s", st_strerror(rc));
        unit_st_commit(&t);
        steps++;
        ck_assert_uint_le(steps, SCAN_STEPS_MAX);
    } while (cursor != 0);
    return steps;
}

uint8_t *unit_st_make_name(size_t len, unsigned salt)
{
    uint8_t *p = malloc(len ? len : 1);
    uint32_t x = 2463534242u ^ salt; /* xorshift32 from a fixed seed */

    ck_assert_ptr_nonnull(p);
    for (size_t i = 0; i < len; i++) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        p[i] = (uint8_t)x;
    }
    return p;
}

uint8_t *unit_st_compressible(size_t len, char c)
{
    uint8_t *v = malloc(len ? len : 1);

    ck_assert_ptr_nonnull(v);
    for (size_t i = 0; i < len; i++)
        v[i] = (uint8_t)(c + (char)(i % 7));
    return v;
}
