/*
 * srv_conn.h - one client connection of a worker: its buffers, parser,
 * protocol and session state, and the connection layer's functions:
 * creating it for an accepted socket, reading and running its input
 * (parse, look up, dispatch, group commit), writing its replies, closing
 * it. A connection lives on one worker for its whole life and is touched
 * only by that worker's thread. Session features (MULTI, pub/sub, ...)
 * keep their state in its hook set (srv_hooks.h), not here.
 */
#ifndef SRV_CONN_H
#define SRV_CONN_H

#include <stdint.h>
#include <sys/types.h>

#include "server/srv_buf.h"
#include "server/srv_hooks.h"
#include "server/srv_resp.h"

struct event;
struct srv_worker;
struct srv_command;

#define SRV_CONN_NAME_MAX 128
#define SRV_CONN_ADDR_MAX 64

/* Connection flags. */
#define SRV_CONN_CLOSE_AFTER_REPLY 0x01u /* QUIT, protocol error */
#define SRV_CONN_CLOSE_ASAP 0x02u        /* drop without flushing */
#define SRV_CONN_UNIX 0x04u
#define SRV_CONN_SUBSCRIBED 0x08u /* has pub/sub subscriptions */
#define SRV_CONN_IN_EXEC 0x10u    /* EXEC is running its queue */
#define SRV_CONN_NO_EVICT 0x20u   /* CLIENT NO-EVICT on */
#define SRV_CONN_NO_TOUCH 0x40u   /* CLIENT NO-TOUCH on */
/* A script is running its commands: one clock, nothing blocks. */
#define SRV_CONN_IN_SCRIPT 0x80u
/* Inside EXEC or a script: the command runs in the open transaction and
 * its reply cannot wait (blocking, cross-worker queries answer at once). */
#define SRV_CONN_IN_TXN (SRV_CONN_IN_EXEC | SRV_CONN_IN_SCRIPT)
/* issue 11 (0x1000 and 0x2000 are issue 16a's) */
#define SRV_CONN_REPLY_OFF 0x100u       /* CLIENT REPLY OFF */
#define SRV_CONN_REPLY_SKIP_NEXT 0x200u /* CLIENT REPLY SKIP: the next */
#define SRV_CONN_REPLY_SKIP 0x400u      /* this command's reply is dropped */
#define SRV_CONN_TRACKING 0x800u        /* CLIENT TRACKING or CACHING state */

/* What a transport waits for (srv_conn.tr_want). */
#define SRV_TR_READ_WANTS_WRITE 0x1u /* its read needs the socket writable */
#define SRV_TR_WRITE_WANTS_READ 0x2u /* its write needs it readable */

struct srv_conn;

/*
 * A transport other than the plain socket (TLS, srv_tls.h): the
 * connection layer reads and writes through it when a connection has one
 * (and straight on the socket when not: the plain path pays one test).
 */
typedef struct srv_transport {
    const char *name;
    /* c was just accepted: set up c->tr_state. 0, or -1 (c is closed by
     * the caller) */
    int (*open)(struct srv_conn *c);
    /* as read(2) and write(2): -1 with errno EAGAIN when it must wait
     * (having set c->tr_want and armed the write event if it waits for
     * the other direction), 0 from read at the end, -1 with another
     * errno on failure */
    ssize_t (*read)(struct srv_conn *c, void *buf, size_t n);
    ssize_t (*write)(struct srv_conn *c, const void *buf, size_t n);
    /* bytes already read off the socket and not yet returned: read is
     * called again without waiting for the socket */
    size_t (*pending)(const struct srv_conn *c);
    /* c is being closed: release c->tr_state */
    void (*close)(struct srv_conn *c);
} srv_transport;
/* Bounded output (issue 16; high bits, clear of the flags above).
 * OVER_LIMIT: its replies passed out_limit, it is closed (with
 * CLOSE_ASAP). PAUSED: its unsent replies passed the backlog, its input
 * is neither read nor run until they are written down. */
#define SRV_CONN_OVER_LIMIT 0x1000u
#define SRV_CONN_PAUSED 0x2000u

typedef struct srv_conn {
    int fd;
    uint64_t id;
    unsigned flags;
    struct srv_worker *worker;
    struct event *ev_read;
    struct event *ev_write;
    int writing;             /* ev_write is armed */
    const srv_transport *tr; /* NULL: the plain socket */
    void *tr_state;          /* the transport's */
    unsigned tr_want;        /* SRV_TR_*: what the transport waits for */
    srv_buf in;
    srv_buf out;
    size_t out_sent;      /* bytes of `out` already written */
    size_t out_limit;     /* most bytes `out` may hold (client-reply-limit;
                           * 0: none); the reply builder enforces it */
    int64_t obuf_soft_ms; /* when output first stayed over the soft
                           * limit (client-output-buffer-limit), 0 */
    srv_parser parser;
    /* group commit: input handled but not consumed until the commit */
    size_t in_done;      /* bytes of `in` already executed */
    size_t grp_out_mark; /* output length at the last commit */
    unsigned grp_db;     /* db at the last commit (for replay) */
    int grp_resp;
    int in_group;
    int single;          /* replaying: one transaction per command */
    size_t replay_until; /* offset in `in` where the replay ends (moves
                          * as committed input is dropped) */
    uint64_t in_dropped; /* input consumed before `in` begins, in all */
    /* MONITOR lines of its commands since its last commit, and how many
     * of a replay's lines were shown before (srv_monitor.c) */
    unsigned mon_fed, mon_skip;
    int64_t hold_ver; /* sync always: output waits until this
                       * transaction id is durable (0: none) */
    int multi_queued; /* MULTI: commands queued; -1 outside */
    int blocked;      /* waits for the broker (PUBLISH's count):
                       * its next commands do not run yet */
    /* the command being executed */
    int argc;
    srv_slice *argv;
    const struct srv_command *cmd;
    int64_t now_ms; /* its clock (one for all of an EXEC) */
    /* session */
    int resp; /* 2 or 3 */
    unsigned db;
    int authed;
    srv_hook_set hooks; /* session features' state and hooks */
    char name[SRV_CONN_NAME_MAX];
    char lib_name[SRV_CONN_NAME_MAX];
    char lib_ver[SRV_CONN_NAME_MAX];
    char addr[SRV_CONN_ADDR_MAX];
    char laddr[SRV_CONN_ADDR_MAX];
    int64_t created_ms;
    int64_t last_ms; /* last interaction, for `timeout` */
    uint64_t commands;
    const char *last_cmd;
    struct srv_conn *prev, *next; /* the worker's client list */
} srv_conn;

/*
 * A connection for the accepted socket `fd` on worker `w` (Unix socket
 * when `is_unix`): reading starts at once. NULL when out of memory (fd is
 * left to the caller).
 */
srv_conn *srv_conn_create(struct srv_worker *w, int fd, int is_unix);

/*
 * Read and write c through `tr` from now on (right after srv_conn_create,
 * before anything was read). 0, or -1 when the transport could not set up
 * (c is left to the caller to close).
 */
int srv_conn_set_transport(srv_conn *c, const srv_transport *tr);

/* Arm c's write event (a transport whose read waits for it). */
void srv_conn_want_write(srv_conn *c);

/* Close and free c now (its unsent output is dropped; its features'
 * close hooks run). */
void srv_conn_close(srv_conn *c);

/*
 * Write what c has pending (unless sync always holds it for a commit not
 * yet durable; while c is in the group, only what is committed), arming
 * the write event for the rest. A connection paused by its backlog
 * (client-reply-backlog) resumes reading and running its input once half
 * of it is written. 0, or -1 when c was closed (written out with
 * CLOSE_AFTER_REPLY, or the socket failed).
 */
int srv_conn_flush(srv_conn *c);

/* Parse and run every complete command in c's input (the group's
 * run_input), stopping while c's unsent replies exceed
 * client-reply-backlog: then c is paused (SRV_CONN_PAUSED) and its socket
 * is not read, so a client that sends without reading costs a bounded
 * amount of memory. */
void srv_conn_run_input(srv_conn *c);

/*
 * What a busy worker answers for a command it cannot run now: reply to c
 * and return 1, or return 0 for the caller's default reply. c->cmd,
 * c->argc and c->argv hold the command (c->cmd NULL: unknown).
 */
typedef int srv_busy_answer_fn(srv_conn *c, void *arg);

/*
 * The worker's thread is held by one long command (a script past
 * busy-reply-threshold) and c has nothing uncommitted: read what c's
 * socket holds and answer each complete command without running it, by
 * answer(c, arg) or else the error `busy`; write the replies now. c may
 * be closed on return (a write failed).
 */
void srv_conn_serve_busy(srv_conn *c, srv_busy_answer_fn *answer, void *arg,
                         const char *busy);

/* The read event's work for c (also used to drain c at shutdown). */
void srv_conn_on_read(int fd, short what, void *c);

#endif
