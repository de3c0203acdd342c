/*
 * srv_stats.c - the shared counters region.
 */
#include "server/srv_stats.h"

#include <assert.h>
#include <stddef.h>
#include <sys/mman.h>

static size_t region_size(unsigned nslots)
{
    return sizeof(srv_stats) + (size_t)nslots * sizeof(srv_stats_slot);
}

srv_stats *srv_stats_create(unsigned nworkers)
{
    unsigned nslots = (unsigned)srv_role_nslots((int)nworkers);
    srv_stats *s = mmap(NULL, region_size(nslots), PROT_READ | PROT_WRITE,
                        MAP_SHARED | MAP_ANONYMOUS, -1, 0);

    if (s == MAP_FAILED)
        return NULL;
    /* A fresh anonymous mapping is zeroed: only the header needs values. */
    s->magic = SRV_STATS_MAGIC;
    s->version = SRV_STATS_VERSION;
    s->nslots = nslots;
    s->nworkers = nworkers;
    atomic_store(&s->next_client_id, 1);
    atomic_store(&s->workers, nworkers);
    return s;
}

void srv_stats_destroy(srv_stats **sp)
{
    if (*sp) {
        munmap(*sp, region_size((*sp)->nslots));
        *sp = NULL;
    }
}

srv_stats_slot *srv_stats_slot_of(srv_stats *s, enum srv_role role, int index)
{
    int slot = srv_role_slot(role, index, (int)s->nworkers);

    if (slot < 0)
        return NULL;
    assert((unsigned)slot < s->nslots);
    return &s->slot[slot];
}
