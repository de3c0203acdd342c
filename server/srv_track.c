/*
 * srv_track.c - CLIENT TRACKING across workers (see the header).
 *
 * Per worker:
 *  - each client that ever asked for tracking has a state (hooks): its
 *    mode, redirection, BCAST prefixes; the states are found by client
 *    id in `byid`;
 *  - `keys`: the keys read by default-mode clients, each with the ids of
 *    the clients that read it since it was last invalidated (as Redis's
 *    TrackingTable: one table for every database; an id stays until its
 *    key is invalidated, and a client that no longer tracks is skipped
 *    then);
 *  - `bcast`: the clients in BCAST mode, whose prefixes every
 *    invalidated key is matched against.
 *
 * Invalidations come from the broker (INVAL frames: every write of every
 * worker while this worker has tracking clients, in commit order), or
 * from this worker's own commits while the broker is away. A client
 * redirecting to a client of another worker has its messages sent as a
 * TOCLIENT frame, delivered by that client's worker.
 *
 * Starting: a write decides whether to record its keys for tracking
 * (srv_notify_wanted) while it holds LMDB's write lock. When the first
 * client of a worker starts tracking, the worker counts it in the shared
 * gauge, tells the broker its interest (written out), then takes and
 * releases the write lock once: a write that saw no tracker has then
 * committed, so the client's reads (which come after, in a new snapshot)
 * see it, and every later write records its keys and reaches the broker
 * after the interest.
 */
#include "server/srv_track.h"
#include "server/cmd/srv_args.h"
#include "server/cmd/srv_cmd.h"
#include "server/cmd/srv_multi.h"
#include "server/srv_ask.h"
#include "server/srv_bproto.h"
#include "server/srv_buf.h"
#include "server/srv_dict.h"
#include "server/srv_group.h"
#include "server/srv_heritage.h"
#include "server/srv_hooks.h"
#include "server/srv_keys.h"
#include "server/srv_link.h"
#include "server/srv_log.h"
#include "server/srv_reply.h"
#include "server/srv_util.h"
#include "storage/st_txn.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A state's flags (CLIENT TRACKINGINFO's). */
#define T_ON 0x01u
#define T_BCAST 0x02u
#define T_OPTIN 0x04u
#define T_OPTOUT 0x08u
#define T_NOLOOP 0x10u
#define T_CACHING 0x20u /* CLIENT CACHING YES / NO for the next command */
#define T_BROKEN 0x40u  /* the redirection's client is gone */
#define T_REMOTE 0x80u  /* the redirection's client is on another worker */
#define T_MODES (T_BCAST | T_OPTIN | T_OPTOUT | T_NOLOOP)

#define IDS_MIN 2
#define BCAST_MIN 4
#define BUF_KEEP (64 * 1024)
#define LINK_FLUSH_MS 100
#define RESP3 3

/* A BCAST prefix, with the keys invalidated under it in this batch. */
typedef struct prefix {
    char *p;
    size_t n;
    srv_buf keys; /* fields */
    size_t nkeys;
} prefix;

/* CLIENT TRACKING's options, parsed (kept while the redirection's
 * existence is asked of every worker). */
typedef struct opts {
    int on;
    unsigned modes;
    uint64_t redirect;
    srv_buf prefixes; /* fields */
    size_t nprefixes;
    const char *late_error; /* an error of an option after REDIRECT */
} opts;

typedef struct track {
    srv_conn *c;
    unsigned flags;
    uint64_t redirect; /* 0: none */
    prefix *pre;       /* sorted (Redis lists them in order) */
    size_t npre;
    srv_dict_entry *de; /* in tk.byid */
    opts pending;
} track;

/* The ids that read a key (a `keys` entry's val). */
typedef struct ids {
    size_t n, cap;
    uint64_t id[];
} ids;

static struct {
    srv_worker *w;
    srv_dict byid; /* client id (8 bytes) -> track */
    srv_dict keys; /* key -> ids */
    track **bcast;
    size_t nbcast, capbcast;
    uint64_t ntracking; /* with T_ON, on this worker */
    srv_buf msg;        /* one message's value */
    srv_buf frame;
} tk;

static const srv_hooks track_hooks;

static track *track_of(const srv_conn *c)
{
    return srv_hooks_state(&c->hooks, &track_hooks);
}

static track *by_id(uint64_t id)
{
    srv_dict_entry *e = srv_dict_find(&tk.byid, &id, sizeof id,
                                      srv_dict_hash(&id, sizeof id));
    return e ? e->val : NULL;
}

static srv_conn *local_conn(uint64_t id)
{
    for (srv_conn *x = tk.w ? tk.w->clients : NULL; x; x = x->next)
        if (x->id == id)
            return x;
    return NULL;
}

/* ---- messages ---- */

/* Append raw RESP to x and have it written. */
static void push_raw(srv_conn *x, const char *head, size_t hlen,
                     const char *body, size_t blen)
{
    if (x->flags & SRV_CONN_CLOSE_ASAP)
        return;
    if (srv_buf_reserve(&x->out, hlen + blen)) {
        x->flags |= SRV_CONN_CLOSE_ASAP;
        return;
    }
    srv_reply_raw(x, head, hlen);
    srv_reply_raw(x, body, blen);
    srv_group_wake(&x->worker->group, x, 0);
}

static const char PUSH_HEAD[] = ">2\r\n$10\r\ninvalidate\r\n";
static const char MESSAGE_HEAD[] =
    "*3\r\n$7\r\nmessage\r\n$20\r\n__redis__:invalidate\r\n";

/* An invalidation message whose value (an array of keys or a null) is
 * `body`, to client x as Redis sends it: a RESP3 push, or a message of
 * __redis__:invalidate to a RESP2 client that is subscribed and is a
 * redirection (`redirected`); nothing otherwise. */
static void deliver(srv_conn *x, int redirected, const char *body, size_t blen)
{
    if (x->resp >= RESP3)
        push_raw(x, PUSH_HEAD, sizeof PUSH_HEAD - 1, body, blen);
    else if (redirected && (x->flags & SRV_CONN_SUBSCRIBED))
        push_raw(x, MESSAGE_HEAD, sizeof MESSAGE_HEAD - 1, body, blen);
}

/* The message whose value is tk.msg, for tracking client t. */
static void send_message(track *t)
{
    srv_conn *to;

    if (!t->redirect) {
        deliver(t->c, 0, tk.msg.data, tk.msg.len);
        return;
    }
    if ((to = local_conn(t->redirect))) {
        deliver(to, 1, tk.msg.data, tk.msg.len);
        return;
    }
    if ((t->flags & T_REMOTE) && srv_link_up() &&
        srv_link_put(SRV_BP_TOCLIENT, 0, t->redirect, tk.msg.data, tk.msg.len,
                     NULL, 0) == 0)
        return;
    /* Nobody has it: Redis marks the redirection broken and says so. */
    t->flags |= T_BROKEN;
    if (t->c->resp >= RESP3) {
        char body[64];
        int n = snprintf(body, sizeof body,
                         ">2\r\n$21\r\ntracking-redir-broken\r\n:%llu\r\n",
                         (unsigned long long)t->redirect);
        push_raw(t->c, "", 0, body, (size_t)n);
    }
}

static int msg_begin(long long n)
{
    char head[32];
    int len = snprintf(head, sizeof head, "*%lld\r\n", n);

    tk.msg.len = 0;
    return srv_buf_append(&tk.msg, head, (size_t)len);
}

static int msg_key(const char *key, size_t len)
{
    char head[32];
    int n = snprintf(head, sizeof head, "$%zu\r\n", len);

    return srv_buf_append(&tk.msg, head, (size_t)n) ||
                   srv_buf_append(&tk.msg, key, len) ||
                   srv_buf_append(&tk.msg, "\r\n", 2)
               ? -1
               : 0;
}

/* A one-key message for t. */
static void send_key(track *t, const char *key, size_t len)
{
    if (msg_begin(1) || msg_key(key, len)) {
        srv_log(SRV_LOG_WARNING, ENOMEM, "a tracking invalidation");
        return;
    }
    send_message(t);
}

/* Everything is invalid (FLUSHALL, a lost broker): a null, in the
 * tracking client's protocol as Redis writes it. */
static void send_flush(track *t)
{
    tk.msg.len = 0;
    if (srv_buf_append(&tk.msg, t->c->resp >= RESP3 ? "_\r\n" : "$-1\r\n",
                       t->c->resp >= RESP3 ? 3 : 5) == 0)
        send_message(t);
}

/* ---- the keys read ---- */

static void ids_free(srv_dict_entry *e) { free(e->val); }

/* srv_cmd_each_key's callback: key argv[pos] of the client ctx. */
static int remember(void *ctx, int pos, unsigned flags)
{
    srv_conn *c = ctx;
    const srv_slice *key = &c->argv[pos];
    uint64_t h = srv_dict_hash(key->ptr, key->len);
    srv_dict_entry *e = srv_dict_find(&tk.keys, key->ptr, key->len, h);
    ids *s;

    if (!e && !(e = srv_dict_add(&tk.keys, key->ptr, key->len, h)))
        goto oom;
    s = e->val;
    for (size_t i = 0; s && i < s->n; i++)
        if (s->id[i] == c->id)
            return 0;
    if (!s || s->n == s->cap) {
        size_t cap = s ? s->cap * 2 : IDS_MIN;
        ids *g = realloc(s, sizeof *g + cap * sizeof g->id[0]);
        if (!g) {
            if (!s)
                srv_dict_remove(&tk.keys, e);
            goto oom;
        }
        if (!s)
            g->n = 0;
        g->cap = cap;
        e->val = s = g;
    }
    s->id[s->n++] = c->id;
    return 0;
oom:
    srv_log(SRV_LOG_WARNING, ENOMEM, "a key a tracking client read");
    return 0;
}

void srv_track_after(srv_conn *c, int top)
{
    track *t = track_of(c);
    const srv_command *cmd = c->cmd;

    if (!t)
        return;
    if (top) {
        /* Redis forgets CLIENT CACHING after the next command (or
         * transaction), CLIENT's own subcommands aside. */
        if (srv_multi_queued(c) < 0 &&
            !(cmd && strncmp(cmd->name, "client", 6) == 0))
            t->flags &= ~T_CACHING;
        if (!(t->flags & (T_ON | T_CACHING)))
            c->flags &= ~SRV_CONN_TRACKING;
        return;
    }
    if ((t->flags & (T_ON | T_BCAST)) != T_ON || !cmd ||
        !(cmd->flags & F_READONLY) || (cmd->flags & F_PUBSUB))
        return;
    if (((t->flags & T_OPTIN) && !(t->flags & T_CACHING)) ||
        ((t->flags & T_OPTOUT) && (t->flags & T_CACHING)))
        return;
    srv_cmd_each_key(cmd, c->argc, c->argv, remember, c);
}

/* ---- invalidations ---- */

static int has_prefix(const char *key, size_t klen, const prefix *p)
{
    return klen >= p->n && memcmp(key, p->p, p->n) == 0;
}

/* A key for the BCAST clients (batched per prefix until bcast_send). */
static void bcast_key(uint64_t writer, const char *key, size_t klen)
{
    for (size_t i = 0; i < tk.nbcast; i++) {
        track *t = tk.bcast[i];
        if ((t->flags & T_NOLOOP) && writer == t->c->id)
            continue;
        for (size_t j = 0; j < t->npre; j++) {
            prefix *p = &t->pre[j];
            if (!has_prefix(key, klen, p))
                continue;
            if (srv_bproto_put_field(&p->keys, key, klen))
                srv_log(SRV_LOG_WARNING, ENOMEM, "a tracking invalidation");
            else
                p->nkeys++;
        }
    }
}

typedef struct kref {
    const char *p;
    size_t n;
} kref;

static int kref_cmp(const void *a, const void *b)
{
    const kref *x = a, *y = b;
    size_t n = x->n < y->n ? x->n : y->n;
    int d = memcmp(x->p, y->p, n);

    return d ? d : (x->n > y->n) - (x->n < y->n);
}

/* One message per prefix with keys: its distinct keys in order (Redis
 * keeps them in a radix tree). */
static void bcast_send(void)
{
    for (size_t i = 0; i < tk.nbcast; i++) {
        track *t = tk.bcast[i];
        for (size_t j = 0; j < t->npre; j++) {
            prefix *p = &t->pre[j];
            srv_bframe f = { .body = p->keys.data, .len = p->keys.len };
            srv_bcursor cur;
            kref *k;
            size_t n = 0, distinct = 0;
            if (!p->nkeys)
                continue;
            if (!(k = malloc(p->nkeys * sizeof *k))) {
                srv_log(SRV_LOG_WARNING, ENOMEM, "tracking invalidations");
                goto next;
            }
            srv_bproto_cursor(&cur, &f);
            while (n < p->nkeys &&
                   srv_bproto_get_field(&cur, &k[n].p, &k[n].n) == 0)
                n++;
            qsort(k, n, sizeof *k, kref_cmp);
            for (size_t m = 0; m < n; m++)
                if (m == 0 || kref_cmp(&k[m - 1], &k[m]))
                    k[distinct++] = k[m];
            if (msg_begin((long long)distinct) == 0) {
                size_t m = 0;
                while (m < distinct && msg_key(k[m].p, k[m].n) == 0)
                    m++;
                if (m == distinct)
                    send_message(t);
            }
            free(k);
        next:
            p->keys.len = 0;
            p->nkeys = 0;
            srv_buf_trim(&p->keys, BUF_KEEP);
        }
    }
}

/* Key `key` was written by client `writer` (0: expiry): the default-mode
 * clients that read it hear of it once, and forget it. */
static void invalidate_key(uint64_t writer, const char *key, size_t klen)
{
    srv_dict_entry *e;
    ids *s;

    if (tk.nbcast)
        bcast_key(writer, key, klen);
    e = srv_dict_find(&tk.keys, key, klen, srv_dict_hash(key, klen));
    if (!e)
        return;
    s = e->val;
    for (size_t i = 0; s && i < s->n; i++) {
        track *t = by_id(s->id[i]);
        if (!t || (t->flags & (T_ON | T_BCAST)) != T_ON)
            continue;
        if ((t->flags & T_NOLOOP) && writer == s->id[i])
            continue;
        send_key(t, key, klen);
    }
    free(s);
    srv_dict_remove(&tk.keys, e);
}

/* Every tracking client forgets everything. */
static void invalidate_all(void)
{
    srv_dict_iter it;
    srv_dict_entry *e;

    srv_dict_iter_init(&it, &tk.byid);
    while ((e = srv_dict_iter_next(&it))) {
        track *t = e->val;
        if (t->flags & T_ON)
            send_flush(t);
    }
    srv_dict_clear(&tk.keys, ids_free);
}

static void invalidate(uint64_t writer, int all, const char *key, size_t klen)
{
    if (all)
        invalidate_all();
    else
        invalidate_key(writer, key, klen);
}

/* This worker's own write while the broker is away. */
static void on_local(uint64_t writer, int all, const char *key, size_t len)
{
    if (!tk.ntracking)
        return;
    invalidate(writer, all, key, len);
    bcast_send();
}

/* ---- the count of tracking clients ---- */

static void tell_count(void)
{
    srv_link_put(SRV_BP_INTEREST, SRV_BP_I_TRACKING, tk.ntracking, NULL, 0,
                 NULL, 0);
}

/* A write that did not see a tracker has committed once this returns
 * (see the top). */
static void fence(srv_conn *c)
{
    st_txn *t = NULL;

    if (c->worker->group.wtxn || !c->worker->env)
        return; /* we hold the lock: no other write is in flight */
    if (st_txn_begin(c->worker->env, 1, &t) == 0)
        st_txn_abort(&t);
}

static void count_on(srv_conn *c)
{
    atomic_fetch_add(&srv_her.stats->trackers, 1);
    atomic_fetch_add(&c->worker->stats->tracking_clients, 1);
    if (tk.ntracking++)
        return;
    tell_count();
    srv_link_flush_wait(LINK_FLUSH_MS);
    fence(c);
}

static void count_off(srv_conn *c)
{
    atomic_fetch_sub(&srv_her.stats->trackers, 1);
    atomic_fetch_sub(&c->worker->stats->tracking_clients, 1);
    if (--tk.ntracking == 0)
        tell_count();
}

/* ---- modes ---- */

static void bcast_remove(track *t)
{
    for (size_t i = 0; i < tk.nbcast; i++)
        if (tk.bcast[i] == t) {
            tk.bcast[i] = tk.bcast[--tk.nbcast];
            break;
        }
}

static void prefixes_free(track *t)
{
    for (size_t i = 0; i < t->npre; i++) {
        free(t->pre[i].p);
        srv_buf_free(&t->pre[i].keys);
    }
    free(t->pre);
    t->pre = NULL;
    t->npre = 0;
}

static void disable(track *t)
{
    if (t->flags & T_BCAST) {
        bcast_remove(t);
        prefixes_free(t);
    }
    if (t->flags & T_ON)
        count_off(t->c);
    t->flags = 0;
    t->redirect = 0;
    t->c->flags &= ~SRV_CONN_TRACKING;
}

static int prefix_cmp(const void *a, const void *b)
{
    const prefix *x = a, *y = b;
    kref kx = { x->p, x->n }, ky = { y->p, y->n };

    return kref_cmp(&kx, &ky);
}

static int add_prefix(track *t, const char *p, size_t n)
{
    prefix *g = realloc(t->pre, (t->npre + 1) * sizeof *g);

    if (!g)
        return -1;
    t->pre = g;
    memset(&g[t->npre], 0, sizeof g[t->npre]);
    if (!(g[t->npre].p = malloc(n ? n : 1)))
        return -1;
    memcpy(g[t->npre].p, p, n);
    g[t->npre].n = n;
    t->npre++;
    qsort(t->pre, t->npre, sizeof *t->pre, prefix_cmp);
    return 0;
}

static int overlap(const char *a, size_t an, const char *b, size_t bn)
{
    return memcmp(a, b, an < bn ? an : bn) == 0;
}

/* Redis's prefix checks: none may overlap an existing one or a later
 * one given. 0, or -1 with the error replied. */
static int check_prefixes(srv_conn *c, track *t, const opts *o)
{
    srv_bframe f = { .body = o->prefixes.data, .len = o->prefixes.len };
    srv_bcursor cur, later;
    const char *p, *q;
    size_t pn, qn;

    srv_bproto_cursor(&cur, &f);
    while (srv_bproto_get_field(&cur, &p, &pn) == 0) {
        for (size_t i = 0; i < t->npre; i++)
            if (overlap(t->pre[i].p, t->pre[i].n, p, pn)) {
                srv_reply_errorf(c,
                                 "ERR Prefix '%.*s' overlaps with an "
                                 "existing prefix '%.*s'. Prefixes for a "
                                 "single client must not overlap.",
                                 (int)pn, p, (int)t->pre[i].n, t->pre[i].p);
                return -1;
            }
        later = cur;
        while (srv_bproto_get_field(&later, &q, &qn) == 0)
            if (overlap(p, pn, q, qn)) {
                srv_reply_errorf(c,
                                 "ERR Prefix '%.*s' overlaps with another "
                                 "provided prefix '%.*s'. Prefixes for a "
                                 "single client must not overlap.",
                                 (int)pn, p, (int)qn, q);
                return -1;
            }
    }
    return 0;
}

/* ON with options o: Redis's checks, then the change. */
static void enable(srv_conn *c, track *t, const opts *o)
{
    srv_bframe f = { .body = o->prefixes.data, .len = o->prefixes.len };
    srv_bcursor cur;
    const char *p;
    size_t pn;

    if (!(o->modes & T_BCAST) && o->nprefixes) {
        srv_reply_error(c, "ERR PREFIX option requires BCAST mode to be "
                           "enabled");
        return;
    }
    if ((t->flags & T_ON) && (t->flags & T_BCAST) != (o->modes & T_BCAST)) {
        srv_reply_error(c, "ERR You can't switch BCAST mode on/off before "
                           "disabling tracking for this client, and then "
                           "re-enabling it with a different mode.");
        return;
    }
    if ((o->modes & T_BCAST) && (o->modes & (T_OPTIN | T_OPTOUT))) {
        srv_reply_error(c, "ERR OPTIN and OPTOUT are not compatible with "
                           "BCAST");
        return;
    }
    if ((o->modes & T_OPTIN) && (o->modes & T_OPTOUT)) {
        srv_reply_error(c, "ERR You can't specify both OPTIN mode and "
                           "OPTOUT mode");
        return;
    }
    if (((o->modes & T_OPTIN) && (t->flags & T_OPTOUT)) ||
        ((o->modes & T_OPTOUT) && (t->flags & T_OPTIN))) {
        srv_reply_error(c, "ERR You can't switch OPTIN/OPTOUT mode before "
                           "disabling tracking for this client, and then "
                           "re-enabling it with a different mode.");
        return;
    }
    if ((o->modes & T_BCAST) && check_prefixes(c, t, o))
        return;
    if ((o->modes & T_BCAST) && !(t->flags & T_BCAST)) {
        if (tk.nbcast == tk.capbcast) {
            size_t cap = tk.capbcast ? tk.capbcast * 2 : BCAST_MIN;
            track **g = realloc(tk.bcast, cap * sizeof *g);
            if (!g) {
                srv_reply_error(c, "ERR out of memory");
                return;
            }
            tk.bcast = g;
            tk.capbcast = cap;
        }
        tk.bcast[tk.nbcast++] = t;
    }
    if (o->modes & T_BCAST) {
        int rc = 0;
        if (!o->nprefixes)
            rc = add_prefix(t, "", 0);
        srv_bproto_cursor(&cur, &f);
        while (rc == 0 && srv_bproto_get_field(&cur, &p, &pn) == 0)
            rc = add_prefix(t, p, pn);
        if (rc) {
            srv_reply_error(c, "ERR out of memory");
            return;
        }
    }
    if (!(t->flags & T_ON))
        count_on(c);
    t->flags = (t->flags & T_CACHING) | T_ON | o->modes;
    if (o->redirect && !local_conn(o->redirect))
        t->flags |= T_REMOTE; /* its messages go through the broker */
    t->redirect = o->redirect;
    c->flags |= SRV_CONN_TRACKING;
    srv_reply_ok(c);
}

static void finish(srv_conn *c, track *t)
{
    opts *o = &t->pending;

    if (o->late_error)
        srv_reply_error(c, o->late_error);
    else if (o->on)
        enable(c, t, o);
    else {
        disable(t);
        srv_reply_ok(c);
    }
    o->prefixes.len = 0;
    o->nprefixes = 0;
    srv_buf_trim(&o->prefixes, BUF_KEEP);
}

/* The answer to "does the redirection's client exist". */
static void exists_answered(srv_conn *c, const char *ans, size_t len)
{
    track *t = track_of(c);

    if (!t)
        return;
    if (!srv_ask_count(ans, len)) {
        srv_reply_error(c, "ERR The client ID you want redirect to does "
                           "not exist");
        t->pending.prefixes.len = 0;
        t->pending.nprefixes = 0;
        return;
    }
    finish(c, t);
}

static track *attach(srv_conn *c)
{
    track *t = track_of(c);
    uint64_t id = c->id;

    if (t)
        return t;
    if (!(t = calloc(1, sizeof *t)))
        return NULL;
    t->c = c;
    t->de = srv_dict_add(&tk.byid, &id, sizeof id,
                         srv_dict_hash(&id, sizeof id));
    if (!t->de || srv_hooks_attach(&c->hooks, &track_hooks, t)) {
        if (t->de)
            srv_dict_remove(&tk.byid, t->de);
        free(t);
        return NULL;
    }
    t->de->val = t;
    return t;
}

void srv_track_command(srv_conn *c)
{
    const srv_slice *a = c->argv;
    track *t = attach(c);
    opts *o;
    int redirect_at = 0;
    long long id;

    if (!t) {
        srv_reply_error(c, "ERR out of memory");
        return;
    }
    o = &t->pending;
    o->modes = 0;
    o->redirect = 0;
    o->prefixes.len = 0;
    o->nprefixes = 0;
    o->late_error = NULL;
    for (int j = 3; j < c->argc; j++) {
        int more = c->argc - 1 - j;
        const char *err = NULL;
        if (srv_util_streq(a[j].ptr, a[j].len, "redirect") && more) {
            j++;
            if (o->redirect)
                err = "ERR A client can only redirect to a single other "
                      "client";
            else if (!srv_util_str2ll(a[j].ptr, a[j].len, &id))
                err = "ERR value is not an integer or out of range";
            else if (!redirect_at) {
                o->redirect = (uint64_t)id;
                redirect_at = j;
                if (!id || local_conn((uint64_t)id))
                    redirect_at = -1; /* answered here */
                if (!id) {
                    srv_reply_error(c, "ERR The client ID you want redirect "
                                       "to does not exist");
                    return;
                }
            }
        } else if (srv_util_streq(a[j].ptr, a[j].len, "bcast")) {
            o->modes |= T_BCAST;
        } else if (srv_util_streq(a[j].ptr, a[j].len, "optin")) {
            o->modes |= T_OPTIN;
        } else if (srv_util_streq(a[j].ptr, a[j].len, "optout")) {
            o->modes |= T_OPTOUT;
        } else if (srv_util_streq(a[j].ptr, a[j].len, "noloop")) {
            o->modes |= T_NOLOOP;
        } else if (srv_util_streq(a[j].ptr, a[j].len, "prefix") && more) {
            j++;
            if (srv_bproto_put_field(&o->prefixes, a[j].ptr, a[j].len)) {
                srv_reply_error(c, "ERR out of memory");
                return;
            }
            o->nprefixes++;
        } else {
            err = SRV_ERR_SYNTAX;
        }
        if (err) {
            if (redirect_at > 0) {
                o->late_error = err; /* after the existence's */
                break;
            }
            srv_reply_error(c, err);
            return;
        }
    }
    if (srv_util_streq(a[2].ptr, a[2].len, "on"))
        o->on = 1;
    else if (srv_util_streq(a[2].ptr, a[2].len, "off"))
        o->on = 0;
    else if (!o->late_error)
        o->late_error = SRV_ERR_SYNTAX;
    if (redirect_at > 0) {
        /* Does the redirection's client exist on some worker? (the
         * clients service answers the question, srv_clients.h) */
        tk.frame.len = 0;
        if (srv_bproto_put_u64(&tk.frame, o->redirect)) {
            srv_reply_error(c, "ERR out of memory");
            return;
        }
        srv_ask(c, SRV_BP_Q_EXISTS, tk.frame.data, tk.frame.len,
                exists_answered);
    } else
        finish(c, t);
}

void srv_track_caching(srv_conn *c)
{
    track *t = track_of(c);
    const srv_slice *v = &c->argv[2];

    if (!t || !(t->flags & T_ON)) {
        srv_reply_error(c, "ERR CLIENT CACHING can be called only when the "
                           "client is in tracking mode with OPTIN or OPTOUT "
                           "mode enabled");
        return;
    }
    if (srv_util_streq(v->ptr, v->len, "yes")) {
        if (!(t->flags & T_OPTIN)) {
            srv_reply_error(c, "ERR CLIENT CACHING YES is only valid when "
                               "tracking is enabled in OPTIN mode.");
            return;
        }
    } else if (srv_util_streq(v->ptr, v->len, "no")) {
        if (!(t->flags & T_OPTOUT)) {
            srv_reply_error(c, "ERR CLIENT CACHING NO is only valid when "
                               "tracking is enabled in OPTOUT mode.");
            return;
        }
    } else {
        srv_reply_error(c, SRV_ERR_SYNTAX);
        return;
    }
    t->flags |= T_CACHING;
    srv_reply_ok(c);
}

void srv_track_getredir(srv_conn *c)
{
    track *t = track_of(c);

    srv_reply_int(c, t && (t->flags & T_ON) ? (long long)t->redirect : -1);
}

void srv_track_info(srv_conn *c)
{
    track *t = track_of(c);
    unsigned f = t ? t->flags : 0;
    const char *names[8];
    int n = 0;

    if (!(f & T_ON))
        names[n++] = "off";
    else {
        names[n++] = "on";
        if (f & T_BCAST)
            names[n++] = "bcast";
        if (f & T_OPTIN) {
            names[n++] = "optin";
            if (f & T_CACHING)
                names[n++] = "caching-yes";
        } else if (f & T_OPTOUT) {
            names[n++] = "optout";
            if (f & T_CACHING)
                names[n++] = "caching-no";
        }
        if (f & T_NOLOOP)
            names[n++] = "noloop";
        if (f & T_BROKEN)
            names[n++] = "broken_redirect";
    }
    srv_reply_map(c, 3);
    srv_reply_bulk_cstr(c, "flags");
    srv_reply_set(c, n);
    for (int i = 0; i < n; i++)
        srv_reply_bulk_cstr(c, names[i]);
    srv_reply_bulk_cstr(c, "redirect");
    srv_reply_int(c, (f & T_ON) ? (long long)t->redirect : -1);
    srv_reply_bulk_cstr(c, "prefixes");
    srv_reply_array(c, t ? (long long)t->npre : 0);
    for (size_t i = 0; t && i < t->npre; i++)
        srv_reply_bulk(c, t->pre[i].p, t->pre[i].n);
}

long long srv_track_list(const srv_conn *c, char **flags)
{
    track *t = track_of(c);
    char *p;

    if (!t || !(t->flags & T_ON))
        return -1;
    if (!flags)
        return (long long)t->redirect;
    p = *flags;
    *p++ = 't';
    if (t->flags & T_BROKEN)
        *p++ = 'R';
    if (t->flags & T_BCAST)
        *p++ = 'B';
    *flags = p;
    return (long long)t->redirect;
}

/* ---- hooks, link, service ---- */

static void on_close(srv_conn *c, void *state)
{
    track *t = state;

    disable(t);
    srv_buf_free(&t->pending.prefixes);
    srv_dict_remove(&tk.byid, t->de);
    free(t);
}

/* RESET turns tracking off (Redis's clearClientConnectionState). */
static void on_reset(srv_conn *c, void *state)
{
    track *t = state;

    disable(t);
    t->flags = 0;
}

static const srv_hooks track_hooks = {
    .name = "tracking",
    .reset = on_reset,
    .close = on_close,
};

static int on_inval(const srv_bframe *f)
{
    srv_bcursor cur;
    uint64_t writer, all;
    const char *key;
    size_t klen;

    srv_bproto_cursor(&cur, f);
    while (cur.p < cur.end) {
        if (srv_bproto_get_u64(&cur, &writer) ||
            srv_bproto_get_u64(&cur, &all) ||
            srv_bproto_get_field(&cur, &key, &klen))
            return -1;
        if (tk.ntracking)
            invalidate(writer, all != 0, key, klen);
    }
    bcast_send();
    return 0;
}

static int on_frame(const srv_bframe *f)
{
    srv_conn *x;

    switch (f->type) {
    case SRV_BP_INVAL: return on_inval(f);
    case SRV_BP_TOCLIENT:
        if ((x = local_conn(f->arg)))
            deliver(x, 1, f->body, (size_t)f->len);
        return 0;
    default: return -1;
    }
}

/* A new connection to the broker: it learns the count again, and every
 * tracking client forgets everything (writes of other workers went
 * unheard while there was none). */
static void on_resend(void)
{
    if (!tk.ntracking)
        return;
    tell_count();
    invalidate_all();
}

static const int link_types[] = { SRV_BP_INVAL, SRV_BP_TOCLIENT, 0 };

static const srv_link_feature link_feature = {
    .name = "tracking",
    .types = link_types,
    .resend = on_resend,
    .frame = on_frame,
};

static void service_start(srv_worker *w)
{
    tk.w = w;
    srv_keys_on_inval(on_local);
    if (srv_link_register(&link_feature))
        srv_log(SRV_LOG_WARNING, 0, "client tracking could not join the link");
}

static void service_stop(srv_worker *w)
{
    srv_dict_clear(&tk.keys, ids_free);
    free(tk.bcast);
    tk.bcast = NULL;
    tk.nbcast = tk.capbcast = 0;
    srv_buf_free(&tk.msg);
    srv_buf_free(&tk.frame);
    srv_keys_on_inval(NULL);
    tk.w = NULL;
}

const srv_service srv_track_service = {
    .name = "tracking",
    .start = service_start,
    .stop = service_stop,
};
