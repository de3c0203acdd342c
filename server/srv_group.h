/*
 * srv_group.h - group commit inside a worker, and the rewind protocol.
 *
 * Every connection whose input is handled in one turn of the worker's
 * event loop joins the group. Its commands share one read transaction and
 * one write transaction; the write transaction commits once for all of
 * them, by a low-priority event that runs after every read of the turn,
 * and only then are their replies written: a reply never leaves for a
 * write that is not committed. Input stays in the connection's buffer
 * until its commands are committed, which is what makes a replay possible:
 * if a write fails in a transaction that already holds other commands'
 * writes, or the commit fails, every member discards the replies it made
 * since its last commit, goes back to its state at that commit (its
 * features' `rewind` hooks) and runs those commands again, one
 * transaction each, so every reply matches what is committed.
 *
 * A command that changes session state a rewind cannot restore (EXEC,
 * DISCARD, WATCH, RESET, pub/sub) asks for a commit right after it
 * (srv_group_commit_after), so a rewind only ever truncates.
 *
 * The group is owned by its worker (srv_worker.group) and reached through
 * a connection's worker; it runs on the worker's thread only.
 */
#ifndef SRV_GROUP_H
#define SRV_GROUP_H

#include <stddef.h>
#include <stdint.h>

#include "server/srv_conn.h"
#include "server/srv_stats.h"

struct event;
struct event_base;
struct st_env;
struct st_txn;

/* Most commands one group transaction carries before it commits. */
#define SRV_GROUP_MAX_CMDS 1024

/* Runs every complete command in c's input (the connection layer's). */
typedef void srv_group_input_fn(srv_conn *c);

typedef struct srv_group {
    struct st_env *env;    /* the worker's environment */
    srv_stats_slot *stats; /* the worker's counters */
    struct st_txn *rtxn;   /* open read transaction, or NULL */
    struct st_txn *wtxn;   /* open write transaction, or NULL */
    srv_conn **conns;      /* members with replies waiting for commit */
    unsigned nconns;
    unsigned cap;
    int cmds;                /* commands run since the last commit */
    int writes;              /* of which used the write transaction */
    int failed;              /* the txn was lost: members must replay */
    int rewound;             /* members rewound since the settle began */
    int cmd_wrote;           /* the running command used the wtxn */
    int poisoned;            /* the running command's write failed */
    int commit_after;        /* the running command must be committed
                              * before the next one runs */
    size_t cmd_out_mark;     /* output length before the running cmd */
    int64_t hold_ver;        /* newest txn id the group's replies show */
    struct event *ev_commit; /* low priority: runs after all reads */
    srv_group_input_fn *run_input;
    /* told once when the write transaction ends (srv_group_on_wtxn_end) */
    void (*wtxn_end)(void *arg);
    void *wtxn_end_arg;
} srv_group;

/*
 * Set up g for a worker: its environment and counters, the event that
 * will run `on_commit(arg)` after the loop turn's reads (priority
 * `priority` of `base`), and the function that runs a member's input for
 * replays and resumes. 0, or -1 when out of memory.
 */
int srv_group_init(srv_group *g, struct event_base *base, int priority,
                   struct st_env *env, srv_stats_slot *stats,
                   void (*on_commit)(int, short, void *), void *arg,
                   srv_group_input_fn *run_input);

/* Free what srv_group_init made (no transaction may be open). */
void srv_group_fini(srv_group *g);

/*
 * c takes part in this turn's commit: its output mark, database and
 * protocol are remembered for a rewind, and the commit event is armed.
 * Joining twice is harmless. Out of memory marks c to be closed.
 */
void srv_group_join(srv_group *g, srv_conn *c);

/* c leaves the group (it is being closed). */
void srv_group_leave(srv_group *g, srv_conn *c);

/* Arm the commit event (something arrived that members must see). */
void srv_group_schedule(srv_group *g);

/*
 * Commit the group's transactions. On success every member's executed
 * input is consumed and its features' `committed` hooks run; on failure
 * the members are rewound for a replay. 0, or the storage code of the
 * failure.
 */
int srv_group_commit(srv_group *g);

/*
 * Commit; members rewound by a lost transaction replay (one transaction
 * per command) until a commit holds. Members whose input was not run yet
 * run it first.
 */
void srv_group_settle(srv_group *g);

/* What members other than c have waiting: commands run since the last
 * commit (their replies wait for the next), replies not written yet. */
#define SRV_GROUP_OTHERS_UNCOMMITTED 0x1
#define SRV_GROUP_OTHERS_UNWRITTEN 0x2
int srv_group_others_pending(const srv_group *g, const srv_conn *c);

/*
 * Nothing this turn has written (g->writes is 0: what the members read
 * came from committed snapshots): take every member but `except` as
 * committed now, as srv_group_commit would (input consumed, marks moved,
 * `committed` hooks), leaving the transactions open for `except`'s
 * running command. For a command that runs long and need not hold the
 * others' replies; `except`'s own input cannot move under it.
 */
void srv_group_commit_reads(srv_group *g, srv_conn *except);

/* The running command must be committed before the next one runs. */
void srv_group_commit_after(srv_group *g);

/* Before c's next command: reset the per-command marks. */
void srv_group_command_begins(srv_group *g, srv_conn *c);

/*
 * After c's command whose input ended at offset `pos`: account it, handle
 * a failed write, commit when the group is full or the command asked for
 * it. Returns 1 when c must stop running commands (the group was lost and
 * will replay), else 0.
 */
int srv_group_command_ends(srv_group *g, srv_conn *c, size_t pos);

/*
 * Output was appended to c outside its own commands (a pub/sub message,
 * the broker's answer): have it written with the group, and kept by a
 * rewind (c must have no uncommitted command, or one that commits before
 * any rewind, as PUBLISH does). With `resume`, also run c's pending input
 * (it was blocked).
 */
void srv_group_wake(srv_group *g, srv_conn *c, int resume);

/*
 * The transactions handlers use: the write transaction when one is open,
 * else the read snapshot (begun if needed); the write transaction begun
 * if needed (an older read snapshot is released first). NULL with *rc set
 * on failure.
 */
struct st_txn *srv_group_read_txn(srv_group *g, int *rc);
struct st_txn *srv_group_write_txn(srv_group *g, int *rc);

/*
 * Reply the error for storage code `rc`: WRONGTYPE, disk full, a write
 * too large, or (logged) any other storage failure. The one place for
 * these texts.
 */
void srv_group_reply_error(srv_conn *c, int rc);

/*
 * Call fn(arg) once, when the group's write transaction (open, or about
 * to begin) ends: committed, aborted, or failing to begin. For what lets
 * a write transaction begin and must know when it is over (the command
 * layer's write gate across workers).
 */
void srv_group_on_wtxn_end(srv_group *g, void (*fn)(void *arg), void *arg);

/* A write of the running command failed: the transaction is lost. */
void srv_group_poison(srv_group *g);

#endif
