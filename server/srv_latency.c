/*
 * srv_latency.c - the shared latency monitor (see the header).
 */
#include "server/srv_latency.h"
#include "shm/shm_lock.h"

#include <errno.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>

typedef struct event_sh {
    char name[SRV_LATENCY_NAME_MAX]; /* guarded by: lock; "" free */
    uint32_t max_ms;
    uint32_t idx; /* the next sample's place */
    srv_latency_sample samples[SRV_LATENCY_SAMPLES]; /* ring; time 0 free */
} event_sh;

struct srv_latency {
    uint64_t magic;   /* immutable after init */
    uint32_t version; /* immutable after init */
    uint32_t pad_;
    shm_lock_sh lock;
    event_sh event[SRV_LATENCY_EVENTS]; /* guarded by: lock */
};

static srv_latency *region;

srv_latency *srv_latency_create(void)
{
    srv_latency *l = mmap(NULL, sizeof *l, PROT_READ | PROT_WRITE,
                          MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    int rc;

    if (l == MAP_FAILED)
        return NULL;
    l->magic = SRV_LATENCY_MAGIC;
    l->version = SRV_LATENCY_VERSION;
    if ((rc = shm_lock_init(&l->lock))) {
        munmap(l, sizeof *l);
        errno = rc;
        return NULL;
    }
    region = l;
    return l;
}

void srv_latency_destroy(srv_latency **lp)
{
    if (!*lp)
        return;
    if (region == *lp)
        region = NULL;
    munmap(*lp, sizeof **lp);
    *lp = NULL;
}

static void repair(void *arg) {}

static int lock(void)
{
    return region && shm_lock_acquire(&region->lock, repair, NULL) == 0;
}

static void unlock(void) { shm_lock_release(&region->lock); }

void srv_latency_add(const char *name, int64_t time_s, uint32_t latency_ms)
{
    event_sh *e = NULL;

    if (!lock())
        return;
    for (int i = 0; i < SRV_LATENCY_EVENTS && !e; i++)
        if (!strcmp(region->event[i].name, name))
            e = &region->event[i];
    for (int i = 0; i < SRV_LATENCY_EVENTS && !e; i++)
        if (!region->event[i].name[0]) {
            e = &region->event[i];
            memset(e, 0, sizeof *e);
            strncpy(e->name, name, sizeof e->name - 1);
        }
    if (e) {
        uint32_t prev = (e->idx + SRV_LATENCY_SAMPLES - 1) %
                        SRV_LATENCY_SAMPLES;
        if (e->samples[prev].time_s == time_s) {
            /* One sample a second: its highest. */
            if (latency_ms > e->samples[prev].latency_ms)
                e->samples[prev].latency_ms = latency_ms;
        } else {
            e->samples[e->idx].time_s = time_s;
            e->samples[e->idx].latency_ms = latency_ms;
            e->idx = (e->idx + 1) % SRV_LATENCY_SAMPLES;
        }
        if (latency_ms > e->max_ms)
            e->max_ms = latency_ms;
    }
    unlock();
}

int srv_latency_event_at(int i, srv_latency_event *out)
{
    int found = 0, n = 0;

    if (!lock())
        return 0;
    for (int k = 0; k < SRV_LATENCY_EVENTS && !found; k++) {
        event_sh *e = &region->event[k];
        if (!e->name[0] || n++ != i)
            continue;
        memcpy(out->name, e->name, sizeof out->name);
        out->max_ms = e->max_ms;
        out->nsamples = 0;
        for (uint32_t j = 0; j < SRV_LATENCY_SAMPLES; j++) {
            srv_latency_sample *s =
                &e->samples[(e->idx + j) % SRV_LATENCY_SAMPLES];
            if (s->time_s)
                out->samples[out->nsamples++] = *s;
        }
        out->latest_s = out->nsamples ? out->samples[out->nsamples - 1].time_s
                                      : 0;
        out->latest_ms = out->nsamples
                             ? out->samples[out->nsamples - 1].latency_ms
                             : 0;
        found = 1;
    }
    unlock();
    return found;
}

int srv_latency_reset(const char *const *names, const size_t *lens, int n)
{
    int reset = 0;

    if (!lock())
        return 0;
    for (int k = 0; k < SRV_LATENCY_EVENTS; k++) {
        event_sh *e = &region->event[k];
        int hit = n == 0 && e->name[0];
        for (int j = 0; j < n && !hit && e->name[0]; j++)
            hit = strlen(e->name) == lens[j] &&
                  strncasecmp(e->name, names[j], lens[j]) == 0;
        if (hit) {
            memset(e, 0, sizeof *e);
            reset++;
        }
    }
    unlock();
    return reset;
}
