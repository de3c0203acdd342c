/*
 * srv_worker.h - a worker process: its own LMDB environment and libevent
 * loop, the connections it accepted, and the batch transaction that
 * groups the storage commands of one read (group commit in a worker).
 */
#ifndef SRV_WORKER_H
#define SRV_WORKER_H

#include <stddef.h>
#include <stdint.h>

#include "server/srv_conn.h"
#include "server/srv_stats.h"

struct event_base;
struct event;
struct st_env;
struct st_txn;

/* Most commands one batch transaction carries before it commits. */
#define SRV_BATCH_MAX 256

typedef struct srv_batch {
    struct st_txn *rtxn;        /* open read transaction, or NULL */
    struct st_txn *wtxn;        /* open write transaction, or NULL */
    srv_conn *conn;             /* the connection the batch belongs to */
    size_t in_mark;             /* input offset of the batch's first cmd */
    size_t out_mark;            /* output length before its first reply */
    size_t cmd_out_mark;        /* output length before the current cmd */
    int cmds;                   /* commands run in the batch */
    int writes;                 /* commands that used the write txn */
    int cmd_wrote;              /* the current command opened/used wtxn */
    int poisoned;               /* a write failed: the txn must go */
    int single;                 /* replaying: one command per txn */
    size_t replay_until;        /* input offset where replay ends */
} srv_batch;

typedef struct srv_worker {
    int index;
    struct event_base *base;
    struct st_env *env;
    srv_stats_slot *stats;
    srv_conn *clients;          /* doubly linked list */
    unsigned nclients;
    int nlisten;
    struct event **listen_ev;
    struct event *ev_tick;
    struct event *ev_term;
    struct event *ev_deadline;
    int stopping;
    srv_batch batch;
    int64_t now_ms;             /* clock of the current command */
    int64_t last_sync_ms;
    int64_t last_sample_ms;
    int64_t last_sample_cmds;
} srv_worker;

/* The worker of this process (NULL in the master). */
extern srv_worker *srv_w;

/*
 * Run worker `index` until told to stop: open LMDB, serve, close.
 * Returns the process exit status.
 */
int srv_worker_main(int index);

/* Close and free a connection now (its unsent output is dropped). */
void srv_conn_close(srv_conn *c);

/* Call fn for every connection of this worker (CLIENT LIST). */
void srv_worker_each_conn(void (*fn)(srv_conn *c, void *ctx), void *ctx);

#endif
