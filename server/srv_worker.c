/*
 * srv_worker.c - the worker process: listeners and accepting, the group's
 * turn after each loop turn's reads (commit, services, durability hold,
 * writing the replies, lazy expiry), periodic duties, graceful stop.
 * Connections and their request path are srv_conn.c; group commit is
 * srv_group.c.
 */
#include "server/srv_worker.h"
#include "server/cmd/srv_cmd.h"
#include "server/srv_heritage.h"
#include "server/srv_log.h"
#include "server/srv_role.h"
#include "server/srv_syncer.h"
#include "server/srv_util.h"
#include "storage/st_env.h"
#include "storage/st_err.h"
#include "storage/st_keyspace.h"

#include <errno.h>
#include <event2/event.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#define ACCEPTS_PER_EVENT 16
#define MS_PER_S 1000
#define US_PER_MS 1000
#define CHECK_FINISH_MS 100

/* ---- connections ---- */

/* A listener's accept event; `arg` is its srv_listener. */
typedef struct srv_listener {
    srv_worker *w;
    int is_unix;
    const srv_transport *tr; /* NULL: plain */
} srv_listener;

static void on_accept(evutil_socket_t lfd, short what, void *arg)
{
    srv_listener *l = arg;
    srv_worker *w = l->w;

    for (int i = 0; i < ACCEPTS_PER_EVENT; i++) {
        int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
                srv_log(SRV_LOG_WARNING, errno, "accept4() failed");
            return;
        }
        int64_t n = atomic_fetch_add(&srv_her.stats->clients, 1) + 1;
        if (n > srv_her.cfg->maxclients) {
            static const char msg[] = "-ERR max number of clients reached\r\n";
            atomic_fetch_sub(&srv_her.stats->clients, 1);
            SRV_STAT_ADD(w->stats, rejected_connections, 1);
            if (write(fd, msg, sizeof msg - 1) < 0) {
                /* the client is gone already */
            }
            close(fd);
            continue;
        }
        srv_conn *c = srv_conn_create(w, fd, l->is_unix);
        if (c && l->tr && srv_conn_set_transport(c, l->tr)) {
            srv_conn_close(c); /* closes fd, counts the client off */
            srv_log(SRV_LOG_WARNING, ENOMEM, "connection setup failed");
            continue;
        }
        if (!c) {
            srv_log(SRV_LOG_WARNING, ENOMEM, "connection setup failed");
            atomic_fetch_sub(&srv_her.stats->clients, 1);
            close(fd);
            continue;
        }
        for (const srv_service *const *sv = w->services; sv && *sv; sv++)
            if ((*sv)->accepted && (*sv)->accepted(w, c))
                break; /* refused: c may be gone */
    }
}

void srv_worker_serve_busy(srv_worker *w, srv_busy_answer_fn *answer, void *arg,
                           const char *busy)
{
    for (int i = 0; i < w->nlisten; i++)
        on_accept(event_get_fd(w->listen_ev[i]), EV_READ,
                  event_get_callback_arg(w->listen_ev[i]));
    for (srv_conn *c = w->clients, *next; c; c = next) {
        next = c->next;
        srv_conn_serve_busy(c, answer, arg, busy);
    }
}

/* ---- the group's turn ---- */

/* Replies of a committed group wait until what they show is on disk
 * (sync always): each member holds the group's newest version. */
static void hold_for_durability(srv_group *g)
{
    if (srv_her.cfg->sync == SRV_SYNC_ALWAYS &&
        g->hold_ver > atomic_load(&srv_her.stats->durable_txn)) {
        for (unsigned i = 0; i < g->nconns; i++)
            if (g->conns[i]->hold_ver < g->hold_ver)
                g->conns[i]->hold_ver = g->hold_ver;
        srv_syncer_poke();
    }
}

void srv_worker_write_group(srv_worker *w, srv_conn *except)
{
    srv_group *g = &w->group;

    hold_for_durability(g);
    /* Backwards: a member its write closes leaves the array, the last
     * one (already written) taking its place. */
    for (unsigned i = g->nconns; i-- > 0;) {
        srv_conn *m = g->conns[i];
        if (m != except && !(m->flags & SRV_CONN_CLOSE_ASAP))
            srv_conn_flush(m);
    }
}

/*
 * The group's turn, after every ready read of this loop turn: commit, then
 * write each member's replies. A failed group replays its members' commands
 * one transaction each before anything is written.
 */
static void group_finish(srv_worker *w)
{
    srv_group *g = &w->group;
    size_t reaped = 0;

    srv_group_settle(g);
    for (const srv_service *const *sv = w->services; sv && *sv; sv++)
        if ((*sv)->settled && (*sv)->settled(w))
            srv_group_settle(g); /* what the resumed clients ran */
    hold_for_durability(g);
    g->hold_ver = 0;
    while (g->nconns) {
        srv_conn *m = g->conns[--g->nconns];
        m->in_group = 0;
        if (m->flags & SRV_CONN_CLOSE_ASAP)
            srv_conn_close(m);
        else
            srv_conn_flush(m);
    }
    /*
     * Keys reads found expired are deleted now (Redis's lazy expiry, so
     * DBSIZE and the keyspace agree at once), unless the reaper is in the
     * middle of expiring batches: then waiting for the write lock behind
     * it would stall this worker (measured during a 50,000-key mass
     * expiry: GET p99 10-45 ms against 1 ms), and the reaper deletes them
     * anyway within its tick.
     */
    int64_t paused = atomic_load(&srv_her.stats->pause_until_ms);
    if (!atomic_load(&srv_her.stats->reaper_expiring) &&
        (!paused || srv_util_mstime() >= paused) && /* CLIENT PAUSE */
        st_keyspace_reap_seen(w->env, srv_util_mstime(), &reaped) == 0 &&
        reaped)
        SRV_STAT_ADD(w->stats, expired_keys, (int64_t)reaped);
}

static void on_group(evutil_socket_t fd, short what, void *arg)
{
    group_finish(arg);
}

/* ---- periodic duties ---- */

static void close_idle(srv_worker *w, int64_t now)
{
    int64_t limit = srv_her.cfg->timeout * MS_PER_S;

    if (limit <= 0)
        return;
    for (srv_conn *c = w->clients, *next; c; c = next) {
        next = c->next;
        if (now - c->last_ms > limit && c->out.len == 0 && !c->in_group &&
            !(c->flags & SRV_CONN_SUBSCRIBED) && !c->blocked) {
            /* as Redis: subscribers and blocked clients stay */
            srv_log(SRV_LOG_VERBOSE, 0, "closing idle client %s", c->addr);
            srv_conn_close(c);
        }
    }
}

/* (Re)arm the tick at 1/hz s. */
static int arm_tick(srv_worker *w)
{
    struct timeval tick = { 0, (int)(MS_PER_S / srv_her.cfg->hz) * US_PER_MS };

    w->tick_hz = srv_her.cfg->hz;
    return event_add(w->ev_tick, &tick);
}

static void on_tick(evutil_socket_t fd, short what, void *arg)
{
    srv_worker *w = arg;
    int64_t now = srv_util_mstime();
    int64_t mono = srv_util_monotonic_ms();

    if (srv_config_refresh() > 0 && srv_her.cfg->hz != w->tick_hz)
        arm_tick(w); /* CONFIG SET hz */
    group_finish(w); /* its own txns below need the slot */
    close_idle(w, now);
    if (mono - w->last_sample_ms >= MS_PER_S) {
        int64_t cmds = atomic_load(&w->stats->total_commands);
        atomic_store(&w->stats->ops_per_sec, (cmds - w->last_sample_cmds) *
                                                 MS_PER_S /
                                                 (mono - w->last_sample_ms));
        w->last_sample_cmds = cmds;
        w->last_sample_ms = mono;
    }
}

/* The syncer published a new durable id: release the replies it covers. */
static void on_durable(evutil_socket_t fd, short what, void *arg)
{
    srv_worker *w = arg;
    uint64_t n;

    if (read(fd, &n, sizeof n) < 0 && errno != EAGAIN)
        srv_log(SRV_LOG_WARNING, errno, "read() of the worker eventfd");
    for (srv_conn *c = w->clients, *next; c; c = next) {
        next = c->next;
        if (c->hold_ver && !c->in_group)
            srv_conn_flush(c);
    }
}

/* ---- stopping ---- */

static void maybe_finish(srv_worker *w)
{
    if (w->stopping && w->clients == NULL)
        event_base_loopbreak(w->base);
}

static void on_deadline(evutil_socket_t fd, short what, void *arg)
{
    srv_worker *w = arg;

    srv_log(SRV_LOG_WARNING, 0, "stop deadline passed, dropping %u clients",
            w->nclients);
    event_base_loopbreak(w->base);
}

/*
 * SIGTERM: stop accepting, answer what clients already sent, flush the
 * replies, then leave the loop (bounded by a deadline).
 */
static void on_term(evutil_socket_t fd, short what, void *arg)
{
    srv_worker *w = arg;
    /* The master kills what is left at shutdown-timeout anyway. */
    struct timeval deadline = { (time_t)srv_her.cfg->shutdown_timeout, 0 };

    if (w->stopping)
        return;
    w->stopping = 1;
    srv_log(SRV_LOG_NOTICE, 0, "stopping: %u clients to finish", w->nclients);
    for (int i = 0; i < w->nlisten; i++)
        event_del(w->listen_ev[i]);
    for (srv_conn *c = w->clients, *next; c; c = next) {
        next = c->next;
        event_del(c->ev_read);
        srv_conn_on_read(c->fd, EV_READ, c); /* what the socket holds */
    }
    group_finish(w);
    for (srv_conn *c = w->clients, *next; c; c = next) {
        next = c->next;
        if (event_pending(c->ev_read, EV_READ, NULL))
            event_del(c->ev_read);
        if (c->out.len == c->out_sent && !c->blocked)
            srv_conn_close(c);
    }
    w->ev_deadline = srv_worker_io_event(w, -1, 0, on_deadline, w);
    if (w->ev_deadline)
        evtimer_add(w->ev_deadline, &deadline);
    maybe_finish(w);
}

static void on_check_finish(evutil_socket_t fd, short what, void *arg)
{
    maybe_finish(arg);
}

/* ---- main ---- */

static int add_listener(srv_worker *w, int fd, int is_unix,
                        const srv_transport *tr)
{
    srv_listener *l = malloc(sizeof *l);
    struct event *ev;

    if (!l)
        return -1;
    *l = (srv_listener){ w, is_unix, tr };
    ev = srv_worker_io_event(w, fd, EV_READ | EV_PERSIST, on_accept, l);
    if (!ev || event_add(ev, NULL)) {
        free(l);
        return -1;
    }
    w->listen_ev[w->nlisten++] = ev;
    return 0;
}

/* Seed random() (the random picks of SPOP, SRANDMEMBER, HRANDFIELD,
 * ZRANDMEMBER): every forked worker would otherwise inherit one stream,
 * the same after each restart. */
static void seed_random(void)
{
    unsigned seed;

    if (getrandom(&seed, sizeof seed, GRND_NONBLOCK) != sizeof seed)
        seed = (unsigned)getpid() ^ (unsigned)srv_util_mstime();
    srandom(seed);
}

static int open_env(srv_worker *w)
{
    int rc = srv_heritage_env_open(1, &w->env); /* the syncer flushes */

    if (rc)
        srv_log(SRV_LOG_WARNING, rc > 0 ? rc : 0,
                "opening LMDB in '%s' failed: %s", srv_her.cfg->dir,
                rc > 0 ? "system error" : st_strerror(rc));
    return rc;
}

int srv_worker_open(srv_worker *w, int index,
                    const srv_service *const *services)
{
    memset(w, 0, sizeof *w);
    w->index = index;
    w->services = services;
    for (const srv_service *const *sv = services; sv && *sv; sv++)
        if ((*sv)->hold && !w->hold)
            w->hold = (*sv)->hold;
    for (const srv_service *const *sv = services; sv && *sv; sv++)
        if ((*sv)->solo && !w->solo)
            w->solo = (*sv)->solo;
    w->stats = srv_stats_slot_of(srv_her.stats, SRV_ROLE_WORKER, index);
    atomic_store(&w->stats->pid, getpid());
    atomic_store(&w->stats->started_ms, srv_util_mstime());
    atomic_store(&w->stats->connected, 0);
    w->last_sample_ms = srv_util_monotonic_ms();
    w->last_sample_cmds = atomic_load(&w->stats->total_commands);
    srv_cmd_init();
    if (open_env(w))
        return -1;
    if (!(w->base = event_base_new()) ||
        event_base_priority_init(w->base, SRV_WORKER_PRIORITIES) ||
        srv_group_init(&w->group, w->base, SRV_WORKER_PRIORITY_GROUP, w->env,
                       w->stats, on_group, w, srv_conn_run_input)) {
        srv_worker_close(w);
        return -1;
    }
    return 0;
}

void srv_worker_close(srv_worker *w)
{
    while (w->clients)
        srv_conn_close(w->clients);
    for (int i = 0; i < w->nlisten; i++) {
        free(event_get_callback_arg(w->listen_ev[i]));
        event_free(w->listen_ev[i]);
    }
    free(w->listen_ev);
    w->listen_ev = NULL;
    w->nlisten = 0;
    struct event **evs[] = { &w->ev_tick, &w->ev_term, &w->ev_deadline,
                             &w->ev_check, &w->ev_durable };
    for (size_t i = 0; i < sizeof evs / sizeof evs[0]; i++)
        if (*evs[i]) {
            event_free(*evs[i]);
            *evs[i] = NULL;
        }
    srv_group_fini(&w->group);
    if (w->base)
        event_base_free(w->base);
    w->base = NULL;
    if (w->env)
        st_env_close(&w->env);
}

/* The events of a serving worker: listeners, tick, SIGTERM, the stop
 * check, the syncer's wake-up. 0 or -1. */
static int arm(srv_worker *w)
{
    struct timeval check = { 0, CHECK_FINISH_MS * US_PER_MS };

    w->listen_ev = calloc((size_t)(srv_her.ntcp + srv_her.ntls) + 1,
                          sizeof *w->listen_ev);
    if (!w->listen_ev)
        return -1;
    for (int i = 0; i < srv_her.ntcp; i++)
        if (add_listener(w, srv_her.tcp_fds[w->index * srv_her.ntcp + i], 0,
                         NULL))
            return -1;
    for (int i = 0; i < srv_her.ntls; i++)
        if (add_listener(w, srv_her.tls_fds[w->index * srv_her.ntls + i], 0,
                         srv_her.tls))
            return -1;
    if (srv_her.unix_fd >= 0 && add_listener(w, srv_her.unix_fd, 1, NULL))
        return -1;
    w->ev_tick = srv_worker_io_event(w, -1, EV_PERSIST, on_tick, w);
    w->ev_term = srv_worker_io_event(w, SIGTERM, EV_SIGNAL | EV_PERSIST,
                                     on_term, w);
    w->ev_check = srv_worker_io_event(w, -1, EV_PERSIST, on_check_finish, w);
    w->ev_durable = srv_worker_io_event(w, srv_her.worker_efd[w->index],
                                        EV_READ | EV_PERSIST, on_durable, w);
    if (!w->ev_durable || event_add(w->ev_durable, NULL) || !w->ev_tick ||
        !w->ev_term || !w->ev_check || arm_tick(w) ||
        event_add(w->ev_term, NULL) || event_add(w->ev_check, &check))
        return -1;
    return 0;
}

int srv_worker_main(int index, const srv_service *const *services)
{
    static srv_worker worker;
    srv_worker *w = &worker;
    int status = 1;

    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != srv_her.master_pid)
        return 1; /* the master died meanwhile */
    signal(SIGTERM, SIG_DFL);
    signal(SIGINT, SIG_IGN);
    signal(SIGHUP, SIG_IGN);
    seed_random();
    if (srv_worker_open(w, index, services))
        return 1;
    if (arm(w) == 0) {
        for (const srv_service *const *sv = services; sv && *sv; sv++)
            if ((*sv)->start)
                (*sv)->start(w);
        srv_log(SRV_LOG_VERBOSE, 0, "serving");
        event_base_dispatch(w->base);
        status = 0;
    }
    while (w->clients)
        srv_conn_close(w->clients);
    for (const srv_service *const *sv = services; sv && *sv; sv++)
        if ((*sv)->stop)
            (*sv)->stop(w);
    group_finish(w);
    if (srv_her.cfg->sync != SRV_SYNC_NO)
        st_env_sync(w->env);
    srv_worker_close(w);
    if (status)
        srv_log(SRV_LOG_WARNING, errno, "worker setup failed");
    return status;
}
