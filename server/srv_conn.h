/*
 * srv_conn.h - one client connection of a worker: its buffers, parser,
 * protocol and session state. A connection lives on one worker for its
 * whole life and is touched only by that worker's thread.
 */
#ifndef SRV_CONN_H
#define SRV_CONN_H

#include <stdint.h>

#include "server/srv_buf.h"
#include "server/srv_resp.h"

struct event;
struct srv_worker;
struct srv_command;
struct srv_multi;
struct srv_pubsub_client;

#define SRV_CONN_NAME_MAX 128
#define SRV_CONN_ADDR_MAX 64

/* Connection flags. */
#define SRV_CONN_CLOSE_AFTER_REPLY 0x01u    /* QUIT, protocol error */
#define SRV_CONN_CLOSE_ASAP 0x02u           /* drop without flushing */
#define SRV_CONN_UNIX 0x04u

typedef struct srv_conn {
    int fd;
    uint64_t id;
    unsigned flags;
    struct srv_worker *worker;
    struct event *ev_read;
    struct event *ev_write;
    int writing;                /* ev_write is armed */
    srv_buf in;
    srv_buf out;
    size_t out_sent;            /* bytes of `out` already written */
    srv_parser parser;
    /* group commit: input handled but not consumed until the commit */
    size_t in_done;             /* bytes of `in` already executed */
    size_t grp_out_mark;        /* output length at the last commit */
    unsigned grp_db;            /* db at the last commit (for replay) */
    int grp_resp;
    int in_group;
    int single;                 /* replaying: one transaction per command */
    size_t replay_until;        /* input offset where the replay ends */
    int64_t hold_ver;           /* sync always: output waits until this
                                 * transaction id is durable (0: none) */
    struct srv_multi *mx;       /* MULTI/WATCH state, NULL until used */
    int blocked;                /* waits for the broker (PUBLISH's count):
                                 * its next commands do not run yet */
    /* the command being executed */
    int argc;
    srv_slice *argv;
    const struct srv_command *cmd;
    /* session */
    int resp;                   /* 2 or 3 */
    unsigned db;
    int authed;
    struct srv_pubsub_client *pubsub;   /* subscriptions; NULL: none */
    char name[SRV_CONN_NAME_MAX];
    char lib_name[SRV_CONN_NAME_MAX];
    char lib_ver[SRV_CONN_NAME_MAX];
    char addr[SRV_CONN_ADDR_MAX];
    char laddr[SRV_CONN_ADDR_MAX];
    int64_t created_ms;
    int64_t last_ms;            /* last interaction, for `timeout` */
    uint64_t commands;
    const char *last_cmd;
    struct srv_conn *prev, *next;   /* the worker's client list */
} srv_conn;

#endif
