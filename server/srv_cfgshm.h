/*
 * srv_cfgshm.h - the shared configuration region: the one published copy
 * of the configuration that CONFIG SET changes and every process applies
 * (srv_config_refresh in srv_config.h is its user).
 *
 * Who may touch what:
 * - The master creates it before it forks (srv_cfgshm_create), with the
 *   configuration it parsed; children inherit the mapping and check its
 *   magic, layout version and size (srv_cfgshm_attach).
 * - Writers take the writer lock, one at a time (a process-shared robust
 *   mutex, shm_lock); holding it they may read the published copy and
 *   publish a new one (srv_cfgshm_publish_locked).
 * - Readers, in any process, copy the published configuration out under
 *   the sequence counter (a seqlock: odd while a publish is under way, +2
 *   per publish) and retry a copy that overlapped a publish, so no reader
 *   ever sees a torn value. The counter is also the configuration's
 *   generation: a process compares it with the one it applied last.
 * - Each stats slot has an acknowledgement record: the master registers a
 *   child in it when it forks one that CONFIG SET must wait for and clears
 *   it when that child dies; the child stores the newest generation it has
 *   applied. A writer waits until the registered children have caught up.
 * - A writer that dies holding the lock: the next locker (a writer, or a
 *   reader that found a publish stuck half way) repairs it. A publish first
 *   stages the whole new copy, then makes the counter odd, copies the stage
 *   over the published copy and makes the counter even; so a counter left
 *   odd means a complete stage, and the repair finishes that publish.
 */
#ifndef SRV_CFGSHM_H
#define SRV_CFGSHM_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "server/srv_config.h"
#include "server/srv_stats.h"
#include "shm/shm_lock.h"

#define SRV_CFGSHM_MAGIC 0x314746435244524cull /* "LRDRCFG1" */
#define SRV_CFGSHM_VERSION 3
/* The sequence counter moves this much per publish (odd in between). */
#define SRV_CFGSHM_SEQ_STEP 2
/* A srv_config as 64-bit words: the unit readers and writers copy with
 * relaxed atomics (srv_config's size is a multiple of 8). */
#define SRV_CFGSHM_WORDS (sizeof(srv_config) / sizeof(uint64_t))

/* One acknowledgement record, a cache line (written by different
 * processes: the master and the child). */
typedef struct srv_cfgshm_ack_sh {
    _Atomic int64_t pid;  /* atomic; written by the master: the child
                           * CONFIG SET waits for, 0 for none */
    _Atomic uint64_t seq; /* atomic; written by that child (raised by
                           * the master at fork): the newest
                           * generation it has applied */
} __attribute__((aligned(SRV_CACHELINE))) srv_cfgshm_ack_sh;

/* The mapped region. */
typedef struct srv_cfgshm_sh {
    uint64_t magic;       /* immutable after init: SRV_CFGSHM_MAGIC */
    uint32_t version;     /* immutable after init */
    uint32_t nacks;       /* immutable after init: ack records */
    uint64_t size;        /* immutable after init: bytes mapped */
    uint64_t config_size; /* immutable after init: sizeof(srv_config) */
    /* atomic; written by the lock holder only: even when `cur` is stable,
     * odd during a publish, +2 per publish (the generation) */
    _Atomic uint64_t seq __attribute__((aligned(SRV_CACHELINE)));
    shm_lock_sh writer; /* the writers' lock */
    /* the published srv_config; guarded by: writer (written with seq odd,
     * word by word with relaxed atomics), read under seq the same way */
    uint64_t cur[SRV_CFGSHM_WORDS];
    uint64_t staged[SRV_CFGSHM_WORDS]; /* guarded by: writer */
    srv_cfgshm_ack_sh ack[];           /* nacks records, one per stats slot */
} srv_cfgshm_sh;

/* The process's handle on the region. */
typedef struct srv_cfgshm {
    srv_cfgshm_sh *sh;
    size_t size; /* bytes mapped */
} srv_cfgshm;

/* Bytes a region with `nacks` acknowledgement records maps. */
size_t srv_cfgshm_size(unsigned nacks);

/*
 * Map a region (shared, anonymous, so children inherit it) holding `cfg`
 * as generation 2, with `nacks` acknowledgement records, none registered.
 * The master, before fork. *out is the caller's until srv_cfgshm_destroy.
 * Returns 0, ENOMEM, mmap's errno or a pthread errno.
 */
int srv_cfgshm_create(const srv_config *cfg, unsigned nacks, srv_cfgshm **out);

/* Unmap the region and free the handle; NULLs *h. The creator, once no
 * process uses it any more. */
void srv_cfgshm_destroy(srv_cfgshm **h);

/*
 * Check a mapping inherited across fork before using it: magic, layout
 * version, mapped size and the size of srv_config this build has.
 * Returns 0, SHM_EBADMAGIC, SHM_EVERSION or SHM_ELAYOUT.
 */
int srv_cfgshm_attach(const srv_cfgshm *h);

/* The published generation (acquire load): even, and it grows by 2 per
 * publish. Any process, lock-free. */
uint64_t srv_cfgshm_seq(const srv_cfgshm *h);

/*
 * Copy the published configuration into *out and its generation into
 * *seq. Never returns a torn copy: a copy that overlapped a publish is
 * retried; a publish left half done by a dead writer is finished first
 * (by taking the writer lock). Any process. Returns 0, or the lock's code
 * (SHM_ENOTRECOVERABLE, a pthread errno) with *out unspecified.
 */
int srv_cfgshm_read(srv_cfgshm *h, srv_config *out, uint64_t *seq);

/*
 * Take the writer lock (blocking). If its previous holder died, finish
 * the publish it left (see the top comment) before returning. Returns 0
 * (locked), SHM_ENOTRECOVERABLE or a pthread errno (not locked).
 */
int srv_cfgshm_lock(srv_cfgshm *h);

/* Release the writer lock; the caller holds it. */
void srv_cfgshm_unlock(srv_cfgshm *h);

/* Copy the published configuration into *out. The caller holds the lock
 * (nobody else writes it then). */
void srv_cfgshm_current_locked(const srv_cfgshm *h, srv_config *out);

/*
 * Publish *next (stage it, then copy it over the published copy with the
 * counter odd). The caller holds the lock. Returns the new generation.
 */
uint64_t srv_cfgshm_publish_locked(srv_cfgshm *h, const srv_config *next);

/*
 * Register `pid` in record `i` as a child writers wait for (0: none) and
 * raise the record's generation to at least `seq`, the one the child
 * starts from. The master (after fork; 0 when the child died).
 */
void srv_cfgshm_expect(srv_cfgshm *h, unsigned i, pid_t pid, uint64_t seq);

/* Record that the process in record `i` has applied generation `seq`.
 * That process; out-of-range `i` is ignored. */
void srv_cfgshm_ack(srv_cfgshm *h, unsigned i, uint64_t seq);

/* Number of acknowledgement records. */
unsigned srv_cfgshm_nacks(const srv_cfgshm *h);

/*
 * The pid registered in record `i` if it has not yet acknowledged
 * generation `seq`; 0 if none is registered or it has. Any process.
 */
pid_t srv_cfgshm_lagging(const srv_cfgshm *h, unsigned i, uint64_t seq);

#endif
