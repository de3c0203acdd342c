/* shm_slab.c — per-stripe slab allocator (see shm_slab.h).
 *
 * Pages live on one of three places: the stripe's free pool (cls ==
 * SHM_SLAB_NO_CLASS), their class's partial list (some chunk free or never
 * carved), or nowhere (full). Chunks of a page are handed out first from the
 * page's own free list, then by bumping through never-used chunks, so
 * carving a page costs O(1). Because an empty page is released at once and
 * a class only holds pages it is actually using, churn of mixed sizes
 * wastes at most one partly used page per class.
 */
#include <stdint.h>
#include <string.h>

#include "shm/shm_slab.h"

_Static_assert(sizeof(shm_slab_page_sh) == 24, "page descriptor size");

/* Small classes grow geometrically (5/4). Classes holding at most
 * SHM_SLAB_EXACT_COUNT chunks per page are page_size / n instead, so a page
 * of them has no tail left over: a geometric class just above page/2 would
 * waste half of every page. */
unsigned shm_slab_classes(uint32_t page_size,
                          uint32_t sizes[SHM_SLAB_MAX_CLASSES])
{
    uint32_t sz = SHM_SLAB_MIN_CHUNK;
    uint32_t align = ~(uint32_t)(SHM_SLAB_ALIGN - 1);
    unsigned n = 0, k;

    while (n < SHM_SLAB_MAX_CLASSES - SHM_SLAB_EXACT_COUNT &&
           sz < page_size / SHM_SLAB_EXACT_COUNT) {
        uint32_t next;
        sizes[n++] = sz;
        next = (uint32_t)((uint64_t)sz * SHM_SLAB_GROWTH_NUM /
                          SHM_SLAB_GROWTH_DEN);
        next = (next + SHM_SLAB_ALIGN - 1) & align;
        sz = next > sz ? next : sz + SHM_SLAB_ALIGN;
    }
    for (k = SHM_SLAB_EXACT_COUNT; k >= 1; k--) {
        uint32_t c = (page_size / k) & align;
        if (c >= SHM_SLAB_MIN_CHUNK && (n == 0 || c > sizes[n - 1]))
            sizes[n++] = c;
    }
    return n;
}

int shm_slab_class_of(const shm_slab *s, size_t bytes)
{
    unsigned lo = 0, hi = s->nclasses;

    if (bytes > s->class_size[s->nclasses - 1])
        return -1;
    while (lo < hi) {
        unsigned mid = (lo + hi) / 2;
        if (s->class_size[mid] < bytes)
            lo = mid + 1;
        else
            hi = mid;
    }
    return (int)lo;
}

static uint32_t nchunks(const shm_slab *s, unsigned cls)
{
    return s->page_size / s->class_size[cls];
}

static uint32_t *link_at(const shm_slab *s, uint32_t ref)
{
    return (uint32_t *)(void *)(s->base + ref);
}

static void set_carved(const shm_slab *s, uint32_t v)
{
    __atomic_store_n(&s->sh->carved, v, __ATOMIC_RELAXED);
}

static void partial_push(const shm_slab *s, uint32_t p)
{
    shm_slab_class_sh *c = &s->sh->cls[s->pages[p].cls];
    shm_slab_page_sh *pg = &s->pages[p];

    pg->prev = 0;
    pg->next = c->partial;
    if (c->partial != 0)
        s->pages[c->partial - 1].prev = p + 1;
    c->partial = p + 1;
    pg->full = 0;
}

static void partial_remove(const shm_slab *s, uint32_t p)
{
    shm_slab_class_sh *c = &s->sh->cls[s->pages[p].cls];
    shm_slab_page_sh *pg = &s->pages[p];

    if (pg->prev != 0)
        s->pages[pg->prev - 1].next = pg->next;
    else
        c->partial = pg->next;
    if (pg->next != 0)
        s->pages[pg->next - 1].prev = pg->prev;
    pg->next = pg->prev = 0;
    pg->full = 1;
}

void shm_slab_init_locked(const shm_slab *s, uint32_t npages,
                          uint32_t page_limit)
{
    shm_slab_sh *sh = s->sh;
    uint32_t i;

    sh->npages = npages;
    sh->page_limit = page_limit;
    set_carved(s, 0);
    memset(sh->cls, 0, sizeof(sh->cls));
    for (i = 0; i < npages; i++) {
        shm_slab_page_sh *pg = &s->pages[i];
        pg->next = i + 1 < npages ? i + 2 : 0;
        pg->prev = 0;
        pg->free_head = 0;
        pg->nlive = 0;
        pg->bump = 0;
        pg->cls = SHM_SLAB_NO_CLASS;
        pg->full = 0;
    }
    sh->free_pages = npages > 0 ? 1 : 0;
}

void shm_slab_set_limit_locked(const shm_slab *s, uint32_t page_limit)
{
    s->sh->page_limit = page_limit;
}

/* Take a page from the free pool for class cls. 0 if none or at limit. */
static int carve(const shm_slab *s, unsigned cls)
{
    shm_slab_sh *sh = s->sh;
    shm_slab_page_sh *pg;
    uint32_t p;

    if (sh->free_pages == 0 || sh->carved >= sh->page_limit)
        return 0;
    p = sh->free_pages - 1;
    pg = &s->pages[p];
    sh->free_pages = pg->next;
    pg->cls = (uint16_t)cls;
    pg->free_head = 0;
    pg->nlive = 0;
    pg->bump = 0;
    partial_push(s, p);
    sh->cls[cls].npages++;
    set_carved(s, sh->carved + 1);
    return 1;
}

uint32_t shm_slab_alloc_locked(const shm_slab *s, unsigned cls)
{
    shm_slab_class_sh *c = &s->sh->cls[cls];
    shm_slab_page_sh *pg;
    uint32_t p, ref;

    if (c->partial == 0 && !carve(s, cls))
        return 0;
    p = c->partial - 1;
    pg = &s->pages[p];
    if (pg->free_head != 0) {
        ref = pg->free_head;
        pg->free_head = link_at(s, ref)[0];
    } else {
        ref = shm_slab_chunk_ref(s, p, pg->bump);
        pg->bump++;
    }
    pg->nlive++;
    if (pg->free_head == 0 && pg->bump == nchunks(s, cls))
        partial_remove(s, p);
    link_at(s, ref)[1] = 0;
    return ref;
}

/* Give an empty page back to the free pool. */
static void release(const shm_slab *s, uint32_t p)
{
    shm_slab_sh *sh = s->sh;
    shm_slab_page_sh *pg = &s->pages[p];

    if (!pg->full)
        partial_remove(s, p);
    sh->cls[pg->cls].npages--;
    pg->cls = SHM_SLAB_NO_CLASS;
    pg->full = 0;
    pg->bump = 0;
    pg->free_head = 0;
    pg->prev = 0;
    pg->next = sh->free_pages;
    sh->free_pages = p + 1;
    set_carved(s, sh->carved - 1);
}

void shm_slab_free_locked(const shm_slab *s, uint32_t ref)
{
    uint32_t p = shm_slab_page_of(s, ref);
    shm_slab_page_sh *pg = &s->pages[p];
    uint32_t *l = link_at(s, ref);

    l[0] = pg->free_head;
    l[1] = SHM_SLAB_FREE_MARK;
    pg->free_head = ref;
    pg->nlive--;
    if (pg->nlive == 0)
        release(s, p);
    else if (pg->full)
        partial_push(s, p);
}

uint32_t shm_slab_page_of(const shm_slab *s, uint32_t ref)
{
    return (ref - s->data_off) / s->page_size;
}

uint32_t shm_slab_page_carved(const shm_slab *s, uint32_t page)
{
    return s->pages[page].bump;
}

uint32_t shm_slab_page_live(const shm_slab *s, uint32_t page)
{
    return s->pages[page].nlive;
}

uint32_t shm_slab_chunk_ref(const shm_slab *s, uint32_t page, uint32_t i)
{
    return s->data_off + page * s->page_size +
           i * s->class_size[s->pages[page].cls];
}

int shm_slab_chunk_is_free(const shm_slab *s, uint32_t ref)
{
    return link_at(s, ref)[1] == SHM_SLAB_FREE_MARK;
}

uint32_t shm_slab_chunk_size(const shm_slab *s, uint32_t ref)
{
    return s->class_size[s->pages[shm_slab_page_of(s, ref)].cls];
}

uint32_t shm_slab_carved(const shm_slab_sh *sh)
{
    return __atomic_load_n(&sh->carved, __ATOMIC_RELAXED);
}
