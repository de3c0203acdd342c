/* shm_lock.c — robust process-shared stripe locks (see shm_lock.h). */
#include <errno.h>
#include <pthread.h>
#include <time.h>

#include "shm/shm_error.h"
#include "shm/shm_lock.h"

_Static_assert(sizeof(shm_lock_sh) == SHM_CACHE_LINE,
               "a lock fills exactly one cache line");

int shm_lock_init(shm_lock_sh *l)
{
    pthread_mutexattr_t a;
    int rc;

    rc = pthread_mutexattr_init(&a);
    if (rc != 0)
        return rc;
    rc = pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
    if (rc == 0)
        rc = pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
    if (rc == 0)
        rc = pthread_mutex_init(&l->mtx, &a);
    pthread_mutexattr_destroy(&a);
    l->waits = 0;
    l->owner_dead = 0;
    return rc;
}

/* Only the holder writes the counters, so a relaxed load+store is enough;
 * readers elsewhere use relaxed atomic loads. */
static void count_locked(uint64_t *ctr)
{
    __atomic_store_n(ctr, __atomic_load_n(ctr, __ATOMIC_RELAXED) + 1,
                     __ATOMIC_RELAXED);
}

#define NS_PER_MS 1000000L
#define NS_PER_S 1000000000L

/* What a lock attempt returned (rc), made 0 or an error: the one place
 * that handles EOWNERDEAD. */
static int settle(shm_lock_sh *l, int rc, int waited,
                  shm_lock_repair_fn *repair, void *arg)
{
    if (rc == EOWNERDEAD) {
        /* The holder died inside its critical section: whatever it
         * protected is suspect. Repair first, then declare the mutex
         * usable; if we died in between, the next locker would see
         * EOWNERDEAD again and repeat the repair. */
        repair(arg);
        rc = pthread_mutex_consistent(&l->mtx);
        if (rc != 0) {
            pthread_mutex_unlock(&l->mtx);
            return rc;
        }
        count_locked(&l->owner_dead);
    } else if (rc == ENOTRECOVERABLE) {
        return SHM_ENOTRECOVERABLE;
    } else if (rc != 0) {
        return rc;
    }
    if (waited)
        count_locked(&l->waits);
    return 0;
}

int shm_lock_acquire(shm_lock_sh *l, shm_lock_repair_fn *repair, void *arg)
{
    int waited = 0;
    int rc = pthread_mutex_trylock(&l->mtx);

    if (rc == EBUSY) {
        waited = 1;
        rc = pthread_mutex_lock(&l->mtx);
    }
    return settle(l, rc, waited, repair, arg);
}

int shm_lock_acquire_timed(shm_lock_sh *l, shm_lock_repair_fn *repair,
                           void *arg, int64_t timeout_ms)
{
    struct timespec at;
    int waited = 0;
    int rc = pthread_mutex_trylock(&l->mtx);

    if (rc == EBUSY) {
        waited = 1;
        clock_gettime(CLOCK_REALTIME, &at);
        at.tv_nsec += (timeout_ms % 1000) * NS_PER_MS;
        at.tv_sec += timeout_ms / 1000 + at.tv_nsec / NS_PER_S;
        at.tv_nsec %= NS_PER_S;
        rc = pthread_mutex_timedlock(&l->mtx, &at);
        if (rc == ETIMEDOUT)
            return rc;
    }
    return settle(l, rc, waited, repair, arg);
}

void shm_lock_release(shm_lock_sh *l) { pthread_mutex_unlock(&l->mtx); }

uint64_t shm_lock_waits(const shm_lock_sh *l)
{
    return __atomic_load_n(&l->waits, __ATOMIC_RELAXED);
}

uint64_t shm_lock_owner_dead(const shm_lock_sh *l)
{
    return __atomic_load_n(&l->owner_dead, __ATOMIC_RELAXED);
}
