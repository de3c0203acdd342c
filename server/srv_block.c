/*
 * srv_block.c - blocking commands on a worker (the protocol is in the
 * header; the broker's half is srv_bwait.c).
 *
 * A client's waiter state is attached to it (srv_hooks.h) at its first
 * block and kept until it closes, so a client that blocks in a loop
 * reuses its buffers. States:
 *
 *   IDLE      not blocked
 *   PENDING   blocked by a command of the group's open transaction: if
 *             the group rewinds, the block never happened (the command
 *             runs again); at the commit it becomes
 *   WAITING   registered: it has a token, a timer, and (link up) the
 *             broker knows it; a grant or a check queues it for
 *   RETRYING  its command runs again in the group's write transaction;
 *             at the commit it is either answered (IDLE, its next
 *             commands run) or WAITING again, and the broker is told.
 *
 * The worker keeps its waiters in blocking order (the local FIFO used
 * while the link is down), a token table for the broker's grants, and
 * three queues worked through after each group commit: waiters to
 * register, waiters to run again, clients to resume. A queue entry whose
 * client closed is cleared by its close hook.
 */
#include "server/srv_block.h"
#include "server/cmd/srv_cmd.h"
#include "server/srv_bproto.h"
#include "server/srv_dict.h"
#include "server/srv_group.h"
#include "server/srv_heritage.h"
#include "server/srv_hooks.h"
#include "server/srv_keys.h"
#include "server/srv_link.h"
#include "server/srv_log.h"
#include "server/srv_reply.h"
#include "server/srv_stats.h"
#include "server/srv_util.h"
#include "storage/st_codec.h"
#include "storage/st_coll.h"
#include "storage/st_err.h"
#include "storage/st_txn.h"

#include <errno.h>
#include <event2/event.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MS_PER_S 1000
#define US_PER_MS 1000
#define NS_PER_MS 1000000
#define QUEUE_MIN 16
/* Long timeouts are waited for in steps of at most a day. */
#define TIMER_STEP_MS (24LL * 3600 * MS_PER_S)
/* How long a new registration may wait for the link to take it before
 * its check runs anyway. */
#define REGISTER_FLUSH_MS 100
/* Until the broker has welcomed the link (DOWN, or HELLO: connected to
 * the listening socket the master keeps while the broker is respawned,
 * with back-off) a push on another worker cannot reach this worker's
 * waiters (one on their own worker still wakes them at once), so they
 * are checked this often and run again here when a key holds something:
 * a broker that is away delays a wake-up by this much at most, not by its
 * absence. Grants are hints and every pop is a transaction, so the broker's
 * later grants lose nothing. */
#define AWAY_POLL_MS 100

static const char ERR_UNBLOCKED[] =
    "UNBLOCKED client unblocked via CLIENT UNBLOCK";

enum bk_state { BK_IDLE, BK_PENDING, BK_WAITING, BK_RETRYING };

typedef struct bk_waiter {
    srv_conn *c;
    int state;
    uint64_t token;
    uint64_t order; /* its place among every worker's waiters */
    unsigned db;
    int type;
    int null_array;
    int64_t deadline_ms; /* 0: for ever */
    struct event *ev_timer;
    /* the command, copied */
    const srv_command *cmd;
    int argc, capargv;
    srv_slice *argv;
    srv_buf bytes;
    int first_key, nkeys;
    int group; /* argv index of its consumer group, or 0 */
    srv_block_ready_fn *ready;
    /* the broker */
    uint64_t sent_gen; /* link generation its WAIT went out on, 0: none */
    int registering;   /* in bk.reg */
    int committing;    /* in bk.pending */
    int check;         /* check its keys once registered */
    int queued;        /* in bk.retry */
    int grant_key;     /* argv index of the key granted, or -1 */
    /* the current run again */
    int reblocked;
    int served_key; /* argv index, or -1 */
    uint64_t left;
    uint64_t seen; /* the newest commit the run again saw (seen_version) */
    struct bk_waiter *prev, *next; /* bk.head: WAITING and RETRYING */
    srv_dict_entry *de;            /* in bk.tokens */
} bk_waiter;

/* A pointer queue. */
typedef struct bk_queue {
    void **v;
    size_t n, cap;
} bk_queue;

/* A key that came into being while the link was down. */
typedef struct bk_ready {
    unsigned db;
    uint64_t n;
    size_t off, len; /* in bk.names */
} bk_ready;

static struct {
    srv_worker *w;
    bk_waiter *head, *tail;
    unsigned nblocked;
    srv_dict tokens;
    uint64_t next_token;
    bk_queue pending, reg, retry, resume;
    bk_ready *ready;
    size_t nready, capready;
    srv_buf names;
    struct event *ev_poll; /* checks waiters while the broker is away */
    int poll_due;
    int64_t register_sleep_ms; /* DEBUG REGISTER-SLEEP, once */
} bk;

static const srv_hooks block_hooks;

static bk_waiter *state_of(const srv_conn *c)
{
    return srv_hooks_state(&c->hooks, &block_hooks);
}

/* ---- queues ---- */

static int queue_push(bk_queue *q, void *p)
{
    if (q->n == q->cap) {
        size_t cap = q->cap ? q->cap * 2 : QUEUE_MIN;
        void **v = realloc(q->v, cap * sizeof *v);
        if (!v)
            return -1;
        q->v = v;
        q->cap = cap;
    }
    q->v[q->n++] = p;
    return 0;
}

static void queue_forget(bk_queue *q, const void *p)
{
    for (size_t i = 0; i < q->n; i++)
        if (q->v[i] == p)
            q->v[i] = NULL;
}

static void queue_free(bk_queue *q)
{
    free(q->v);
    q->v = NULL;
    q->n = q->cap = 0;
}

static void schedule(void)
{
    if (bk.w)
        srv_group_schedule(&bk.w->group);
}

/* Queue x to register and be checked in the group's turn (in DOWN the
 * registration is not sent and the check runs it again if a key holds
 * something). */
static void queue_register(bk_waiter *x)
{
    if (!x->registering && queue_push(&bk.reg, x) == 0)
        x->registering = 1;
}

static void arm_poll(void)
{
    struct timeval tv = { 0, AWAY_POLL_MS * US_PER_MS };

    if (bk.ev_poll && bk.head && srv_link_state() != SRV_LINK_UP &&
        !evtimer_pending(bk.ev_poll, NULL))
        evtimer_add(bk.ev_poll, &tv);
}

/* ---- timeouts ---- */

int srv_block_timeout_or_reply(srv_conn *c, const srv_slice *a, int64_t *ms)
{
    long double v, t;

    if (!srv_util_str2ld(a->ptr, a->len, &v)) {
        srv_reply_error(c, "ERR timeout is not a float or out of range");
        return -1;
    }
    /* Milliseconds, rounded up (0.0001 s waits a millisecond, -0.0001 s
     * for ever). What a long long cannot hold (infinities included)
     * Redis turns into a negative count. */
    t = ceill(v * MS_PER_S);
    if (t < 0 || t > (long double)LLONG_MAX) {
        srv_reply_error(c, "ERR timeout is negative");
        return -1;
    }
    *ms = (int64_t)t;
    return 0;
}

static void arm_timer(bk_waiter *x)
{
    int64_t left = x->deadline_ms - srv_util_mstime();
    struct timeval tv;

    if (!x->deadline_ms || !x->ev_timer)
        return;
    if (left < 0)
        left = 0;
    if (left > TIMER_STEP_MS)
        left = TIMER_STEP_MS;
    tv.tv_sec = (time_t)(left / MS_PER_S);
    tv.tv_usec = (suseconds_t)(left % MS_PER_S * US_PER_MS);
    evtimer_add(x->ev_timer, &tv);
}

/* ---- registration ---- */

static int registered(const bk_waiter *x)
{
    return x->sent_gen && x->sent_gen == srv_link_generation() &&
           srv_link_state() != SRV_LINK_DOWN;
}

/* x's group's name as a frame's field, if it reads as one: 0 or -1. */
static int put_group(const bk_waiter *x, size_t off)
{
    const srv_slice *g = &x->argv[x->group];

    return x->group ? srv_link_field(off, g->ptr, g->len) : 0;
}

static void report(bk_waiter *x, int done, int key, uint64_t left, uint64_t txn)
{
    const srv_slice *k = &x->argv[key];
    size_t off;

    if (!registered(x))
        return;
    if ((off = srv_link_begin(SRV_BP_SERVED, done, x->token)) == (size_t)-1 ||
        srv_link_u64(off, x->db) || srv_link_u64(off, left) ||
        srv_link_u64(off, txn) || srv_link_field(off, k->ptr, k->len) ||
        put_group(x, off))
        return;
    srv_link_end(off);
}

/* x's check found argv[key] holding n for it in snapshot txn: the broker
 * grants it to the oldest waiter there. */
static void hint(bk_waiter *x, int key, uint64_t n, uint64_t txn)
{
    const srv_slice *k = &x->argv[key];
    size_t off;

    if ((off = srv_link_begin(SRV_BP_HINT, 0, txn)) == (size_t)-1 ||
        srv_link_u64(off, x->db) || srv_link_u64(off, n) ||
        srv_link_field(off, k->ptr, k->len) || put_group(x, off))
        return;
    srv_link_end(off);
}

/* x waits no more: out of the tables (the broker is told). */
static void unregister(bk_waiter *x)
{
    if (x->state != BK_WAITING && x->state != BK_RETRYING)
        return;
    if (registered(x))
        srv_link_put(SRV_BP_UNWAIT, 0, x->token, NULL, 0, NULL, 0);
    x->sent_gen = 0;
    if (x->prev)
        x->prev->next = x->next;
    else
        bk.head = x->next;
    if (x->next)
        x->next->prev = x->prev;
    else
        bk.tail = x->prev;
    x->prev = x->next = NULL;
    if (x->de) {
        srv_dict_remove(&bk.tokens, x->de);
        x->de = NULL;
    }
    if (x->ev_timer)
        evtimer_del(x->ev_timer);
}

static void set_blocked(srv_conn *c, int on)
{
    c->blocked = on;
    bk.nblocked += on ? 1 : -1;
    SRV_STAT_ADD(c->worker->stats, blocked_clients, on ? 1 : -1);
    /* Before its commit, its WAIT and its check (see srv_keys.c). */
    SRV_STAT_ADD(c->worker->stats, key_waiters, on ? 1 : -1);
    atomic_fetch_add(&srv_her.stats->key_waiters, on ? 1 : -1);
}

/* x is answered (its reply is in c->out): its next commands run after
 * this group turn. */
static void finish(bk_waiter *x)
{
    srv_conn *c = x->c;

    unregister(x);
    x->state = BK_IDLE;
    set_blocked(c, 0);
    srv_group_wake(&c->worker->group, c, 0);
    if (queue_push(&bk.resume, c))
        srv_log(SRV_LOG_WARNING, ENOMEM, "resuming a client");
    schedule();
}

static void reply_timeout(bk_waiter *x)
{
    if (x->null_array)
        srv_reply_null_array(x->c);
    else
        srv_reply_null(x->c);
}

static void on_timer(evutil_socket_t fd, short what, void *arg)
{
    bk_waiter *x = arg;

    if (x->state != BK_WAITING)
        return;
    if (srv_util_mstime() < x->deadline_ms) {
        arm_timer(x); /* a long timeout, in steps */
        return;
    }
    reply_timeout(x);
    finish(x);
}

/* x starts waiting (its block committed). */
static void start_waiting(bk_waiter *x)
{
    uint64_t h;

    x->state = BK_WAITING;
    if (!registered(x))
        x->token = ++bk.next_token; /* else its WAIT went before the commit */
    x->grant_key = -1;
    h = srv_dict_hash(&x->token, sizeof x->token);
    if ((x->de = srv_dict_add(&bk.tokens, &x->token, sizeof x->token, h)))
        x->de->val = x;
    x->prev = bk.tail;
    x->next = NULL;
    if (bk.tail)
        bk.tail->next = x;
    else
        bk.head = x;
    bk.tail = x;
    if (!x->ev_timer && x->deadline_ms)
        x->ev_timer = srv_worker_io_event(x->c->worker, -1, 0, on_timer, x);
    arm_timer(x);
    queue_register(x);
    arm_poll();
    schedule();
}

/* x's keys as WAIT(token, db, keys) on the link. 0 or -1. */
static int send_wait(bk_waiter *x)
{
    size_t off = srv_link_begin(SRV_BP_WAIT, x->group ? SRV_BP_GROUP : 0,
                                x->token);

    if (off == (size_t)-1 || srv_link_u64(off, x->db) ||
        srv_link_u64(off, x->order) || put_group(x, off))
        return -1;
    for (int i = 0; i < x->nkeys; i++) {
        const srv_slice *k = &x->argv[x->first_key + i];
        if (srv_link_field(off, k->ptr, k->len))
            return -1;
    }
    srv_link_end(off);
    return 0;
}

/* ---- running again ---- */

static void queue_retry(bk_waiter *x, int key)
{
    if (x->state != BK_WAITING || x->queued)
        return;
    if (queue_push(&bk.retry, x)) {
        srv_log(SRV_LOG_WARNING, ENOMEM, "waking a blocked client");
        return;
    }
    x->queued = 1;
    x->grant_key = key;
    schedule();
}

/* The argv index of x's key named (p, n), or -1. */
static int key_index(const bk_waiter *x, const void *p, size_t n)
{
    for (int i = 0; i < x->nkeys; i++) {
        const srv_slice *k = &x->argv[x->first_key + i];
        if (k->len == n && memcmp(k->ptr, p, n) == 0)
            return x->first_key + i;
    }
    return -1;
}

/* What argv[key] holds for x: a key of its type, its cardinality. */
static uint64_t holds(struct st_txn *t, const srv_block_view *v, int key,
                      int type, int64_t now)
{
    const srv_slice *a = &v->argv[key];
    st_keyref k;
    st_obj o;

    st_codec_keyref_init(&k, v->db, a->ptr, a->len);
    return st_coll_open(t, &k, type, now, &o) == 0 ? o.c.card : 0;
}

/* The check: in a snapshot newer than the registration, does a key hold
 * data for x? Registered, the broker is told (it grants the oldest
 * waiter); else x runs again. */
static void check(srv_group *g, bk_waiter *x, int64_t now)
{
    const srv_block_view v = { x->db,        x->argc,  x->argv,
                               x->first_key, x->nkeys, x->group };
    struct st_txn *t;
    int rc = 0;

    if (x->state != BK_WAITING || !(t = srv_group_read_txn(g, &rc)))
        return;
    for (int i = x->first_key; i < x->first_key + x->nkeys; i++) {
        uint64_t n = x->ready ? x->ready(t, &v, i, now)
                              : holds(t, &v, i, x->type, now);
        if (!n)
            continue;
        if (!registered(x)) {
            queue_retry(x, i);
            return;
        }
        hint(x, i, n, st_txn_version(t));
    }
}

/*
 * What a run again reports is as of the newest commit it saw, not as of
 * its own transaction's id: a write transaction that wrote nothing passes
 * its id on to the next one, whose push must not look older than the
 * report; and a key that comes into being later in the same transaction
 * (one waiter's BLMOVE onto the list another emptied) must win over it.
 * Reports of one version: the broker keeps the one it read last.
 */
static uint64_t seen_version(const srv_group *g)
{
    if (g->wtxn)
        return st_txn_version(g->wtxn) - 1;
    return g->rtxn ? st_txn_version(g->rtxn) : 0;
}

/* Run the queued waiters' commands in the group's transaction. 1 if any
 * ran. */
static int run_again(srv_group *g)
{
    int64_t now = srv_util_mstime();
    size_t i, n = bk.retry.n;
    int ran = 0;

    for (i = 0; i < n; i++) {
        bk_waiter *x = bk.retry.v[i];
        srv_conn *c;
        if (!x)
            continue;
        x->queued = 0;
        c = x->c;
        if (x->state != BK_WAITING ||
            (c->flags & (SRV_CONN_CLOSE_ASAP | SRV_CONN_CLOSE_AFTER_REPLY)))
            continue;
        x->state = BK_RETRYING;
        x->reblocked = 0;
        x->served_key = -1;
        x->left = 0;
        srv_group_wake(g, c, 0);
        c->argc = x->argc;
        c->argv = x->argv;
        c->cmd = x->cmd;
        c->now_ms = now;
        srv_group_command_begins(g, c);
        size_t mark = c->out.len;
        c->cmd->proc(c);
        if (c->flags & SRV_CONN_REPLY_OFF)
            c->out.len = mark; /* CLIENT REPLY OFF since it blocked */
        x->seen = seen_version(g);
        ran = 1;
        if (srv_group_command_ends(g, c, c->in_done)) {
            i++; /* the group rewound: the rest run next time */
            break;
        }
    }
    /* Keep what did not run yet (in order), drop the rest. */
    if (bk.retry.n > i)
        memmove(bk.retry.v, bk.retry.v + i,
                (bk.retry.n - i) * sizeof *bk.retry.v);
    bk.retry.n -= i;
    for (size_t j = 0; j < bk.retry.n; j++)
        if (bk.retry.v[j])
            ((bk_waiter *)bk.retry.v[j])->queued = 1;
    return ran;
}

/* A run again committed: tell the broker how it went. */
static void outcome(bk_waiter *x)
{
    int key = x->served_key >= 0  ? x->served_key
              : x->grant_key >= 0 ? x->grant_key
                                  : x->first_key;

    if (x->reblocked) {
        x->state = BK_WAITING;
        report(x, SRV_BP_STILL, key, 0, x->seen);
        return;
    }
    report(x, SRV_BP_DONE, key, x->served_key >= 0 ? x->left : 1, x->seen);
    if (!registered(x) && x->served_key >= 0 && x->left > 0) {
        /* Local mode: pass what is left on to the next local waiter. */
        const srv_slice *k = &x->argv[x->served_key];
        unsigned db = x->db;
        finish(x);
        for (bk_waiter *y = bk.head; y; y = y->next)
            if (y->db == db && key_index(y, k->ptr, k->len) >= 0) {
                queue_retry(y, key_index(y, k->ptr, k->len));
                break;
            }
        return;
    }
    finish(x);
}

/* ---- keys that came into being while the link was down ---- */

static void on_ready(unsigned db, const uint8_t *name, size_t len, uint64_t n,
                     uint64_t txn)
{
    if (bk.nready == bk.capready) {
        size_t cap = bk.capready ? bk.capready * 2 : QUEUE_MIN;
        bk_ready *r = realloc(bk.ready, cap * sizeof *r);
        if (!r)
            return;
        bk.ready = r;
        bk.capready = cap;
    }
    if (srv_buf_append(&bk.names, name, len))
        return;
    bk.ready[bk.nready++] = (bk_ready){ db, n, bk.names.len - len, len };
    schedule();
}

/* Wake this worker's oldest waiters on each ready key, up to its count
 * (n 0 with an empty name: every key of the database). */
static void wake_local(void)
{
    for (size_t i = 0; i < bk.nready; i++) {
        const bk_ready *r = &bk.ready[i];
        uint64_t n = r->n;
        for (bk_waiter *x = bk.head; x && (n || r->len == 0); x = x->next) {
            int key = r->len == 0
                          ? x->first_key
                          : key_index(x, bk.names.data + r->off, r->len);
            if (x->db != r->db || key < 0 || x->queued)
                continue;
            queue_retry(x, key);
            if (r->len)
                n--;
        }
    }
    bk.nready = 0;
    bk.names.len = 0;
}

/* ---- the link ---- */

static int on_frame(const srv_bframe *f)
{
    srv_dict_entry *de;
    bk_waiter *x;
    int key;

    if (f->type != SRV_BP_GRANT)
        return -1;
    de = srv_dict_find(&bk.tokens, &f->arg, sizeof f->arg,
                       srv_dict_hash(&f->arg, sizeof f->arg));
    if (!de)
        return 0; /* it left meanwhile: its UNWAIT passes the grant on */
    x = de->val;
    if ((key = key_index(x, f->body, (size_t)f->len)) >= 0)
        queue_retry(x, key);
    return 0;
}

static void on_poll(evutil_socket_t fd, short what, void *arg)
{
    if (srv_link_state() == SRV_LINK_UP)
        return; /* the welcome's resend registered and checked everyone */
    bk.poll_due = 1;
    schedule();
    arm_poll();
}

/* The broker is away: run again here every waiter a key holds something
 * for (see AWAY_POLL_MS). */
static void poll_away(srv_group *g, int64_t now)
{
    struct st_txn *t;
    int rc = 0;

    bk.poll_due = 0;
    if (srv_link_state() == SRV_LINK_UP || !(t = srv_group_read_txn(g, &rc)))
        return;
    for (bk_waiter *x = bk.head; x; x = x->next) {
        const srv_block_view v = { x->db,        x->argc,  x->argv,
                                   x->first_key, x->nkeys, x->group };
        if (x->state != BK_WAITING || x->queued)
            continue;
        for (int i = x->first_key; i < x->first_key + x->nkeys; i++)
            if (x->ready ? x->ready(t, &v, i, now)
                         : holds(t, &v, i, x->type, now)) {
                queue_retry(x, i);
                break;
            }
    }
}

/* A new connection: every waiter registers again and is checked. */
static void on_resend(void)
{
    for (bk_waiter *x = bk.head; x; x = x->next) {
        x->sent_gen = 0;
        queue_register(x);
    }
    schedule();
}

static void on_down(void)
{
    for (bk_waiter *x = bk.head; x; x = x->next)
        x->sent_gen = 0;
    arm_poll();
}

/* After each group commit (the link's frames are handled): register,
 * check, run again, resume. */
static int on_settled(srv_worker *w)
{
    srv_group *g = &w->group;
    int64_t now = srv_util_mstime();
    int sent = 0, ran;

    if (bk.register_sleep_ms && bk.reg.n) {
        struct timespec ts = { bk.register_sleep_ms / MS_PER_S,
                               bk.register_sleep_ms % MS_PER_S * NS_PER_MS };
        bk.register_sleep_ms = 0;
        while (nanosleep(&ts, &ts) && errno == EINTR)
            ;
    }
    /* Blocks of a turn that committed no write transaction (XREAD BLOCK
     * alone reads) register below, after their commit. */
    for (size_t i = 0; i < bk.pending.n; i++)
        if (bk.pending.v[i])
            ((bk_waiter *)bk.pending.v[i])->committing = 0;
    bk.pending.n = 0;
    wake_local();
    if (bk.poll_due)
        poll_away(g, now);
    for (size_t i = 0; i < bk.reg.n; i++) {
        bk_waiter *x = bk.reg.v[i];
        if (!x)
            continue;
        x->registering = 0;
        if (x->state != BK_WAITING && x->state != BK_RETRYING)
            continue;
        x->check = 1;
        if (!registered(x) && send_wait(x) == 0) {
            x->sent_gen = srv_link_generation();
            sent = 1;
        }
    }
    /* The check's snapshot is read after this worker's key_waiters count
     * went up: a push that found the count 0 (and told nobody) committed
     * before that snapshot, so the check sees it (srv_keys.c). */
    atomic_thread_fence(memory_order_seq_cst);
    /* The check must see a snapshot taken after the broker can read the
     * registrations (see the header). */
    if (sent && srv_link_flush_wait(REGISTER_FLUSH_MS))
        srv_log(SRV_LOG_VERBOSE, 0,
                "checking waiters before the broker "
                "took their registration");
    for (size_t i = 0; i < bk.reg.n; i++) {
        bk_waiter *x = bk.reg.v[i];
        if (x && x->check) {
            x->check = 0;
            check(g, x, now);
        }
    }
    bk.reg.n = 0;
    ran = run_again(g);
    if (g->rtxn || g->wtxn)
        srv_group_commit(g); /* outcomes: the committed hooks */
    for (size_t i = 0; i < bk.resume.n; i++)
        if (bk.resume.v[i])
            srv_group_wake(g, bk.resume.v[i], 1);
    if (bk.resume.n)
        ran = 1;
    bk.resume.n = 0;
    return ran;
}

/*
 * The group's write transaction is about to commit, holding LMDB's write
 * lock: the clients it blocked register now, so their WAITs are in the
 * broker's socket (srv_keys.c writes them out with the TXN frame) before
 * any transaction that commits after this one can write its COMMITTED.
 * The broker reads every link before it handles what it read, so a push
 * that commits later finds them queued in their order; registered after
 * the commit, a younger waiter on another worker could take the push
 * first. If the commit fails, undo_pending takes them back (UNWAIT); a
 * grant that comes before the commit's outcome is read after it. 1 if a
 * frame was put.
 */
static int on_committing(void)
{
    int sent = 0;

    for (size_t i = 0; i < bk.pending.n; i++) {
        bk_waiter *x = bk.pending.v[i];
        if (!x)
            continue;
        x->committing = 0;
        /* Only to a broker that is up: while one is respawned the
         * flush would hold the write lock for its whole wait; those
         * register after the commit, as before. */
        if (x->state != BK_PENDING || registered(x) ||
            srv_link_state() != SRV_LINK_UP)
            continue;
        x->token = ++bk.next_token;
        if (send_wait(x) == 0) {
            x->sent_gen = srv_link_generation();
            sent = 1;
        }
    }
    bk.pending.n = 0;
    return sent;
}

static const int link_types[] = { SRV_BP_GRANT, 0 };

static const srv_link_feature link_feature = {
    .name = "block",
    .types = link_types,
    .resend = on_resend,
    .frame = on_frame,
    .down = on_down,
    .settled = on_settled,
};

/* ---- the connection's hooks ---- */

static void undo_pending(bk_waiter *x)
{
    if (x->state == BK_PENDING) {
        /* Its WAIT went before the commit that did not happen. */
        if (registered(x))
            srv_link_put(SRV_BP_UNWAIT, 0, x->token, NULL, 0, NULL, 0);
        x->sent_gen = 0;
        x->state = BK_IDLE;
        set_blocked(x->c, 0);
    }
}

static void on_committed(srv_conn *c, void *state)
{
    bk_waiter *x = state;

    if (x->state == BK_PENDING)
        start_waiting(x);
    else if (x->state == BK_RETRYING)
        outcome(x);
}

/* The group's transaction was lost: a block in it never happened; a
 * run again's pop did not either (it keeps waiting). */
static void on_rewind(srv_conn *c, void *state)
{
    bk_waiter *x = state;

    if (x->state == BK_PENDING) {
        undo_pending(x);
    } else if (x->state == BK_RETRYING) {
        x->state = BK_WAITING;
        report(x, SRV_BP_STILL, x->grant_key >= 0 ? x->grant_key : x->first_key,
               1, 0);
    }
}

/* The blocking command's reply became a storage error: no block. */
static void on_lost(srv_conn *c, void *state) { undo_pending(state); }

static void on_close(srv_conn *c, void *state)
{
    bk_waiter *x = state;

    unregister(x);
    if (x->state != BK_IDLE)
        set_blocked(c, 0);
    queue_forget(&bk.pending, x);
    queue_forget(&bk.reg, x);
    queue_forget(&bk.retry, x);
    queue_forget(&bk.resume, c);
    if (x->ev_timer)
        event_free(x->ev_timer);
    free(x->argv);
    srv_buf_free(&x->bytes);
    free(x);
}

static const srv_hooks block_hooks = {
    .name = "block",
    .committed = on_committed,
    .rewind = on_rewind,
    .lost = on_lost,
    .close = on_close,
};

/* ---- commands ---- */

/* Copy c's command into x (c's arguments die with its input). */
static int copy_command(bk_waiter *x, srv_conn *c)
{
    size_t off = 0;

    x->bytes.len = 0;
    for (int i = 0; i < c->argc; i++)
        if (srv_buf_append(&x->bytes, c->argv[i].ptr, c->argv[i].len))
            return -1;
    if (c->argc > x->capargv) {
        srv_slice *v = realloc(x->argv, (size_t)c->argc * sizeof *v);
        if (!v)
            return -1;
        x->argv = v;
        x->capargv = c->argc;
    }
    for (int i = 0; i < c->argc; i++) {
        x->argv[i].ptr = x->bytes.data + off;
        x->argv[i].len = c->argv[i].len;
        off += c->argv[i].len;
    }
    x->argc = c->argc;
    x->cmd = c->cmd;
    return 0;
}

void srv_block_or_reply(srv_conn *c, const srv_block_spec *spec)
{
    bk_waiter *x = state_of(c);

    if (x && x->state == BK_RETRYING) {
        x->reblocked = 1; /* found nothing: it waits on */
        return;
    }
    if (!bk.w || (c->flags & SRV_CONN_IN_TXN)) {
        if (spec->null_array)
            srv_reply_null_array(c);
        else
            srv_reply_null(c);
        return;
    }
    if (!x) {
        if (!(x = calloc(1, sizeof *x)) ||
            srv_hooks_attach(&c->hooks, &block_hooks, x)) {
            free(x);
            srv_reply_error(c, "ERR out of memory");
            return;
        }
        x->c = c;
    }
    if (copy_command(x, c)) {
        srv_reply_error(c, "ERR out of memory");
        return;
    }
    x->db = c->db;
    x->type = spec->type;
    x->null_array = spec->null_array;
    x->first_key = spec->first_key;
    x->nkeys = spec->nkeys;
    x->group = spec->group;
    x->ready = spec->ready;
    x->deadline_ms = 0;
    if (spec->timeout_ms > 0)
        x->deadline_ms = spec->timeout_ms > INT64_MAX - c->now_ms
                             ? 0 /* past what the clock counts */
                             : c->now_ms + spec->timeout_ms;
    /* Its place is taken as it becomes blocked (visible in INFO at once),
     * not when its registration reaches the broker, which may come after
     * a younger waiter's from another worker. */
    x->order = atomic_fetch_add(&srv_her.stats->block_order, 1);
    x->state = BK_PENDING;
    set_blocked(c, 1);
    if (!x->committing && queue_push(&bk.pending, x) == 0)
        x->committing = 1;
}

void srv_block_served(srv_conn *c, int key, uint64_t left)
{
    bk_waiter *x = state_of(c);

    if (x && x->state == BK_RETRYING) {
        x->served_key = key;
        x->left = left;
    }
}

int srv_block_unblock(uint64_t id, int error)
{
    for (bk_waiter *x = bk.head; x; x = x->next) {
        if (x->c->id != id || x->state != BK_WAITING)
            continue;
        if (error)
            srv_reply_error(x->c, ERR_UNBLOCKED);
        else
            reply_timeout(x);
        finish(x);
        return 1;
    }
    return 0;
}

int srv_block_is_blocked(const srv_conn *c)
{
    const bk_waiter *x = state_of(c);

    return x && x->state != BK_IDLE;
}

unsigned srv_block_count(void) { return bk.nblocked; }

void srv_block_debug_register_sleep(int64_t ms) { bk.register_sleep_ms = ms; }

void srv_block_db_changed(srv_conn *c, unsigned db) { srv_keys_db_changed(db); }

/* ---- the service ---- */

static void service_start(srv_worker *w)
{
    bk.w = w;
    atomic_store(&w->stats->blocked_clients, 0); /* a respawn's gauge */
    srv_keys_want_created(ST_TYPE_LIST);
    srv_keys_want_created(ST_TYPE_ZSET);
    srv_keys_want_created(ST_TYPE_STREAM); /* st_stream_signal too */
    srv_keys_on_ready(on_ready);
    srv_keys_on_committing(on_committing);
    bk.ev_poll = srv_worker_io_event(w, -1, 0, on_poll, NULL);
    if (srv_link_register(&link_feature))
        srv_log(SRV_LOG_WARNING, 0,
                "blocking commands could not join the "
                "link");
}

static void service_stop(srv_worker *w)
{
    srv_keys_on_ready(NULL);
    srv_keys_on_committing(NULL);
    if (bk.ev_poll) {
        event_free(bk.ev_poll);
        bk.ev_poll = NULL;
    }
    queue_free(&bk.pending);
    queue_free(&bk.reg);
    queue_free(&bk.retry);
    queue_free(&bk.resume);
    free(bk.ready);
    bk.ready = NULL;
    bk.nready = bk.capready = 0;
    srv_buf_free(&bk.names);
    srv_dict_clear(&bk.tokens, NULL);
    bk.w = NULL;
}

const srv_service srv_block_service = {
    .name = "block",
    .start = service_start,
    .stop = service_stop,
};
