/*
 * unit_st.h - the storage suites' shared fixture: a scratch root per
 * TCase, a fresh LMDB environment per test inside it (plain, compressing,
 * writemap or behind a shared cache), and short helpers over st_txn and
 * st_keyspace that fail the test on any unexpected result code.
 */
#ifndef UNIT_ST_H
#define UNIT_ST_H

#include <check.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "shm/shm_cache.h"
#include "storage/st_env.h"
#include "storage/st_keyspace.h"
#include "storage/st_txn.h"

#define UNIT_ST_ROOT_SIZE 1024
#define UNIT_ST_DIR_SIZE 2048
#define UNIT_ST_MAP_SIZE (1ull << 30)
#define UNIT_ST_DATABASES 16
#define UNIT_ST_NOW 1700000000000LL /* the tests' clock, ms */
#define UNIT_ST_SEC 1000
#define UNIT_ST_COMPRESS_THRESHOLD 64 /* of the compress and cache kinds */
#define UNIT_ST_COMPRESS_LEVEL 1
#define UNIT_ST_CACHE_BUDGET (4u << 20)
#define UNIT_ST_CHILD_FAILED 3 /* exit status of a forked child that failed */

/* The environment each test gets (see unit_st_fixture). */
enum unit_st_kind {
    UNIT_ST_PLAIN,    /* no cache, no compression */
    UNIT_ST_COMPRESS, /* strings from UNIT_ST_COMPRESS_THRESHOLD compressed */
    UNIT_ST_WRITEMAP, /* LMDB writes through the map */
    UNIT_ST_CACHE,    /* compression and a shared cache in front of reads */
};

/* The fixture's state: valid inside a test of a TCase set up by
 * unit_st_fixture. unit_st_cache is NULL but for UNIT_ST_CACHE. */
extern char unit_st_root[UNIT_ST_ROOT_SIZE];
extern char unit_st_dir[UNIT_ST_DIR_SIZE];
extern st_env *unit_st_env;
extern shm_cache_t *unit_st_cache;

/*
 * Give tc the storage fixtures: an unchecked one making a scratch root
 * named after the program under $TMPDIR (removed by the runner process,
 * so also when a test dies early), and a checked one opening a fresh
 * environment of `kind` in its own directory inside it before each test
 * and closing and removing it after.
 */
void unit_st_fixture(TCase *tc, enum unit_st_kind kind);

/* (Re)open unit_st_env on unit_st_dir with the fixture's options. */
void unit_st_env_open(void);

/* Close unit_st_env and reopen it with another database count or map
 * size; returns st_env_open's code (unit_st_env is NULL on failure). */
int unit_st_env_reopen(unsigned databases, uint64_t map_size);

/* In a forked child: open a private, plain environment on unit_st_dir
 * (never the parent's handle); _exit(UNIT_ST_CHILD_FAILED) on failure. */
st_env *unit_st_child_env(void);

/* Wait for child pid; fail unless it exited with status 0. */
void unit_st_wait_ok(pid_t pid);

/* Begin the write / read transaction of unit_st_env; commit and check. */
st_txn *unit_st_wbegin(void);
st_txn *unit_st_rbegin(void);
void unit_st_commit(st_txn **t);

/* Set a string (expire-at `at`, 0 = none); return st_keyspace's code. */
int unit_st_putn(st_txn *t, unsigned db, const void *name, size_t nlen,
                 const void *val, size_t vlen, int64_t at);
int unit_st_put(st_txn *t, unsigned db, const char *name, const char *val,
                int64_t at);

/* Set one key in its own write transaction. */
void unit_st_put1(unsigned db, const char *name, const char *val, int64_t at);

/* st_keyspace_lookup of a name at `now`; returns its code. */
int unit_st_lookupn(st_txn *t, unsigned db, const void *name, size_t nlen,
                    int64_t now, st_rec *r);
int unit_st_lookup(st_txn *t, unsigned db, const char *name, int64_t now,
                   st_rec *r);

/* In a read transaction at `now` (unit_st_expect: at UNIT_ST_NOW): is
 * `name` a string holding `val` (NULL: absent)? */
void unit_st_expect_at(unsigned db, const char *name, const char *val,
                       int64_t now);
void unit_st_expect(unsigned db, const char *name, const char *val);

/* In a read transaction: `name` holds exactly these bytes, handed out
 * inflated. */
void unit_st_expect_bytes(unsigned db, const char *name, const void *val,
                          size_t len);

/* The bytes of string record r of transaction t, whole (st_string_flat:
 * a chunked string assembled); fails the test on an error. */
const uint8_t *unit_st_bytes(st_txn *t, const st_rec *r, size_t *len);

/* The expire-at of an existing key, read at UNIT_ST_NOW. */
int64_t unit_st_ttl_of(unsigned db, const char *name);

/* Check db's key count and count of keys with a TTL. */
void unit_st_counts(unsigned db, uint64_t want_keys, uint64_t want_expires);

/* One active-expiry batch; returns how many keys it deleted. ver may be
 * NULL. */
size_t unit_st_expire_due(int64_t now, size_t max, uint64_t *ver);

/* RENAME / COPY of string names in their own write transaction at
 * UNIT_ST_NOW; return st_keyspace's code. */
int unit_st_rename(unsigned db, const char *src, const char *dst, int nx);
int unit_st_copy(unsigned sdb, const char *src, unsigned ddb, const char *dst,
                 int replace);

/* Key names handed to a scan or random-key callback, copied. */
typedef struct unit_st_name {
    uint8_t *p;
    size_t len;
    int type;
    int64_t at;
} unit_st_name;

typedef struct unit_st_names {
    unit_st_name *v;
    size_t n, cap;
} unit_st_names;

/* The callback for st_keyspace_scan / _random_key: ctx is a
 * unit_st_names, zero-initialised before its first use. */
int unit_st_collect(void *ctx, const uint8_t *name, size_t len, int type,
                    int64_t at);

/* Free the copies and zero c for reuse. */
void unit_st_names_free(unit_st_names *c);

/* How many collected names equal (name, len). */
int unit_st_times_seen(const unit_st_names *c, const void *name, size_t len);

/* A whole SCAN of db at `now`, each step in its own read transaction;
 * returns the number of steps. */
size_t unit_st_scan_all(unsigned db, size_t count, int64_t now,
                        unit_st_names *c);

/* A deterministic, incompressible name of len bytes; salt varies its
 * content. malloc'd: the caller frees it. */
uint8_t *unit_st_make_name(size_t len, unsigned salt);

/* A compressible value: len bytes of a short pattern starting at c.
 * malloc'd: the caller frees it. */
uint8_t *unit_st_compressible(size_t len, char c);

#endif
