/* shm_cache.c — the cache's geometry, lifecycle and consistency rules
 * (see shm_cache.h for the contract, shm_cache_layout.h for the mapped
 * structures, shm_stripe.c for what happens inside one stripe).
 *
 * Consistency, in one place. Every key K lives in one stripe (hash bits);
 * everything below happens under that stripe's lock, so per stripe the
 * operations are totally ordered. The cache keeps, per key, the newest
 * version it has been told about, in one of three forms:
 *   - an entry (value, version V): a put or an accepted fill;
 *   - a tombstone (version W): an invalidate;
 *   - a fill floor: when an entry or tombstone leaves the cache (eviction,
 *     expiry, a put or fill that could not be stored), its version is
 *     folded into slot_floor[slot(K)] (64 hashed slots per stripe); a flush
 *     at F raises the stripe-wide floor to F; a stripe reset after a crash
 *     raises the floor to max_seen (every version any process announced for
 *     the stripe before it took the lock, so also the dead holder's).
 * So "known(K)" = max(entry/tombstone version, slot floor, stripe floor) is
 * never below the version of any put/invalidate/flush that has returned.
 *   put(P):        dropped if known(K) > P (a newer write won); else K's
 *                  entry becomes P. Dropping still removes an older entry.
 *   invalidate(W): dropped if an entry/tombstone newer than W exists; else
 *                  K's entry is replaced by a tombstone W.
 *   fill(S, V<=S): refused if known(K) > S.
 * The three races of a reader with snapshot S and a writer committing W:
 *   1. reader saw v1 at S < W; writer's put/invalidate(W) runs first:
 *      known(K) >= W > S from then on (entry, tombstone, or their folded
 *      floor), so the late fill of v1 is refused.
 *   2. writer committed W but has not called put yet; a reader with S >= W
 *      fills the new value: nothing newer than S is known, accepted. The
 *      writer's put(W) then finds V == W and replaces it with the same bytes.
 *   3. reader with S < W fills v1 before the writer's call arrives: the fill
 *      is accepted (the write has not completed: the writer has not yet
 *      updated the cache, so it has not acknowledged), and the writer's
 *      put/invalidate(W) then replaces v1 because W > V.
 * Hence once a write's cache call returned, no hit can return an older
 * version, and a deleted key cannot come back through a stale fill.
 *
 * Tombstones versus watermark: we keep both. A tombstone is exact (only
 * fills of that very key are refused) but costs a small chunk, so it only
 * takes free room (it never evicts an entry) and sits at the cold end of
 * the eviction order: while the cache has room it stays, under pressure it
 * is the first to go — or is never written — and its version goes to the
 * hashed floor instead, which stays correct at the cost of refusing, for
 * 1/64 of the stripe's keys, fills from snapshots older than that delete.
 * Readers whose snapshots are that old are rare (a snapshot is taken per
 * command), so little is lost either way. A delete or overwrite of a key
 * whose item's chunk is already the tombstone's size (small values: the
 * common case of a key written again and again) retires the item in place
 * instead: no room taken, and its place in the eviction order is kept.
 *
 * Each operation announces its version to the stripe (put, invalidate,
 * flush), locks it with shm_stripe_lock() — the only way in, which resets
 * the stripe if the previous holder died — decides by the rules above, and
 * lets shm_stripe.c do the work. Nothing under a stripe lock allocates,
 * logs or makes a syscall.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "shm/shm_cache.h"
#include "shm/shm_cache_layout.h"
#include "shm/shm_region.h"
#include "shm/shm_slab.h"
#include "shm/shm_stripe.h"

#define SHM_STRIPE_MIN_BYTES (64u * 1024)          /* smallest stripe */
#define SHM_STRIPE_MAX_BYTES (1024u * 1024 * 1024) /* refs are 32 bits */
#define SHM_PAGES_PER_STRIPE 64 /* aim: stripe / 64 = page size */
#define SHM_PAGE_MIN (4u * 1024)
#define SHM_PAGE_MAX (1024u * 1024)
#define SHM_BYTES_PER_BUCKET 256 /* expected bytes per entry, for sizing */
#define SHM_BUCKETS_MIN 64
#define SHM_SLRU_PROTECTED_PCT 80
#define SHM_PCT 100

/* The process-local handle. */
struct shm_cache {
    char *base;            /* region base, same address in every child */
    size_t size;           /* bytes mapped */
    shm_cache_hdr_sh *hdr; /* NULL: cache off */
    int owner;             /* 1: created (destroy unmaps), 0: attached */
};

void (*shm_cache_test_hook)(int point, unsigned stripe);

static uint64_t round_up(uint64_t v, uint64_t to)
{
    return (v + to - 1) / to * to;
}

static int is_pow2(uint64_t v) { return v != 0 && (v & (v - 1)) == 0; }

static int off(const shm_cache_t *c) { return c == NULL || c->hdr == NULL; }

static void stripe_at(const shm_cache_t *c, unsigned idx, shm_stripe *x)
{
    shm_stripe_view(c->hdr, c->base, idx, x);
}

static void stripe_for_hash(const shm_cache_t *c, uint64_t hash, shm_stripe *x)
{
    stripe_at(c,
              (unsigned)(hash >> SHM_STRIPE_HASH_SHIFT) &
                  (c->hdr->nstripes - 1),
              x);
}

/* --- geometry and lifecycle ----------------------------------------- */

/* Slab class for an item with these lengths, or -1 if too big. */
static int class_for(const shm_cache_t *c, size_t klen, size_t vlen)
{
    const shm_cache_hdr_sh *h = c->hdr;
    shm_slab s;

    if (klen > h->page_size || vlen > h->page_size)
        return -1;
    memset(&s, 0, sizeof(s));
    s.class_size = h->class_size;
    s.nclasses = h->nclasses;
    return shm_slab_class_of(&s, sizeof(shm_item_sh) + klen + vlen);
}

static uint32_t pow2_floor(uint64_t v)
{
    uint32_t p = 1;

    while ((uint64_t)p * 2 <= v && p < UINT32_MAX / 2)
        p *= 2;
    return p;
}

/* Work out the geometry for opts into h (not yet mapped). */
static int plan(const shm_cache_opts_t *o, shm_cache_hdr_sh *h)
{
    uint64_t max = o->max_bytes > o->budget_bytes ? o->max_bytes
                                                  : o->budget_bytes;
    uint64_t s = o->nstripes != 0 ? o->nstripes : SHM_CACHE_STRIPES_DEFAULT;
    uint64_t per, page, npages, nb, pol = o->policy;

    if (!is_pow2(s) || s > SHM_CACHE_STRIPES_MAX || pol >= SHM_POLICY_COUNT)
        return EINVAL;
    if (pol == SHM_POLICY_DEFAULT)
        pol = SHM_POLICY_SLRU;
    while (s > 1 && max / s < SHM_STRIPE_MIN_BYTES)
        s /= 2;
    while (max / s > SHM_STRIPE_MAX_BYTES && s < SHM_CACHE_STRIPES_MAX)
        s *= 2;
    per = max / s;
    if (per > SHM_STRIPE_MAX_BYTES)
        return EINVAL;
    page = pow2_floor(per / SHM_PAGES_PER_STRIPE);
    if (page < SHM_PAGE_MIN)
        page = SHM_PAGE_MIN;
    if (page > SHM_PAGE_MAX)
        page = SHM_PAGE_MAX;
    npages = (per + page - 1) / page;
    nb = SHM_BUCKETS_MIN;
    while (nb < npages * page / SHM_BYTES_PER_BUCKET)
        nb *= 2;

    memset(h, 0, sizeof(*h));
    h->nstripes = (uint32_t)s;
    h->policy = (uint32_t)pol;
    h->page_size = (uint32_t)page;
    h->npages = (uint32_t)npages;
    h->nbuckets = (uint32_t)nb;
    h->nclasses = shm_slab_classes(h->page_size, h->class_size);
    h->protected_pct = SHM_SLRU_PROTECTED_PCT;
    h->buckets_off = round_up(sizeof(shm_stripe_sh), SHM_CACHE_LINE);
    h->pages_off = round_up(h->buckets_off + nb * sizeof(uint32_t),
                            SHM_CACHE_LINE);
    h->data_off = round_up(h->pages_off + npages * sizeof(shm_slab_page_sh),
                           SHM_CACHE_LINE);
    h->stripe_size = round_up(h->data_off + npages * page, SHM_CACHE_LINE);
    h->stripes_off = round_up(sizeof(shm_region_sh) + sizeof(shm_cache_hdr_sh),
                              SHM_CACHE_LINE);
    h->max_bytes = s * npages * page;
    if (h->stripe_size > UINT32_MAX)
        return EINVAL;
    h->budget = o->budget_bytes < h->max_bytes ? o->budget_bytes : h->max_bytes;
    return 0;
}

static shm_cache_t *handle_new(void) { return calloc(1, sizeof(shm_cache_t)); }

int shm_cache_create(const shm_cache_opts_t *o, shm_cache_t **out)
{
    shm_cache_hdr_sh plan_h;
    shm_region_sh *r;
    shm_cache_t *c;
    unsigned i;
    int rc;

    *out = NULL;
    if (o->budget_bytes == 0 && o->max_bytes == 0) {
        if (o->policy >= SHM_POLICY_COUNT)
            return EINVAL;
        c = handle_new();
        if (c == NULL)
            return ENOMEM;
        *out = c; /* cache off */
        return 0;
    }
    rc = plan(o, &plan_h);
    if (rc != 0)
        return rc;
    c = handle_new();
    if (c == NULL)
        return ENOMEM;
    rc = shm_region_create(plan_h.stripes_off +
                               (size_t)plan_h.nstripes * plan_h.stripe_size,
                           SHM_CACHE_LAYOUT_VERSION, &r);
    if (rc != 0) {
        free(c);
        return rc;
    }
    c->base = (char *)r;
    c->size = r->region_size;
    c->owner = 1;
    c->hdr = (shm_cache_hdr_sh *)(void *)(c->base + r->payload_off);
    *c->hdr = plan_h;
    for (i = 0; i < plan_h.nstripes; i++) {
        shm_stripe x;
        stripe_at(c, i, &x);
        rc = shm_stripe_init(&x, shm_stripe_page_limit(c->hdr, plan_h.budget));
        if (rc != 0) {
            shm_cache_destroy(&c);
            return rc;
        }
    }
    *out = c;
    return 0;
}

int shm_cache_destroy(shm_cache_t **cp)
{
    shm_cache_t *c = *cp;
    int rc = 0;

    if (c == NULL)
        return 0;
    if (c->owner && c->base != NULL) {
        shm_region_sh *r = (shm_region_sh *)(void *)c->base;
        rc = shm_region_destroy(&r);
    }
    free(c);
    *cp = NULL;
    return rc;
}

/* Check that the stored geometry is self-consistent and fits the
 * mapping, so a corrupt or foreign header is refused before use. */
static int check_geometry(const shm_cache_hdr_sh *h, const shm_region_sh *r)
{
    uint64_t n = h->nstripes;
    unsigned i;

    if (!is_pow2(n) || n > SHM_CACHE_STRIPES_MAX ||
        h->policy == SHM_POLICY_DEFAULT || h->policy >= SHM_POLICY_COUNT ||
        !is_pow2(h->page_size) || h->page_size < SHM_PAGE_MIN ||
        h->page_size > SHM_PAGE_MAX || h->npages == 0 ||
        !is_pow2(h->nbuckets) || h->nclasses == 0 ||
        h->nclasses > SHM_SLAB_MAX_CLASSES || h->protected_pct > SHM_PCT)
        return SHM_ELAYOUT;
    for (i = 0; i < h->nclasses; i++)
        if (h->class_size[i] % SHM_SLAB_ALIGN != 0 ||
            (i > 0 && h->class_size[i] <= h->class_size[i - 1]))
            return SHM_ELAYOUT;
    if (h->class_size[0] < SHM_SLAB_MIN_CHUNK ||
        h->class_size[h->nclasses - 1] != h->page_size)
        return SHM_ELAYOUT;
    if (h->buckets_off < sizeof(shm_stripe_sh) ||
        h->pages_off <
            h->buckets_off + (uint64_t)h->nbuckets * sizeof(uint32_t) ||
        h->data_off <
            h->pages_off + (uint64_t)h->npages * sizeof(shm_slab_page_sh) ||
        h->data_off % SHM_CACHE_LINE != 0 ||
        h->stripe_size % SHM_CACHE_LINE != 0 ||
        h->stripe_size < h->data_off + (uint64_t)h->npages * h->page_size ||
        h->stripe_size > UINT32_MAX ||
        h->stripes_off < r->payload_off + sizeof(shm_cache_hdr_sh) ||
        h->stripes_off % SHM_CACHE_LINE != 0 ||
        h->stripes_off + n * h->stripe_size > r->region_size ||
        h->max_bytes != n * h->npages * h->page_size ||
        h->budget > h->max_bytes)
        return SHM_ELAYOUT;
    return 0;
}

int shm_cache_attach(void *base, size_t len, shm_cache_t **out)
{
    shm_region_sh *r = base;
    shm_cache_t *c;
    int rc;

    *out = NULL;
    rc = shm_region_check(base, len, SHM_CACHE_LAYOUT_VERSION);
    if (rc != 0)
        return rc;
    if (r->payload_off + sizeof(shm_cache_hdr_sh) > len)
        return SHM_ELAYOUT;
    rc = check_geometry(
        (const shm_cache_hdr_sh *)(const void *)((const char *)base +
                                                 r->payload_off),
        r);
    if (rc != 0)
        return rc;
    c = handle_new();
    if (c == NULL)
        return ENOMEM;
    c->base = base;
    c->size = len;
    c->hdr = (shm_cache_hdr_sh *)(void *)((char *)base + r->payload_off);
    *out = c;
    return 0;
}

void shm_cache_detach(shm_cache_t **cp)
{
    free(*cp);
    *cp = NULL;
}

void *shm_cache_base(const shm_cache_t *c, size_t *len)
{
    if (off(c)) {
        *len = 0;
        return NULL;
    }
    *len = c->size;
    return c->base;
}

int shm_cache_enabled(const shm_cache_t *c) { return !off(c); }

size_t shm_cache_max_item(const shm_cache_t *c)
{
    if (off(c))
        return 0;
    return c->hdr->page_size - sizeof(shm_item_sh);
}

const char *shm_cache_policy_name(shm_cache_policy_t p)
{
    switch (p) {
    case SHM_POLICY_DEFAULT: return "default";
    case SHM_POLICY_LRU: return "lru";
    case SHM_POLICY_SLRU: return "slru";
    default: return "unknown";
    }
}

/* --- operations ----------------------------------------------------- */

int shm_cache_get(shm_cache_t *c, const void *key, size_t klen, uint64_t hash,
                  int64_t now_ms, shm_cache_value_t *out)
{
    shm_item_sh *it;
    uint32_t ref;
    shm_stripe x;
    int rc;

    if (off(c))
        return SHM_EMISS;
    stripe_for_hash(c, hash, &x);
    rc = shm_stripe_lock(&x);
    if (rc != 0)
        return rc;
    ref = shm_stripe_find_locked(&x, key, klen, hash);
    it = ref != 0 ? shm_stripe_item(&x, ref) : NULL;
    if (it == NULL || it->kind != SHM_ITEM_ENTRY) {
        rc = SHM_EMISS;
    } else if (it->expire_at != 0 && now_ms >= it->expire_at) {
        shm_stripe_remove_locked(&x, ref, 1);
        rc = SHM_EMISS;
    } else if (out->cap < it->vlen) {
        out->len = it->vlen;
        rc = SHM_ETOOSMALL;
    } else {
        shm_stripe_read_locked(&x, ref, out);
        shm_stripe_count_locked(&x.st->ctr.hits, 1);
    }
    if (rc == SHM_EMISS)
        shm_stripe_count_locked(&x.st->ctr.misses, 1);
    shm_stripe_unlock(&x);
    return rc;
}

/* Two passes: every bucket first, then every first item, so the second
 * pass finds most buckets already on their way. */
void shm_cache_prefetch(const shm_cache_t *c, const uint64_t *hashes, size_t n)
{
    size_t i;

    if (off(c))
        return;
    for (i = 0; i < n; i++) {
        shm_stripe x;
        stripe_for_hash(c, hashes[i], &x);
        shm_stripe_prefetch_bucket(&x, hashes[i]);
    }
    for (i = 0; i < n; i++) {
        shm_stripe x;
        stripe_for_hash(c, hashes[i], &x);
        shm_stripe_prefetch_item(&x, hashes[i]);
    }
}

static int put_locked(const shm_stripe *x, const shm_cache_entry_t *e, int cls,
                      int tcls)
{
    uint32_t ref = shm_stripe_find_locked(x, e->key, e->klen, e->hash);

    if (ref != 0 && shm_stripe_item(x, ref)->version > e->version) {
        shm_stripe_count_locked(&x->st->ctr.puts_dropped, 1);
        return SHM_ESTALE;
    }
    if (ref != 0)
        shm_stripe_remove_locked(x, ref, 0); /* older: put or floor wins */
    if (shm_stripe_floor_locked(x, e->hash) > e->version) {
        shm_stripe_count_locked(&x->st->ctr.puts_dropped, 1);
        return SHM_ESTALE;
    }
    if (cls < 0) {
        shm_stripe_mark_deleted_locked(x, e, tcls);
        return SHM_ETOOBIG;
    }
    if (shm_stripe_install_locked(x, e, SHM_ITEM_ENTRY, cls) == 0) {
        shm_stripe_fold_locked(x, e->hash, e->version);
        return SHM_ENOSPC;
    }
    return 0;
}

int shm_cache_put(shm_cache_t *c, const shm_cache_entry_t *e)
{
    int cls, tcls, rc;
    shm_stripe x;

    if (off(c))
        return 0;
    cls = class_for(c, e->klen, e->vlen);
    tcls = class_for(c, e->klen, 0);
    stripe_for_hash(c, e->hash, &x);
    shm_stripe_note_version(&x, e->version);
    rc = shm_stripe_lock(&x);
    if (rc != 0)
        return rc;
    rc = put_locked(&x, e, cls, tcls);
    shm_stripe_unlock(&x);
    return rc;
}

int shm_cache_invalidate(shm_cache_t *c, const void *key, size_t klen,
                         uint64_t hash, uint64_t version)
{
    shm_cache_entry_t e;
    shm_item_sh *it;
    uint32_t ref;
    int tcls, rc = 0;
    shm_stripe x;

    if (off(c))
        return 0;
    memset(&e, 0, sizeof(e));
    e.key = key;
    e.klen = klen;
    e.hash = hash;
    e.version = version;
    tcls = class_for(c, klen, 0);
    stripe_for_hash(c, hash, &x);
    shm_stripe_note_version(&x, version);
    rc = shm_stripe_lock(&x);
    if (rc != 0)
        return rc;
    ref = shm_stripe_find_locked(&x, key, klen, hash);
    it = ref != 0 ? shm_stripe_item(&x, ref) : NULL;
    if (it != NULL && it->version > version) {
        shm_stripe_count_locked(&x.st->ctr.puts_dropped, 1);
        rc = SHM_ESTALE;
    } else if (it != NULL && it->cls == tcls) {
        /* The usual case, a key written again and again: its chunk
         * already fits the tombstone, so retire the item in place
         * rather than unlink, free, allocate and link again (which
         * touches both list neighbours and a list end). No floor
         * check: where a floor already covers version the tombstone
         * is redundant, not wrong, and costs no extra room. */
        shm_stripe_retire_locked(&x, ref, version);
    } else {
        if (ref != 0)
            shm_stripe_remove_locked(&x, ref, 0);
        /* A floor at or above version already refuses every fill the
         * tombstone would; don't spend a chunk on it. */
        if (shm_stripe_floor_locked(&x, hash) < version)
            shm_stripe_mark_deleted_locked(&x, &e, tcls);
    }
    shm_stripe_unlock(&x);
    return rc;
}

static int fill_locked(const shm_stripe *x, const shm_cache_entry_t *e, int cls,
                       uint64_t snap)
{
    uint32_t ref;
    uint64_t old = 0;

    if (shm_stripe_floor_locked(x, e->hash) > snap)
        goto refused;
    ref = shm_stripe_find_locked(x, e->key, e->klen, e->hash);
    if (ref != 0) {
        shm_item_sh *it = shm_stripe_item(x, ref);
        if (it->version > snap)
            goto refused;
        /* Another reader got here first, or the cache already knows
         * something newer that is still within the snapshot. */
        if (it->version > e->version ||
            (it->kind == SHM_ITEM_ENTRY && it->version == e->version))
            return 0;
        old = it->version;
        shm_stripe_remove_locked(x, ref, 0);
    }
    if (cls < 0 || shm_stripe_install_locked(x, e, SHM_ITEM_ENTRY, cls) == 0) {
        /* Nothing stored: keep what the removed item told us. */
        shm_stripe_fold_locked(x, e->hash, old > e->version ? old : e->version);
        return cls < 0 ? SHM_ETOOBIG : SHM_ENOSPC;
    }
    return 0;
refused:
    shm_stripe_count_locked(&x->st->ctr.fills_refused, 1);
    return SHM_ESTALE;
}

int shm_cache_fill(shm_cache_t *c, const shm_cache_entry_t *e,
                   uint64_t snapshot_version)
{
    int cls, rc;
    shm_stripe x;

    if (off(c))
        return 0;
    if (e->version > snapshot_version)
        return EINVAL;
    cls = class_for(c, e->klen, e->vlen);
    stripe_for_hash(c, e->hash, &x);
    rc = shm_stripe_lock(&x);
    if (rc != 0)
        return rc;
    rc = fill_locked(&x, e, cls, snapshot_version);
    shm_stripe_unlock(&x);
    return rc;
}

int shm_cache_flush_all(shm_cache_t *c, uint64_t version)
{
    unsigned i;
    int first = 0;

    if (off(c))
        return 0;
    for (i = 0; i < c->hdr->nstripes; i++) {
        shm_stripe x;
        int rc;
        stripe_at(c, i, &x);
        shm_stripe_note_version(&x, version);
        rc = shm_stripe_lock(&x);
        if (rc != 0) {
            if (first == 0)
                first = rc;
            continue;
        }
        shm_stripe_flush_locked(&x, version);
        shm_stripe_unlock(&x);
    }
    return first;
}

int shm_cache_set_budget(shm_cache_t *c, size_t bytes)
{
    uint32_t limit;
    unsigned i;
    int first = 0;

    if (off(c))
        return bytes == 0 ? 0 : SHM_ERESTART;
    if (bytes > c->hdr->max_bytes)
        return SHM_ERESTART;
    __atomic_store_n(&c->hdr->budget, (uint64_t)bytes, __ATOMIC_RELAXED);
    limit = shm_stripe_page_limit(c->hdr, bytes);
    for (i = 0; i < c->hdr->nstripes; i++) {
        shm_stripe x;
        int rc;
        stripe_at(c, i, &x);
        rc = shm_stripe_lock(&x);
        if (rc != 0) {
            if (first == 0)
                first = rc;
            continue;
        }
        shm_stripe_set_limit_locked(&x, limit);
        shm_stripe_unlock(&x);
    }
    return first;
}

void shm_cache_stats(const shm_cache_t *c, shm_cache_stats_t *s)
{
    unsigned i;

    memset(s, 0, sizeof(*s));
    if (off(c))
        return;
    s->budget = __atomic_load_n(&c->hdr->budget, __ATOMIC_RELAXED);
    s->max_bytes = c->hdr->max_bytes;
    s->nstripes = c->hdr->nstripes;
    s->page_size = c->hdr->page_size;
    s->max_item = shm_cache_max_item(c);
    s->policy = (shm_cache_policy_t)c->hdr->policy;
    for (i = 0; i < c->hdr->nstripes; i++) {
        shm_stripe x;
        stripe_at(c, i, &x);
        shm_stripe_stats(&x, s);
    }
}
