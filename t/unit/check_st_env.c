/*
 * check_st_env: unit tests of the LMDB environment (storage/st_env.h):
 * open, close and reopen (with fewer databases too), the schema stamp
 * and a newer one refused, open errors, backups (also with a read
 * transaction open), a full map (also with writemap), the blocks kept
 * allocated ahead with writemap, the reader slot
 * of a process that died inside a read transaction, and the observer
 * (commits and aborts, keys created, keys expired lazily, by the reaper
 * and by the reap of what reads saw, long names included).
 */
#include "storage/st_codec.h"
#include "storage/st_coll.h"
#include "storage/st_err.h"
#include "storage/st_keyspace.h"
#include "storage/st_list.h"
#include "storage/st_string.h"
#include "storage/st_txn.h"
#include "t/unit/unit_st.h"

#include <check.h>
#include <errno.h>
#include <lmdb.h>
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
#define MIB (1024 * 1024)
#define FILL_TRIES 1000
#define MANY_KEYS 100

START_TEST(test_open_close_reopen)
{
    st_env_stat st;

    ck_assert_uint_eq(st_env_databases(unit_st_env), UNIT_ST_DATABASES);
    unit_st_put1(0, "persist", "me", 0);
    ck_assert_int_eq(st_env_sync(unit_st_env), 0);
    ck_assert_int_eq(st_env_stat_get(unit_st_env, &st), 0);
    ck_assert_uint_eq(st.map_size, UNIT_ST_MAP_SIZE);
    ck_assert_uint_gt(st.used_bytes, 0);
    ck_assert_uint_gt(st.file_bytes, 0);
    ck_assert_uint_gt(st.last_txn, 0);
    ck_assert_uint_gt(st.readers_max, 0);
    st_env_close(&unit_st_env);
    ck_assert_ptr_null(unit_st_env);
    st_env_close(&unit_st_env); /* closing NULL is harmless */

    unit_st_env_open();
    unit_st_expect(0, "persist", "me");
    unit_st_counts(0, 1, 0);
    st_env_close(&unit_st_env);
    unit_st_env_open();
    unit_st_expect(0, "persist", "me");

    /* Versions keep growing across a reopen (WATCH relies on it). */
    {
        st_txn *t = unit_st_wbegin();
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

    unit_st_put1(0, "zero", "v", 0);
    unit_st_put1(5, "five", "v", NOW + 100 * SEC);
    rc = unit_st_env_reopen(4, UNIT_ST_MAP_SIZE);
    if (rc == 0) {
        unit_st_put1(0, "zero2", "v", 0);
        unit_st_counts(0, 2, 0);
        /* FLUSHDB 0 holds every key of dbs 0..3, not of db 5. */
        ck_assert_int_eq(st_keyspace_flush(unit_st_env, 0, &ver), 0);
        unit_st_put1(0, "zero", "v", 0);
    }
    ck_assert_int_eq(unit_st_env_reopen(UNIT_ST_DATABASES, UNIT_ST_MAP_SIZE),
                     0);
    unit_st_counts(5, 1, 1);
    unit_st_expect(5, "five", "v");
    ck_assert_int_eq(st_keyspace_flush(unit_st_env, 0, &ver), 0);
    unit_st_expect(5, "five", "v");
    unit_st_counts(5, 1, 1);
    unit_st_counts(0, 0, 0);
}
END_TEST

START_TEST(test_map_full)
{
    /* A full map fails writes with ST_EFULL; reads and deletes go on. */
    const size_t vlen = 16 * KIB;
    uint8_t *v = unit_st_make_name(vlen, 11);
    char name[NAME_SIZE];
    int rc = 0, i, stored = 0;

    ck_assert_int_eq(unit_st_env_reopen(UNIT_ST_DATABASES, MIB), 0);
    for (i = 0; rc == 0 && i < FILL_TRIES; i++) {
        st_txn *t = unit_st_wbegin();
        snprintf(name, sizeof name, "fill%d", i);
        rc = unit_st_putn(t, 0, name, strlen(name), v, vlen, 0);
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
    unit_st_counts(0, (uint64_t)stored, 0);
    {
        st_txn *t = unit_st_rbegin();
        st_rec r;
        ck_assert_int_eq(unit_st_lookup(t, 0, "fill0", NOW, &r), 0);
        size_t n;
        const uint8_t *p = unit_st_bytes(t, &r, &n);
        ck_assert_uint_eq(n, vlen);
        ck_assert_int_eq(memcmp(p, v, vlen), 0);
        unit_st_commit(&t);
    }
    /* Deleting makes room again. */
    {
        st_txn *t = unit_st_wbegin();
        st_keyref k;
        for (int j = 0; j < stored; j++) {
            snprintf(name, sizeof name, "fill%d", j);
            st_codec_keyref_init(&k, 0, name, strlen(name));
            ck_assert_int_eq(st_keyspace_delete(t, &k, NOW), 0);
        }
        unit_st_commit(&t);
    }
    unit_st_counts(0, 0, 0);
    /* Whatever the deletes detached (collections, spans of chunked
     * strings) is freed lazily, as the reaper does it. */
    {
        size_t freed;
        uint64_t pending = 1;
        while (pending)
            ck_assert_int_eq(st_coll_free_chunk(unit_st_env, ST_CHUNK_KEYS,
                                                &freed, &pending),
                             0);
    }
    /*
     * LMDB reuses pages freed by transaction N from N + 2 on (and a big
     * value wants a contiguous run), so one small write goes first.
     */
    unit_st_put1(0, "tick", "v", 0);
    {
        st_txn *t = unit_st_wbegin();
        ck_assert_int_eq(unit_st_putn(t, 0, "again", 5, v, vlen, 0), 0);
        unit_st_commit(&t);
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
    ck_assert_int_eq(mdb_env_open(e, unit_st_dir, 0, 0600), 0);
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

/* Room ahead (st_room.h): this much of the data file's blocks may lie
 * past its last page (a step, or 1/16 of the file), plus a page. */
#define ROOM_SLACK(used) ((64ull * MIB) + (used) / 16 + 4 * KIB)
#define ROOM_VALUES 64

START_TEST(test_writemap_room)
{
    /* Every page LMDB has used has a block (allocated = du >= used) and
     * what is allocated ahead is bounded; the test's filesystem
     * supports fallocate, so the room is kept. */
    const size_t vlen = 64 * KIB;
    uint8_t *v = unit_st_make_name(vlen, 7);
    char name[NAME_SIZE];
    st_env_stat st;

    ck_assert_int_eq(st_env_room_unguarded(unit_st_env), 0);
    for (int round = 0; round < 2; round++) {
        st_txn *t = unit_st_wbegin();
        for (int i = 0; i < ROOM_VALUES; i++) {
            snprintf(name, sizeof name, "room%d-%d", round, i);
            ck_assert_int_eq(unit_st_putn(t, 0, name, strlen(name), v, vlen, 0),
                             0);
        }
        unit_st_commit(&t);
        ck_assert_int_eq(st_env_stat_get(unit_st_env, &st), 0);
        ck_assert_uint_ge(st.file_bytes, st.used_bytes);
        ck_assert_uint_le(st.file_bytes,
                          st.used_bytes + ROOM_SLACK(st.used_bytes));
        ck_assert_uint_lt(st.file_bytes, st.map_size);
    }
    ck_assert_int_eq(st_env_room_errno(unit_st_env), 0);
    free(v);
}
END_TEST

START_TEST(test_schema_stamp)
{
    uint32_t ver = 0;
    st_env_opts o = { .dir = unit_st_dir,
                      .map_size = UNIT_ST_MAP_SIZE,
                      .databases = UNIT_ST_DATABASES,
                      .nosync = 1 };
    int rc;

    st_env_close(&unit_st_env);
    ck_assert_int_eq(raw_schema(&ver, 0), 0);
    ck_assert_uint_eq(ver, ST_SCHEMA_VERSION);
    /* The oldest migrated version opens, stamped as the current one. */
    ck_assert_int_eq(raw_schema(&ver, ST_SCHEMA_MIGRATES_FROM), 0);
    ck_assert_int_eq(st_env_open(&o, &unit_st_env), 0);
    st_env_close(&unit_st_env);
    ck_assert_int_eq(raw_schema(&ver, 0), 0);
    ck_assert_uint_eq(ver, ST_SCHEMA_VERSION);
    /* A newer schema on disk is refused, not used. */
    ck_assert_int_eq(raw_schema(&ver, ST_SCHEMA_VERSION + 1), 0);
    rc = st_env_open(&o, &unit_st_env);
    ck_assert_int_eq(rc, ST_ESCHEMA);
    ck_assert_ptr_null(unit_st_env);
}
END_TEST

START_TEST(test_open_errors)
{
    char path[UNIT_ST_DIR_SIZE + 16];
    st_env_opts o = { .dir = path, .nosync = 1 };
    st_env *e = NULL;
    FILE *f;

    /* The directory is a plain file. */
    snprintf(path, sizeof path, "%s/file", unit_st_dir);
    f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fclose(f);
    ck_assert_int_gt(st_env_open(&o, &e), 0);
    ck_assert_ptr_null(e);
    unlink(path);
    /* Its parent does not exist. */
    snprintf(path, sizeof path, "%s/no/such", unit_st_dir);
    ck_assert_int_eq(st_env_open(&o, &e), ENOENT);
    ck_assert_ptr_null(e);
}
END_TEST

/* Open a backup file as an environment of its own and check it. */
static void check_backup(const char *file, int want_keys)
{
    char bdir[UNIT_ST_DIR_SIZE + 32], data[UNIT_ST_DIR_SIZE + 48];
    st_env_opts o = { .map_size = UNIT_ST_MAP_SIZE,
                      .databases = UNIT_ST_DATABASES,
                      .nosync = 1 };
    st_env *saved = unit_st_env;
    uint64_t keys, exp;
    st_txn *t;
    st_rec r;

    snprintf(bdir, sizeof bdir, "%s/restore.XXXXXX", unit_st_root);
    ck_assert_ptr_nonnull(mkdtemp(bdir));
    snprintf(data, sizeof data, "%s/data.mdb", bdir);
    ck_assert_int_eq(rename(file, data), 0);
    o.dir = bdir;
    ck_assert_int_eq(st_env_open(&o, &unit_st_env), 0);
    t = unit_st_rbegin();
    ck_assert_int_eq(st_keyspace_dbsize(t, 0, &keys, &exp), 0);
    ck_assert_uint_eq(keys, (uint64_t)want_keys);
    ck_assert_int_eq(unit_st_lookup(t, 0, "k0", NOW, &r), 0);
    ck_assert_mem_eq(r.payload, "v", 1);
    unit_st_commit(&t);
    st_env_close(&unit_st_env);
    unit_st_env = saved;
}

START_TEST(test_backup)
{
    char file[UNIT_ST_DIR_SIZE + 32], name[NAME_SIZE];
    st_txn *t = unit_st_wbegin(), *r;
    st_rec rec;

    for (int i = 0; i < MANY_KEYS; i++) {
        snprintf(name, sizeof name, "k%d", i);
        ck_assert_int_eq(unit_st_put(t, 0, name, "v", 0), 0);
    }
    unit_st_commit(&t);
    snprintf(file, sizeof file, "%s/backup.mdb", unit_st_root);
    ck_assert_int_eq(st_env_backup(unit_st_env, file), 0);
    check_backup(file, MANY_KEYS);

    /* After a read transaction of the caller ended (LMDB keeps its
     * reader slot for reuse). */
    unit_st_expect(0, "k1", "v");
    ck_assert_int_eq(st_env_backup(unit_st_env, file), 0);
    check_backup(file, MANY_KEYS);

    /* The caller's own read transaction may be open meanwhile. */
    unit_st_put1(0, "extra", "v", 0);
    r = unit_st_rbegin();
    ck_assert_int_eq(unit_st_lookup(r, 0, "k1", NOW, &rec), 0);
    {
        int rc = st_env_backup(unit_st_env, file);
        ck_assert_msg(rc == 0, "backup with a read txn open: %s",
                      st_strerror(rc));
    }
    ck_assert_int_eq(unit_st_lookup(r, 0, "k2", NOW, &rec), 0);
    unit_st_commit(&r);
    check_backup(file, MANY_KEYS + 1);

    /* A path that cannot be written: an error, no file left behind. */
    snprintf(file, sizeof file, "%s/no/such/dir/backup.mdb", unit_st_root);
    ck_assert_int_eq(st_env_backup(unit_st_env, file), ENOENT);
}
END_TEST

/* ------------------------------------------------------------------ */
/* a process dying with a read transaction open */

START_TEST(test_reader_dies_in_txn)
{
    /* The reader slot of a dead process is found and cleared. */
    pid_t pid;
    int dead = 0;

    /*
     * The parent keeps its environment open (it never uses it in the
     * child): were it closed, the next open would find the lock file
     * unused and reset it, hiding what the crash left behind.
     */
    unit_st_put1(0, "k", "v", 0);
    pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        st_env *e = unit_st_child_env();
        st_txn *t;
        if (st_txn_begin(e, 0, &t))
            _exit(UNIT_ST_CHILD_FAILED);
        _exit(0); /* dies holding a reader slot */
    }
    unit_st_wait_ok(pid);
    ck_assert_int_eq(st_env_reader_check(unit_st_env, &dead), 0);
    ck_assert_int_eq(dead, 1);
    ck_assert_int_eq(st_env_reader_check(unit_st_env, &dead), 0);
    ck_assert_int_eq(dead, 0);
    unit_st_expect(0, "k", "v");
}
END_TEST

/* ---- the observer ---- */

#define OBS_MAX 64
#define OBS_NAME 700

typedef struct obs_event {
    char what; /* c created, e expired, p committing, C committed, a abort */
    unsigned db;
    char name[OBS_NAME];
    size_t len;
    int type;
    uint64_t n, txn;
    int rc;
} obs_event;

static obs_event obs[OBS_MAX];
static int nobs;

static obs_event *obs_next(char what)
{
    ck_assert_int_lt(nobs, OBS_MAX);
    memset(&obs[nobs], 0, sizeof obs[nobs]);
    obs[nobs].what = what;
    return &obs[nobs++];
}

static void obs_named(obs_event *e, unsigned db, const uint8_t *name,
                      size_t len)
{
    ck_assert_uint_le(len, OBS_NAME);
    e->db = db;
    memcpy(e->name, name, len);
    e->len = len;
}

static void on_created(void *ctx, unsigned db, const uint8_t *name, size_t len,
                       int type, uint64_t n, int fresh)
{
    obs_event *e = obs_next('c');
    obs_named(e, db, name, len);
    e->type = type;
    e->n = n;
    e->rc = fresh; /* the field is free in a created event */
}

static void on_expired(void *ctx, unsigned db, const uint8_t *name, size_t len)
{
    obs_named(obs_next('e'), db, name, len);
}

static void on_committing(void *ctx, uint64_t txn) { obs_next('p')->txn = txn; }

static void on_committed(void *ctx, uint64_t txn, int rc)
{
    obs_event *e = obs_next('C');
    e->txn = txn;
    e->rc = rc;
}

static void on_aborted(void *ctx, uint64_t txn) { obs_next('a')->txn = txn; }

static void observe(unsigned types)
{
    st_env_observer o = { .ctx = NULL,
                          .created_types = types,
                          .created = on_created,
                          .expired = on_expired,
                          .committing = on_committing,
                          .committed = on_committed,
                          .aborted = on_aborted };
    st_env_observe(unit_st_env, &o);
    nobs = 0;
}

static void assert_event(int i, char what, unsigned db, const char *name)
{
    ck_assert_int_gt(nobs, i);
    ck_assert_int_eq(obs[i].what, what);
    if (name) {
        ck_assert_uint_eq(obs[i].db, db);
        ck_assert_uint_eq(obs[i].len, strlen(name));
        ck_assert(memcmp(obs[i].name, name, obs[i].len) == 0);
    }
}

/* Push `n` elements to list `name` of db 0 in transaction t. */
static void push_list(st_txn *t, const char *name, int n)
{
    st_keyref k;
    st_obj o;
    int rc;

    st_codec_keyref_init(&k, 0, name, strlen(name));
    rc = st_coll_open(t, &k, ST_TYPE_LIST, NOW, &o);
    ck_assert(rc == 0 || rc == ST_ENOTFOUND);
    if (rc == ST_ENOTFOUND)
        ck_assert_int_eq(st_coll_create(t, &o), 0);
    for (int i = 0; i < n; i++)
        ck_assert_int_eq(st_list_push(t, &o, 0, "e", 1), 0);
    ck_assert_int_eq(st_coll_save(t, &o, NOW), 0);
}

START_TEST(test_observer_commit_and_abort)
{
    st_txn *t;
    uint64_t id;

    observe(0);
    t = unit_st_wbegin();
    id = st_txn_version(t);
    ck_assert_int_eq(unit_st_put(t, 0, "k", "v", 0), 0);
    ck_assert_int_eq(nobs, 0);
    unit_st_commit(&t);
    ck_assert_int_eq(nobs, 2);
    assert_event(0, 'p', 0, NULL);
    assert_event(1, 'C', 0, NULL);
    ck_assert_uint_eq(obs[0].txn, id);
    ck_assert_uint_eq(obs[1].txn, id);
    ck_assert_int_eq(obs[1].rc, 0);
    t = unit_st_wbegin();
    ck_assert_int_eq(unit_st_put(t, 0, "k2", "v", 0), 0);
    st_txn_abort(&t);
    ck_assert_int_eq(nobs, 3);
    assert_event(2, 'a', 0, NULL);
    /* Read transactions tell nothing. */
    t = unit_st_rbegin();
    unit_st_commit(&t);
    t = unit_st_rbegin();
    st_txn_abort(&t);
    ck_assert_int_eq(nobs, 3);
    /* Removed: nothing more. */
    st_env_observe(unit_st_env, NULL);
    unit_st_put1(0, "k3", "v", 0);
    ck_assert_int_eq(nobs, 3);
}
END_TEST

START_TEST(test_observer_created)
{
    st_txn *t;

    observe(1u << ST_TYPE_LIST);
    t = unit_st_wbegin();
    push_list(t, "q", 3); /* a new list, with its count */
    push_list(t, "q", 2); /* pushed to: not new */
    ck_assert_int_eq(unit_st_put(t, 0, "s", "v", 0), 0); /* not asked for */
    unit_st_commit(&t);
    ck_assert_int_eq(nobs, 3);
    assert_event(0, 'c', 0, "q");
    ck_assert_int_eq(obs[0].type, ST_TYPE_LIST);
    ck_assert_uint_eq(obs[0].n, 3);
    ck_assert_int_eq(obs[0].rc, 1); /* fresh */
    /* RENAME and COPY onto an absent key create it. */
    observe((1u << ST_TYPE_LIST) | (1u << ST_TYPE_STRING));
    ck_assert_int_eq(unit_st_rename(0, "q", "q2", 0), 0);
    ck_assert_int_eq(unit_st_copy(0, "q2", 3, "q3", 0), 0);
    ck_assert_int_eq(obs[0].what, 'c');
    assert_event(0, 'c', 0, "q2");
    ck_assert_int_eq(obs[0].type, ST_TYPE_LIST);
    assert_event(3, 'c', 3, "q3");
    /* A string replaced by a list is a type change: reported; a string
     * overwritten by a string is not. */
    nobs = 0;
    t = unit_st_wbegin();
    ck_assert_int_eq(unit_st_put(t, 0, "s", "w", 0), 0);
    ck_assert_int_eq(nobs, 0);
    ck_assert_int_eq(unit_st_put(t, 0, "new", "w", 0), 0);
    assert_event(0, 'c', 0, "new");
    ck_assert_int_eq(obs[0].type, ST_TYPE_STRING);
    unit_st_commit(&t);
    ck_assert_int_eq(obs[0].rc, 1);
    /* SET over the list q2: a type change, not a new key. */
    t = unit_st_wbegin();
    nobs = 0;
    ck_assert_int_eq(unit_st_put(t, 0, "q2", "w", 0), 0);
    assert_event(0, 'c', 0, "q2");
    ck_assert_int_eq(obs[0].type, ST_TYPE_STRING);
    ck_assert_int_eq(obs[0].rc, 0);
    unit_st_commit(&t);
}
END_TEST

/* Fill list `name` of db 0 through `k` after st_keyspace_replace (the
 * STORE commands' path): the replace's code. */
static int replace_with_list(st_txn *t, st_keyref *k, const char *name)
{
    st_obj o;
    int rc;

    st_codec_keyref_init(k, 0, name, strlen(name));
    rc = st_keyspace_replace(t, k, NOW);
    ck_assert(rc == 0 || rc == ST_ENOTFOUND);
    ck_assert_int_eq(st_coll_open(t, k, ST_TYPE_LIST, NOW, &o), ST_ENOTFOUND);
    ck_assert_int_eq(st_coll_create(t, &o), 0);
    ck_assert_int_eq(st_list_push(t, &o, 0, "e", 1), 0);
    ck_assert_int_eq(st_coll_save(t, &o, NOW), 0);
    return rc;
}

START_TEST(test_observer_replace_is_not_fresh)
{
    st_txn *t;
    st_keyref k;
    st_rec r;
    uint8_t *dst;

    observe((1u << ST_TYPE_LIST) | (1u << ST_TYPE_STRING));
    t = unit_st_wbegin();
    /* Absent: the result is a fresh key. */
    ck_assert_int_eq(replace_with_list(t, &k, "d"), ST_ENOTFOUND);
    ck_assert_int_eq(nobs, 1);
    assert_event(0, 'c', 0, "d");
    ck_assert_int_eq(obs[0].rc, 1);
    /* Over a list (the same type) and over a string: not fresh. */
    ck_assert_int_eq(replace_with_list(t, &k, "d"), 0);
    ck_assert_int_eq(nobs, 2);
    assert_event(1, 'c', 0, "d");
    ck_assert_int_eq(obs[1].rc, 0);
    ck_assert_int_eq(unit_st_put(t, 0, "s", "v", 0), 0);
    nobs = 0;
    ck_assert_int_eq(replace_with_list(t, &k, "s"), 0);
    ck_assert_int_eq(nobs, 1);
    ck_assert_int_eq(obs[0].type, ST_TYPE_LIST);
    ck_assert_int_eq(obs[0].rc, 0);
    /* A string written through the reference after a replace. */
    st_codec_keyref_init(&k, 0, "d", 1);
    ck_assert_int_eq(st_keyspace_replace(t, &k, NOW), 0);
    ck_assert_int_eq(st_keyspace_string_reserve(t, &k, 1, 0, &dst), 0);
    *dst = 'x';
    ck_assert_int_eq(nobs, 2);
    assert_event(1, 'c', 0, "d");
    ck_assert_int_eq(obs[1].type, ST_TYPE_STRING);
    ck_assert_int_eq(obs[1].rc, 0);
    /* The mark is used once: the same reference deleting plainly and
     * writing again makes a fresh key (DEL then SET). */
    ck_assert_int_eq(st_keyspace_delete(t, &k, NOW), 0);
    ck_assert_int_eq(st_keyspace_string_reserve(t, &k, 1, 0, &dst), 0);
    *dst = 'y';
    ck_assert_int_eq(nobs, 3);
    ck_assert_int_eq(obs[2].rc, 1);
    /* An empty result: the key stays deleted, nothing is created. */
    nobs = 0;
    st_codec_keyref_init(&k, 0, "d", 1);
    ck_assert_int_eq(st_keyspace_replace(t, &k, NOW), 0);
    ck_assert_int_eq(nobs, 0);
    unit_st_commit(&t);
    t = unit_st_rbegin();
    ck_assert_int_eq(unit_st_lookup(t, 0, "d", NOW, &r), ST_ENOTFOUND);
    st_txn_abort(&t);
    st_env_observe(unit_st_env, NULL);
}
END_TEST

START_TEST(test_observer_expired)
{
    uint8_t *lname = unit_st_make_name(600, 1);
    st_txn *t;
    st_rec r;
    size_t done;

    unit_st_put1(0, "lazy", "v", NOW + SEC);
    unit_st_put1(0, "due", "v", NOW + SEC);
    unit_st_put1(0, "seen", "v", NOW + SEC);
    t = unit_st_wbegin();
    ck_assert_int_eq(unit_st_putn(t, 2, lname, 600, "v", 1, NOW + SEC), 0);
    unit_st_commit(&t);
    observe(0);
    /* Lazy, in a write transaction. */
    t = unit_st_wbegin();
    ck_assert_int_eq(unit_st_lookup(t, 0, "lazy", NOW + 2 * SEC, &r),
                     ST_ENOTFOUND);
    assert_event(0, 'e', 0, "lazy");
    unit_st_commit(&t);
    /* Seen by a read, reaped after it. */
    t = unit_st_rbegin();
    ck_assert_int_eq(unit_st_lookup(t, 0, "seen", NOW + 2 * SEC, &r),
                     ST_ENOTFOUND);
    unit_st_commit(&t);
    ck_assert_int_eq(nobs, 3);
    ck_assert_int_eq(st_keyspace_reap_seen(unit_st_env, NOW + 2 * SEC, &done),
                     0);
    ck_assert_uint_eq(done, 1);
    assert_event(3, 'e', 0, "seen");
    /* Active expiry, a long name too. */
    nobs = 0;
    ck_assert_uint_eq(unit_st_expire_due(NOW + 2 * SEC, 100, NULL), 2);
    ck_assert_int_eq(nobs, 4);
    for (int i = 0; i < 2; i++) {
        ck_assert_int_eq(obs[i].what, 'e');
        if (obs[i].db == 2) {
            ck_assert_uint_eq(obs[i].len, 600);
            ck_assert(memcmp(obs[i].name, lname, 600) == 0);
        } else {
            assert_event(i, 'e', 0, "due");
        }
    }
    ck_assert_uint_ne(obs[0].db, obs[1].db);
    free(lname);
}
END_TEST

static Suite *env_suite(void)
{
    Suite *s = suite_create("st_env");
    TCase *tc;

    tc = tcase_create("core");
    unit_st_fixture(tc, UNIT_ST_PLAIN);
    tcase_set_timeout(tc, TIMEOUT_S);
    tcase_add_test(tc, test_open_close_reopen);
    tcase_add_test(tc, test_schema_stamp);
    tcase_add_test(tc, test_reopen_other_databases);
    tcase_add_test(tc, test_map_full);
    tcase_add_test(tc, test_open_errors);
    tcase_add_test(tc, test_backup);
    suite_add_tcase(s, tc);

    tc = tcase_create("writemap");
    unit_st_fixture(tc, UNIT_ST_WRITEMAP);
    tcase_set_timeout(tc, TIMEOUT_S);
    tcase_add_test(tc, test_map_full);
    tcase_add_test(tc, test_writemap_room);
    suite_add_tcase(s, tc);

    tc = tcase_create("observer");
    unit_st_fixture(tc, UNIT_ST_PLAIN);
    tcase_set_timeout(tc, TIMEOUT_S);
    tcase_add_test(tc, test_observer_commit_and_abort);
    tcase_add_test(tc, test_observer_created);
    tcase_add_test(tc, test_observer_replace_is_not_fresh);
    tcase_add_test(tc, test_observer_expired);
    suite_add_tcase(s, tc);

    tc = tcase_create("crash");
    unit_st_fixture(tc, UNIT_ST_PLAIN);
    tcase_set_timeout(tc, TIMEOUT_S);
    tcase_add_test(tc, test_reader_dies_in_txn);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(env_suite());
    int failed;

    srunner_run_all(sr, CK_ENV);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
