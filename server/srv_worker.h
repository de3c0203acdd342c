/*
 * srv_worker.h - a worker process: its own LMDB environment and libevent
 * loop, the connections it accepted, and the group transaction shared by
 * the commands of one loop turn (group commit in a worker).
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

/* Most commands one group transaction carries before it commits. */
#define SRV_GROUP_MAX_CMDS 1024

/*
 * The group: every connection whose input was handled in this turn of the
 * event loop shares one read and one write transaction. The write
 * transaction commits once for all of them (group commit inside a worker)
 * and only then are their replies written, so a reply never leaves for a
 * write that is not committed.
 */
typedef struct srv_group {
    struct st_txn *rtxn;        /* open read transaction, or NULL */
    struct st_txn *wtxn;        /* open write transaction, or NULL */
    srv_conn **conns;           /* members with replies waiting for commit */
    unsigned nconns;
    unsigned cap;
    int cmds;                   /* commands run since the last commit */
    int writes;                 /* of which used the write transaction */
    int failed;                 /* the txn was lost: members must replay */
    int cmd_wrote;              /* the running command used the wtxn */
    int poisoned;               /* the running command's write failed */
    int commit_after;           /* the running command must be committed
                                 * before the next one runs */
    size_t cmd_out_mark;        /* output length before the running cmd */
    int64_t hold_ver;           /* newest txn id the group's replies show */
    struct event *ev_commit;    /* low priority: runs after all reads */
} srv_group;

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
    struct event *ev_durable;   /* the syncer published a durable id */
    int stopping;
    srv_group group;
    int64_t now_ms;             /* clock of the current command */
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

/*
 * The running command changed session state a rewind could not restore
 * (EXEC, DISCARD, UNWATCH, WATCH, RESET): the worker commits the group
 * right after it, before the connection's next command.
 */
void srv_worker_commit_after(void);

/* Call fn for every connection of this worker (CLIENT LIST). */
void srv_worker_each_conn(void (*fn)(srv_conn *c, void *ctx), void *ctx);

/*
 * Output was appended to c outside its own commands (a pub/sub message,
 * the broker's answer): have it written with the group, and kept by a
 * rewind of the group (c must have no uncommitted command, or one that
 * commits before any rewind, as PUBLISH does). With `resume`, also run
 * c's pending input (it was blocked).
 */
void srv_worker_wake(srv_conn *c, int resume);

/*
 * An in-process worker for tests and fuzzing: defaults for the config
 * (with `dir` as data directory), the shared regions, the command table
 * and LMDB, but no sockets and no loop. 0 or -1.
 */
int srv_worker_embed_open(const char *dir);

/*
 * A connection of the embedded worker whose replies are appended to its
 * `out` buffer and never written anywhere. Free with srv_conn_close().
 */
srv_conn *srv_worker_embed_conn(void);

/*
 * Feed bytes to an embedded connection as if read from its socket: run
 * every complete command and the group commit. The replies accumulate in
 * c->out (the caller may read and reset it). Returns 0, or -1 when the
 * connection would have been closed (it is then closed already).
 */
int srv_worker_embed_feed(srv_conn *c, const void *data, size_t len);

void srv_worker_embed_close(void);

#endif
