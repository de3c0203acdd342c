/*
 * srv_lua_pool.c - a Lua state's small blocks, kept for reuse (see the
 * header). A pooled block is the size of its class; which blocks are
 * pooled is told by the size the caller passes, so nothing is stored
 * beside a block.
 */
#include "server/cmd/srv_lua_pool.h"

#include <stdlib.h>
#include <string.h>

/* Under AddressSanitizer a kept block is poisoned past its link, so a
 * use after free inside Lua is still caught. */
#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#define KEPT(b, n)                                          \
    ASAN_POISON_MEMORY_REGION((char *)(b) + sizeof(void *), \
                              (n) - sizeof(void *))
#define TAKEN(b, n) ASAN_UNPOISON_MEMORY_REGION((b), (n))
#else
#define KEPT(b, n) ((void)(b), (void)(n))
#define TAKEN(b, n) ((void)(b), (void)(n))
#endif

void srv_lua_pool_init(srv_lua_pool *p) { memset(p, 0, sizeof *p); }

void srv_lua_pool_fini(srv_lua_pool *p)
{
    for (int k = 0; k < SRV_LUA_POOL_CLASSES; k++)
        while (p->free[k]) {
            void *b = p->free[k];
            TAKEN(b, (size_t)(k + 1) * SRV_LUA_POOL_CLASS);
            p->free[k] = *(void **)b;
            free(b);
        }
    srv_lua_pool_init(p);
}

/* The class of a pooled size (1 .. SRV_LUA_POOL_MAX). */
static int class_of(size_t n)
{
    return n ? (int)((n - 1) / SRV_LUA_POOL_CLASS) : 0;
}

static void *take(srv_lua_pool *p, size_t n)
{
    int k;
    void *b;

    if (n > SRV_LUA_POOL_MAX)
        return malloc(n);
    k = class_of(n);
    if ((b = p->free[k])) {
        TAKEN(b, (size_t)(k + 1) * SRV_LUA_POOL_CLASS);
        p->free[k] = *(void **)b;
        p->nfree[k]--;
        return b;
    }
    return malloc((size_t)(k + 1) * SRV_LUA_POOL_CLASS);
}

static void give(srv_lua_pool *p, void *b, size_t n)
{
    int k;

    if (n > SRV_LUA_POOL_MAX ||
        p->nfree[k = class_of(n)] >= SRV_LUA_POOL_KEEP) {
        free(b);
        return;
    }
    *(void **)b = p->free[k];
    p->free[k] = b;
    p->nfree[k]++;
    KEPT(b, (size_t)(k + 1) * SRV_LUA_POOL_CLASS);
}

void *srv_lua_pool_realloc(srv_lua_pool *p, void *ptr, size_t osize,
                           size_t nsize)
{
    void *n;

    if (nsize == 0) {
        if (ptr)
            give(p, ptr, osize);
        return NULL;
    }
    if (!ptr)
        return take(p, nsize);
    if (osize > SRV_LUA_POOL_MAX && nsize > SRV_LUA_POOL_MAX)
        return realloc(ptr, nsize);
    if (osize <= SRV_LUA_POOL_MAX && nsize <= SRV_LUA_POOL_MAX &&
        class_of(osize) == class_of(nsize))
        return ptr; /* the block already has the room */
    if (!(n = take(p, nsize)))
        return NULL;
    memcpy(n, ptr, osize < nsize ? osize : nsize);
    give(p, ptr, osize);
    return n;
}

size_t srv_lua_pool_kept(const srv_lua_pool *p)
{
    size_t n = 0;

    for (int k = 0; k < SRV_LUA_POOL_CLASSES; k++)
        n += p->nfree[k];
    return n;
}
