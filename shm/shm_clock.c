/* shm_clock.c — the shared access clock (shm_clock.h): a region header,
 * then the slots. */
#include "shm/shm_clock.h"
#include "shm/shm_region.h"

#include <errno.h>
#include <stdatomic.h>

struct shm_clock {
    shm_region_sh region; /* immutable after init */
    uint64_t mask;        /* immutable after init: slots - 1 */
    uint8_t pad[SHM_CACHE_LINE - sizeof(uint64_t)];
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
    for (size_t i = 0; i < slots; i++)
        atomic_store_explicit(&c->slot[i], now_s, memory_order_relaxed);
    *out = c;
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
    return atomic_load_explicit(&((shm_clock_t *)c)->slot[hash & c->mask],
                                memory_order_relaxed);
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
