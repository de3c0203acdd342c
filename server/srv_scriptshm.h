/*
 * srv_scriptshm.h - the scripting region: one record per worker saying
 * whether a script runs there (since when, EVAL or function, holding the
 * write transaction or not) and whether another worker asked to kill it,
 * plus the script cache's flush generation and the write gate. It is what
 * lets SCRIPT KILL / FUNCTION KILL and FUNCTION STATS on one worker see a
 * script on another, and writers on other workers answer BUSY instead of
 * waiting for LMDB's write lock past busy-reply-threshold: the write gate
 * is a robust mutex a worker holds while its group has the write
 * transaction open (taken before LMDB's own lock), so a waiting writer
 * wakes up now and then, looks at the script holding it, and gives up
 * with BUSY.
 *
 * Who may touch what:
 * - The master creates it before it forks (srv_scriptshm_create); the
 *   workers inherit the mapping and check magic, layout version and size
 *   on attach (srv_scriptshm_check).
 * - A worker's record is written by that worker only (begin, end of a
 *   run) except its `kill` word, which any worker may store a run id
 *   into; the owner reads it from the running script's count hook.
 * - Every field is atomic; `name` is written before `run` is published
 *   (release) and read after it (acquire), and re-checked after the copy.
 * - The gate: taken by a worker before its group's write transaction
 *   begins and released when it ends (srv_group_on_wtxn_end); a dead
 *   holder leaves EOWNERDEAD, repaired by the next locker (nothing to
 *   repair: LMDB aborted the dead writer's transaction).
 * - A worker that dies mid-script leaves its record claiming a run: the
 *   respawned worker of the same slot clears it when it starts
 *   (srv_scriptshm_reset_slot), and a record whose pid is dead counts as
 *   idle meanwhile.
 */
#ifndef SRV_SCRIPTSHM_H
#define SRV_SCRIPTSHM_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "server/srv_stats.h"
#include "shm/shm_lock.h"

#define SRV_SCRIPTSHM_MAGIC 0x31504353524452 /* "RDRSCP1" */
#define SRV_SCRIPTSHM_VERSION 1
#define SRV_SCRIPTSHM_NAME_MAX 64

/* Record flags. */
#define SRV_SCRIPTSHM_FUNCTION 0x1u /* a function (FCALL), else EVAL */
#define SRV_SCRIPTSHM_WRITE 0x2u    /* holds the write transaction */
#define SRV_SCRIPTSHM_WROTE 0x4u    /* a write command ran */

typedef struct srv_scriptshm_slot_sh {
    _Atomic uint64_t run;       /* atomic; 0 idle, else the run's id */
    _Atomic int64_t started_ms; /* atomic; monotonic ms of its start */
    _Atomic uint32_t flags;     /* atomic; SRV_SCRIPTSHM_* */
    _Atomic int32_t pid;        /* atomic; the worker's */
    _Atomic uint64_t kill;      /* atomic; any worker: the run to kill */
    _Atomic uint64_t name[SRV_SCRIPTSHM_NAME_MAX / 8]; /* atomic words */
    uint64_t seq; /* the owner's only: its last run id (no other worker
                   * writes a shared counter per run) */
} __attribute__((aligned(SRV_CACHELINE))) srv_scriptshm_slot_sh;

typedef struct srv_scriptshm_sh {
    uint64_t magic;               /* immutable after init */
    uint32_t version;             /* immutable after init */
    uint32_t nslots;              /* immutable after init */
    uint64_t size;                /* immutable after init */
    _Atomic uint64_t cache_gen;   /* atomic; +1 per SCRIPT FLUSH */
    shm_lock_sh gate;             /* the write gate (see above) */
    srv_scriptshm_slot_sh slot[]; /* one per worker */
} srv_scriptshm_sh;

/* A snapshot of one record. */
typedef struct srv_scriptshm_run {
    uint64_t run;
    int64_t started_ms;
    unsigned flags;
    int slot;
    char name[SRV_SCRIPTSHM_NAME_MAX + 1];
} srv_scriptshm_run;

/* Map the region for `nslots` workers (master, before forking). NULL
 * with errno on failure. */
srv_scriptshm_sh *srv_scriptshm_create(unsigned nslots);

/* 0 if sh looks like a region of this layout, else -1. */
int srv_scriptshm_check(const srv_scriptshm_sh *sh);

/* The slot's worker (re)starts: clear what a dead predecessor left. */
void srv_scriptshm_reset_slot(srv_scriptshm_sh *sh, int slot);

/* A run begins in `slot`: its id (never 0; unique within the slot). */
uint64_t srv_scriptshm_begin(srv_scriptshm_sh *sh, int slot, unsigned flags,
                             const char *name, int64_t now_ms);

/* Add flags (SRV_SCRIPTSHM_WROTE) to the running record. */
void srv_scriptshm_mark(srv_scriptshm_sh *sh, int slot, unsigned flags);

/* The run in `slot` ends. */
void srv_scriptshm_end(srv_scriptshm_sh *sh, int slot);

/* 1 if another worker asked to kill run `run` of `slot`. */
int srv_scriptshm_killed(const srv_scriptshm_sh *sh, int slot, uint64_t run);

/*
 * The running script of another worker than `self` (-1: any), the
 * oldest if several: 1 and *out, or 0 when none runs.
 */
int srv_scriptshm_find(const srv_scriptshm_sh *sh, int self,
                       srv_scriptshm_run *out);

/*
 * Take the write gate, waiting at most `timeout_ms`: 0 (held), ETIMEDOUT,
 * or a lock error. Release it with srv_scriptshm_gate_release.
 */
int srv_scriptshm_gate_acquire(srv_scriptshm_sh *sh, int64_t timeout_ms);
void srv_scriptshm_gate_release(srv_scriptshm_sh *sh);

/* Ask the worker of out->slot to kill run out->run: 1 if still running. */
int srv_scriptshm_kill(srv_scriptshm_sh *sh, const srv_scriptshm_run *r);

/* Ask every running script to stop (SHUTDOWN). */
void srv_scriptshm_kill_all(srv_scriptshm_sh *sh);

#endif
