/*
 * srv_scriptshm.c - the scripting region (see the header).
 */
#include "server/srv_scriptshm.h"

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

_Static_assert(sizeof(srv_scriptshm_slot_sh) % SRV_CACHELINE == 0,
               "a record fills whole cache lines");

static size_t region_size(unsigned nslots)
{
    return sizeof(srv_scriptshm_sh) +
           (size_t)nslots * sizeof(srv_scriptshm_slot_sh);
}

srv_scriptshm_sh *srv_scriptshm_create(unsigned nslots)
{
    size_t size = region_size(nslots);
    srv_scriptshm_sh *sh = mmap(NULL, size, PROT_READ | PROT_WRITE,
                                MAP_SHARED | MAP_ANONYMOUS, -1, 0);

    if (sh == MAP_FAILED)
        return NULL;
    memset(sh, 0, size);
    sh->magic = SRV_SCRIPTSHM_MAGIC;
    sh->version = SRV_SCRIPTSHM_VERSION;
    sh->nslots = nslots;
    sh->size = size;
    if (shm_lock_init(&sh->gate)) {
        munmap(sh, size);
        return NULL;
    }
    return sh;
}

int srv_scriptshm_check(const srv_scriptshm_sh *sh)
{
    return sh && sh->magic == SRV_SCRIPTSHM_MAGIC &&
                   sh->version == SRV_SCRIPTSHM_VERSION &&
                   sh->size == region_size(sh->nslots)
               ? 0
               : -1;
}

void srv_scriptshm_reset_slot(srv_scriptshm_sh *sh, int slot)
{
    srv_scriptshm_slot_sh *s = &sh->slot[slot];

    atomic_store(&s->run, 0);
    atomic_store(&s->kill, 0);
    atomic_store(&s->flags, 0);
    atomic_store(&s->pid, (int32_t)getpid());
}

uint64_t srv_scriptshm_begin(srv_scriptshm_sh *sh, int slot, unsigned flags,
                             const char *name, int64_t now_ms)
{
    srv_scriptshm_slot_sh *s = &sh->slot[slot];
    uint64_t words[SRV_SCRIPTSHM_NAME_MAX / 8] = { 0 };
    uint64_t run = ++s->seq;

    strncpy((char *)words, name, sizeof words - 1);
    for (size_t i = 0; i < SRV_SCRIPTSHM_NAME_MAX / 8; i++)
        atomic_store_explicit(&s->name[i], words[i], memory_order_relaxed);
    atomic_store_explicit(&s->started_ms, now_ms, memory_order_relaxed);
    atomic_store_explicit(&s->flags, flags, memory_order_relaxed);
    atomic_store_explicit(&s->run, run, memory_order_release);
    return run;
}

void srv_scriptshm_mark(srv_scriptshm_sh *sh, int slot, unsigned flags)
{
    atomic_fetch_or(&sh->slot[slot].flags, flags);
}

void srv_scriptshm_end(srv_scriptshm_sh *sh, int slot)
{
    atomic_store_explicit(&sh->slot[slot].run, 0, memory_order_release);
}

int srv_scriptshm_killed(const srv_scriptshm_sh *sh, int slot, uint64_t run)
{
    return atomic_load_explicit(&sh->slot[slot].kill, memory_order_relaxed) ==
           run;
}

static int alive(int32_t pid)
{
    return pid > 0 && (kill(pid, 0) == 0 || errno != ESRCH);
}

/* Snapshot slot i: 1 if a run was stable across the copy. */
static int snapshot(const srv_scriptshm_sh *sh, int i, srv_scriptshm_run *r)
{
    const srv_scriptshm_slot_sh *s = &sh->slot[i];
    uint64_t words[SRV_SCRIPTSHM_NAME_MAX / 8];
    uint64_t run = atomic_load_explicit(&s->run, memory_order_acquire);

    if (!run)
        return 0;
    r->run = run;
    r->slot = i;
    r->started_ms = atomic_load_explicit(&s->started_ms, memory_order_relaxed);
    r->flags = atomic_load_explicit(&s->flags, memory_order_relaxed);
    for (size_t w = 0; w < SRV_SCRIPTSHM_NAME_MAX / 8; w++)
        words[w] = atomic_load_explicit(&s->name[w], memory_order_relaxed);
    memcpy(r->name, words, SRV_SCRIPTSHM_NAME_MAX);
    r->name[SRV_SCRIPTSHM_NAME_MAX] = '\0';
    atomic_thread_fence(memory_order_acquire);
    if (atomic_load_explicit(&s->run, memory_order_relaxed) != run)
        return 0;
    return alive(atomic_load_explicit(&s->pid, memory_order_relaxed));
}

int srv_scriptshm_find(const srv_scriptshm_sh *sh, int self,
                       srv_scriptshm_run *out)
{
    int found = 0;
    srv_scriptshm_run r;

    for (int i = 0; i < (int)sh->nslots; i++) {
        if (i == self || !snapshot(sh, i, &r))
            continue;
        if (!found || r.started_ms < out->started_ms)
            *out = r;
        found = 1;
    }
    return found;
}

/* A dead holder's transaction was aborted by LMDB: nothing to repair. */
static void gate_repair(void *arg) {}

int srv_scriptshm_gate_acquire(srv_scriptshm_sh *sh, int64_t timeout_ms)
{
    return shm_lock_acquire_timed(&sh->gate, gate_repair, NULL, timeout_ms);
}

void srv_scriptshm_gate_release(srv_scriptshm_sh *sh)
{
    shm_lock_release(&sh->gate);
}

int srv_scriptshm_kill(srv_scriptshm_sh *sh, const srv_scriptshm_run *r)
{
    srv_scriptshm_slot_sh *s = &sh->slot[r->slot];

    atomic_store(&s->kill, r->run);
    return atomic_load(&s->run) == r->run;
}

void srv_scriptshm_kill_all(srv_scriptshm_sh *sh)
{
    for (unsigned i = 0; i < sh->nslots; i++) {
        uint64_t run = atomic_load(&sh->slot[i].run);
        if (run)
            atomic_store(&sh->slot[i].kill, run);
    }
}
