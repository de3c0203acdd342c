/*
 * srv_lua_pool.h - a Lua state's small blocks, kept for reuse. Every
 * script run makes strings and tables (KEYS, ARGV, the replies of
 * redis.call converted to Lua) that the garbage collector frees in
 * bursts, and the next run asks for the same sizes again: a free list
 * per size class answers those without malloc (whose per-thread cache
 * holds only a few blocks of a size, so a burst of frees reached its
 * consolidation). Blocks larger than SRV_LUA_POOL_MAX go to malloc as
 * they are. One pool per Lua state, used by its allocator only, on the
 * thread that runs the state.
 */
#ifndef SRV_LUA_POOL_H
#define SRV_LUA_POOL_H

#include <stddef.h>

/* Block sizes are rounded up to a multiple of the class. */
#define SRV_LUA_POOL_CLASS 16
/* The largest block kept (Lua's strings of short values, table headers,
 * small array and hash parts). */
#define SRV_LUA_POOL_MAX 256
#define SRV_LUA_POOL_CLASSES (SRV_LUA_POOL_MAX / SRV_LUA_POOL_CLASS)
/* Free blocks kept per class (at most 4 MiB over all classes); more go
 * back to malloc. */
#define SRV_LUA_POOL_KEEP 1024

typedef struct srv_lua_pool {
    void *free[SRV_LUA_POOL_CLASSES]; /* each block's first word: next */
    unsigned nfree[SRV_LUA_POOL_CLASSES];
} srv_lua_pool;

/* An empty pool (the caller's storage). */
void srv_lua_pool_init(srv_lua_pool *p);

/* Give every kept block back to malloc (after lua_close). */
void srv_lua_pool_fini(srv_lua_pool *p);

/*
 * As a lua_Alloc: `ptr`, a block of `osize` bytes from this pool (NULL
 * with osize 0 for a new one), becomes one of `nsize` bytes, its
 * contents kept up to the smaller size; nsize 0 frees it and returns
 * NULL. NULL when memory runs out (ptr is then unchanged). The caller
 * passes each block's true size, as Lua does.
 */
void *srv_lua_pool_realloc(srv_lua_pool *p, void *ptr, size_t osize,
                           size_t nsize);

/* Free blocks the pool holds now (tests). */
size_t srv_lua_pool_kept(const srv_lua_pool *p);

#endif
