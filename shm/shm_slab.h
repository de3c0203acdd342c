/* shm_slab.h — one stripe's slab allocator, inside the shared region.
 *
 * A stripe's data area is cut into equal pages; a page is carved into
 * chunks of one size class when a class needs room and goes back to the
 * stripe's free pool the moment its last chunk is freed, so pages move
 * between classes as the mix of value sizes changes (no calcification).
 * The number of carved pages never exceeds page_limit (the stripe's slice
 * of the byte budget). Every function here runs under the owning stripe's
 * lock ("_locked"): no malloc, no syscalls. Chunks are named by refs: byte
 * offsets from the stripe base; ref 0 means "none".
 */
#ifndef SHM_SLAB_H
#define SHM_SLAB_H

#include <stddef.h>
#include <stdint.h>

#define SHM_SLAB_MAX_CLASSES 48
#define SHM_SLAB_MIN_CHUNK 64 /* smallest class, bytes */
#define SHM_SLAB_ALIGN 8      /* chunk sizes are multiples of this */
#define SHM_SLAB_GROWTH_NUM 5 /* next class = prev * 5 / 4 */
#define SHM_SLAB_GROWTH_DEN 4
#define SHM_SLAB_EXACT_COUNT 16      /* classes of <= 16 per page: page/n */
#define SHM_SLAB_NO_CLASS UINT16_MAX /* page sits in the free pool */
#define SHM_SLAB_FREE_MARK                             \
    UINT32_C(0x45455246) /* bytes 4..7 of a free chunk \
                          */

/* A chunk's first 8 bytes belong to the slab while the chunk is free (link
 * and SHM_SLAB_FREE_MARK); an allocated chunk must never hold
 * SHM_SLAB_FREE_MARK in bytes 4..7, so a page scan can tell them apart. */

/* One page's descriptor. */
typedef struct shm_slab_page_sh {
    uint32_t next;      /* guarded by: stripe lock; page index+1, 0 = end */
    uint32_t prev;      /* guarded by: stripe lock; partial list only */
    uint32_t free_head; /* guarded by: stripe lock; first freed chunk ref */
    uint32_t nlive;     /* guarded by: stripe lock; chunks allocated */
    uint32_t bump;      /* guarded by: stripe lock; chunks ever carved */
    uint16_t cls;       /* guarded by: stripe lock; or SHM_SLAB_NO_CLASS */
    uint16_t full;      /* guarded by: stripe lock; 1 = off the partial list */
} shm_slab_page_sh;

typedef struct shm_slab_class_sh {
    uint32_t partial; /* guarded by: stripe lock; pages with room, idx+1 */
    uint32_t npages;  /* guarded by: stripe lock; pages carved to class */
} shm_slab_class_sh;

/* The allocator's state in one stripe. */
typedef struct shm_slab_sh {
    uint32_t npages;     /* immutable after init: pages mapped */
    uint32_t page_limit; /* guarded by: stripe lock; max pages carved */
    uint32_t carved;     /* guarded by: stripe lock; written atomically */
    uint32_t free_pages; /* guarded by: stripe lock; free pool, idx+1 */
    shm_slab_class_sh cls[SHM_SLAB_MAX_CLASSES]; /* guarded by: stripe lock */
} shm_slab_sh;

/* A process-local view of one stripe's slab, built for each operation. */
typedef struct shm_slab {
    shm_slab_sh *sh;
    shm_slab_page_sh *pages; /* npages descriptors */
    char *base;              /* refs are offsets from here */
    uint32_t data_off;       /* page 0 starts at base + data_off */
    uint32_t page_size;
    const uint32_t *class_size; /* nclasses sizes, ascending */
    uint32_t nclasses;
} shm_slab;

/* Fill sizes[] with the chunk classes for page_size: SHM_SLAB_MIN_CHUNK
 * growing by 5/4 (aligned) below page_size/SHM_SLAB_EXACT_COUNT, then
 * page_size/n for n = SHM_SLAB_EXACT_COUNT..1 (aligned down), so the last
 * is exactly page_size. page_size must be a power of two >= 1 KiB and
 * <= 1 MiB. Returns the number of classes (<= SHM_SLAB_MAX_CLASSES).
 * Pure; any caller. */
unsigned shm_slab_classes(uint32_t page_size,
                          uint32_t sizes[SHM_SLAB_MAX_CLASSES]);

/* The smallest class holding bytes, or -1 if bytes > page_size. */
int shm_slab_class_of(const shm_slab *s, size_t bytes);

/* Put every page in the free pool and set the page limit. Creator at init,
 * or the lock holder resetting a stripe. */
void shm_slab_init_locked(const shm_slab *s, uint32_t npages,
                          uint32_t page_limit);

/* A chunk of class cls: from a partly used page, else from a page newly
 * carved out of the free pool if fewer than page_limit are carved.
 * Returns its ref, or 0 if the class is full (the caller evicts and
 * retries). The chunk's contents are undefined. */
uint32_t shm_slab_alloc_locked(const shm_slab *s, unsigned cls);

/* Return chunk ref; if its page becomes empty, the page returns to the
 * free pool at once. */
void shm_slab_free_locked(const shm_slab *s, uint32_t ref);

/* Change page_limit. Pages already carved above a lower limit stay until
 * the caller evicts them (see shm_slab_page_of and friends). */
void shm_slab_set_limit_locked(const shm_slab *s, uint32_t page_limit);

/* Page-scan helpers, for evicting a whole page. */
uint32_t shm_slab_page_of(const shm_slab *s, uint32_t ref);
uint32_t shm_slab_page_carved(const shm_slab *s, uint32_t page);
uint32_t shm_slab_page_live(const shm_slab *s, uint32_t page);
uint32_t shm_slab_chunk_ref(const shm_slab *s, uint32_t page, uint32_t i);
int shm_slab_chunk_is_free(const shm_slab *s, uint32_t ref);

/* Chunk size of the class of an allocated chunk. */
uint32_t shm_slab_chunk_size(const shm_slab *s, uint32_t ref);

/* Pages carved now; lock-free read for statistics. */
uint32_t shm_slab_carved(const shm_slab_sh *sh);

#endif /* SHM_SLAB_H */
