/*
 * srv_aclshm.c - the shared ACL region (see srv_aclshm.h): two text
 * buffers flipped under the rules lock, and the log's slots.
 */
#include "server/srv_aclshm.h"
#include "shm/shm_error.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define NBUFFERS 2

static size_t region_size(void)
{
    return sizeof(srv_aclshm_sh) + (size_t)NBUFFERS * SRV_ACLSHM_TEXT_MAX;
}

static char *buffer(srv_aclshm_sh *sh, uint32_t i)
{
    return sh->text + (size_t)i * sh->text_max;
}

int srv_aclshm_create(const char *text, size_t len, srv_aclshm **out)
{
    size_t size = region_size();
    srv_aclshm *h;
    srv_aclshm_sh *sh;
    int rc;

    *out = NULL;
    if (len > SRV_ACLSHM_TEXT_MAX)
        return E2BIG;
    if (!(h = calloc(1, sizeof *h)))
        return ENOMEM;
    sh = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
              -1, 0);
    if (sh == MAP_FAILED) {
        rc = errno;
        free(h);
        return rc;
    }
    if ((rc = shm_lock_init(&sh->rules)) || (rc = shm_lock_init(&sh->log))) {
        munmap(sh, size);
        free(h);
        return rc;
    }
    sh->magic = SRV_ACLSHM_MAGIC;
    sh->version = SRV_ACLSHM_VERSION;
    sh->nslots = SRV_ACLSHM_LOG_SLOTS;
    sh->size = size;
    sh->text_max = SRV_ACLSHM_TEXT_MAX;
    memcpy(buffer(sh, 0), text, len);
    sh->len[0] = len;
    atomic_store(&sh->cur, 0);
    atomic_store(&sh->seq, 1);
    h->sh = sh;
    h->size = size;
    *out = h;
    return 0;
}

void srv_aclshm_destroy(srv_aclshm **hp)
{
    srv_aclshm *h = *hp;

    if (!h)
        return;
    munmap(h->sh, h->size);
    free(h);
    *hp = NULL;
}

int srv_aclshm_attach(const srv_aclshm *h)
{
    const srv_aclshm_sh *sh = h->sh;

    if (h->size < sizeof *sh)
        return SHM_ELAYOUT;
    if (sh->magic != SRV_ACLSHM_MAGIC)
        return SHM_EBADMAGIC;
    if (sh->version != SRV_ACLSHM_VERSION)
        return SHM_EVERSION;
    if (sh->size != h->size || sh->size != region_size() ||
        sh->nslots != SRV_ACLSHM_LOG_SLOTS ||
        sh->text_max != SRV_ACLSHM_TEXT_MAX)
        return SHM_ELAYOUT;
    return 0;
}

/* The current buffer is never written while current: nothing to repair. */
static void no_repair(void *arg) {}

int srv_aclshm_lock(srv_aclshm *h)
{
    return shm_lock_acquire(&h->sh->rules, no_repair, NULL);
}

void srv_aclshm_unlock(srv_aclshm *h) { shm_lock_release(&h->sh->rules); }

const char *srv_aclshm_text_locked(const srv_aclshm *h, size_t *len,
                                   uint64_t *seq)
{
    srv_aclshm_sh *sh = h->sh;
    uint32_t cur = atomic_load_explicit(&sh->cur, memory_order_acquire);

    *len = sh->len[cur];
    *seq = atomic_load_explicit(&sh->seq, memory_order_relaxed);
    return buffer(sh, cur);
}

uint64_t srv_aclshm_publish_locked(srv_aclshm *h, const char *text, size_t len)
{
    srv_aclshm_sh *sh = h->sh;
    uint32_t next = 1 - atomic_load_explicit(&sh->cur, memory_order_relaxed);

    if (len > sh->text_max)
        return 0;
    memcpy(buffer(sh, next), text, len);
    sh->len[next] = len;
    atomic_store_explicit(&sh->cur, next, memory_order_release);
    return atomic_fetch_add_explicit(&sh->seq, 1, memory_order_release) + 1;
}

/* ---- the log ---- */

/* A holder that died may have left one slot half written. A new entry
 * is filled with its stamp 0 (free) and stamped last, so it is simply
 * absent; a merged one may show a torn client info at worst. Slots whose
 * lengths are out of range are dropped all the same. */
static void log_repair(void *arg)
{
    srv_aclshm_sh *sh = arg;

    for (uint32_t i = 0; i < sh->nslots; i++) {
        srv_aclshm_entry *e = &sh->slot[i];
        if (e->stamp && (e->object_len > SRV_ACLSHM_OBJECT_MAX ||
                         e->user_len > SRV_ACLSHM_USER_MAX ||
                         e->cinfo_len > SRV_ACLSHM_CINFO_MAX))
            e->stamp = 0;
    }
}

static size_t cut(size_t len, size_t max) { return len < max ? len : max; }

static void fill(srv_aclshm_entry *e, const char *object, size_t olen,
                 const char *user, size_t ulen)
{
    e->object_len = (uint32_t)cut(olen, SRV_ACLSHM_OBJECT_MAX);
    memcpy(e->object, object, e->object_len);
    e->user_len = (uint32_t)cut(ulen, SRV_ACLSHM_USER_MAX);
    memcpy(e->user, user, e->user_len);
}

static void set_cinfo(srv_aclshm_entry *e, const char *cinfo, size_t clen)
{
    e->cinfo_len = (uint32_t)cut(clen, SRV_ACLSHM_CINFO_MAX);
    memcpy(e->cinfo, cinfo, e->cinfo_len);
}

/* The indexes of the used slots, newest first; returns their number. */
static int newest_first(const srv_aclshm_sh *sh, uint32_t *order)
{
    int n = 0;

    for (uint32_t i = 0; i < sh->nslots; i++)
        if (sh->slot[i].stamp) {
            int j = n++;
            while (j > 0 && sh->slot[order[j - 1]].stamp < sh->slot[i].stamp) {
                order[j] = order[j - 1];
                j--;
            }
            order[j] = i;
        }
    return n;
}

int srv_aclshm_log_add(srv_aclshm *h, int reason, int context,
                       const char *object, size_t olen, const char *user,
                       size_t ulen, const char *cinfo, size_t clen,
                       int64_t now_ms, long long max_len)
{
    static uint32_t order[SRV_ACLSHM_LOG_SLOTS]; /* one thread per process */
    srv_aclshm_sh *sh = h->sh;
    size_t ocut = cut(olen, SRV_ACLSHM_OBJECT_MAX);
    size_t ucut = cut(ulen, SRV_ACLSHM_USER_MAX);
    int rc, n;

    if (max_len > (long long)sh->nslots)
        max_len = sh->nslots;
    if ((rc = shm_lock_acquire(&sh->log, log_repair, sh)))
        return rc;
    n = newest_first(sh, order);
    for (int i = 0; i < n && i < SRV_ACLSHM_LOG_SCAN; i++) {
        srv_aclshm_entry *e = &sh->slot[order[i]];
        int64_t delta = e->ctime_ms - now_ms;
        if (e->reason == reason && e->context == context &&
            (delta < 0 ? -delta : delta) <= SRV_ACLSHM_LOG_GROUP_MS &&
            e->object_len == ocut && memcmp(e->object, object, ocut) == 0 &&
            e->user_len == ucut && memcmp(e->user, user, ucut) == 0) {
            e->count++;
            e->ctime_ms = now_ms;
            set_cinfo(e, cinfo, clen);
            e->stamp = ++sh->log_stamp;
            shm_lock_release(&sh->log);
            return 0;
        }
    }
    /* A new entry: in a free slot, else over the oldest. */
    srv_aclshm_entry *e = NULL;
    for (uint32_t i = 0; i < sh->nslots && !e; i++)
        if (!sh->slot[i].stamp)
            e = &sh->slot[i];
    if (!e)
        e = &sh->slot[order[n - 1]];
    e->stamp = 0;
    e->count = 1;
    e->reason = reason;
    e->context = context;
    e->ctime_ms = now_ms;
    fill(e, object, olen, user, ulen);
    set_cinfo(e, cinfo, clen);
    e->stamp = ++sh->log_stamp;
    /* Keep max_len entries: the oldest go. */
    n = newest_first(sh, order);
    for (int i = (int)(max_len > 0 ? max_len : 0); i < n; i++)
        sh->slot[order[i]].stamp = 0;
    shm_lock_release(&sh->log);
    return 0;
}

int srv_aclshm_log_read(srv_aclshm *h, srv_aclshm_entry *out, int max)
{
    static uint32_t order[SRV_ACLSHM_LOG_SLOTS];
    srv_aclshm_sh *sh = h->sh;
    int rc, n;

    if ((rc = shm_lock_acquire(&sh->log, log_repair, sh)))
        return rc > 0 ? -rc : rc;
    n = newest_first(sh, order);
    if (n > max)
        n = max;
    for (int i = 0; i < n; i++)
        out[i] = sh->slot[order[i]];
    shm_lock_release(&sh->log);
    return n;
}

int srv_aclshm_log_reset(srv_aclshm *h)
{
    srv_aclshm_sh *sh = h->sh;
    int rc;

    if ((rc = shm_lock_acquire(&sh->log, log_repair, sh)))
        return rc;
    for (uint32_t i = 0; i < sh->nslots; i++)
        sh->slot[i].stamp = 0;
    shm_lock_release(&sh->log);
    return 0;
}
