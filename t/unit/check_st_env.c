/*
 * check_st_env: unit tests of the LMDB environment (storage/st_env.h):
 * open, close and reopen (with fewer databases too), the schema stamp
 * and a newer one refused, open errors, backups (also with a read
 * transaction open), a full map (also with writemap), and the reader
 * slot of a process that died inside a read transaction.
 */
#include "storage/st_codec.h"
#include "storage/st_coll.h"
#include "storage/st_err.h"
#include "storage/st_keyspace.h"
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
