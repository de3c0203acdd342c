/*
 * srv_pause.c - CLIENT PAUSE across workers (see the header). A worker's
 * held clients are kept in a list; a timer at the pause's end, or a
 * question from the pausing worker (a pause changed), wakes them all, and
 * those the pause still covers are held again.
 */
#include "server/srv_pause.h"
#include "server/cmd/srv_cmd.h"
#include "server/cmd/srv_multi.h"
#include "server/srv_ask.h"
#include "server/srv_bproto.h"
#include "server/srv_group.h"
#include "server/srv_heritage.h"
#include "server/srv_hooks.h"
#include "server/srv_log.h"
#include "server/srv_reply.h"
#include "server/srv_stats.h"
#include "server/srv_util.h"

#include <errno.h>
#include <event2/event.h>
#include <stdlib.h>

#define HELD_MIN 16
#define MS_PER_S 1000
#define US_PER_MS 1000
/* A long pause is waited for in steps of at most a day. */
#define TIMER_STEP_MS (24LL * 3600 * MS_PER_S)

static struct {
    srv_worker *w;
    srv_conn **held;
    size_t nheld, cap;
    struct event *ev_end;   /* the pause's end */
    struct event *ev_check; /* something changed: wake the held */
} pz;

static const srv_hooks pause_hooks;

int srv_pause_active(int64_t now_ms)
{
    int64_t until = atomic_load_explicit(&srv_her.stats->pause_until_ms,
                                         memory_order_relaxed);

    return until && now_ms < until;
}

/* Does the pause in place cover c's command? */
static int covers(const srv_conn *c)
{
    const srv_command *cmd = c->cmd;
    int64_t mode;
    unsigned f;

    if (!srv_pause_active(srv_util_mstime()))
        return 0;
    mode = atomic_load_explicit(&srv_her.stats->pause_mode,
                                memory_order_relaxed);
    if (mode == SRV_PAUSE_ALL)
        return 1;
    if (mode != SRV_PAUSE_WRITE || !cmd)
        return 0;
    f = cmd->flags;
    if (cmd->proc == srv_cmd_exec)
        f |= srv_multi_queued_flags(c);
    /* Writes, and the commands Redis flags may-replicate. */
    return (f & F_WRITE) || cmd->proc == srv_cmd_publish ||
           cmd->proc == srv_cmd_spublish;
}

static void arm_end(void)
{
    int64_t until = atomic_load(&srv_her.stats->pause_until_ms);
    int64_t left = until - srv_util_mstime();
    struct timeval tv;

    if (!pz.ev_end || !until || !pz.nheld)
        return;
    if (left < 0)
        left = 0;
    if (left > TIMER_STEP_MS)
        left = TIMER_STEP_MS;
    tv.tv_sec = (time_t)(left / MS_PER_S);
    tv.tv_usec = (suseconds_t)(left % MS_PER_S * US_PER_MS);
    evtimer_add(pz.ev_end, &tv);
}

/* The service's hold: c's command waits if the pause covers it. */
static int hold(srv_conn *c)
{
    if (!atomic_load_explicit(&srv_her.stats->pause_until_ms,
                              memory_order_relaxed) ||
        !covers(c))
        return 0;
    if (!srv_hooks_state(&c->hooks, &pause_hooks) &&
        srv_hooks_attach(&c->hooks, &pause_hooks, &pz)) {
        return 0; /* no slot: it runs (a bug: SRV_HOOKS_MAX) */
    }
    if (pz.nheld == pz.cap) {
        size_t cap = pz.cap ? pz.cap * 2 : HELD_MIN;
        srv_conn **h = realloc(pz.held, cap * sizeof *h);
        if (!h) {
            srv_log(SRV_LOG_WARNING, ENOMEM, "holding a paused client");
            return 0;
        }
        pz.held = h;
        pz.cap = cap;
    }
    pz.held[pz.nheld++] = c;
    c->blocked = 1;
    /* Redis counts a paused client among the blocked ones. */
    SRV_STAT_ADD(c->worker->stats, blocked_clients, 1);
    arm_end();
    return 1;
}

/* Wake every held client: each runs its input again (and is held again
 * if the pause still covers its command). */
static void wake_all(void)
{
    srv_conn **held = pz.held;
    size_t n = pz.nheld;

    if (!n || !pz.w)
        return;
    pz.held = NULL;
    pz.nheld = pz.cap = 0;
    for (size_t i = 0; i < n; i++)
        if (held[i]) {
            held[i]->blocked = 0;
            SRV_STAT_ADD(pz.w->stats, blocked_clients, -1);
        }
    for (size_t i = 0; i < n; i++)
        if (held[i])
            srv_group_wake(&pz.w->group, held[i], 1);
    free(held);
}

static void on_end(evutil_socket_t fd, short what, void *arg)
{
    if (srv_pause_active(srv_util_mstime()))
        arm_end(); /* extended meanwhile, or a long one in steps */
    else
        wake_all();
}

static void on_check(evutil_socket_t fd, short what, void *arg) { wake_all(); }

/* A pause changed (this worker's part of the question): wake the held
 * clients from the loop (not in the middle of the link's frames). */
static int changed_part(const char *q, size_t n, srv_buf *part)
{
    if (pz.ev_check && pz.nheld)
        event_active(pz.ev_check, EV_TIMEOUT, 0);
    return srv_ask_put_count(part, 1);
}

static void reply_ok(srv_conn *c, const char *ans, size_t len)
{
    srv_reply_ok(c);
}

void srv_pause_clients(srv_conn *c, int64_t ms, int mode)
{
    srv_stats *st = srv_her.stats;
    int64_t now = srv_util_mstime();
    int64_t end = ms > INT64_MAX - now ? INT64_MAX : now + ms;
    int64_t cur = atomic_load(&st->pause_until_ms), m;

    /* A pause in place keeps the later end and the stricter mode. */
    if (!srv_pause_active(now))
        atomic_store(&st->pause_mode, SRV_PAUSE_OFF);
    while (cur < end &&
           !atomic_compare_exchange_weak(&st->pause_until_ms, &cur, end))
        ;
    m = atomic_load(&st->pause_mode);
    while (m < mode && !atomic_compare_exchange_weak(&st->pause_mode, &m, mode))
        ;
    srv_ask(c, SRV_BP_Q_PAUSE, NULL, 0, reply_ok);
}

void srv_pause_lift(srv_conn *c)
{
    atomic_store(&srv_her.stats->pause_until_ms, 0);
    atomic_store(&srv_her.stats->pause_mode, SRV_PAUSE_OFF);
    srv_ask(c, SRV_BP_Q_PAUSE, NULL, 0, reply_ok);
}

/* A held client closes: out of the list. */
static void on_close(srv_conn *c, void *state)
{
    for (size_t i = 0; i < pz.nheld; i++)
        if (pz.held[i] == c) {
            pz.held[i] = NULL;
            SRV_STAT_ADD(c->worker->stats, blocked_clients, -1);
        }
}

static const srv_hooks pause_hooks = {
    .name = "pause",
    .close = on_close,
};

static void service_start(srv_worker *w)
{
    pz.w = w;
    pz.ev_end = srv_worker_io_event(w, -1, 0, on_end, NULL);
    pz.ev_check = srv_worker_io_event(w, -1, 0, on_check, NULL);
    srv_ask_register(SRV_BP_Q_PAUSE, changed_part);
}

static void service_stop(srv_worker *w)
{
    if (pz.ev_end)
        event_free(pz.ev_end);
    if (pz.ev_check)
        event_free(pz.ev_check);
    pz.ev_end = pz.ev_check = NULL;
    free(pz.held);
    pz.held = NULL;
    pz.nheld = pz.cap = 0;
    pz.w = NULL;
}

const srv_service srv_pause_service = {
    .name = "pause",
    .start = service_start,
    .stop = service_stop,
    .hold = hold,
};
