/* shm_stripe.c — one cache stripe: lock and crash reset, hash index,
 * eviction order (LRU / segmented LRU), fill floors, allocation with
 * eviction, and copying values in and out (see shm_stripe.h).
 *
 * Eviction, with lazy promotion. A hit only sets the item's reference bit
 * (and only if it was clear): it writes nothing but the item's own header
 * line, which the lookup has just read, so a hit on a hot item writes no
 * list link, no neighbour and no list head, and leaves no dirty line for
 * the next worker to fetch. The order is fixed up when room is needed,
 * CLOCK-style (second chance), at the cold end:
 *   LRU:  the tail is the victim unless its bit is set; then the bit is
 *         cleared and the item goes back to the head.
 *   SLRU: new items enter the probation list. A probation tail with its
 *         bit set is promoted to the protected list (capped at
 *         protected_pct of the stripe's budget) instead of evicted; the
 *         protected overflow leaves from the protected tail, which gets a
 *         second chance there if it was hit, else is demoted to the
 *         probation head. Victims come from the probation tail. A one-time
 *         scan then only churns probation, and items hit while in the
 *         cache survive it; tools/cachesim measures the gain over LRU.
 * Each second chance clears a bit that a hit set, so the extra work is
 * paid for by earlier hits; SHM_SECOND_CHANCES bounds it per victim
 * (past it the plain tail goes), so no eviction walks a whole list under
 * the lock.
 * Tombstones only take free room (they never evict) and enter at the cold
 * end with a clear bit: first to go under pressure, when their version
 * moves to the hashed slot floor (see shm_cache.c). An item retired in
 * place (shm_stripe_retire_locked) keeps its chunk and its position.
 *
 * Under the lock: no malloc, no syscalls, no logging; the test hook is the
 * only call out, and it is NULL outside tests.
 */
#include <stdint.h>
#include <string.h>

#include "shm/shm_cache.h"
#include "shm/shm_cache_layout.h"
#include "shm/shm_lock.h"
#include "shm/shm_slab.h"
#include "shm/shm_stripe.h"

#define SHM_PCT 100
#define SHM_EVICT_TRIES 8 /* single evictions before evicting a page */
#define SHM_PREFETCH_ITEM_BYTES (2 * SHM_CACHE_LINE)

_Static_assert(sizeof(shm_item_sh) == 56, "item header size");
_Static_assert(offsetof(shm_item_sh, magic) == 4,
               "item magic sits where the slab keeps SHM_SLAB_FREE_MARK");
_Static_assert(sizeof(shm_item_sh) <= SHM_SLAB_MIN_CHUNK,
               "a tombstone with an empty key fits the smallest chunk");
_Static_assert(SHM_FLOOR_SLOTS == 64, "slot mask below assumes 64 slots");

static void hook(int point, unsigned idx)
{
    void (*fn)(int, unsigned) = shm_cache_test_hook;

    if (fn != NULL)
        fn(point, idx);
}

/* Counters are written only under the stripe lock. */
void shm_stripe_count_locked(uint64_t *p, int64_t d)
{
    __atomic_store_n(p, __atomic_load_n(p, __ATOMIC_RELAXED) + (uint64_t)d,
                     __ATOMIC_RELAXED);
}

void shm_stripe_view(const shm_cache_hdr_sh *h, char *region, unsigned idx,
                     shm_stripe *x)
{
    x->h = h;
    x->idx = idx;
    x->sb = region + h->stripes_off + (uint64_t)idx * h->stripe_size;
    x->st = (shm_stripe_sh *)(void *)x->sb;
    x->buckets = (uint32_t *)(void *)(x->sb + h->buckets_off);
    x->slab.sh = &x->st->slab;
    x->slab.pages = (shm_slab_page_sh *)(void *)(x->sb + h->pages_off);
    x->slab.base = x->sb;
    x->slab.data_off = (uint32_t)h->data_off;
    x->slab.page_size = h->page_size;
    x->slab.class_size = h->class_size;
    x->slab.nclasses = h->nclasses;
}

void shm_stripe_note_version(shm_stripe *x, uint64_t v)
{
    shm_stripe_sh *st = x->st;
    uint64_t cur = __atomic_load_n(&st->max_seen, __ATOMIC_RELAXED);

    while (cur < v &&
           !__atomic_compare_exchange_n(&st->max_seen, &cur, v, 1,
                                        __ATOMIC_SEQ_CST, __ATOMIC_RELAXED))
        ;
}

uint32_t shm_stripe_page_limit(const shm_cache_hdr_sh *h, uint64_t budget)
{
    uint64_t pages = budget / h->nstripes / h->page_size;

    return pages > h->npages ? h->npages : (uint32_t)pages;
}

static uint64_t protected_cap(const shm_stripe *x)
{
    return (uint64_t)x->st->slab.page_limit * x->h->page_size *
           x->h->protected_pct / SHM_PCT;
}

shm_item_sh *shm_stripe_item(const shm_stripe *x, uint32_t ref)
{
    return (shm_item_sh *)(void *)(x->sb + ref);
}

static char *item_key(shm_item_sh *it) { return (char *)(it + 1); }

static uint32_t item_csize(const shm_stripe *x, const shm_item_sh *it)
{
    return x->h->class_size[it->cls];
}

/* --- stripe reset and locking --------------------------------------- */

/* Repair callback for shm_lock_acquire: the previous holder died, so the
 * index, lists and slab may be half-updated. Throw everything away and
 * raise the floor to every version announced for this stripe, so nothing
 * the stripe knew can be undercut by a stale fill. Lifetime counters
 * (hits, misses, ...) are kept. */
static void stripe_reset_locked(void *arg)
{
    shm_stripe *x = arg;
    shm_stripe_sh *st = x->st;
    uint64_t seen = __atomic_load_n(&st->max_seen, __ATOMIC_SEQ_CST);

    memset(x->buckets, 0, (size_t)x->h->nbuckets * sizeof(uint32_t));
    memset(st->seg, 0, sizeof(st->seg));
    memset(st->slot_floor, 0, sizeof(st->slot_floor));
    if (st->floor < seen)
        st->floor = seen;
    shm_slab_init_locked(
        &x->slab, x->h->npages,
        shm_stripe_page_limit(x->h, __atomic_load_n(&x->h->budget,
                                                    __ATOMIC_RELAXED)));
    __atomic_store_n(&st->ctr.entries, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&st->ctr.tombstones, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&st->ctr.bytes_used, 0, __ATOMIC_RELAXED);
}

int shm_stripe_lock(shm_stripe *x)
{
    int rc = shm_lock_acquire(&x->st->lock, stripe_reset_locked, x);

    if (rc == 0)
        hook(SHM_HOOK_LOCKED, x->idx);
    return rc;
}

void shm_stripe_unlock(shm_stripe *x) { shm_lock_release(&x->st->lock); }

/* --- index ---------------------------------------------------------- */

static uint32_t *bucket_of(const shm_stripe *x, uint64_t hash)
{
    return &x->buckets[hash & (x->h->nbuckets - 1)];
}

uint32_t shm_stripe_find_locked(const shm_stripe *x, const void *key,
                                size_t klen, uint64_t hash)
{
    uint32_t ref = *bucket_of(x, hash);

    while (ref != 0) {
        shm_item_sh *it = shm_stripe_item(x, ref);
        if (it->hash == hash && it->klen == klen &&
            (klen == 0 || memcmp(item_key(it), key, klen) == 0))
            return ref;
        ref = it->hnext;
    }
    return 0;
}

void shm_stripe_prefetch_bucket(const shm_stripe *x, uint64_t hash)
{
    __builtin_prefetch(bucket_of(x, hash), 0, 3);
}

/* The first SHM_PREFETCH_ITEM_BYTES of the first item on the chain (2 or
 * 3 lines, whatever the chunk's alignment): its header, the key and a
 * short value. Prefetching whole big values instead was measured no
 * better (GET of 1 KiB values: the extra prefetches stall on the CPU's
 * outstanding-miss limit, where the copy-out's own streaming loads would
 * have waited). */
void shm_stripe_prefetch_item(const shm_stripe *x, uint64_t hash)
{
    uint32_t ref = __atomic_load_n(bucket_of(x, hash), __ATOMIC_RELAXED);

    if (ref != 0) {
        const char *it = x->sb + ref;
        __builtin_prefetch(it, 0, 3);
        __builtin_prefetch(it + SHM_CACHE_LINE, 0, 3);
        __builtin_prefetch(it + SHM_PREFETCH_ITEM_BYTES - 1, 0, 3);
    }
}

static void hash_link_locked(const shm_stripe *x, uint32_t ref)
{
    shm_item_sh *it = shm_stripe_item(x, ref);
    uint32_t *b = bucket_of(x, it->hash);

    it->hnext = *b;
    __atomic_store_n(b, ref, __ATOMIC_RELAXED); /* prefetch reads it */
}

static void hash_unlink_locked(const shm_stripe *x, uint32_t ref)
{
    shm_item_sh *it = shm_stripe_item(x, ref);
    uint32_t *link = bucket_of(x, it->hash);

    while (*link != 0 && *link != ref)
        link = &shm_stripe_item(x, *link)->hnext;
    if (*link == ref)
        __atomic_store_n(link, it->hnext, __ATOMIC_RELAXED);
}

/* --- eviction lists ------------------------------------------------- */

static void list_unlink_locked(const shm_stripe *x, uint32_t ref)
{
    shm_item_sh *it = shm_stripe_item(x, ref);
    shm_list_sh *l = &x->st->seg[it->seg];

    if (it->prev != 0)
        shm_stripe_item(x, it->prev)->next = it->next;
    else
        l->head = it->next;
    if (it->next != 0)
        shm_stripe_item(x, it->next)->prev = it->prev;
    else
        l->tail = it->prev;
    it->prev = it->next = 0;
    l->count--;
    l->bytes -= item_csize(x, it);
}

static void list_push_locked(const shm_stripe *x, unsigned seg, uint32_t ref,
                             int at_head)
{
    shm_item_sh *it = shm_stripe_item(x, ref);
    shm_list_sh *l = &x->st->seg[seg];

    it->seg = (uint8_t)seg;
    if (at_head) {
        it->prev = 0;
        it->next = l->head;
        if (l->head != 0)
            shm_stripe_item(x, l->head)->prev = ref;
        else
            l->tail = ref;
        l->head = ref;
    } else {
        it->next = 0;
        it->prev = l->tail;
        if (l->tail != 0)
            shm_stripe_item(x, l->tail)->next = ref;
        else
            l->head = ref;
        l->tail = ref;
    }
    l->count++;
    l->bytes += item_csize(x, it);
}

/* A hit: set the reference bit, writing the line only when it changes. */
static void mark_used_locked(shm_item_sh *it)
{
    if (it->ref == 0)
        it->ref = 1;
}

/* SLRU: move probation item ref (already unlinked) to the protected
 * head, then bring the protected segment back within its share: its tail
 * gets a second chance at the protected head if it was hit (while
 * *budget lasts), else goes to the probation head. */
static void promote_locked(const shm_stripe *x, uint32_t ref, unsigned *budget)
{
    shm_list_sh *prot = &x->st->seg[SHM_SEG_PROTECTED];
    uint64_t cap = protected_cap(x);

    list_push_locked(x, SHM_SEG_PROTECTED, ref, 1);
    while (prot->bytes > cap && prot->tail != ref) {
        uint32_t t = prot->tail;
        shm_item_sh *it = shm_stripe_item(x, t);
        list_unlink_locked(x, t);
        if (it->ref != 0 && *budget > 0) {
            (*budget)--;
            it->ref = 0;
            list_push_locked(x, SHM_SEG_PROTECTED, t, 1);
        } else {
            it->ref = 0;
            list_push_locked(x, SHM_SEG_PROBATION, t, 1);
        }
    }
}

/* The next item to evict (0 if the stripe holds none), after giving the
 * items at the cold end that were hit since they got there their second
 * chance (LRU: back to the head; SLRU: promotion). At most
 * SHM_SECOND_CHANCES items move; then the cold end goes as it is. */
static uint32_t victim_locked(const shm_stripe *x)
{
    shm_stripe_sh *st = x->st;
    shm_list_sh *prob = &st->seg[SHM_SEG_PROBATION];
    unsigned budget = SHM_SECOND_CHANCES;

    while (prob->tail != 0 && budget > 0) {
        uint32_t t = prob->tail;
        shm_item_sh *it = shm_stripe_item(x, t);
        if (it->ref == 0)
            return t;
        budget--;
        it->ref = 0;
        list_unlink_locked(x, t);
        if (x->h->policy == SHM_POLICY_LRU)
            list_push_locked(x, SHM_SEG_PROBATION, t, 1);
        else
            promote_locked(x, t, &budget);
    }
    if (prob->tail != 0)
        return prob->tail;
    return st->seg[SHM_SEG_PROTECTED].tail;
}

/* --- floors, removal, eviction, allocation -------------------------- */

static uint64_t *slot_floor(const shm_stripe *x, uint64_t hash)
{
    return &x->st->slot_floor[(hash >> SHM_FLOOR_SLOT_SHIFT) &
                              (SHM_FLOOR_SLOTS - 1)];
}

uint64_t shm_stripe_floor_locked(const shm_stripe *x, uint64_t hash)
{
    uint64_t s = *slot_floor(x, hash);

    return s > x->st->floor ? s : x->st->floor;
}

/* Remember that K had a write at version, without keeping an item. */
void shm_stripe_fold_locked(const shm_stripe *x, uint64_t hash,
                            uint64_t version)
{
    uint64_t *f = slot_floor(x, hash);

    if (*f < version)
        *f = version;
}

/* Unlink and free an item. fold: keep its version as a floor (needed
 * whenever nothing newer replaces it). */
void shm_stripe_remove_locked(const shm_stripe *x, uint32_t ref, int fold)
{
    shm_item_sh *it = shm_stripe_item(x, ref);
    shm_stripe_ctr_sh *ctr = &x->st->ctr;

    if (fold)
        shm_stripe_fold_locked(x, it->hash, it->version);
    list_unlink_locked(x, ref);
    hash_unlink_locked(x, ref);
    shm_stripe_count_locked(it->kind == SHM_ITEM_TOMB ? &ctr->tombstones
                                                      : &ctr->entries,
                            -1);
    shm_stripe_count_locked(&ctr->bytes_used, -(int64_t)item_csize(x, it));
    it->magic = 0;
    shm_slab_free_locked(&x->slab, ref);
}

static void evict_locked(const shm_stripe *x, uint32_t ref)
{
    shm_stripe_remove_locked(x, ref, 1);
    shm_stripe_count_locked(&x->st->ctr.evictions, 1);
}

/* Evict every item on ref's page: the page returns to the free pool, so a
 * class with no page of its own can get one. */
static void evict_page_locked(const shm_stripe *x, uint32_t ref)
{
    uint32_t page = shm_slab_page_of(&x->slab, ref);
    uint32_t n = shm_slab_page_carved(&x->slab, page);
    uint32_t i;

    for (i = 0; i < n; i++) {
        uint32_t r;
        if (shm_slab_page_live(&x->slab, page) == 0)
            break; /* page already released: stop touching it */
        r = shm_slab_chunk_ref(&x->slab, page, i);
        if (!shm_slab_chunk_is_free(&x->slab, r))
            evict_locked(x, r);
    }
}

/* A chunk of class cls, evicting as needed: victims one at a time first
 * (exact LRU order when sizes match), then whole pages, so an allocation
 * always ends after a bounded amount of work. 0 only if the budget cannot
 * hold a single page. */
static uint32_t alloc_locked(const shm_stripe *x, unsigned cls)
{
    unsigned n;

    for (n = 0;; n++) {
        uint32_t ref = shm_slab_alloc_locked(&x->slab, cls);
        uint32_t v;
        if (ref != 0)
            return ref;
        v = victim_locked(x);
        if (v == 0)
            return 0;
        if (n < SHM_EVICT_TRIES)
            evict_locked(x, v);
        else
            evict_page_locked(x, v);
    }
}

void shm_stripe_set_limit_locked(const shm_stripe *x, uint32_t page_limit)
{
    shm_slab_set_limit_locked(&x->slab, page_limit);
    while (shm_slab_carved(&x->st->slab) > page_limit) {
        uint32_t v = victim_locked(x);
        if (v == 0)
            break;
        evict_page_locked(x, v);
    }
}

static void copy_in(void *dst, const void *src, size_t len, unsigned idx)
{
    size_t half = len / 2;

    if (len == 0)
        return;
    memcpy(dst, src, half);
    hook(SHM_HOOK_COPY_IN, idx);
    memcpy((char *)dst + half, (const char *)src + half, len - half);
}

static void copy_out(void *dst, const void *src, size_t len, unsigned idx)
{
    size_t half = len / 2;

    if (len == 0)
        return;
    memcpy(dst, src, half);
    hook(SHM_HOOK_COPY_OUT, idx);
    memcpy((char *)dst + half, (const char *)src + half, len - half);
}

/* Write a new item of class cls completely, then link it: until the last
 * two links it is unreachable. Returns its ref, or 0 if nothing fits. */
uint32_t shm_stripe_install_locked(const shm_stripe *x,
                                   const shm_cache_entry_t *e, int kind,
                                   int cls)
{
    shm_stripe_ctr_sh *ctr = &x->st->ctr;
    shm_item_sh *it;
    uint32_t ref;

    /* A tombstone only uses room that is free: evicting live entries to
     * keep one would cost more than the floor it falls back to. */
    if (kind == SHM_ITEM_TOMB)
        ref = shm_slab_alloc_locked(&x->slab, (unsigned)cls);
    else
        ref = alloc_locked(x, (unsigned)cls);
    if (ref == 0)
        return 0;
    it = shm_stripe_item(x, ref);
    it->hnext = 0;
    it->magic = SHM_ITEM_MAGIC;
    it->prev = it->next = 0;
    it->hash = e->hash;
    it->version = e->version;
    it->expire_at = kind == SHM_ITEM_ENTRY ? e->expire_at : 0;
    it->klen = (uint32_t)e->klen;
    it->vlen = kind == SHM_ITEM_ENTRY ? (uint32_t)e->vlen : 0;
    it->type = e->type;
    it->flags = e->flags;
    it->kind = (uint8_t)kind;
    it->seg = SHM_SEG_PROBATION;
    it->cls = (uint8_t)cls;
    it->ref = 0;
    if (e->klen != 0)
        memcpy(item_key(it), e->key, e->klen);
    if (kind == SHM_ITEM_ENTRY)
        copy_in(item_key(it) + e->klen, e->val, e->vlen, x->idx);
    hash_link_locked(x, ref);
    /* Tombstones go to the cold end: first to leave under pressure, when
     * their version moves to the slot floor. */
    list_push_locked(x, SHM_SEG_PROBATION, ref, kind == SHM_ITEM_ENTRY);
    shm_stripe_count_locked(kind == SHM_ITEM_TOMB ? &ctr->tombstones
                                                  : &ctr->entries,
                            1);
    shm_stripe_count_locked(&ctr->bytes_used, item_csize(x, it));
    return ref;
}

void shm_stripe_retire_locked(const shm_stripe *x, uint32_t ref,
                              uint64_t version)
{
    shm_item_sh *it = shm_stripe_item(x, ref);
    shm_stripe_ctr_sh *ctr = &x->st->ctr;

    if (it->kind == SHM_ITEM_ENTRY) {
        shm_stripe_count_locked(&ctr->entries, -1);
        shm_stripe_count_locked(&ctr->tombstones, 1);
    }
    it->kind = SHM_ITEM_TOMB;
    it->version = version;
    it->expire_at = 0;
    it->vlen = 0;
    it->type = 0;
    it->flags = 0;
    it->ref = 0;
}

/* K was deleted (or could not be stored) at version: a tombstone if one
 * fits, else a floor. K has no item when this is called. */
void shm_stripe_mark_deleted_locked(const shm_stripe *x,
                                    const shm_cache_entry_t *e, int tcls)
{
    if (tcls < 0 || shm_stripe_install_locked(x, e, SHM_ITEM_TOMB, tcls) == 0)
        shm_stripe_fold_locked(x, e->hash, e->version);
}

/* Drop every item not newer than version (both segments). */
void shm_stripe_flush_locked(const shm_stripe *x, uint64_t version)
{
    unsigned seg;

    if (x->st->floor < version)
        x->st->floor = version;
    for (seg = 0; seg < SHM_NSEGS; seg++) {
        uint32_t ref = x->st->seg[seg].head;
        while (ref != 0) {
            shm_item_sh *it = shm_stripe_item(x, ref);
            uint32_t next = it->next;
            if (it->version <= version)
                shm_stripe_remove_locked(x, ref, 0);
            ref = next;
        }
    }
}

void shm_stripe_read_locked(const shm_stripe *x, uint32_t ref,
                            shm_cache_value_t *out)
{
    shm_item_sh *it = shm_stripe_item(x, ref);

    copy_out(out->buf, item_key(it) + it->klen, it->vlen, x->idx);
    out->len = it->vlen;
    out->version = it->version;
    out->expire_at = it->expire_at;
    out->type = it->type;
    out->flags = it->flags;
    mark_used_locked(it);
}

int shm_stripe_init(shm_stripe *x, uint32_t page_limit)
{
    int rc = shm_lock_init(&x->st->lock);

    if (rc != 0)
        return rc;
    shm_slab_init_locked(&x->slab, x->h->npages, page_limit);
    return 0;
}

static uint64_t ctr_get(const uint64_t *p)
{
    return __atomic_load_n(p, __ATOMIC_RELAXED);
}

void shm_stripe_stats(const shm_stripe *x, shm_cache_stats_t *s)
{
    const shm_stripe_ctr_sh *ctr = &x->st->ctr;

    s->bytes_used += ctr_get(&ctr->bytes_used);
    s->bytes_slab += (uint64_t)shm_slab_carved(&x->st->slab) * x->h->page_size;
    s->entries += ctr_get(&ctr->entries);
    s->tombstones += ctr_get(&ctr->tombstones);
    s->hits += ctr_get(&ctr->hits);
    s->misses += ctr_get(&ctr->misses);
    s->evictions += ctr_get(&ctr->evictions);
    s->fills_refused += ctr_get(&ctr->fills_refused);
    s->puts_dropped += ctr_get(&ctr->puts_dropped);
    s->lock_waits += shm_lock_waits(&x->st->lock);
    s->owner_dead += shm_lock_owner_dead(&x->st->lock);
}
