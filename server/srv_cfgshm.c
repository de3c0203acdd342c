/*
 * srv_cfgshm.c - the shared configuration region (see srv_cfgshm.h): a
 * seqlock over the published copy, a robust writer lock, and the
 * acknowledgement records.
 *
 * The seqlock follows the C11 pattern: the writer makes the counter odd,
 * a release fence, stores the words relaxed, then makes it even with a
 * release store; the reader loads the counter with acquire, the words
 * relaxed, an acquire fence, and the counter again. Words are copied as
 * relaxed atomics so a copy that races a publish is a retried read, not a
 * data race.
 */
#include "server/srv_cfgshm.h"
#include "shm/shm_error.h"

#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* Yields a reader allows a publish in progress before it takes the lock
 * (which waits for a live writer, or repairs after a dead one). */
#define READ_SPINS 64

_Static_assert(sizeof(srv_config) % sizeof(uint64_t) == 0,
               "srv_config copies as whole words");
_Static_assert(sizeof(srv_cfgshm_ack_sh) == SRV_CACHELINE,
               "an ack record fills one cache line");

size_t srv_cfgshm_size(unsigned nacks)
{
    return sizeof(srv_cfgshm_sh) + (size_t)nacks * sizeof(srv_cfgshm_ack_sh);
}

static void words_to_config(srv_config *out, const uint64_t *w)
{
    memcpy(out, w, sizeof *out);
}

/* The words of `staged` over `cur`, with the counter odd; then even. */
static void finish_publish_locked(srv_cfgshm_sh *sh)
{
    uint64_t s = atomic_load_explicit(&sh->seq, memory_order_relaxed);

    if (!(s & 1)) {
        atomic_store_explicit(&sh->seq, ++s, memory_order_relaxed);
        atomic_thread_fence(memory_order_release);
    }
    for (size_t i = 0; i < SRV_CFGSHM_WORDS; i++)
        __atomic_store_n(&sh->cur[i], sh->staged[i], __ATOMIC_RELAXED);
    atomic_store_explicit(&sh->seq, s + 1, memory_order_release);
}

/* shm_lock repair: a holder died. An odd counter means it died copying a
 * complete stage: finish that publish. An even one means `cur` is intact
 * (it died staging, or after publishing). No syscalls, no logging. */
static void repair(void *arg)
{
    srv_cfgshm_sh *sh = arg;

    if (atomic_load_explicit(&sh->seq, memory_order_relaxed) & 1)
        finish_publish_locked(sh);
}

int srv_cfgshm_create(const srv_config *cfg, unsigned nacks, srv_cfgshm **out)
{
    size_t size = srv_cfgshm_size(nacks);
    srv_cfgshm *h = calloc(1, sizeof *h);
    srv_cfgshm_sh *sh;
    int rc;

    *out = NULL;
    if (!h)
        return ENOMEM;
    sh = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
              -1, 0);
    if (sh == MAP_FAILED) {
        rc = errno;
        free(h);
        return rc;
    }
    /* A fresh anonymous mapping is zeroed: no ack record is registered. */
    if ((rc = shm_lock_init(&sh->writer))) {
        munmap(sh, size);
        free(h);
        return rc;
    }
    sh->magic = SRV_CFGSHM_MAGIC;
    sh->version = SRV_CFGSHM_VERSION;
    sh->nacks = nacks;
    sh->size = size;
    sh->config_size = sizeof(srv_config);
    memcpy(sh->staged, cfg, sizeof *cfg);
    finish_publish_locked(sh); /* nobody else sees it yet */
    h->sh = sh;
    h->size = size;
    *out = h;
    return 0;
}

void srv_cfgshm_destroy(srv_cfgshm **hp)
{
    srv_cfgshm *h = *hp;

    if (!h)
        return;
    munmap(h->sh, h->size);
    free(h);
    *hp = NULL;
}

int srv_cfgshm_attach(const srv_cfgshm *h)
{
    const srv_cfgshm_sh *sh = h->sh;

    if (h->size < sizeof *sh)
        return SHM_ELAYOUT;
    if (sh->magic != SRV_CFGSHM_MAGIC)
        return SHM_EBADMAGIC;
    if (sh->version != SRV_CFGSHM_VERSION)
        return SHM_EVERSION;
    if (sh->size != h->size || sh->size != srv_cfgshm_size(sh->nacks) ||
        sh->config_size != sizeof(srv_config))
        return SHM_ELAYOUT;
    return 0;
}

uint64_t srv_cfgshm_seq(const srv_cfgshm *h)
{
    return atomic_load_explicit(&h->sh->seq, memory_order_acquire);
}

int srv_cfgshm_lock(srv_cfgshm *h)
{
    return shm_lock_acquire(&h->sh->writer, repair, h->sh);
}

void srv_cfgshm_unlock(srv_cfgshm *h) { shm_lock_release(&h->sh->writer); }

int srv_cfgshm_read(srv_cfgshm *h, srv_config *out, uint64_t *seq)
{
    srv_cfgshm_sh *sh = h->sh;
    int spins = 0, rc;

    for (;;) {
        uint64_t s1 = atomic_load_explicit(&sh->seq, memory_order_acquire);
        if (s1 & 1) {
            if (++spins < READ_SPINS) {
                sched_yield();
                continue;
            }
            /* Stuck: wait for the writer, or repair after a dead one. */
            if ((rc = srv_cfgshm_lock(h)))
                return rc;
            srv_cfgshm_unlock(h);
            spins = 0;
            continue;
        }
        char *dst = (char *)out;
        for (size_t i = 0; i < SRV_CFGSHM_WORDS; i++) {
            uint64_t w = __atomic_load_n(&sh->cur[i], __ATOMIC_RELAXED);
            memcpy(dst + i * sizeof w, &w, sizeof w);
        }
        atomic_thread_fence(memory_order_acquire);
        if (atomic_load_explicit(&sh->seq, memory_order_relaxed) == s1) {
            *seq = s1;
            return 0;
        }
    }
}

void srv_cfgshm_current_locked(const srv_cfgshm *h, srv_config *out)
{
    words_to_config(out, h->sh->cur);
}

uint64_t srv_cfgshm_publish_locked(srv_cfgshm *h, const srv_config *next)
{
    srv_cfgshm_sh *sh = h->sh;

    memcpy(sh->staged, next, sizeof *next);
    finish_publish_locked(sh);
    return atomic_load_explicit(&sh->seq, memory_order_relaxed);
}

void srv_cfgshm_expect(srv_cfgshm *h, unsigned i, pid_t pid, uint64_t seq)
{
    srv_cfgshm_ack_sh *a;
    uint64_t cur;

    if (i >= h->sh->nacks)
        return;
    a = &h->sh->ack[i];
    cur = atomic_load(&a->seq);
    /* Raise only: the child may have stored a newer one already. */
    while (cur < seq && !atomic_compare_exchange_weak(&a->seq, &cur, seq))
        ;
    atomic_store(&a->pid, (int64_t)pid);
}

void srv_cfgshm_ack(srv_cfgshm *h, unsigned i, uint64_t seq)
{
    if (i < h->sh->nacks)
        atomic_store_explicit(&h->sh->ack[i].seq, seq, memory_order_release);
}

unsigned srv_cfgshm_nacks(const srv_cfgshm *h) { return h->sh->nacks; }

pid_t srv_cfgshm_lagging(const srv_cfgshm *h, unsigned i, uint64_t seq)
{
    const srv_cfgshm_ack_sh *a;
    int64_t pid;

    if (i >= h->sh->nacks)
        return 0;
    a = &h->sh->ack[i];
    pid = atomic_load(&a->pid);
    if (pid == 0 || atomic_load_explicit(&a->seq, memory_order_acquire) >= seq)
        return 0;
    return (pid_t)pid;
}
