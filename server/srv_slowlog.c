/*
 * srv_slowlog.c - the shared slow log ring (see the header).
 */
#include "server/srv_slowlog.h"
#include "shm/shm_lock.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

/* One stored entry: its arguments packed in blob (each as it will be
 * shown: cut, with the "... (N more bytes)" tail). */
typedef struct slot_sh {
    uint64_t id; /* guarded by: lock; 0 while being written (ids are +1) */
    int64_t time_s;
    int64_t duration_us;
    uint32_t argc;
    uint32_t len[SRV_SLOWLOG_ARGS];
    char addr[SRV_SLOWLOG_NAME_MAX];
    char name[SRV_SLOWLOG_NAME_MAX];
    char blob[sizeof(((srv_slowlog_entry *)0)->blob)];
} slot_sh;

struct srv_slowlog {
    uint64_t magic;   /* immutable after init */
    uint32_t version; /* immutable after init */
    uint32_t cap;     /* immutable after init */
    shm_lock_sh lock;
    uint64_t next_id;  /* guarded by: lock: the next entry's id + 1 */
    uint64_t first_id; /* guarded by: lock: the oldest shown, + 1 */
    slot_sh slot[SRV_SLOWLOG_CAP]; /* guarded by: lock; id % cap */
};

static srv_slowlog *region;

srv_slowlog *srv_slowlog_create(void)
{
    srv_slowlog *s = mmap(NULL, sizeof *s, PROT_READ | PROT_WRITE,
                          MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    int rc;

    if (s == MAP_FAILED)
        return NULL;
    s->magic = SRV_SLOWLOG_MAGIC;
    s->version = SRV_SLOWLOG_VERSION;
    s->cap = SRV_SLOWLOG_CAP;
    s->next_id = 1;
    s->first_id = 1;
    if ((rc = shm_lock_init(&s->lock))) {
        munmap(s, sizeof *s);
        errno = rc;
        return NULL;
    }
    region = s;
    return s;
}

void srv_slowlog_destroy(srv_slowlog **sp)
{
    if (!*sp)
        return;
    if (region == *sp)
        region = NULL;
    munmap(*sp, sizeof **sp);
    *sp = NULL;
}

srv_slowlog *srv_slowlog_region(void) { return region; }

/* Nothing to repair: a half-written entry has id 0 and is never shown. */
static void repair(void *arg) {}

static int lock(void)
{
    return region && shm_lock_acquire(&region->lock, repair, NULL) == 0;
}

static void unlock(void) { shm_lock_release(&region->lock); }

/* The oldest id shown for max_len; the caller holds the lock. */
static uint64_t oldest_locked(long long max_len)
{
    uint64_t keep = max_len < 0 ? 0
                    : (unsigned long long)max_len < region->cap
                        ? (uint64_t)max_len
                        : region->cap;
    if (region->next_id - region->first_id > keep)
        region->first_id = region->next_id - keep; /* for good, as Redis
                                                    * trims its list */
    return region->first_id;
}

/* Pack one argument, as Redis shows it, at blob + *off. */
static uint32_t pack(slot_sh *e, size_t *off, const char *p, size_t n)
{
    char tail[SRV_SLOWLOG_NAME_MAX];
    size_t keep = n > SRV_SLOWLOG_ARG_BYTES ? SRV_SLOWLOG_ARG_BYTES : n;
    size_t t = 0;

    if (n > SRV_SLOWLOG_ARG_BYTES)
        t = (size_t)snprintf(tail, sizeof tail, "... (%zu more bytes)",
                             n - SRV_SLOWLOG_ARG_BYTES);
    memcpy(e->blob + *off, p, keep);
    memcpy(e->blob + *off + keep, tail, t);
    *off += keep + t;
    return (uint32_t)(keep + t);
}

void srv_slowlog_add(const srv_slice *argv, int argc, int64_t time_s,
                     int64_t duration_us, const char *addr, const char *name,
                     long long max_len)
{
    char more[SRV_SLOWLOG_NAME_MAX];
    int shown = argc > SRV_SLOWLOG_ARGS ? SRV_SLOWLOG_ARGS - 1 : argc;
    size_t off = 0;

    if (max_len <= 0 || !lock())
        return;
    uint64_t id = region->next_id++;
    slot_sh *e = &region->slot[(id - 1) % region->cap];
    e->id = 0;
    e->time_s = time_s;
    e->duration_us = duration_us;
    for (int i = 0; i < shown; i++)
        e->len[i] = pack(e, &off, argv[i].ptr, argv[i].len);
    if (shown < argc) {
        int n = snprintf(more, sizeof more, "... (%d more arguments)",
                         argc - shown);
        e->len[shown++] = pack(e, &off, more, (size_t)n);
    }
    e->argc = (uint32_t)shown;
    snprintf(e->addr, sizeof e->addr, "%s", addr);
    snprintf(e->name, sizeof e->name, "%s", name);
    oldest_locked(max_len);
    e->id = id;
    unlock();
}

long long srv_slowlog_len(long long max_len)
{
    long long n;

    if (!lock())
        return 0;
    n = (long long)(region->next_id - oldest_locked(max_len));
    unlock();
    return n;
}

int srv_slowlog_next(uint64_t *cursor, long long max_len,
                     srv_slowlog_entry *out)
{
    int found = 0;

    if (!lock())
        return 0;
    uint64_t first = oldest_locked(max_len);
    uint64_t id = *cursor < region->next_id ? *cursor : region->next_id;
    while (!found && id > first) {
        id--;
        slot_sh *e = &region->slot[(id - 1) % region->cap];
        if (e->id != id)
            continue; /* being written, or left by a dead writer */
        size_t off = 0;
        out->id = id - 1;
        out->time_s = e->time_s;
        out->duration_us = e->duration_us;
        out->argc = (int)e->argc;
        for (uint32_t i = 0; i < e->argc; i++) {
            memcpy(out->blob + off, e->blob + off, e->len[i]);
            out->argv[i].ptr = out->blob + off;
            out->argv[i].len = e->len[i];
            off += e->len[i];
        }
        memcpy(out->addr, e->addr, sizeof out->addr);
        memcpy(out->name, e->name, sizeof out->name);
        *cursor = id;
        found = 1;
    }
    unlock();
    return found;
}

void srv_slowlog_reset(void)
{
    if (!lock())
        return;
    region->first_id = region->next_id;
    unlock();
}
