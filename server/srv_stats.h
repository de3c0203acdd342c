/*
 * srv_stats.h - counters every process can read for INFO: one shared
 * anonymous mapping created by the master before fork. Each child writes
 * only its own slot (relaxed atomics; srv_stats_slot_of finds it by role);
 * readers sum the slots. A child that dies leaves its cumulative counters;
 * its respawn resets the gauges.
 */
#ifndef SRV_STATS_H
#define SRV_STATS_H

#include <stdatomic.h>
#include <stdint.h>

#include "server/srv_role.h"

#define SRV_STATS_MAGIC 0x6c61726465727374ull
#define SRV_STATS_VERSION 5
#define SRV_CACHELINE 64

typedef struct srv_stats_slot {
    _Atomic int64_t pid; /* 0: slot unused */
    _Atomic int64_t started_ms;
    _Atomic int64_t connected; /* gauge */
    _Atomic int64_t total_connections;
    _Atomic int64_t rejected_connections;
    _Atomic int64_t total_commands;
    _Atomic int64_t net_input_bytes;
    _Atomic int64_t net_output_bytes;
    _Atomic int64_t expired_keys;
    _Atomic int64_t keyspace_hits;
    _Atomic int64_t keyspace_misses;
    _Atomic int64_t commits;
    _Atomic int64_t respawns;
    _Atomic int64_t ops_per_sec;      /* gauge, sampled by the worker */
    _Atomic int64_t ticks;            /* reaper */
    _Atomic int64_t busy_us;          /* reaper: time spent in ticks */
    _Atomic int64_t syncs;            /* syncer */
    _Atomic int64_t blocked_clients;  /* gauge: in blocking commands */
    _Atomic int64_t tracking_clients; /* gauge: CLIENT TRACKING on */
    _Atomic int64_t key_waiters;      /* gauge: its part of the header's
                                       * key_waiters */
} __attribute__((aligned(SRV_CACHELINE))) srv_stats_slot;

typedef struct srv_stats {
    uint64_t magic;                   /* immutable after init */
    uint32_t version;                 /* immutable after init */
    uint32_t nslots;                  /* immutable after init */
    uint32_t nworkers;                /* immutable after init: worker
                                       * slots (workers-max) */
    _Atomic uint64_t next_client_id;  /* atomic */
    _Atomic int64_t clients;          /* atomic: across workers */
    _Atomic int64_t last_sync_ms;     /* atomic */
    _Atomic int64_t lazyfree_pending; /* atomic: detached collections */
    _Atomic int64_t reaper_expiring;  /* atomic: 1 while batches run */
    _Atomic int64_t durable_txn;      /* atomic: flushed to disk */
    _Atomic int64_t committed_txn;    /* atomic: newest seen by syncer */
    _Atomic int64_t last_sync_us;     /* atomic: duration of last flush */
    _Atomic int64_t last_save_ms;     /* atomic: last good SAVE/BGSAVE */
    _Atomic int64_t save_in_progress; /* atomic: pid doing a BGSAVE, 0 */
    _Atomic int64_t last_save_status; /* atomic: 0 ok, else error code */
    _Atomic int64_t last_save_us;     /* atomic: its duration */
    _Atomic int64_t last_save_txn;    /* atomic: newest txn in that save */
    _Atomic int64_t saves;            /* atomic: good SAVE/BGSAVEs */
    _Atomic int64_t workers;          /* atomic; written by the master:
                                       * the pool's size asked for */
    _Atomic int64_t pause_until_ms;   /* atomic: CLIENT PAUSE's end, 0 */
    _Atomic int64_t pause_mode;       /* atomic: srv_pause.h's modes */
    _Atomic int64_t monitors;         /* atomic: MONITOR clients, all workers */
    _Atomic int64_t trackers;         /* atomic: tracking clients, all
                                       * workers (the fast test) */
    _Atomic uint64_t block_order;     /* atomic: the next blocked client's
                                       * place (FIFO across workers) */
    _Atomic uint64_t monitor_seq;     /* atomic: the next MONITOR line's
                                       * number (the order commands ran
                                       * in across workers: srv_morder.h) */
    _Atomic int64_t key_waiters;      /* atomic (seq_cst): clients blocked
                                       * on keys, every worker; while 0 a
                                       * commit tells nobody of the keys it
                                       * created (srv_keys.c); the master
                                       * takes a dead worker's out */
    srv_stats_slot slot[];
} srv_stats;

/*
 * Map the region for a tree of at most `nworkers` workers: a slot per
 * worker and one per background child (srv_role_nslots). The master, before
 * fork (an embedded worker: for itself). NULL with errno set if mmap fails.
 */
srv_stats *srv_stats_create(unsigned nworkers);

/* Unmap the region and NULL *s (its creator, once no child uses it). */
void srv_stats_destroy(srv_stats **s);

/*
 * The slot of the process of `role` (`index`: the worker number, ignored
 * for the other roles); NULL for the master, which has none. Any process.
 */
srv_stats_slot *srv_stats_slot_of(srv_stats *s, enum srv_role role, int index);

/* Sum of one field over all slots, e.g. SRV_STATS_SUM(s, total_commands). */
#define SRV_STATS_SUM(s, field)                                 \
    ({                                                          \
        int64_t sum_ = 0;                                       \
        for (unsigned i_ = 0; i_ < (s)->nslots; i_++)           \
            sum_ += atomic_load_explicit(&(s)->slot[i_].field,  \
                                         memory_order_relaxed); \
        sum_;                                                   \
    })

#define SRV_STAT_ADD(slot, field, n) \
    atomic_fetch_add_explicit(&(slot)->field, (n), memory_order_relaxed)

#endif
