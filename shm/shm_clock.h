/* shm_clock.h — approximate last-access times of keys, shared by every
 * process (what OBJECT IDLETIME reports).
 *
 * A region of 32-bit slots (seconds since the epoch), indexed by a key's
 * hash: recording an access stores the current second in the key's slot,
 * reading one gives the last second any key of that slot was accessed.
 * Two keys sharing a slot make each look as recent as the other: an
 * estimate, like Redis's own 24-bit LRU clock. Every slot starts at the
 * region's creation time, so a key not seen since is as old as the
 * server. The master creates the region before fork; every process reads
 * and writes slots with relaxed atomics, no lock: a lost update only
 * makes an idle time a second off. Nothing to repair when a process dies.
 */
#ifndef SHM_CLOCK_H
#define SHM_CLOCK_H

#include <stddef.h>
#include <stdint.h>

#define SHM_CLOCK_LAYOUT_VERSION 2u
#define SHM_CLOCK_DEFAULT_SLOTS (1u << 20)

typedef struct shm_clock shm_clock_t;

/* Map a clock of `slots` slots (a power of two), each reading `now_s`
 * until touched (no page of the slots is written: they cost no memory
 * until used). The master, before fork. 0, EINVAL or mmap's errno. */
int shm_clock_create(size_t slots, uint32_t now_s, shm_clock_t **out);

/* Record an access to the key of `hash` at `now_s`. Any process; a store
 * only when the slot holds another second. */
void shm_clock_touch(shm_clock_t *c, uint64_t hash, uint32_t now_s);

/* The last second an access to a key of `hash` was recorded. */
uint32_t shm_clock_get(const shm_clock_t *c, uint64_t hash);

/* Check a mapping's header (shm_region_check's codes). */
int shm_clock_check(const shm_clock_t *c);

/* Unmap; *c becomes NULL. The master, at exit. */
void shm_clock_destroy(shm_clock_t **c);

#endif /* SHM_CLOCK_H */
