/* shm_lock.h — process-shared robust mutexes padded to a cache line.
 *
 * shm_lock_acquire() is the only function in larder that handles
 * EOWNERDEAD: when a holder died, it runs the owner's repair callback under
 * the lock (the cache resets the stripe), marks the mutex consistent and
 * counts the recovery. Each lock counts how often a locker had to wait.
 */
#ifndef SHM_LOCK_H
#define SHM_LOCK_H

#include <pthread.h>
#include <stdint.h>

#include "shm/shm_region.h"

/* A lock in shared memory: one cache line, so neighbours never share it. */
typedef struct shm_lock_sh {
    pthread_mutex_t mtx; /* process-shared, robust; initialised once */
    uint64_t waits;      /* guarded by: mtx (written by holder); read atomic */
    uint64_t owner_dead; /* guarded by: mtx (written by holder); read atomic */
} __attribute__((aligned(SHM_CACHE_LINE))) shm_lock_sh;

/* Repair what a dead holder may have left half-done. Runs with the lock
 * held: no malloc, no syscalls, no logging. */
typedef void shm_lock_repair_fn(void *arg);

/* Initialise l in zeroed shared memory as a process-shared robust mutex.
 * Only the region's creator, before any other process can see l.
 * Returns 0 or a pthread errno. */
int shm_lock_init(shm_lock_sh *l);

/* Lock l, blocking. If the previous holder died (EOWNERDEAD), call
 * repair(arg) under the lock, mark the mutex consistent and count it in
 * l->owner_dead; if the locker had to wait, count it in l->waits.
 * Any process that maps l may call it.
 * Returns 0 (locked), SHM_ENOTRECOVERABLE, or a pthread errno (not locked). */
int shm_lock_acquire(shm_lock_sh *l, shm_lock_repair_fn *repair, void *arg);

/* shm_lock_acquire() giving up after `timeout_ms` (ms, > 0): 0 (locked),
 * ETIMEDOUT (not locked), or its other codes. */
int shm_lock_acquire_timed(shm_lock_sh *l, shm_lock_repair_fn *repair,
                           void *arg, int64_t timeout_ms);

/* Unlock l; the caller holds it. */
void shm_lock_release(shm_lock_sh *l);

/* Lock-free reads of the counters, for statistics. */
uint64_t shm_lock_waits(const shm_lock_sh *l);
uint64_t shm_lock_owner_dead(const shm_lock_sh *l);

#endif /* SHM_LOCK_H */
