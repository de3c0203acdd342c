/*
 * srv_stats.c - the shared counters region.
 */
#include "server/srv_stats.h"

#include <stddef.h>
#include <sys/mman.h>

static size_t region_size(unsigned nslots)
{
    return sizeof(srv_stats) + (size_t)nslots * sizeof(srv_stats_slot);
}

srv_stats *srv_stats_create(unsigned nslots)
{
    srv_stats *s = mmap(NULL, region_size(nslots), PROT_READ | PROT_WRITE,
                        MAP_SHARED | MAP_ANONYMOUS, -1, 0);

    if (s == MAP_FAILED)
        return NULL;
    /* A fresh anonymous mapping is zeroed: only the header needs values. */
    s->magic = SRV_STATS_MAGIC;
    s->version = SRV_STATS_VERSION;
    s->nslots = nslots;
    atomic_store(&s->next_client_id, 1);
    return s;
}

void srv_stats_destroy(srv_stats **sp)
{
    if (*sp) {
        munmap(*sp, region_size((*sp)->nslots));
        *sp = NULL;
    }
}
