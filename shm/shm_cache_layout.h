/* shm_cache_layout.h — the cache's mapped structures (private to shm/ and
 * its unit tests, which pin their sizes and offsets).
 *
 * Region: shm_region_sh | shm_cache_hdr_sh | stripe 0 | stripe 1 | ...
 * Stripe: shm_stripe_sh | buckets (u32 refs) | page descriptors | pages.
 * Buckets are guarded by the stripe lock; shm_cache_prefetch also reads
 * them without it (relaxed atomic loads, stored as such), only to choose
 * addresses to prefetch.
 * A ref is a byte offset from its stripe's base (0 = none), never a pointer.
 * Created by the master before fork; every field says what guards it.
 * The shared counters live in each stripe (shm_stripe_ctr_sh, plus the
 * lock's waits/owner_dead), written by the lock holder and summed by
 * readers, so no global counter line bounces between CPUs on every get.
 */
#ifndef SHM_CACHE_LAYOUT_H
#define SHM_CACHE_LAYOUT_H

#include <stdint.h>

#include "shm/shm_lock.h"
#include "shm/shm_region.h"
#include "shm/shm_slab.h"

#define SHM_CACHE_LAYOUT_VERSION 2
#define SHM_ITEM_MAGIC UINT32_C(0x4d455449) /* "ITEM" */
#define SHM_FLOOR_SLOTS 64                  /* hashed fill floors per stripe */
#define SHM_FLOOR_SLOT_SHIFT 52             /* hash bits 52..57 pick a slot */
#define SHM_STRIPE_HASH_SHIFT 32            /* hash bits 32.. pick a stripe */
#define SHM_SECOND_CHANCES 128              /* hit items moved per victim */

enum shm_item_kind { SHM_ITEM_ENTRY = 1, SHM_ITEM_TOMB = 2 };
enum shm_seg { SHM_SEG_PROBATION = 0, SHM_SEG_PROTECTED = 1, SHM_NSEGS = 2 };

/* Geometry, after shm_region_sh. Immutable after init except budget. */
typedef struct shm_cache_hdr_sh {
    uint32_t nstripes;      /* immutable after init; power of two */
    uint32_t policy;        /* immutable after init */
    uint32_t page_size;     /* immutable after init; slab page bytes */
    uint32_t npages;        /* immutable after init; pages per stripe */
    uint32_t nbuckets;      /* immutable after init; per stripe, pow2 */
    uint32_t nclasses;      /* immutable after init */
    uint32_t protected_pct; /* immutable after init; SLRU protected share */
    uint32_t pad0;
    uint64_t stripe_size; /* immutable after init; bytes per stripe */
    uint64_t stripes_off; /* immutable after init; from region base */
    uint64_t buckets_off; /* immutable after init; from stripe base */
    uint64_t pages_off;   /* immutable after init; from stripe base */
    uint64_t data_off;    /* immutable after init; from stripe base */
    uint64_t max_bytes;   /* immutable after init; data bytes mapped */
    uint32_t class_size[SHM_SLAB_MAX_CLASSES]; /* immutable after init */
    uint64_t budget __attribute__((aligned(SHM_CACHE_LINE))); /* atomic */
} shm_cache_hdr_sh;

/* One eviction list (LRU, or an SLRU segment): head is the hot end. */
typedef struct shm_list_sh {
    uint32_t head;  /* guarded by: stripe lock */
    uint32_t tail;  /* guarded by: stripe lock */
    uint32_t count; /* guarded by: stripe lock */
    uint32_t pad;
    uint64_t bytes; /* guarded by: stripe lock; chunk bytes */
} shm_list_sh;

/* Per-stripe counters: written only by the lock holder, with relaxed
 * atomic stores; read lock-free by shm_cache_stats. */
typedef struct shm_stripe_ctr_sh {
    uint64_t hits;          /* guarded by: stripe lock; read atomic */
    uint64_t misses;        /* guarded by: stripe lock; read atomic */
    uint64_t evictions;     /* guarded by: stripe lock; read atomic */
    uint64_t fills_refused; /* guarded by: stripe lock; read atomic */
    uint64_t puts_dropped;  /* guarded by: stripe lock; read atomic */
    uint64_t entries;       /* guarded by: stripe lock; read atomic */
    uint64_t tombstones;    /* guarded by: stripe lock; read atomic */
    uint64_t bytes_used;    /* guarded by: stripe lock; read atomic */
} shm_stripe_ctr_sh;

typedef struct shm_stripe_sh {
    shm_lock_sh lock; /* robust mutex: guards everything below but
                       * max_seen */
    uint64_t max_seen /* atomic: max version of any put, invalidate
                       * or flush routed here, raised BEFORE locking */
        __attribute__((aligned(SHM_CACHE_LINE)));
    uint64_t floor /* guarded by: stripe lock; refuse fills with */
        __attribute__((aligned(SHM_CACHE_LINE))); /* snapshot < floor */
    shm_list_sh seg[SHM_NSEGS];                   /* guarded by: stripe lock */
    uint64_t slot_floor[SHM_FLOOR_SLOTS];         /* guarded by: stripe lock */
    shm_stripe_ctr_sh ctr;                        /* see above */
    shm_slab_sh slab;                             /* guarded by: stripe lock */
} __attribute__((aligned(SHM_CACHE_LINE))) shm_stripe_sh;

/* One entry or tombstone, at the start of its slab chunk; the key bytes
 * follow, then the value bytes. An item is written completely before it
 * is linked into the index, so a process dying mid-copy leaves it
 * unreachable (and the stripe is reset anyway). */
typedef struct shm_item_sh {
    uint32_t hnext;    /* guarded by: stripe lock; bucket chain ref */
    uint32_t magic;    /* guarded by: stripe lock; SHM_ITEM_MAGIC */
    uint32_t prev;     /* guarded by: stripe lock; eviction list */
    uint32_t next;     /* guarded by: stripe lock; eviction list */
    uint64_t hash;     /* guarded by: stripe lock */
    uint64_t version;  /* guarded by: stripe lock */
    int64_t expire_at; /* guarded by: stripe lock; ms, 0 = never */
    uint32_t klen;     /* guarded by: stripe lock */
    uint32_t vlen;     /* guarded by: stripe lock; 0 for tombstones */
    uint8_t type;      /* guarded by: stripe lock; caller's */
    uint8_t flags;     /* guarded by: stripe lock; caller's */
    uint8_t kind;      /* guarded by: stripe lock; shm_item_kind */
    uint8_t seg;       /* guarded by: stripe lock; shm_seg */
    uint8_t cls;       /* guarded by: stripe lock; slab class */
    uint8_t ref;       /* guarded by: stripe lock; 1 = hit since the
                        * eviction order last moved it (CLOCK bit) */
    uint8_t pad[2];
} shm_item_sh;

#endif /* SHM_CACHE_LAYOUT_H */
