/*
 * check_st_durable: unit tests of the durable-snapshot scheme
 * (storage/st_durable.h) and of the LMDB meta-page facts it rests on
 * (storage/st_metapage.h).
 *
 * Covered: the meta-page offsets against the installed liblmdb; boot of a
 * fresh directory (created whole), of the same boot (nothing restored) and
 * of another boot (the recorded snapshot restored, later commits dropped);
 * the reordered-writeback model at page granularity (the flushed file with
 * any mix of pages written since boots to the recorded snapshot); a torn
 * record slot; a record that is not the file's; the first-write gate; the
 * reader-check guard of a dead pinner's slot; the back-pressure on commits
 * when the pin is overdue.
 */
#include "t/unit/unit_tmp.h"
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <lmdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "storage/st_codec.h"
#include "storage/st_durable.h"
#include "storage/st_env.h"
#include "storage/st_err.h"
#include "storage/st_keyspace.h"
#include "storage/st_metapage.h"
#include "storage/st_txn.h"

#define ROOT_SIZE 512
#define DIR_SIZE 1024
#define PATH_SIZE 2048
#define NAME_SIZE 64
#define MAP_SIZE (1ull << 30)
#define TIMEOUT_S 30
#define BOOT_A "boot-a"
#define BOOT_B "boot-b"
#define DURABLE_KEYS 300
#define EARLIER_VERSIONS 4
#define LATER_COMMITS 50
#define LATER_KEYS 20 /* per later commit */
#define MIXES 40      /* reordered images tried */
#define VALUE_SIZE 200
#define PAGE 4096
#define P_BRANCH 0x01
#define P_LEAF 0x02
#define PG_FLAGS 10
#define CHILD_FAILED 3
/* The record's layout (st_durable.c): slots a page apart, the sequence
 * number after magic, version and page size. A tear overwrites part of
 * the boot id and meta copy. */
#define REC_SEQ_AT 16
#define TEAR_AT 64
#define TEAR_LEN 100
#define TEAR_BYTE 0x5a
#define BIG_VALUE (1u << 20)
#define BIG_SLACK 4    /* commits past the room */
#define WAIT_SHARE 0.8 /* of ST_DURABLE_PRESSURE_MS */
/* BIG_VALUEs freed, then reused under a pin: enough to reach the volume. */
#define REUSE_VALUES ((int)(ST_DURABLE_EARLY_BYTES / BIG_VALUE) + 4)
#define REUSE_KEY 100 /* the big%d name rewritten under the pin */
#define TINY_VALUE 1
#define LIVE_PAGES 1000u

static char root[ROOT_SIZE];
static char dir[DIR_SIZE];

static void root_setup(void)
{
    unit_tmp_make(root, sizeof root, "check_st_durable");
}
static void root_teardown(void) { unit_tmp_remove(root); }

static void setup(void)
{
    snprintf(dir, sizeof dir, "%s/env.XXXXXX", root);
    ck_assert_ptr_nonnull(mkdtemp(dir));
}

static void path_of(char *out, const char *d, const char *name)
{
    snprintf(out, PATH_SIZE, "%s/%s", d, name);
}

static st_env_opts opts_for(const char *d, const char *boot, int nosync)
{
    st_env_opts o = {
        .dir = d,
        .map_size = MAP_SIZE,
        .nosync = nosync,
        .boot_id = boot,
    };
    return o;
}

static st_env *open_env(const char *d, const char *boot)
{
    st_env_opts o = opts_for(d, boot, 1);
    st_env *e;
    int rc = st_env_open(&o, &e);

    ck_assert_msg(rc == 0, "st_env_open: %s", st_strerror(rc));
    return e;
}

static void boot(const char *d, const char *boot_id, st_durable_report *r)
{
    st_env_opts o = opts_for(d, boot_id, 0);
    int rc = st_durable_boot(&o, r);

    ck_assert_msg(rc == 0, "st_durable_boot: %s", st_strerror(rc));
}

static void put(st_env *e, int from, int to, const char *tag)
{
    char name[NAME_SIZE], val[VALUE_SIZE];
    st_txn *t;

    ck_assert_int_eq(st_txn_begin(e, 1, &t), 0);
    for (int i = from; i < to; i++) {
        st_keyref k;
        int n = snprintf(name, sizeof name, "k%d", i);
        memset(val, 'a' + i % 26, sizeof val);
        snprintf(val, sizeof val, "%s:%d:", tag, i);
        st_codec_keyref_init(&k, 0, name, (size_t)n);
        ck_assert_int_eq(st_keyspace_string_set(t, &k, val, sizeof val, 0), 0);
    }
    ck_assert_int_eq(st_txn_commit(&t), 0);
}

/* Key k<i> holds the value put() wrote with `tag` (NULL: absent). */
static int holds(st_env *e, int i, const char *tag)
{
    char name[NAME_SIZE], val[VALUE_SIZE];
    st_keyref k;
    st_txn *t;
    st_rec r;
    int n = snprintf(name, sizeof name, "k%d", i), ok;

    ck_assert_int_eq(st_txn_begin(e, 0, &t), 0);
    st_codec_keyref_init(&k, 0, name, (size_t)n);
    int rc = st_keyspace_lookup(t, &k, 0, &r);
    if (!tag) {
        ok = rc == ST_ENOTFOUND;
    } else {
        memset(val, 'a' + i % 26, sizeof val);
        snprintf(val, sizeof val, "%s:%d:", tag, i);
        ok = rc == 0 && r.payload_len == sizeof val &&
             memcmp(r.payload, val, sizeof val) == 0;
    }
    st_txn_commit(&t);
    return ok;
}

static uint8_t *read_file(const char *path, size_t *len)
{
    struct stat st;
    uint8_t *buf;
    int fd = open(path, O_RDONLY);

    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(fstat(fd, &st), 0);
    buf = malloc((size_t)st.st_size + 1);
    ck_assert_ptr_nonnull(buf);
    ck_assert_int_eq(pread(fd, buf, (size_t)st.st_size, 0), st.st_size);
    close(fd);
    *len = (size_t)st.st_size;
    return buf;
}

static void write_file(const char *path, const uint8_t *buf, size_t len)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);

    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(pwrite(fd, buf, len, 0), (ssize_t)len);
    close(fd);
}

/* A fresh directory booted under BOOT_A, with DURABLE_KEYS keys recorded
 * durable; *txn gets that snapshot. */
static st_env *durable_state(st_durable **d, uint64_t *txn)
{
    st_durable_report r;
    st_env *e;

    boot(dir, BOOT_A, &r);
    e = open_env(dir, BOOT_A);
    ck_assert_int_eq(st_durable_open(e, d), 0);
    /* Earlier versions, flushed and unpinned since: their pages are free
     * in the durable snapshot, for later commits to reuse. */
    for (int v = 0; v < EARLIER_VERSIONS; v++) {
        put(e, 0, DURABLE_KEYS, "p");
        ck_assert_int_eq(st_durable_flush(*d, txn), 0);
    }
    put(e, 0, DURABLE_KEYS, "d");
    ck_assert_int_eq(st_durable_flush(*d, txn), 0);
    return e;
}

/* Commits after the durable one: overwrites, deletes and new keys, so
 * LMDB frees and reuses pages. */
static void later_commits(st_env *e)
{
    for (int c = 0; c < LATER_COMMITS; c++) {
        put(e, (c * LATER_KEYS) % DURABLE_KEYS,
            (c * LATER_KEYS) % DURABLE_KEYS + LATER_KEYS, "x");
        put(e, DURABLE_KEYS + c * LATER_KEYS,
            DURABLE_KEYS + (c + 1) * LATER_KEYS, "n");
    }
}

/* ---- meta pages ---- */

START_TEST(test_metapage_matches_lmdb)
{
    char path[PATH_SIZE];
    st_env *e = open_env(dir, NULL);
    st_metapage m[ST_METAPAGE_SLOTS];
    MDB_env *me;
    MDB_envinfo info;
    MDB_stat ms;
    uint8_t page[PAGE];

    put(e, 0, DURABLE_KEYS, "d");
    put(e, 0, 10, "e");
    st_env_close(&e);
    ck_assert_int_eq(mdb_env_create(&me), 0);
    mdb_env_set_maxdbs(me, NAME_SIZE);
    ck_assert_int_eq(mdb_env_open(me, dir, MDB_RDONLY, 0600), 0);
    ck_assert_int_eq(mdb_env_info(me, &info), 0);
    ck_assert_int_eq(mdb_env_stat(me, &ms), 0);
    mdb_env_close(me);
    path_of(path, dir, "data.mdb");
    int fd = open(path, O_RDONLY);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(st_metapage_read(fd, ms.ms_psize, 0, &m[0]), 0);
    ck_assert_int_eq(st_metapage_check(&m[0]), 0);
    ck_assert_uint_eq(st_metapage_psize(&m[0]), ms.ms_psize);
    ck_assert_int_eq(st_metapage_read(fd, ms.ms_psize, 1, &m[1]), 0);
    ck_assert_int_eq(st_metapage_check(&m[1]), 0);
    /* The newest names LMDB's last transaction and page, in slot txn & 1. */
    int newest = st_metapage_txnid(&m[1]) > st_metapage_txnid(&m[0]);
    ck_assert_uint_eq(st_metapage_txnid(&m[newest]), info.me_last_txnid);
    ck_assert_int_eq(newest, (int)(info.me_last_txnid & 1));
    ck_assert_uint_eq(st_metapage_txnid(&m[!newest]), info.me_last_txnid - 1);
    ck_assert_uint_eq(st_metapage_last_pg(&m[newest]), info.me_last_pgno);
    /* The main root is a branch or leaf page that names itself. */
    uint64_t rootpg = st_metapage_main_root(&m[newest]);
    ck_assert_uint_ne(rootpg, ST_METAPAGE_NO_ROOT);
    ck_assert_int_eq(pread(fd, page, sizeof page,
                           (off_t)(rootpg * ms.ms_psize)),
                     (ssize_t)sizeof page);
    uint64_t pgno;
    uint16_t flags;
    memcpy(&pgno, page, sizeof pgno);
    memcpy(&flags, page + PG_FLAGS, sizeof flags);
    ck_assert_uint_eq(pgno, rootpg);
    ck_assert(flags & (P_BRANCH | P_LEAF));
    /* Relabelled, a page keeps its trees and takes its new place. */
    st_metapage r = m[newest];
    st_metapage_relabel(&r, !newest, 7);
    ck_assert_int_eq(st_metapage_check(&r), 0);
    ck_assert_uint_eq(st_metapage_txnid(&r), 7);
    ck_assert_uint_eq(st_metapage_main_root(&r), rootpg);
    close(fd);
}
END_TEST

/* ---- boot ---- */

START_TEST(test_boot_fresh_creates_whole)
{
    char path[PATH_SIZE];
    st_durable_report r;
    struct stat st;

    boot(dir, BOOT_A, &r);
    ck_assert_int_eq(r.state, ST_DURABLE_FRESH);
    path_of(path, dir, "data.mdb");
    ck_assert_int_eq(stat(path, &st), 0);
    path_of(path, dir, ST_DURABLE_FILE);
    ck_assert_int_eq(stat(path, &st), 0);
    path_of(path, dir, ST_DURABLE_NEW_DIR);
    ck_assert_int_eq(stat(path, &st), -1);
    /* A leftover of a creation cut short is cleared. */
    boot(dir, BOOT_A, &r);
    ck_assert_int_eq(r.state, ST_DURABLE_SAME_BOOT);
    ck_assert_uint_eq(r.recorded_txn, r.open_txn);
}
END_TEST

START_TEST(test_boot_same_boot_keeps_commits)
{
    st_durable *d;
    st_durable_report r;
    uint64_t txn;
    st_env *e = durable_state(&d, &txn);

    later_commits(e);
    st_durable_close(&d, 0);
    st_env_close(&e);
    boot(dir, BOOT_A, &r);
    ck_assert_int_eq(r.state, ST_DURABLE_SAME_BOOT);
    ck_assert_uint_eq(r.recorded_txn, txn);
    ck_assert_uint_gt(r.open_txn, txn);
    e = open_env(dir, NULL);
    ck_assert(holds(e, 0, "x"));
    ck_assert(holds(e, DURABLE_KEYS, "n"));
    st_env_close(&e);
}
END_TEST

START_TEST(test_boot_other_boot_restores)
{
    st_durable *d;
    st_durable_report r;
    uint64_t txn;
    st_env *e = durable_state(&d, &txn);

    later_commits(e);
    st_durable_close(&d, 0);
    st_env_close(&e);
    boot(dir, BOOT_B, &r);
    ck_assert_int_eq(r.state, ST_DURABLE_RESTORED);
    ck_assert_uint_eq(r.recorded_txn, txn);
    ck_assert_uint_gt(r.newest_txn, txn);
    ck_assert_uint_eq(r.open_txn, txn);
    e = open_env(dir, NULL);
    for (int i = 0; i < DURABLE_KEYS; i++)
        ck_assert_msg(holds(e, i, "d"), "durable key %d", i);
    ck_assert(holds(e, DURABLE_KEYS, NULL));
    st_env_close(&e);
    /* Recorded under the new boot: booting it again changes nothing. */
    boot(dir, BOOT_B, &r);
    ck_assert_int_eq(r.state, ST_DURABLE_SAME_BOOT);
    boot(dir, BOOT_A, &r);
    ck_assert_int_eq(r.state, ST_DURABLE_CLEAN);
}
END_TEST

/*
 * The model of a power cut on a disk that writes dirty pages back in any
 * order: each page of data.mdb is either as it was flushed or as it was
 * last written since. Every mix boots (after another boot id) to the
 * recorded snapshot: pinned, its pages were never rewritten; its meta
 * page comes from the record.
 */
START_TEST(test_reordered_pages_boot_to_durable)
{
    char path[PATH_SIZE], rpath[PATH_SIZE], mix_dir[DIR_SIZE];
    st_durable *d;
    uint64_t txn;
    size_t blen, nlen, rlen;
    st_env *e = durable_state(&d, &txn);

    path_of(path, dir, "data.mdb");
    path_of(rpath, dir, ST_DURABLE_FILE);
    uint8_t *base = read_file(path, &blen);
    uint8_t *rec = read_file(rpath, &rlen);
    later_commits(e);
    uint8_t *now = read_file(path, &nlen);
    st_durable_close(&d, 0);
    st_env_close(&e);
    ck_assert_uint_ge(nlen, blen);
    uint8_t *mix = malloc(nlen);
    ck_assert_ptr_nonnull(mix);
    unsigned seed = (unsigned)time(NULL);
    srand(seed);
    size_t differ = 0;
    for (size_t p = 0; p < blen / PAGE; p++)
        differ += memcmp(base + p * PAGE, now + p * PAGE, PAGE) != 0;
    ck_assert_msg(differ > 2, "later commits rewrote pages (%zu)", differ);
    for (int m = 0; m < MIXES; m++) {
        st_durable_report r;
        size_t len = blen + (size_t)rand() % (nlen - blen + 1) / PAGE * PAGE;
        for (size_t p = 0; p < len / PAGE; p++) {
            const uint8_t *src = p * PAGE >= blen || rand() % 2 ? now : base;
            memcpy(mix + p * PAGE, src + p * PAGE, PAGE);
        }
        snprintf(mix_dir, sizeof mix_dir, "%s/mix%d", root, m);
        ck_assert_int_eq(mkdir(mix_dir, 0700), 0);
        path_of(path, mix_dir, "data.mdb");
        write_file(path, mix, len);
        path_of(path, mix_dir, ST_DURABLE_FILE);
        write_file(path, rec, rlen);
        boot(mix_dir, BOOT_B, &r);
        ck_assert_msg(r.state == ST_DURABLE_RESTORED ||
                          r.state == ST_DURABLE_CLEAN,
                      "mix %d (seed %u): %s", m, seed,
                      st_durable_state_name(r.state));
        ck_assert_uint_eq(r.open_txn, txn);
        e = open_env(mix_dir, NULL);
        for (int i = 0; i < DURABLE_KEYS; i++)
            ck_assert_msg(holds(e, i, "d"), "mix %d (seed %u): key %d", m, seed,
                          i);
        ck_assert(holds(e, DURABLE_KEYS, NULL));
        st_env_close(&e);
    }
    free(mix);
    free(base);
    free(now);
    free(rec);
}
END_TEST

START_TEST(test_torn_record_uses_other_slot)
{
    char rpath[PATH_SIZE];
    st_durable *d;
    st_durable_report r;
    uint64_t first, second;
    size_t rlen;
    st_env *e = durable_state(&d, &first);

    put(e, 0, 10, "y");
    ck_assert_int_eq(st_durable_flush(d, &second), 0);
    ck_assert_uint_gt(second, first);
    /* Torn, the newest record was being written: the cut came before it
     * was flushed, while `first` was still pinned (so nothing after). */
    st_durable_close(&d, 0);
    st_env_close(&e);
    /* Tear the newest slot: the one the last record went to. */
    path_of(rpath, dir, ST_DURABLE_FILE);
    uint8_t *rec = read_file(rpath, &rlen);
    uint64_t seq0, seq1;
    memcpy(&seq0, rec + REC_SEQ_AT, sizeof seq0);
    memcpy(&seq1, rec + PAGE + REC_SEQ_AT, sizeof seq1);
    size_t torn = seq1 > seq0 ? PAGE : 0;
    memset(rec + torn + TEAR_AT, TEAR_BYTE, TEAR_LEN);
    write_file(rpath, rec, rlen);
    free(rec);
    boot(dir, BOOT_B, &r);
    ck_assert_int_eq(r.recorded_txn, first);
    ck_assert_int_eq(r.open_txn, first);
    e = open_env(dir, NULL);
    ck_assert(holds(e, 0, "d"));
    st_env_close(&e);
}
END_TEST

START_TEST(test_foreign_file_left_alone)
{
    char path[PATH_SIZE], other[DIR_SIZE];
    st_durable *d;
    st_durable_report r;
    uint64_t txn;
    st_env *e = durable_state(&d, &txn);

    st_durable_close(&d, 0);
    st_env_close(&e);
    /* Another environment's file, with more commits, put in place. */
    snprintf(other, sizeof other, "%s/other", root);
    e = open_env(other, NULL);
    for (int c = 0; c < LATER_COMMITS; c++)
        put(e, c, c + 1, "o");
    for (int c = 0; c < DURABLE_KEYS; c += LATER_KEYS)
        put(e, c, c + LATER_KEYS, "o");
    st_env_close(&e);
    path_of(path, other, "data.mdb");
    size_t len;
    uint8_t *buf = read_file(path, &len);
    path_of(path, dir, "data.mdb");
    write_file(path, buf, len);
    free(buf);
    boot(dir, BOOT_B, &r);
    ck_assert_int_eq(r.state, ST_DURABLE_MISMATCH);
    e = open_env(dir, NULL);
    ck_assert(holds(e, 0, "o"));
    st_env_close(&e);
}
END_TEST

/* ---- the gate and the guard ---- */

START_TEST(test_first_write_waits_for_pin)
{
    st_durable_report r;
    st_txn *t;
    struct timespec t0, t1;

    boot(dir, BOOT_A, &r);
    /* Recorded by the boot, whose pin is gone: no write may start. */
    st_env *e = open_env(dir, BOOT_A);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    ck_assert_int_eq(st_txn_begin(e, 1, &t), ST_ENOPIN);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    ck_assert_int_ge(t1.tv_sec - t0.tv_sec, ST_DURABLE_GATE_MS / 1000 - 1);
    /* Later tries do not wait again. */
    clock_gettime(CLOCK_MONOTONIC, &t0);
    ck_assert_int_eq(st_txn_begin(e, 1, &t), ST_ENOPIN);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    ck_assert_int_le(t1.tv_sec - t0.tv_sec, 1);
    /* A pinner comes: writes go. */
    st_durable *d;
    ck_assert_int_eq(st_durable_open(e, &d), 0);
    put(e, 0, 1, "d");
    st_durable_close(&d, 0);
    st_env_close(&e);
}
END_TEST

START_TEST(test_dead_pinner_slot_kept)
{
    st_durable_report r;
    int status, dead;
    pid_t pid;

    boot(dir, BOOT_A, &r);
    /* Open before the child dies: a first opener would reset the slots. */
    st_env *e = open_env(dir, BOOT_A);
    pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        /* The syncer: pins, records, dies without closing. */
        st_env *ce;
        st_durable *cd;
        st_env_opts o = opts_for(dir, BOOT_A, 1);
        if (st_env_open(&o, &ce) || st_durable_open(ce, &cd))
            _exit(CHILD_FAILED);
        _exit(0);
    }
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert_int_eq(WEXITSTATUS(status), 0);
    /* Its pin is the durable snapshot's: kept, and writes may go on. */
    ck_assert_int_eq(st_env_reader_check(e, &dead), 0);
    ck_assert_int_eq(dead, 0);
    put(e, 0, 1, "d");
    ck_assert_int_eq(st_env_reader_check(e, &dead), 0);
    ck_assert_int_eq(dead, 0);
    /* A live pinner recorded: the dead one's slots go. */
    st_durable *d;
    ck_assert_int_eq(st_durable_open(e, &d), 0);
    ck_assert_int_eq(st_env_reader_check(e, &dead), 0);
    ck_assert_int_ge(dead, 1);
    st_durable_close(&d, 0);
    st_env_close(&e);
}
END_TEST

static double seconds_since(const struct timespec *t0)
{
    struct timespec t1;

    clock_gettime(CLOCK_MONOTONIC, &t1);
    return (double)(t1.tv_sec - t0->tv_sec) +
           (double)(t1.tv_nsec - t0->tv_nsec) / 1e9;
}

/* One commit of a value of `len` bytes under a fresh name: its time. */
static double timed_big_put(st_env *e, int i, const uint8_t *val, size_t len)
{
    char name[NAME_SIZE];
    struct timespec t0;
    st_keyref k;
    st_txn *t;
    int n = snprintf(name, sizeof name, "big%d", i);

    clock_gettime(CLOCK_MONOTONIC, &t0);
    ck_assert_int_eq(st_txn_begin(e, 1, &t), 0);
    st_codec_keyref_init(&k, 0, name, (size_t)n);
    ck_assert_int_eq(st_keyspace_string_set(t, &k, val, len, 0), 0);
    ck_assert_int_eq(st_txn_commit(&t), 0);
    return seconds_since(&t0);
}

/*
 * Once data.mdb has outgrown the pinned snapshot by the room, a commit
 * waits for the pin to move (here nobody moves it: up to the limit), later
 * ones do not wait for the same pin again, and a flush gives room again.
 */
START_TEST(test_commits_wait_when_pin_overdue)
{
    st_durable_report r;
    st_durable *d;
    uint64_t txn;
    double waited = 0, slowest_after = 0;
    int i = 0;

    boot(dir, BOOT_A, &r);
    st_env *e = open_env(dir, BOOT_A);
    ck_assert_int_eq(st_durable_open(e, &d), 0);
    uint8_t *val = malloc(BIG_VALUE);
    ck_assert_ptr_nonnull(val);
    memset(val, 'b', BIG_VALUE);
    /* Grow past the room (each value is fresh pages: the pin holds). */
    for (; i < (int)(ST_DURABLE_ROOM_BYTES / BIG_VALUE) + BIG_SLACK; i++) {
        double s = timed_big_put(e, i, val, BIG_VALUE);
        if (s > waited)
            waited = s;
    }
    ck_assert_msg(waited >= ST_DURABLE_PRESSURE_MS / 1000.0 * WAIT_SHARE,
                  "a commit past the room waited (%.3f s)", waited);
    for (int j = 0; j < BIG_SLACK; j++, i++) {
        double s = timed_big_put(e, i, val, BIG_VALUE);
        if (s > slowest_after)
            slowest_after = s;
    }
    ck_assert_msg(slowest_after < ST_DURABLE_PRESSURE_MS / 1000.0 * WAIT_SHARE,
                  "no second wait for the same pin (%.3f s)", slowest_after);
    /* The pin moves: room again, and the next overdue pin waits again. */
    ck_assert_int_eq(st_durable_flush(d, &txn), 0);
    ck_assert_msg(timed_big_put(e, i++, val, BIG_VALUE) <
                      ST_DURABLE_PRESSURE_MS / 1000.0 * WAIT_SHARE,
                  "a commit within the room does not wait");
    free(val);
    st_durable_close(&d, 0);
    st_env_close(&e);
}
END_TEST

/*
 * The pin moves by volume: with no growth and few commits, the syncer is
 * due once the commits since the pin freed ST_DURABLE_EARLY_BYTES (and so
 * took as much from pages the pin keeps from reuse), not before.
 */
START_TEST(test_due_by_pages_freed_since_pin)
{
    st_durable_report r;
    st_durable *d;
    uint64_t txn;
    unsigned poll;
    int i, rewrites = 0;

    boot(dir, BOOT_A, &r);
    st_env *e = open_env(dir, BOOT_A);
    ck_assert_int_eq(st_durable_open(e, &d), 0);
    uint8_t *val = malloc(BIG_VALUE);
    ck_assert_ptr_nonnull(val);
    memset(val, 'r', BIG_VALUE);
    for (i = 0; i < REUSE_VALUES; i++)
        timed_big_put(e, i, val, BIG_VALUE);
    ck_assert_int_eq(st_durable_flush(d, &txn), 0);
    /* Free them, and move the pin past the freeing commit twice: their
     * pages are reusable now. */
    for (i = 0; i < REUSE_VALUES; i++)
        timed_big_put(e, i, val, TINY_VALUE);
    ck_assert_int_eq(st_durable_flush(d, &txn), 0);
    timed_big_put(e, REUSE_KEY + 1, val, TINY_VALUE);
    ck_assert_int_eq(st_durable_flush(d, &txn), 0);
    ck_assert_int_eq(st_durable_due(d, &poll), 0);
    /* Rewrite one value: each commit takes a freed run and frees the
     * previous copy, so the file does not grow. */
    while (!st_durable_due(d, &poll)) {
        ck_assert_int_lt(rewrites, REUSE_VALUES);
        timed_big_put(e, REUSE_KEY, val, BIG_VALUE);
        rewrites++;
    }
    /* Freed: rewrites - 1 copies; due only past ST_DURABLE_EARLY_BYTES. */
    ck_assert_uint_ge((uint64_t)(rewrites - 1) * BIG_VALUE,
                      ST_DURABLE_EARLY_BYTES);
    ck_assert_uint_lt((uint64_t)(rewrites - 2) * BIG_VALUE,
                      ST_DURABLE_EARLY_BYTES);
    ck_assert_int_lt(rewrites, ST_DURABLE_EARLY_COMMITS);
    /* A flush moves the pin: nothing due again. */
    ck_assert_int_eq(st_durable_flush(d, &txn), 0);
    ck_assert_int_eq(st_durable_due(d, &poll), 0);
    free(val);
    st_durable_close(&d, 0);
    st_env_close(&e);
}
END_TEST

/* The file's bound: ST_DURABLE_ROOM_LIVE x live + ST_DURABLE_ROOM_BYTES. */
START_TEST(test_bound_pages)
{
    ck_assert_uint_eq(st_durable_bound_pages(0, PAGE),
                      ST_DURABLE_ROOM_BYTES / PAGE);
    ck_assert_uint_eq(st_durable_bound_pages(LIVE_PAGES, PAGE),
                      ST_DURABLE_ROOM_LIVE * LIVE_PAGES +
                          ST_DURABLE_ROOM_BYTES / PAGE);
}
END_TEST

static Suite *durable_suite(void)
{
    Suite *s = suite_create("st_durable");
    TCase *tc = tcase_create("metapage");

    tcase_add_unchecked_fixture(tc, root_setup, root_teardown);
    tcase_add_checked_fixture(tc, setup, NULL);
    tcase_add_test(tc, test_metapage_matches_lmdb);
    suite_add_tcase(s, tc);

    tc = tcase_create("boot");
    tcase_add_unchecked_fixture(tc, root_setup, root_teardown);
    tcase_add_checked_fixture(tc, setup, NULL);
    tcase_set_timeout(tc, TIMEOUT_S);
    tcase_add_test(tc, test_boot_fresh_creates_whole);
    tcase_add_test(tc, test_boot_same_boot_keeps_commits);
    tcase_add_test(tc, test_boot_other_boot_restores);
    tcase_add_test(tc, test_reordered_pages_boot_to_durable);
    tcase_add_test(tc, test_torn_record_uses_other_slot);
    tcase_add_test(tc, test_foreign_file_left_alone);
    suite_add_tcase(s, tc);

    tc = tcase_create("pin");
    tcase_add_unchecked_fixture(tc, root_setup, root_teardown);
    tcase_add_checked_fixture(tc, setup, NULL);
    tcase_set_timeout(tc, TIMEOUT_S);
    tcase_add_test(tc, test_first_write_waits_for_pin);
    tcase_add_test(tc, test_dead_pinner_slot_kept);
    tcase_add_test(tc, test_commits_wait_when_pin_overdue);
    tcase_add_test(tc, test_due_by_pages_freed_since_pin);
    tcase_add_test(tc, test_bound_pages);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(durable_suite());
    int failed;

    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
