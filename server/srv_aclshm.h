/*
 * srv_aclshm.h - the shared ACL region: the published text of the users
 * (srv_aclset_write's form with identities) that every worker applies
 * before its next command, and the ACL LOG every worker adds to.
 *
 * Who may touch what:
 * - The master creates it before it forks (srv_aclshm_create) with the
 *   users it loaded; children inherit the mapping and check its magic,
 *   layout version and size (srv_aclshm_attach).
 * - The rules: a writer takes the rules lock (a robust process-shared
 *   mutex), reads the published text, writes the new one into the other
 *   of two buffers, makes that one current and raises the generation
 *   (srv_aclshm_publish_locked). A reader takes the same lock to copy the
 *   current text out. Any process may load the generation without a lock
 *   (one atomic load: the workers' per-command check). A writer that dies
 *   holding the lock leaves the current text whole (it only ever wrote the
 *   other buffer), so the next locker has nothing to repair.
 * - The log: entries live in fixed slots under the log lock, each with
 *   the stamp of its last update (newest first when listed); a holder that
 *   dies leaves at worst one entry half written, which the repair clears.
 */
#ifndef SRV_ACLSHM_H
#define SRV_ACLSHM_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "server/srv_stats.h"
#include "shm/shm_lock.h"

#define SRV_ACLSHM_MAGIC 0x314c43415244524cull /* "LRDRACL1" */
#define SRV_ACLSHM_VERSION 1
/* Bytes of the users' text each of the two buffers holds: a limit on the
 * rules as a whole (Redis has none; ACL SETUSER past it fails). */
#define SRV_ACLSHM_TEXT_MAX (8u << 20)
/* Log slots: acllog-max-len above this keeps this many. */
#define SRV_ACLSHM_LOG_SLOTS 1024
/* Bytes kept of an entry's object, user name and client info (longer ones
 * are cut there). */
#define SRV_ACLSHM_OBJECT_MAX 1024
#define SRV_ACLSHM_USER_MAX 256
#define SRV_ACLSHM_CINFO_MAX 1024
/* Entries a new one is compared with to be merged (Redis's 10), and the
 * time two may be apart to merge (Redis's 60 s). */
#define SRV_ACLSHM_LOG_SCAN 10
#define SRV_ACLSHM_LOG_GROUP_MS 60000

/* One ACL LOG entry (the mapped slot, and the copy readers get). */
typedef struct srv_aclshm_entry {
    uint64_t stamp;   /* 0: a free slot; else its last update's order */
    uint64_t count;   /* times it happened */
    int32_t reason;   /* SRV_ACL_DENIED_* */
    int32_t context;  /* SRV_ACLSHM_CTX_* */
    int64_t ctime_ms; /* last update, ms since the epoch */
    uint32_t object_len, user_len, cinfo_len;
    char object[SRV_ACLSHM_OBJECT_MAX];
    char user[SRV_ACLSHM_USER_MAX];
    char cinfo[SRV_ACLSHM_CINFO_MAX];
} srv_aclshm_entry;

/* Where a denial happened (ACL LOG's context). */
enum {
    SRV_ACLSHM_CTX_TOPLEVEL,
    SRV_ACLSHM_CTX_MULTI,
    SRV_ACLSHM_CTX_LUA,
    SRV_ACLSHM_CTX_MODULE,
};

typedef struct srv_aclshm_sh {
    uint64_t magic;    /* immutable after init: SRV_ACLSHM_MAGIC */
    uint32_t version;  /* immutable after init */
    uint32_t nslots;   /* immutable after init: log slots */
    uint64_t size;     /* immutable after init: bytes mapped */
    uint64_t text_max; /* immutable after init: bytes per text buffer */
    /* atomic; written by the rules lock holder: +1 per publish */
    _Atomic uint64_t seq __attribute__((aligned(SRV_CACHELINE)));
    shm_lock_sh rules;    /* the rules' lock */
    _Atomic uint32_t cur; /* guarded by: rules (readers may load it): the
                           * current buffer, 0 or 1 */
    uint64_t len[2];      /* guarded by: rules */
    shm_lock_sh log;      /* the log's lock */
    uint64_t log_stamp;   /* guarded by: log: the last stamp given */
    srv_aclshm_entry slot[SRV_ACLSHM_LOG_SLOTS]; /* guarded by: log */
    char text[]; /* guarded by: rules: two buffers of text_max */
} srv_aclshm_sh;

typedef struct srv_aclshm {
    srv_aclshm_sh *sh;
    size_t size;
} srv_aclshm;

/*
 * Map a region (shared, anonymous: children inherit it) publishing
 * text[0..len) as generation 1. The master, before fork (or a process
 * alone: the embedded worker). *out is the caller's until
 * srv_aclshm_destroy. 0, E2BIG (text too long), ENOMEM, mmap's errno or
 * a pthread errno.
 */
int srv_aclshm_create(const char *text, size_t len, srv_aclshm **out);

/* Unmap it and free the handle; NULLs *h. */
void srv_aclshm_destroy(srv_aclshm **h);

/* Check an inherited mapping: magic, version, sizes. 0, SHM_EBADMAGIC,
 * SHM_EVERSION or SHM_ELAYOUT. */
int srv_aclshm_attach(const srv_aclshm *h);

/* The published generation (acquire): one atomic load. Any process. */
static inline uint64_t srv_aclshm_seq(const srv_aclshm *h)
{
    return atomic_load_explicit(&h->sh->seq, memory_order_acquire);
}

/* Take / release the rules lock. 0 (locked), SHM_ENOTRECOVERABLE or a
 * pthread errno. */
int srv_aclshm_lock(srv_aclshm *h);
void srv_aclshm_unlock(srv_aclshm *h);

/* The current text, valid while the caller holds the lock, and its
 * generation. */
const char *srv_aclshm_text_locked(const srv_aclshm *h, size_t *len,
                                   uint64_t *seq);

/* Publish text[0..len) (the lock held). Returns the new generation, or 0
 * with nothing changed when it is longer than the region's buffers. */
uint64_t srv_aclshm_publish_locked(srv_aclshm *h, const char *text, size_t len);

/*
 * Add an entry to the log (merged with one of the last
 * SRV_ACLSHM_LOG_SCAN of the same reason, context, object and user less
 * than SRV_ACLSHM_LOG_GROUP_MS apart, which then counts it and takes its
 * time and client info), keeping at most `max_len` entries. Any process.
 * 0 or the lock's codes.
 */
int srv_aclshm_log_add(srv_aclshm *h, int reason, int context,
                       const char *object, size_t olen, const char *user,
                       size_t ulen, const char *cinfo, size_t clen,
                       int64_t now_ms, long long max_len);

/* Copy up to `max` entries, newest first, into out; returns how many (or
 * a negative lock code). */
int srv_aclshm_log_read(srv_aclshm *h, srv_aclshm_entry *out, int max);

/* Empty the log. 0 or the lock's codes. */
int srv_aclshm_log_reset(srv_aclshm *h);

#endif
