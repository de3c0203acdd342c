/* shm_cache.h — the shared-memory cache in front of LMDB.
 *
 * Who: the master creates the cache (shm_cache_create) before it forks, so
 * every child inherits the region at the same address; children use the
 * inherited handle as is, or check the region with shm_cache_attach().
 * Workers (and the reaper) read and write entries; any process may read the
 * statistics; only the master destroys the region, after its children are
 * gone. Writers update the cache after their LMDB commit and before they
 * acknowledge the write, with the commit's version (txn id).
 *
 * Invariant: the cache never returns a value that a completed write has
 * superseded, across processes, and never resurrects a deleted key; a newer
 * version always wins, and a miss fill from an older snapshot is refused.
 *
 * A process that dies holding a stripe lock leaves EOWNERDEAD for the next
 * locker, which clears that stripe (it is only a cache), raises the stripe's
 * fill floor to every version it had been told about, and carries on.
 *
 * Keys are opaque bytes already encoded by the caller (db number included);
 * the caller hashes them once (64 bits, well mixed: bits 32.. pick the
 * stripe, the low bits the bucket) and passes the hash to every call. For
 * each committed write, call put or invalidate once per key it touched,
 * with the key's final state in that transaction.
 *
 * The budget counts slab pages (cache data), rounded down to whole pages
 * per stripe; the index and page tables add about 2% on top. A budget of
 * 0 turns the cache off: every call is then a cheap no-op (get misses).
 * A NULL handle behaves the same way. Budgets below one page (4 KiB) per
 * stripe cache nothing.
 * Nothing here allocates, logs or makes a syscall while a stripe lock is
 * held; the lock is never held when a call returns.
 */
#ifndef SHM_CACHE_H
#define SHM_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "shm/shm_error.h"

#define SHM_CACHE_STRIPES_DEFAULT 64
#define SHM_CACHE_STRIPES_MAX 4096

typedef struct shm_cache shm_cache_t; /* process-local handle (opaque) */

/* Eviction order within a stripe. */
typedef enum shm_cache_policy {
    SHM_POLICY_DEFAULT = 0, /* the measured winner: SHM_POLICY_SLRU
                             * (tools/cachesim, Zipf 0.99 + full scans) */
    SHM_POLICY_LRU,         /* plain LRU */
    SHM_POLICY_SLRU,        /* segmented LRU: probation + protected */
    SHM_POLICY_COUNT
} shm_cache_policy_t;

typedef struct shm_cache_opts {
    size_t budget_bytes; /* bytes of cache data (config cache-mb); 0 = off */
    size_t max_bytes;    /* mapped size, bounds set_budget; 0 = budget */
    unsigned nstripes;   /* power of two; 0 = SHM_CACHE_STRIPES_DEFAULT.
                          * Reduced for small budgets (>= 64 KiB/stripe). */
    shm_cache_policy_t policy;
} shm_cache_opts_t;

/* What a writer or filler offers. Every pointer is only read during the
 * call; the cache copies the bytes. */
typedef struct shm_cache_entry {
    const void *key; /* encoded key (db number included) */
    size_t klen;
    uint64_t hash;   /* caller's 64-bit hash of key */
    const void *val; /* value as stored (maybe compressed) */
    size_t vlen;
    uint64_t version;  /* LMDB txn id that wrote this value */
    int64_t expire_at; /* ms since the epoch, 0 = never */
    uint8_t type;      /* caller's type byte */
    uint8_t flags;     /* caller's flags byte (e.g. compressed) */
} shm_cache_entry_t;

/* What shm_cache_get fills in. buf/cap are the caller's; on SHM_ETOOSMALL
 * len is the size needed. */
typedef struct shm_cache_value {
    void *buf;         /* in: caller's buffer (may be NULL if cap == 0) */
    size_t cap;        /* in: its size */
    size_t len;        /* out: value length */
    uint64_t version;  /* out */
    int64_t expire_at; /* out */
    uint8_t type;      /* out */
    uint8_t flags;     /* out */
} shm_cache_value_t;

/* Statistics, summed over the stripes from lock-free counters. */
typedef struct shm_cache_stats {
    uint64_t budget;     /* bytes of data allowed now */
    uint64_t max_bytes;  /* bytes of data mapped */
    uint64_t bytes_used; /* chunk bytes of entries and tombstones */
    uint64_t bytes_slab; /* bytes of slab pages carved */
    uint64_t entries;    /* live entries (tombstones excluded) */
    uint64_t tombstones;
    uint64_t hits;
    uint64_t misses;
    uint64_t evictions;     /* entries and tombstones pushed out */
    uint64_t fills_refused; /* fills refused as stale */
    uint64_t puts_dropped;  /* puts/invalidates beaten by a newer version */
    uint64_t lock_waits;    /* stripe lock acquisitions that had to wait */
    uint64_t owner_dead;    /* stripes recovered after a holder died */
    uint32_t nstripes;
    uint32_t page_size; /* slab page; also the largest chunk */
    size_t max_item;    /* largest klen + vlen that fits */
    shm_cache_policy_t policy;
} shm_cache_stats_t;

/* Test-only hook, inert unless set: called while a stripe lock is held,
 * at these points, so a test can make a process die there. Process-local. */
enum shm_cache_hook_point {
    SHM_HOOK_LOCKED = 1, /* just after a stripe lock was taken */
    SHM_HOOK_COPY_IN,    /* halfway through copying a value in */
    SHM_HOOK_COPY_OUT    /* halfway through copying a value out */
};
extern void (*shm_cache_test_hook)(int point, unsigned stripe);

/* Map and initialise the region (shm_region) for opts; *out is the handle.
 * The master only, before fork. A budget of 0 (and max_bytes 0) gives a
 * handle on which the cache is off. Returns 0, EINVAL (nstripes not a power
 * of two or too many, policy unknown), or an mmap/pthread errno. */
int shm_cache_create(const shm_cache_opts_t *opts, shm_cache_t **out);

/* Unmap the region, free the handle, set *c to NULL. The creator only,
 * once no other process uses the region. Returns 0 or munmap's errno. */
int shm_cache_destroy(shm_cache_t **c);

/* Build a new handle on a region mapped at base (len bytes), checking magic,
 * layout version and geometry. For a process that inherited the mapping and
 * wants it checked; it does not map anything. Returns 0, ENOMEM,
 * SHM_EBADMAGIC, SHM_EVERSION or SHM_ELAYOUT. */
int shm_cache_attach(void *base, size_t len, shm_cache_t **out);

/* Free a handle from shm_cache_attach (the mapping stays); set *c NULL. */
void shm_cache_detach(shm_cache_t **c);

/* The region's base and length, for shm_cache_attach in a child. */
void *shm_cache_base(const shm_cache_t *c, size_t *len);

/* 1 if the cache is on, 0 if off. */
int shm_cache_enabled(const shm_cache_t *c);

/* Largest klen + vlen an entry may have (0 when off). Bigger puts become
 * invalidations (SHM_ETOOBIG). */
size_t shm_cache_max_item(const shm_cache_t *c);

/* Look key up. On a hit copy the value into out->buf and fill out; an entry
 * whose expire_at <= now_ms is a miss and is dropped (storage/'s rule).
 * A tombstone is a miss. Any process; the value is copied under the stripe
 * lock, no pointer into the region escapes.
 * Returns 0 (hit), SHM_EMISS, SHM_ETOOSMALL (out->len = size needed, not
 * counted as hit or miss; call again with a bigger buffer — the entry may
 * be gone by then), or a lock error (SHM_ENOTRECOVERABLE, errno). */
int shm_cache_get(shm_cache_t *c, const void *key, size_t klen, uint64_t hash,
                  int64_t now_ms, shm_cache_value_t *out);

/* Hint that the keys with these n hashes are about to be looked up (a
 * pipeline's next commands): bring what shm_cache_get reads first — each
 * key's bucket, then the item it leads to — into the CPU cache for all n
 * keys at once, so their memory latencies overlap instead of adding up.
 * Takes no lock and writes nothing: it reads bucket words with relaxed
 * atomic loads only to pick addresses to prefetch, and never changes what
 * any call returns. Any process; a NULL or off cache does nothing. */
void shm_cache_prefetch(const shm_cache_t *c, const uint64_t *hashes, size_t n);

/* Install e after the LMDB commit whose txn id is e->version; call it
 * before acknowledging the write. An entry or tombstone with a newer
 * version, or a fill floor above e->version (flush, or an evicted newer
 * item), wins: the put is dropped (any older entry of the key is still
 * removed). Any worker.
 * Returns 0, SHM_ESTALE (dropped), SHM_ETOOBIG (too big to cache: the key
 * was invalidated at e->version instead), SHM_ENOSPC (budget holds nothing:
 * same), or a lock error. */
int shm_cache_put(shm_cache_t *c, const shm_cache_entry_t *e);

/* After a committed delete, expiry or rename-away at version: remove the
 * key and leave a tombstone (in free room; else the version raises the
 * stripe's hashed fill floor) so fills from older snapshots are refused.
 * A newer entry or tombstone wins. Any worker or the reaper.
 * Returns 0, SHM_ESTALE (a newer version is cached), or a lock error. */
int shm_cache_invalidate(shm_cache_t *c, const void *key, size_t klen,
                         uint64_t hash, uint64_t version);

/* A reader that missed and read e from LMDB in a snapshot whose txn id is
 * snapshot_version (e->version <= snapshot_version) offers it. Refused if
 * any put, invalidate, flush or floor the cache knows for the key is newer
 * than the snapshot. Any worker.
 * Returns 0 (installed or already there), SHM_ESTALE (refused: counted as
 * a stale fill), SHM_ETOOBIG, SHM_ENOSPC, EINVAL (e->version newer than
 * the snapshot), or a lock error. */
int shm_cache_fill(shm_cache_t *c, const shm_cache_entry_t *e,
                   uint64_t snapshot_version);

/* After a committed FLUSHDB/FLUSHALL at version: in every stripe, drop
 * entries and tombstones not newer than version and refuse later fills
 * and puts older than it. The cache does not parse keys, so FLUSHDB drops
 * the other databases' entries too (safe: they are refilled on a miss).
 * Any worker; takes every stripe lock in turn (O(entries)).
 * Returns 0 or the first lock error (the other stripes are still done). */
int shm_cache_flush_all(shm_cache_t *c, uint64_t version);

/* Set the data budget at run time. Shrinking evicts down to it, stripe by
 * stripe; growing up to the mapped size (opts.max_bytes) takes effect at
 * once. Any process (normally the master on reload).
 * Returns 0, SHM_ERESTART (bytes above the mapped size: needs a restart;
 * nothing changed), or a lock error. */
int shm_cache_set_budget(shm_cache_t *c, size_t bytes);

/* Fill *st from lock-free counters (not a consistent snapshot). Any
 * process. A NULL or off cache gives zeros. */
void shm_cache_stats(const shm_cache_t *c, shm_cache_stats_t *st);

/* Name of a policy ("lru", "slru"). */
const char *shm_cache_policy_name(shm_cache_policy_t p);

#endif /* SHM_CACHE_H */
