/*
 * st_internal.h - what the storage modules share among themselves: the
 * environment and transaction structs and LMDB handles. Never included
 * outside storage/ (LMDB types stay in this layer).
 */
#ifndef ST_INTERNAL_H
#define ST_INTERNAL_H

#include <errno.h>
#include <lmdb.h>
#include <stdint.h>
#include <stdlib.h>

#include "storage/st_env.h"
#include "storage/st_codec.h"

/* Keys seen expired by a read transaction, deleted by st_keyspace_reap_seen(). */
#define ST_SEEN_MAX 64

/* The named databases of DESIGN.md's schema. */
enum st_dbi {
    ST_DBI_KEYS,
    ST_DBI_EXPIRES,
    ST_DBI_HASHES,
    ST_DBI_SETS,
    ST_DBI_ZMEMBERS,
    ST_DBI_ZSCORES,
    ST_DBI_LISTS,
    ST_DBI_GARBAGE,
    ST_DBI_META,
    ST_DBI_COUNT
};

/* Memory for values handed out by lookups (cache copies, decompressed
 * strings): valid until the transaction that produced them ends. */
typedef struct st_arena_chunk {
    struct st_arena_chunk *next;
    size_t cap;
    size_t used;
    uint8_t data[];
} st_arena_chunk;

#define ST_ARENA_CHUNK 65536

struct st_txn {
    st_env *env;
    MDB_txn *txn;
    int write;
    int active;
    int counts_dirty;
    int64_t *dkeys;         /* per db: key count change, not yet in meta */
    int64_t *dexpires;      /* per db: keys-with-TTL count change */
    st_arena_chunk *arena;  /* this transaction's values; newest first */
    /* the database map as this transaction sees it (st_dbmap.c) */
    int map_loaded;
    uint64_t map_stamp;     /* keyrefs bound with this stamp are current */
    struct st_dbmap_entry *map;  /* numbers swapped at least once */
    unsigned map_n;
    unsigned map_cap;
};

/* A number of the database map (st_dbmap.c): what it names, and how
 * many times a SWAPDB changed that. */
struct st_dbmap_entry {
    uint16_t db;
    uint16_t stored;
    uint32_t swaps;
};

struct st_seen {
    size_t len;
    uint8_t enc[ST_LMDB_MAXKEY];
};


struct st_env {
    MDB_env *env;
    MDB_dbi dbi[ST_DBI_COUNT];
    MDB_dbi dbi_main;       /* LMDB's unnamed database (st_dbmap.c) */
    size_t main_names;      /* its entries that are database names */
    unsigned databases;
    unsigned nstored;       /* stored databases counted (st_dbmap.h) */
    uint64_t map_stamps;    /* last stamp handed to a transaction's map */
    uint16_t *map_hint;     /* the last map loaded: number -> stored */
    unsigned map_hint_n;
    unsigned map_hint_cap;
    st_txn rtxn;
    st_txn wtxn;
    MDB_txn *rtxn_parked;   /* reset read txn kept for renew */
    unsigned nseen;
    struct st_seen seen[ST_SEEN_MAX];
    uint8_t *scratch;       /* grow-only buffer for record rewrites */
    size_t scratch_cap;
    struct shm_cache *cache;    /* NULL: no cache */
    size_t compress_threshold;
    int compress_level;
    struct ZSTD_CCtx_s *zc;     /* reused contexts: no allocation per value */
    struct ZSTD_DCtx_s *zd;
};

/* `len` bytes valid until transaction t ends; NULL if out of memory.
 * st_txn_arena_room() is what the newest chunk still has. */
uint8_t *st_txn_arena_alloc(st_txn *t, size_t len);
size_t st_txn_arena_room(const st_txn *t, uint8_t **at);
/* Give back what the arena handed out (its transaction ended). */
void st_txn_arena_reset(st_txn *t);

/* Grow-only buffer *buf of *cap bytes to at least len. 0 or ENOMEM. */
static inline int st_internal_grow(uint8_t **buf, size_t *cap, size_t len)
{
    if (len > *cap) {
        uint8_t *p = realloc(*buf, len);
        if (!p)
            return ENOMEM;
        *buf = p;
        *cap = len;
    }
    return 0;
}

/* Map an LMDB return code to 0, a positive errno or an ST_E* code. */
int st_err_map(int rc);

/* The grow-only scratch buffer of the environment, at least `len` bytes. */
int st_env_scratch(st_env *env, size_t len, uint8_t **out);

/* Record a change of key / TTL counts for stored database `db`. */
void st_txn_count_keys(st_txn *t, unsigned db, int64_t dkeys, int64_t dexpires);

#define ST_META_SCHEMA "schema"
#define ST_META_COUNTS "counts"
#define ST_META_NEXT_ID "next-id"

/* Read the map at open: how many stored databases it needs counted
 * (st_dbmap.c). */
int st_dbmap_space(st_env *env, MDB_txn *txn, unsigned *nstored);

#endif
