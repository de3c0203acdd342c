/* shm_region.c — create, check and unmap the anonymous shared region. */
#include <errno.h>
#include <stddef.h>
#include <sys/mman.h>
#include <unistd.h>

#include "shm/shm_error.h"
#include "shm/shm_region.h"

#define SHM_REGION_PAGE_FALLBACK 4096 /* if sysconf cannot say */

_Static_assert(sizeof(shm_region_sh) == SHM_CACHE_LINE,
               "region header is one cache line");

static size_t round_to_pages(size_t size)
{
    long pg = sysconf(_SC_PAGESIZE);
    size_t p = pg > 0 ? (size_t)pg : SHM_REGION_PAGE_FALLBACK;

    return (size + p - 1) / p * p;
}

int shm_region_create(size_t size, uint32_t layout_version, shm_region_sh **out)
{
    shm_region_sh *r;
    void *p;

    *out = NULL;
    if (size <= sizeof(shm_region_sh))
        return EINVAL;
    size = round_to_pages(size);
    p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1,
             0);
    if (p == MAP_FAILED)
        return errno;
    r = p;
    r->magic = SHM_REGION_MAGIC;
    r->layout_version = layout_version;
    r->header_size = sizeof(shm_region_sh);
    r->region_size = size;
    r->payload_off = sizeof(shm_region_sh);
    *out = r;
    return 0;
}

int shm_region_check(const void *base, size_t size, uint32_t layout_version)
{
    const shm_region_sh *r = base;

    if (base == NULL || size < sizeof(*r))
        return SHM_ELAYOUT;
    if (r->magic != SHM_REGION_MAGIC)
        return SHM_EBADMAGIC;
    if (r->layout_version != layout_version)
        return SHM_EVERSION;
    if (r->header_size != sizeof(*r) || r->region_size != size ||
        r->payload_off < sizeof(*r) || r->payload_off >= size)
        return SHM_ELAYOUT;
    return 0;
}

int shm_region_destroy(shm_region_sh **r)
{
    int rc = 0;

    if (*r == NULL)
        return 0;
    if (munmap(*r, (size_t)(*r)->region_size) != 0)
        rc = errno;
    *r = NULL;
    return rc;
}
