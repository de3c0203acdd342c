/* shm_region.h — one anonymous shared mapping with a checked header.
 *
 * The master maps the region MAP_SHARED|MAP_ANONYMOUS before it forks, so
 * every child inherits it at the same address and nothing named outlives the
 * process tree. The region begins with shm_region_sh (magic, layout version,
 * sizes); its owner (shm_cache) lays out the rest from payload_off on.
 */
#ifndef SHM_REGION_H
#define SHM_REGION_H

#include <stddef.h>
#include <stdint.h>

#define SHM_REGION_MAGIC UINT64_C(0x314d485352445241) /* "ARDRSHM1" */
#define SHM_CACHE_LINE 64

/* The mapped header. All fields immutable after shm_region_create(). */
typedef struct shm_region_sh {
    uint64_t magic;          /* immutable after init: SHM_REGION_MAGIC */
    uint32_t layout_version; /* immutable after init: owner's layout */
    uint32_t header_size;    /* immutable after init: sizeof(shm_region_sh) */
    uint64_t region_size;    /* immutable after init: bytes mapped */
    uint64_t payload_off; /* immutable after init: owner's layout starts here */
    uint8_t pad[SHM_CACHE_LINE - 32];
} shm_region_sh;

/* Map size bytes (rounded up to whole pages), zero-filled, shared and
 * anonymous; write the header. size must exceed sizeof(shm_region_sh).
 * Call in the master before fork. On success *out is the region base.
 * Returns 0, EINVAL, or mmap's errno. */
int shm_region_create(size_t size, uint32_t layout_version,
                      shm_region_sh **out);

/* Check a mapping's header: magic, layout version, header size and that
 * region_size equals size. Any process may call it; reads only.
 * Returns 0, SHM_EBADMAGIC, SHM_EVERSION or SHM_ELAYOUT. */
int shm_region_check(const void *base, size_t size, uint32_t layout_version);

/* Unmap the region and set *r to NULL. Only the creator, once no child
 * uses it any more. Returns 0 or munmap's errno. */
int shm_region_destroy(shm_region_sh **r);

#endif /* SHM_REGION_H */
