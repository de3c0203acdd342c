/* shm_stripe.h — one stripe of the cache: its lock, hash index, eviction
 * order (LRU or SLRU), fill floors and slab. Private to shm/.
 *
 * shm_stripe_lock() is the only way to lock a stripe; when the previous
 * holder died it resets the stripe (through shm_lock_acquire, the one place
 * that handles EOWNERDEAD). Functions named *_locked need the lock held and
 * never allocate, log or make a syscall. shm_cache.c decides what to do
 * (the consistency rules); this module does it.
 */
#ifndef SHM_STRIPE_H
#define SHM_STRIPE_H

#include <stddef.h>
#include <stdint.h>

#include "shm/shm_cache.h"
#include "shm/shm_cache_layout.h"
#include "shm/shm_slab.h"

/* One stripe as seen by one operation (process-local, on the stack). */
typedef struct shm_stripe {
    const shm_cache_hdr_sh *h;
    shm_stripe_sh *st;
    char *sb; /* stripe base: refs are offsets from here */
    uint32_t *buckets;
    shm_slab slab;
    unsigned idx;
} shm_stripe;

/* Build the view of stripe idx of the region whose cache header is h. */
void shm_stripe_view(const shm_cache_hdr_sh *h, char *region, unsigned idx,
                     shm_stripe *x);

/* Initialise a zeroed stripe: robust lock, empty slab with page_limit.
 * Creator only, before fork. Returns 0 or a pthread errno. */
int shm_stripe_init(shm_stripe *x, uint32_t page_limit);

/* Pages per stripe allowed by a total budget of bytes. */
uint32_t shm_stripe_page_limit(const shm_cache_hdr_sh *h, uint64_t bytes);

/* Announce version (atomic max into max_seen) BEFORE locking to put,
 * invalidate or flush, so a reset after the caller dies in the critical
 * section still refuses fills older than it. Lock-free. */
void shm_stripe_note_version(shm_stripe *x, uint64_t version);

/* Lock the stripe (resetting it if the previous holder died). Returns 0,
 * SHM_ENOTRECOVERABLE or a pthread errno. */
int shm_stripe_lock(shm_stripe *x);
void shm_stripe_unlock(shm_stripe *x);

/* Add 1 (or d) to a counter of this stripe; lock held. */
void shm_stripe_count_locked(uint64_t *ctr, int64_t d);

/* The item with this key, or 0. */
uint32_t shm_stripe_find_locked(const shm_stripe *x, const void *key,
                                size_t klen, uint64_t hash);
shm_item_sh *shm_stripe_item(const shm_stripe *x, uint32_t ref);

/* Prefetch hash's bucket word (no lock). */
void shm_stripe_prefetch_bucket(const shm_stripe *x, uint64_t hash);

/* Prefetch the first item on hash's bucket chain, reading the bucket word
 * without the lock (relaxed atomic: a hint, never dereferenced here). */
void shm_stripe_prefetch_item(const shm_stripe *x, uint64_t hash);

/* The fill floor for hash: max(stripe floor, the hash's slot floor). */
uint64_t shm_stripe_floor_locked(const shm_stripe *x, uint64_t hash);

/* Raise the hash's slot floor to version. */
void shm_stripe_fold_locked(const shm_stripe *x, uint64_t hash,
                            uint64_t version);

/* Unlink and free an item; fold: keep its version as a floor (needed
 * whenever nothing newer replaces it). */
void shm_stripe_remove_locked(const shm_stripe *x, uint32_t ref, int fold);

/* Write a new item (entry or tombstone) of class cls completely, then link
 * it. An entry evicts as needed; a tombstone only takes free room. The key
 * must have no item. Returns its ref, or 0 if it does not fit (nothing
 * changed then but evictions). */
uint32_t shm_stripe_install_locked(const shm_stripe *x,
                                   const shm_cache_entry_t *e, int kind,
                                   int cls);

/* Turn item ref (an entry or tombstone not newer than version) into a
 * tombstone at version where it stands: same chunk, same place in the
 * eviction order, nothing unlinked or allocated. The caller has checked
 * that its chunk is of the tombstone's class (no memory is held back). */
void shm_stripe_retire_locked(const shm_stripe *x, uint32_t ref,
                              uint64_t version);

/* The key (which has no item) was deleted or could not be stored at
 * e->version: leave a tombstone of class tcls if it fits, else a floor. */
void shm_stripe_mark_deleted_locked(const shm_stripe *x,
                                    const shm_cache_entry_t *e, int tcls);

/* Copy entry ref's value and metadata into out (out->cap >= its vlen) and
 * mark it used for the eviction policy: its reference bit, nothing else
 * (lazy promotion, see shm_stripe.c). */
void shm_stripe_read_locked(const shm_stripe *x, uint32_t ref,
                            shm_cache_value_t *out);

/* Set the stripe's page limit (its slice of the budget) and evict whole
 * pages, coldest first, until no more than that are carved. */
void shm_stripe_set_limit_locked(const shm_stripe *x, uint32_t page_limit);

/* Drop every item not newer than version; refuse older fills from now. */
void shm_stripe_flush_locked(const shm_stripe *x, uint64_t version);

/* Add this stripe's counters to s (lock-free reads). */
void shm_stripe_stats(const shm_stripe *x, shm_cache_stats_t *s);

#endif /* SHM_STRIPE_H */
