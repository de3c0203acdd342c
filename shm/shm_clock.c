/* shm_clock.c — the shared access clock (shm_clock.h): a region header,
 * then the slots. A slot that was never touched holds 0 and reads as the
 * creation time, so creating the region writes none of its pages: a
 * million slots cost no memory until keys are accessed (they cost 4 MB of
 * every server's resident memory when each slot was set at creation). */
#include "shm/shm_clock.h"
#include "shm/shm_region.h"

#include <errno.h>
#include <stdatomic.h>

struct shm_clock {
    shm_region_sh region; /* immutable after init */
    uint64_t mask;        /* immutable after init: slots - 1 */
    uint32_t born;        /* immutable after init: what 0 stands for */
    uint8_t pad[SHM_CACHE_LINE - sizeof(uint64_t) - sizeof(uint32_t)];
    _Atomic uint32_t slot[]; /* atomic (relaxed) */
};

static size_t clock_bytes(size_t slots)
{
    return sizeof(struct shm_clock) + slots * sizeof(uint32_t);
}

int shm_clock_create(size_t slots, uint32_t now_s, shm_clock_t **out)
{
    shm_region_sh *r;
    int rc;

    *out = NULL;
    if (slots == 0 || (slots & (slots - 1)))
        return EINVAL;
    if ((rc = shm_region_create(clock_bytes(slots), SHM_CLOCK_LAYOUT_VERSION,
                                &r)))
        return rc;
    shm_clock_t *c = (shm_clock_t *)(void *)r;
    c->mask = slots - 1;
    c->born = now_s;
    *out = c; /* fresh anonymous memory: every slot is 0, "born" */
    return 0;
}

void shm_clock_touch(shm_clock_t *c, uint64_t hash, uint32_t now_s)
{
    _Atomic uint32_t *s = &c->slot[hash & c->mask];

    if (atomic_load_explicit(s, memory_order_relaxed) != now_s)
        atomic_store_explicit(s, now_s, memory_order_relaxed);
}

uint32_t shm_clock_get(const shm_clock_t *c, uint64_t hash)
{
    uint32_t t = atomic_load_explicit(&((shm_clock_t *)c)->slot[hash & c->mask],
                                      memory_order_relaxed);

    return t ? t : c->born;
}

int shm_clock_check(const shm_clock_t *c)
{
    return shm_region_check(c, (size_t)c->region.region_size,
                            SHM_CLOCK_LAYOUT_VERSION);
}

void shm_clock_destroy(shm_clock_t **c)
{
    shm_region_sh *r = (shm_region_sh *)(void *)*c;

    shm_region_destroy(&r);
    *c = NULL;
}
