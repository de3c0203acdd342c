/*
 * st_env.h - the LMDB environment of one process and its transactions.
 *
 * Each process (master at boot, every worker, the reaper, the syncer) opens
 * its own environment after fork; LMDB forbids using one across fork. A
 * process holds at most one read and one write transaction at a time, both
 * kept in the environment handle and reused, so beginning one allocates
 * nothing. The handle is single-threaded. Commits of a server environment
 * are MDB_NOSYNC; what makes them durable, and safe across a power cut, is
 * storage/st_durable.h (the master boots the directory through it, the
 * syncer flushes through it).
 */
#ifndef ST_ENV_H
#define ST_ENV_H

#include <stddef.h>
#include <stdint.h>

/* 2: order-statistic count records in hashes, sets and zscores
 * (st_rank.h) replace version 1's one-level zset rank blocks. Pre-release:
 * a version 1 environment is refused, not migrated.
 * 3: long strings in spans (the chunks database, st_string.h).
 * 4: the streams and sgroups databases (st_stream.h). A version 2 or 3
 * environment is migrated on open (st_env.c's check_schema). */
#define ST_SCHEMA_VERSION 4
/* The oldest version st_env_open migrates to ST_SCHEMA_VERSION. */
#define ST_SCHEMA_MIGRATES_FROM 2
#define ST_DEFAULT_MAP_SIZE (64ull << 30)
#define ST_DEFAULT_DATABASES 16
#define ST_DEFAULT_MAX_READERS 1024
/* Room for a boot id (st_durable_boot_id), NUL included. */
#define ST_BOOT_ID_MAX 64

typedef struct st_env st_env;
typedef struct st_txn st_txn;
struct shm_cache;
struct shm_clock;

typedef struct st_env_opts {
    const char *dir;           /* directory holding data.mdb and lock.mdb */
    uint64_t map_size;         /* bytes; the most the data file may grow to */
    unsigned databases;        /* SELECT range: 0 .. databases-1 */
    unsigned max_readers;      /* reader slots across all processes */
    int nosync;                /* commits do not fsync; st_env_sync does */
    int writemap;              /* write through the map (faster writes);
                                * file blocks are kept allocated ahead of
                                * the data so a full disk fails a write
                                * with ST_ENOSPACE (storage/st_room.h) */
    struct shm_cache *cache;   /* shared cache in front of reads, or NULL */
    struct shm_clock *clock;   /* shared last-access clock, or NULL */
    size_t compress_threshold; /* compress strings this long; 0 = never */
    int compress_level;        /* zstd level */
    const char *boot_id;       /* this boot's id: the directory is under
                                * the durable-snapshot scheme
                                * (st_durable.h): with nosync, the first
                                * write waits for the syncer's pin, and
                                * st_env_reader_check keeps a dead pin.
                                * NULL or "": a plain environment */
} st_env_opts;

/*
 * Open (creating if absent) the environment in opts->dir, with every named
 * database of the schema, and check, migrate or stamp the schema version.
 * Returns 0, ST_ESCHEMA for a newer, unknown or too old schema, ST_EKEYSIZE
 * when this LMDB's key limit is below ST_LMDB_MAXKEY, or an errno. *out owned
 * by the caller until st_env_close().
 */
int st_env_open(const st_env_opts *opts, st_env **out);

/* Abort any open transaction, close the environment, NULL *env. */
void st_env_close(st_env **env);

/* Flush committed transactions to disk (fdatasync). Returns 0 or errno.
 * Not power-cut safe by itself under MDB_NOSYNC: see st_durable_flush. */
int st_env_sync(st_env *env);

/*
 * Write a compacted, consistent copy of the environment to `path` (a file;
 * written to path.tmp, flushed, then renamed, so `path` is always whole).
 * Runs in a read transaction of its own: writers go on meanwhile. Any
 * thread of a process that has the environment open. 0 or an error code.
 */
int st_env_backup(st_env *env, const char *path);

/*
 * Clear reader slots of dead processes; *dead gets how many. Under the
 * durable scheme nothing is cleared (0, *dead = 0) while the recorded
 * pinner of the durable snapshot is dead: its slot is that pin.
 */
int st_env_reader_check(st_env *env, int *dead);

typedef struct st_env_stat {
    uint64_t map_size;   /* configured maximum bytes */
    uint64_t used_bytes; /* pages in use up to the high-water mark */
    uint64_t file_bytes; /* size of data.mdb on disk (writemap: the bytes
                          * allocated; its size is the whole map) */
    uint64_t last_txn;   /* id of the newest committed transaction */
    unsigned readers_used;
    unsigned readers_max;
} st_env_stat;

/* Fill *out with figures about the environment; 0 or an error code. */
int st_env_stat_get(st_env *env, st_env_stat *out);

unsigned st_env_databases(const st_env *env);

/*
 * Writemap only (st_room.h): 1 when the filesystem of data.mdb cannot
 * allocate blocks ahead (no fallocate), so a full disk can fault the
 * process as LMDB alone would; else 0. Any process, any time.
 */
int st_env_room_unguarded(const st_env *env);

/* The errno (ENOSPC, EFBIG, EDQUOT ...) of the last failed growth of the
 * room, 0 after a success: what an ST_ENOSPACE write ran into. */
int st_env_room_errno(const st_env *env);

/*
 * What the environment tells its user about the writes of its write
 * transactions, for what the user builds on them (wake-ups of waiting
 * clients, keyspace events, cache invalidation of its clients). Every
 * callback runs on the thread of the transaction, inside the storage
 * call, and must not call storage; names are valid during the call only.
 * Any function may be NULL.
 */
typedef struct st_env_observer {
    void *ctx;
    /* created is called for keys of these types only: bit 1 << ST_TYPE_* */
    unsigned created_types;
    /* a key came into being (`fresh`: it did not exist) or changed type,
     * as `type` (st_codec.h), holding `n` elements (0: not known) */
    void (*created)(void *ctx, unsigned db, const uint8_t *name, size_t len,
                    int type, uint64_t n, int fresh);
    /* a key is being deleted because its TTL passed (lazy or active
     * expiry) */
    void (*expired)(void *ctx, unsigned db, const uint8_t *name, size_t len);
    /* the write transaction `txn` is about to commit; its writes are all
     * done and it still holds the write lock */
    void (*committing)(void *ctx, uint64_t txn);
    /* ... and has committed (rc 0) or failed to (rc: the storage code) */
    void (*committed)(void *ctx, uint64_t txn, int rc);
    /* the write transaction `txn` was aborted: nothing of it happened */
    void (*aborted)(void *ctx, uint64_t txn);
} st_env_observer;

/* Install `obs` (copied; NULL removes it). One observer per environment. */
void st_env_observe(st_env *env, const st_env_observer *obs);

#endif
