/*
 * srv_worker.h - a worker process: its own LMDB environment and libevent
 * loop, the listeners it accepts from, the connections it serves, its
 * group commit, its periodic duties and its graceful stop.
 *
 * Session features that need the worker's loop (pub/sub's link to the
 * broker, and later blocking commands' wake-ups) are services: a table of
 * them is handed to the worker, which starts them once its loop exists,
 * asks each after every group commit whether it has work (messages to
 * deliver, clients to resume), and stops them at exit. The worker names
 * none of them.
 */
#ifndef SRV_WORKER_H
#define SRV_WORKER_H

#include <stddef.h>
#include <stdint.h>

#include <event2/event.h>

#include "server/srv_conn.h"
#include "server/srv_group.h"
#include "server/srv_stats.h"

struct st_env;
struct srv_worker;

/* A feature that runs with the worker's loop. Any function may be NULL. */
typedef struct srv_service {
    const char *name;
    /* the loop exists: connect, arm events */
    void (*start)(struct srv_worker *w);
    /* the worker is exiting: let go (no reconnects) */
    void (*stop)(struct srv_worker *w);
    /* after each group commit: deliver what arrived, resume clients;
     * return 1 if commands ran (the group must settle again), else 0 */
    int (*settled)(struct srv_worker *w);
    /* a connection was accepted: set its starting state, or refuse it
     * (reply, close after it) and return 1; else 0 */
    int (*accepted)(struct srv_worker *w, srv_conn *c);
    /* before a looked-up command of c runs: 1 to hold it (c runs none of
     * its commands until the service wakes it with srv_group_wake), else
     * 0. One service of the table may have it (CLIENT PAUSE's). */
    int (*hold)(srv_conn *c);
    /* before a looked-up command of c runs: 1 when it may run long (a
     * script that did before), so that the work the group finished
     * before it is committed and its replies written first, as Redis
     * would have answered them before it started. One service of the
     * table may have it (scripting's). */
    int (*solo)(srv_conn *c);
} srv_service;

typedef struct srv_worker {
    int index;
    struct event_base *base;
    struct st_env *env;
    srv_stats_slot *stats;
    const srv_service *const *services; /* NULL-terminated */
    int (*hold)(srv_conn *c);           /* the services' hold, or NULL */
    int (*solo)(srv_conn *c);           /* the services' solo, or NULL */
    srv_conn *clients;                  /* doubly linked list */
    unsigned nclients;
    int nlisten;
    struct event **listen_ev;
    struct event *ev_tick;
    struct event *ev_term;
    struct event *ev_deadline;
    struct event *ev_check;
    struct event *ev_durable; /* the syncer published a durable id */
    int stopping;
    srv_group group;
    long long tick_hz; /* the hz the tick is armed with */
    int64_t last_sample_ms;
    int64_t last_sample_cmds;
} srv_worker;

/* Reads, accepts and timers run first; the group commit after them. */
#define SRV_WORKER_PRIORITIES 2
#define SRV_WORKER_PRIORITY_IO 0
#define SRV_WORKER_PRIORITY_GROUP 1

/* An event of w's loop at the I/O priority (before the group's commit). */
static inline struct event *srv_worker_io_event(srv_worker *w,
                                                evutil_socket_t fd, short what,
                                                event_callback_fn cb, void *arg)
{
    struct event *ev = event_new(w->base, fd, what, cb, arg);

    if (ev && event_priority_set(ev, SRV_WORKER_PRIORITY_IO)) {
        event_free(ev);
        return NULL;
    }
    return ev;
}

/*
 * While one long command holds the worker's thread (a script past
 * busy-reply-threshold; call it from inside, now and then): accept the
 * pending connections and answer, without running them, the commands of
 * every connection with nothing uncommitted (srv_conn_serve_busy). No
 * handler runs, no transaction is touched, the loop does not turn.
 */
void srv_worker_serve_busy(srv_worker *w, srv_busy_answer_fn *answer, void *arg,
                           const char *busy);

/*
 * The group just committed in the middle of the turn (before a command
 * that may run long): write the replies of every member but `except`,
 * as the group's turn would (held under sync always until durable).
 */
void srv_worker_write_group(srv_worker *w, srv_conn *except);

/*
 * Run worker `index` of the master's pool until told to stop, with the
 * NULL-terminated table of `services`: open LMDB, serve, close. Returns
 * the process exit status.
 */
int srv_worker_main(int index, const srv_service *const *services);

/*
 * The parts of a worker without sockets (the embedded worker of tests
 * and fuzzing): counters slot `index`, the command table, LMDB, the loop
 * and the group. 0, or -1 (w is then closed). srv_worker_close undoes it.
 */
int srv_worker_open(srv_worker *w, int index,
                    const srv_service *const *services);
void srv_worker_close(srv_worker *w);

#endif
