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
#define SRV_CONN_REPLY_OFF 0x80u        /* CLIENT REPLY OFF */
#define SRV_CONN_REPLY_SKIP_NEXT 0x100u /* CLIENT REPLY SKIP: the next */
#define SRV_CONN_REPLY_SKIP 0x200u      /* this command's reply is dropped */
#define SRV_CONN_TRACKING 0x400u /* CLIENT TRACKING or CACHING state */

typedef struct srv_conn {
    int fd;
    uint64_t id;
    unsigned flags;
    struct srv_worker *worker;
    struct event *ev_read;
    struct event *ev_write;
    int writing; /* ev_write is armed */
    srv_buf in;
    srv_buf out;
    size_t out_sent; /* bytes of `out` already written */
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
    size_t replay_until; /* input offset where the replay ends */
    int64_t hold_ver;    /* sync always: output waits until this
                          * transaction id is durable (0: none) */
    int blocked;         /* waits for the broker (PUBLISH's count):
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

/* Close and free c now (its unsent output is dropped; its features'
 * close hooks run). */
void srv_conn_close(srv_conn *c);

/*
 * Write what c has pending (unless sync always holds it for a commit not
 * yet durable), arming the write event for the rest. 0, or -1 when c was
 * closed (written out with CLOSE_AFTER_REPLY, or the socket failed).
 */
int srv_conn_flush(srv_conn *c);

/* Parse and run every complete command in c's input (the group's
 * run_input). */
void srv_conn_run_input(srv_conn *c);

/* The read event's work for c (also used to drain c at shutdown). */
void srv_conn_on_read(int fd, short what, void *c);

#endif
