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

#include "storage/st_codec.h"
#include "storage/st_env.h"
#include "storage/st_room.h"

/* Keys seen expired by a read transaction, deleted by st_keyspace_reap_seen().
 */
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
    ST_DBI_SCRIPTS,   /* scripting (st_script.h): bodies by SHA1 */
    ST_DBI_FUNCTIONS, /* function libraries by name */
    ST_DBI_CHUNKS,    /* spans of chunked strings (st_string.h) */
    ST_DBI_STREAMS,   /* stream entries by id (st_stream.h) */
    ST_DBI_SGROUPS,   /* stream state, groups, consumers, PEL */
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

/* Room for a stream's state cached in its transaction (st_stream.c
 * checks st_stream_meta fits). */
#define ST_TXN_SMETA_WORDS 8

struct st_txn {
    st_env *env;
    MDB_txn *txn;
    int write;
    int active;
    int counts_dirty;
    /* a write-back deferred to the commit (st_stream.c: one stream's
     * state, written once per transaction instead of once per XADD), run
     * by st_txn_settle and st_txn_commit; NULL when none is pending */
    int (*deferred)(st_txn *t);
    uint64_t smeta_cid; /* the collection the cached state is of; 0: none */
    int smeta_dirty;
    uint64_t smeta[ST_TXN_SMETA_WORDS]; /* st_stream_meta, as cached */
    int64_t *dkeys;        /* per db: key count change, not yet in meta */
    int64_t *dexpires;     /* per db: keys-with-TTL count change */
    st_arena_chunk *arena; /* this transaction's values; newest first */
    /* the database map as this transaction sees it (st_dbmap.c) */
    int map_loaded;
    uint64_t map_stamp;         /* keyrefs bound with this stamp are current */
    struct st_dbmap_entry *map; /* numbers swapped at least once */
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

/* The first-write gate of a server environment (st_durable.h). */
enum st_gate { ST_GATE_OPEN, ST_GATE_WAIT, ST_GATE_FAILED };

struct st_env {
    MDB_env *env;
    char *dir;                    /* as opened */
    char boot_id[ST_BOOT_ID_MAX]; /* "": not under the durable scheme */
    int gate;                     /* enum st_gate: before the first write */
    int lockfd;                   /* lock.mdb, for pid liveness; -1 if none */
    int pressure;                 /* commits wait when the pin is overdue */
    uint64_t pin_txn;             /* the durable snapshot, and its last */
    uint64_t pin_last_pg;         /* page, as the record last read said */
    uint64_t pin_bound_pg;        /* the file's bound (st_durable_pressure) */
    unsigned psize;               /* LMDB page size, once a record was read */
    uint64_t pressure_gave_up;    /* record seq after which waiting timed out */
    MDB_dbi dbi[ST_DBI_COUNT];
    MDB_dbi dbi_main;  /* LMDB's unnamed database (st_dbmap.c) */
    size_t main_names; /* its entries that are database names */
    unsigned databases;
    unsigned nstored;    /* stored databases counted (st_dbmap.h) */
    uint64_t map_stamps; /* last stamp handed to a transaction's map */
    uint16_t *map_hint;  /* the last map loaded: number -> stored */
    unsigned map_hint_n;
    unsigned map_hint_cap;
    st_txn rtxn;
    st_txn wtxn;
    MDB_txn *rtxn_parked; /* reset read txn kept for renew */
    unsigned nseen;
    struct st_seen seen[ST_SEEN_MAX];
    uint8_t *scratch; /* grow-only buffer for record rewrites */
    size_t scratch_cap;
    struct shm_cache *cache; /* NULL: no cache */
    struct shm_clock *clock; /* NULL: accesses are not recorded */
    size_t compress_threshold;
    int compress_level;
    struct ZSTD_CCtx_s *zc; /* reused contexts: no allocation per value */
    struct ZSTD_DCtx_s *zd;
    st_env_observer obs; /* all NULL: nobody observes */
    uint8_t *span_rd;    /* a span decompressed for reading */
    uint8_t *span_wr;    /* a span, or a short string, being
                          * rebuilt by a write (st_string.c) */
    int writemap;        /* opened with MDB_WRITEMAP */
    st_room room;        /* blocks kept allocated ahead of LMDB's end */
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

/* Whether a key coming into being through `k` is fresh for the observer
 * (not the replacement st_keyspace_replace prepared); from now on it is. */
static inline int st_internal_fresh(st_keyref *k)
{
    int fresh = !k->replacing;

    k->replacing = 0;
    return fresh;
}

/* Tell the observer key `name` of `db` came into being as `type`. */
static inline void st_internal_created(st_env *e, unsigned db,
                                       const uint8_t *name, size_t len,
                                       int type, uint64_t n, int fresh)
{
    if (e->obs.created && (e->obs.created_types & (1u << type)))
        e->obs.created(e->obs.ctx, db, name, len, type, n, fresh);
}

/* Map an LMDB return code to 0, a positive errno or an ST_E* code. */
int st_err_map(int rc);

/* The grow-only scratch buffer of the environment, at least `len` bytes. */
int st_env_scratch(st_env *env, size_t len, uint8_t **out);

/* Record a change of key / TTL counts for stored database `db`. */
void st_txn_count_keys(st_txn *t, unsigned db, int64_t dkeys, int64_t dexpires);

/*
 * The durable-snapshot checks (st_durable.c). st_durable_gate: wait (the
 * first time up to ST_DURABLE_GATE_MS, later not at all) until the record
 * of this boot names a snapshot its pinner holds; 0 (the gate opens for
 * good) or ST_ENOPIN. st_durable_pin_live: is the recorded pinner alive
 * and holding its pin?
 */
int st_durable_gate(st_env *env);
int st_durable_pin_live(st_env *env);

/*
 * Back-pressure before a commit (st_txn_begin, write): while data.mdb has
 * grown past the durable snapshot's last page and reached
 * st_durable_bound_pages of the snapshot's live pages (the pin keeps more
 * pages from reuse than the flushes free: the disk is slower than the
 * writers' page allocations), or within the map's last
 * 1/ST_DURABLE_MAP_PART while the pin is older than the newest commit (the
 * pages it holds are all there is to reuse), the pin is overdue: wait for
 * the syncer to move it, up to ST_DURABLE_PRESSURE_MS, and not again for
 * the same record if that timed out. Costs no system call otherwise.
 */
void st_durable_pressure(st_env *env);

/*
 * What st_keyspace.c lends the string module (st_string.c): the record
 * writer (see put_record there), the lookup without cache or inflation,
 * and the inflation of a compressed inline value into the arena.
 */
int st_keyspace_put_rec(st_txn *t, st_keyref *k, int type, unsigned flags,
                        int64_t expire_at, size_t payload_len, int same_value,
                        uint8_t **dst);
int st_keyspace_lookup_raw(st_txn *t, st_keyref *k, int64_t now, st_rec *out);
int st_keyspace_inflate(st_txn *t, st_rec *r);

/*
 * What st_string.c lends st_keyspace.c: the detaching of a chunked
 * string's spans (a no-op for any other record) and the deep copy of a
 * chunked string to the free key `dst`.
 */
int st_string_detach(st_txn *t, const st_rec *r);
int st_string_copy_rec(st_txn *t, st_keyref *dst, const st_rec *r);

#define ST_META_SCHEMA "schema"
#define ST_META_COUNTS "counts"
#define ST_META_NEXT_ID "next-id"

/* Read the map at open: how many stored databases it needs counted
 * (st_dbmap.c). */
int st_dbmap_space(st_env *env, MDB_txn *txn, unsigned *nstored);

#endif
