/*
 * st_keyspace.h - the keyspace interface for whole keys and string values.
 *
 * Command handlers reach LMDB only through these calls (and the typed
 * collection modules). Every call takes the caller's transaction: a write
 * needs a write transaction; reads work in either. `now` is the caller's
 * clock in ms since the epoch: a key whose expire-at is <= now is absent
 * (lazy expiry): a write transaction deletes it on the spot, a read
 * transaction remembers it for st_keyspace_reap_seen(). Records returned borrow
 * LMDB's memory until the transaction ends or writes. A string record may
 * be chunked (its payload then is not its bytes): read strings through
 * st_string.h.
 */
#ifndef ST_KEYSPACE_H
#define ST_KEYSPACE_H

#include <stddef.h>
#include <stdint.h>

#include "storage/st_codec.h"
#include "storage/st_env.h"

/*
 * Find `k`. Returns 0 and fills *out, or ST_ENOTFOUND. For a long name it
 * also settles the probe byte of k->enc (the slot found, or a free one).
 */
int st_keyspace_lookup(st_txn *t, st_keyref *k, int64_t now, st_rec *out);

/*
 * st_keyspace_lookup without recording an access in the shared clock
 * (OBJECT, TYPE, EXISTS and TTL do not count as accesses, as in Redis).
 */
int st_keyspace_peek(st_txn *t, st_keyref *k, int64_t now, st_rec *out);

/*
 * Seconds since an access to `k` was last recorded (lookups and writes
 * record them; the clock is shared by every process and approximate, see
 * shm/shm_clock.h). 0 when the environment has no clock.
 */
uint64_t st_keyspace_idle(st_env *env, const st_keyref *k, int64_t now);

/*
 * Hint: the keys names[0..n) (lengths lens[]) of database `db` are about
 * to be looked up or written, e.g. by the next commands of a pipeline.
 * Starts fetching the cache's memory for all of them at once (see
 * shm_cache_prefetch), so their lookups don't each wait on memory in turn.
 * No transaction, no effect on any result; a no-op without a cache.
 */
void st_keyspace_prefetch(st_env *env, unsigned db, const void *const *names,
                          const size_t *lens, size_t n);

/* 1 if st_keyspace_prefetch can do anything (the environment has a cache). */
int st_keyspace_prefetch_useful(const st_env *env);

/*
 * Replace whatever `k` holds with an inline string of `len` bytes
 * (len <= ST_STRING_INLINE_MAX of st_string.h, else EINVAL) expiring at
 * `expire_at` (0 = never); *dst receives where to write the bytes, valid
 * until the next storage call. A collection it replaces is detached for
 * lazy freeing. Write transaction only. 0, ST_EFULL, ST_ETXNFULL, errno.
 */
int st_keyspace_string_reserve(st_txn *t, st_keyref *k, size_t len,
                               int64_t expire_at, uint8_t **dst);

/* Store the string `val` (any length: inline or chunked, compressed when
 * configured; see st_string_set of st_string.h). */
int st_keyspace_string_set(st_txn *t, st_keyref *k, const void *val, size_t len,
                           int64_t expire_at);

/* Delete `k` whatever its type: 0, or ST_ENOTFOUND if absent. */
int st_keyspace_delete(st_txn *t, st_keyref *k, int64_t now);

/*
 * Set (expire_at > 0) or remove (0) the expiry of an existing key; the
 * caller has decided it is due in the future. 0 or ST_ENOTFOUND.
 */
int st_keyspace_expire_set(st_txn *t, st_keyref *k, int64_t now,
                           int64_t expire_at);

/*
 * Move `src` to `dst` with its value and TTL. With `nx`, an existing dst
 * gives ST_EEXISTS. ST_ENOTFOUND when src is absent. Same key: no-op 0.
 */
int st_keyspace_rename(st_txn *t, st_keyref *src, st_keyref *dst, int64_t now,
                       int nx);

/*
 * Copy `src` to `dst` (another db allowed) with its TTL. Without
 * `replace`, an existing dst gives ST_EEXISTS. ST_ENOTFOUND: no src.
 */
int st_keyspace_copy(st_txn *t, st_keyref *src, st_keyref *dst, int64_t now,
                     int replace);

/* Called once per key by the iterators; a non-zero return stops them. */
typedef int (*st_key_fn)(void *ctx, const uint8_t *name, size_t len, int type,
                         int64_t expire_at);

/*
 * One SCAN step over database `db` from `cursor` (0 = start): visits about
 * `count` live keys (all keys sharing the last one's hash come along, so a
 * cursor never splits them) and sets *next to the cursor of the following
 * step, 0 when done. A key present for the whole iteration is visited once.
 */
int st_keyspace_scan(st_txn *t, unsigned db, uint64_t cursor, size_t count,
                     int64_t now, st_key_fn fn, void *ctx, uint64_t *next);

/* A random live key of `db` chosen by the random number `r`: O(log n). */
int st_keyspace_random_key(st_txn *t, unsigned db, uint64_t r, int64_t now,
                           st_key_fn fn, void *ctx);

/* Keys and keys-with-TTL in `db`, expired-but-not-reaped included. */
int st_keyspace_dbsize(st_txn *t, unsigned db, uint64_t *keys,
                       uint64_t *expires);

/*
 * Empty database `db`, or every database with db < 0, in its own write
 * transactions (the caller has none open). A big single database is
 * emptied in bounded chunks; *version gets the version of the last commit.
 */
int st_keyspace_flush(st_env *env, int db, uint64_t *version);

/*
 * st_keyspace_flush() inside the caller's write transaction `t` (MULTI/EXEC):
 * one transaction however big, so a huge database may give ST_ETXNFULL.
 */
int st_keyspace_flush_txn(st_txn *t, int db);

/* Largest number of keys one st_keyspace_flush chunk or expiry batch deletes.
 */
#define ST_CHUNK_KEYS 5000

/*
 * Active expiry: delete up to `max` keys whose expire-at <= now, oldest
 * first, in its own write transaction. *done gets the count deleted and
 * *version the commit's version. The caller has no write txn open.
 */
int st_keyspace_expire_due(st_env *env, int64_t now, size_t max, size_t *done,
                           uint64_t *version);

/* Delete keys that read transactions saw expired (if still expired). */
int st_keyspace_reap_seen(st_env *env, int64_t now, size_t *done);

#endif
