/*
 * srv_pubsub.c - a worker's side of pub/sub.
 *
 * Local state: per kind a table from name to the worker's clients
 * subscribed to it (ps_entry, an array of connections), and per client a
 * table from name to (that ps_entry, the client's index in its array), so
 * subscribing, unsubscribing and dropping a closing client are O(1) per
 * name. Whenever a name's local count changes the broker is sent the new
 * count (absolute, so a resend is harmless).
 *
 * The broker is reached through the worker's link (srv_link.h), of which
 * pub/sub is a feature: on each new connection it sends every local count
 * again. Only an UP link carries PUBLISH and PUBSUB queries; otherwise the
 * worker answers from what it has (its own subscribers), so nothing waits
 * for a broker that is being respawned.
 *
 * Requests to the broker are answered in order on the stream, so the
 * waiting ones form a FIFO queue. The link hands the broker's frames over
 * after the group's commit, so a message or an answer appended to a
 * connection is never discarded by a later rewind of the group.
 *
 * Delivery costs no allocation per message: the frame is parsed in place
 * in the link's input buffer and each subscriber's push is appended to its
 * output buffer (both grow by doubling and are kept).
 */
#include "server/srv_pubsub.h"
#include "server/cmd/srv_cmd.h"
#include "server/srv_bproto.h"
#include "server/srv_dict.h"
#include "server/srv_group.h"
#include "server/srv_heritage.h"
#include "server/srv_hooks.h"
#include "server/srv_link.h"
#include "server/srv_log.h"
#include "server/srv_reply.h"
#include "server/srv_util.h"
#include "server/srv_worker.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define BUF_KEEP (64 * 1024)
#define SUBS_MIN 4
#define QUEUE_MIN 16
#define RESUME_MIN 16
/* A push's fixed bytes: its array header, "pmessage", three CRLFs. */
#define PUSH_FIXED_MAX 32
#define PUSH_BULK_HEADS 4

/* A name with subscribers on this worker. */
typedef struct ps_entry {
    srv_dict_entry *de; /* its entry in ps.local[kind] */
    unsigned n, cap;
    srv_conn **subs;
} ps_entry;

/* A client's subscriptions, attached to it (srv_hooks.h) at its first
 * subscription or broker request and kept until it closes. */
struct srv_pubsub_client {
    srv_dict names[SRV_PS_KINDS]; /* name -> ps_entry (val), index (aux) */
    size_t n[SRV_PS_KINDS];       /* live subscriptions per kind */
    /* messages its scripts published since its last commit, sent when
     * that commit holds (records: u64 kind, field channel, field
     * message, as srv_bproto's fields) */
    srv_buf held;
};

/* A request waiting for the broker's answer. */
typedef struct ps_pending {
    srv_conn *c;  /* NULL once its client is gone */
    int query;    /* 0: PUBLISH; else SRV_PS_Q_* */
    int deferred; /* a feature keeps a place for the count
                   * (EXEC's reply): it is told, not c */
    int kind;
    int nargs;
    srv_slice *args; /* a copy, to answer without the broker */
} ps_pending;

static struct {
    srv_dict local[SRV_PS_KINDS];
    /* requests sent, oldest first: a ring */
    ps_pending *q;
    size_t qhead, qlen, qcap;
    /* connections this dispatch unblocked */
    srv_conn **resume;
    size_t nresume, resume_cap;
} ps;

/* ---- replies ---- */

void srv_pubsub_reply_push(srv_conn *c, long long n)
{
    char buf[SRV_LLSTR_SIZE + 3];
    int len;

    buf[0] = c->resp == 3 ? '>' : '*';
    len = 1 + srv_util_ll2str(buf + 1, n);
    buf[len++] = '\r';
    buf[len++] = '\n';
    srv_reply_raw(c, buf, (size_t)len);
}

/*
 * A push's bytes up to its payload ("*3\r\n$7\r\nmessage\r\n$2\r\nch\r\n
 * $5\r\n"), built once per delivery and copied to each subscriber, whose
 * protocol only changes the first byte. Kept between deliveries.
 */
static srv_buf prefix;

static void append_bulk_head(srv_buf *b, size_t n)
{
    char buf[SRV_LLSTR_SIZE + 3];
    int len;

    buf[0] = '$';
    len = 1 + srv_util_ll2str(buf + 1, (long long)n);
    buf[len++] = '\r';
    buf[len++] = '\n';
    srv_buf_append(b, buf, (size_t)len);
}

static int build_prefix(int kind, const srv_dict_entry *pat, const char *ch,
                        size_t chlen, size_t mlen)
{
    const char *what = pat                    ? "pmessage"
                       : kind == SRV_PS_SHARD ? "smessage"
                                              : "message";

    prefix.len = 0;
    /* All of it at once: the appends below cannot fail. */
    if (srv_buf_reserve(&prefix, chlen + (pat ? pat->klen : 0) +
                                     PUSH_BULK_HEADS * (SRV_LLSTR_SIZE + 3) +
                                     PUSH_FIXED_MAX))
        return -1;
    srv_buf_append(&prefix, pat ? "*4\r\n" : "*3\r\n", 4);
    append_bulk_head(&prefix, strlen(what));
    srv_buf_append(&prefix, what, strlen(what));
    srv_buf_append(&prefix, "\r\n", 2);
    if (pat) {
        append_bulk_head(&prefix, pat->klen);
        srv_buf_append(&prefix, pat->key, pat->klen);
        srv_buf_append(&prefix, "\r\n", 2);
    }
    append_bulk_head(&prefix, chlen);
    srv_buf_append(&prefix, ch, chlen);
    srv_buf_append(&prefix, "\r\n", 2);
    append_bulk_head(&prefix, mlen);
    return 0;
}

/* Push the message whose prefix is built to c. */
static void push_message(srv_conn *c, const char *msg, size_t mlen)
{
    size_t at = c->out.len;

    if (c->flags & SRV_CONN_CLOSE_ASAP)
        return;
    if (srv_buf_reserve(&c->out, prefix.len + mlen + 2)) {
        c->flags |= SRV_CONN_CLOSE_ASAP;
        return;
    }
    srv_reply_raw(c, prefix.data, prefix.len);
    if (c->resp == 3)
        c->out.data[at] = '>';
    srv_reply_raw(c, msg, mlen);
    srv_reply_raw(c, "\r\n", 2);
    srv_group_wake(&c->worker->group, c, 0);
}

/* Push to every local subscriber of one entry (pat: the pattern's entry
 * for a pmessage, else NULL). */
static void push_all(const ps_entry *e, int kind, const srv_dict_entry *pat,
                     const char *ch, size_t chlen, const char *msg, size_t mlen)
{
    if (build_prefix(kind, pat, ch, chlen, mlen)) {
        srv_log(SRV_LOG_WARNING, ENOMEM, "a message to %u subscribers", e->n);
        return;
    }
    for (unsigned i = 0; i < e->n; i++)
        push_message(e->subs[i], msg, mlen);
    prefix.len = 0;
    srv_buf_trim(&prefix, BUF_KEEP); /* after a huge channel name */
}

/* Deliver to this worker's subscribers, Redis's order: the channel's,
 * then each matching pattern's. Returns how many pushes were made. */
static long long deliver_local(int kind, const char *ch, size_t chlen,
                               const char *msg, size_t mlen)
{
    srv_dict_entry *de = srv_dict_find(&ps.local[kind], ch, chlen,
                                       srv_dict_hash(ch, chlen));
    long long n = 0;

    if (de) {
        ps_entry *e = de->val;
        push_all(e, kind, NULL, ch, chlen, msg, mlen);
        n += e->n;
    }
    if (kind == SRV_PS_CHANNEL) {
        srv_dict_iter it;
        srv_dict_iter_init(&it, &ps.local[SRV_PS_PATTERN]);
        while ((de = srv_dict_iter_next(&it))) {
            ps_entry *e = de->val;
            if (!srv_util_glob_match(de->key, de->klen, ch, chlen, 0))
                continue;
            push_all(e, kind, de, ch, chlen, msg, mlen);
            n += e->n;
        }
    }
    return n;
}

long long srv_pubsub_deliver(const char *ch, size_t chlen, const char *msg,
                             size_t mlen)
{
    return deliver_local(SRV_PS_CHANNEL, ch, chlen, msg, mlen);
}

static unsigned local_count(int kind, const char *name, size_t len)
{
    srv_dict_entry *de = srv_dict_find(&ps.local[kind], name, len,
                                       srv_dict_hash(name, len));

    return de ? ((ps_entry *)de->val)->n : 0;
}

/* PUBSUB answers from this worker's state alone (broker unreachable). */
static void answer_local(srv_conn *c, int query, int kind, int nargs,
                         const srv_slice *args)
{
    if (query == SRV_PS_Q_NUMPAT) {
        srv_reply_int(c, (long long)ps.local[SRV_PS_PATTERN].count);
    } else if (query == SRV_PS_Q_NUMSUB) {
        srv_reply_array(c, 2LL * nargs);
        for (int i = 0; i < nargs; i++) {
            srv_reply_bulk(c, args[i].ptr, args[i].len);
            srv_reply_int(c, local_count(kind, args[i].ptr, args[i].len));
        }
    } else {
        size_t mark = srv_reply_defer(c);
        long long n = 0;
        srv_dict_iter it;
        srv_dict_entry *de;
        srv_dict_iter_init(&it, &ps.local[kind]);
        while ((de = srv_dict_iter_next(&it))) {
            if (nargs && !srv_util_glob_match(args[0].ptr, args[0].len, de->key,
                                              de->klen, 0))
                continue;
            srv_reply_bulk(c, de->key, de->klen);
            n++;
        }
        srv_reply_defer_array(c, mark, n);
    }
}

/* How long a turn that changed subscriptions waits for its counts to be
 * written to the broker before its confirmations go out anyway. */
#define COUNT_FLUSH_MS 100

/* Counts were told this turn: they are written before the replies. */
static int counts_told;

/* Tell the broker this worker's count for one name. */
static void link_count(int kind, const srv_dict_entry *de, unsigned n)
{
    if (srv_link_put(SRV_BP_COUNT, kind, n, de->key, de->klen, NULL, 0) == 0)
        counts_told = 1;
}

/* ---- the queue of requests ---- */

static ps_pending *queue_push(void)
{
    if (ps.qlen == ps.qcap) {
        size_t cap = ps.qcap ? ps.qcap * 2 : QUEUE_MIN;
        ps_pending *q = malloc(cap * sizeof *q);
        if (!q)
            return NULL;
        for (size_t i = 0; i < ps.qlen; i++)
            q[i] = ps.q[(ps.qhead + i) % ps.qcap];
        free(ps.q);
        ps.q = q;
        ps.qcap = cap;
        ps.qhead = 0;
    }
    ps_pending *p = &ps.q[(ps.qhead + ps.qlen++) % ps.qcap];
    memset(p, 0, sizeof *p);
    return p;
}

/* Undo the last push (its frame could not be queued). */
static void queue_unpush(void) { ps.qlen--; }

static int queue_pop(ps_pending *out)
{
    if (ps.qlen == 0)
        return -1;
    *out = ps.q[ps.qhead];
    ps.qhead = (ps.qhead + 1) % ps.qcap;
    ps.qlen--;
    return 0;
}

/* An answer was appended to c: it runs its next commands after the
 * frames of this dispatch (see service_settled). */
static void unblock(srv_conn *c)
{
    c->blocked = 0;
    srv_group_wake(&c->worker->group, c, 0);
    if (ps.nresume == ps.resume_cap) {
        size_t cap = ps.resume_cap ? ps.resume_cap * 2 : RESUME_MIN;
        srv_conn **r = realloc(ps.resume, cap * sizeof *r);
        if (!r) {
            /* It runs its input when the client sends more. */
            srv_log(SRV_LOG_WARNING, ENOMEM, "resuming a client");
            return;
        }
        ps.resume = r;
        ps.resume_cap = cap;
    }
    ps.resume[ps.nresume++] = c;
}

/* The broker is gone before answering p: PUBLISH answers 0 (we cannot
 * know who received the message, and Redis's 0 means "no receivers"),
 * queries answer from this worker's state. */
static void answer_lost(ps_pending *p)
{
    if (p->c && p->deferred) {
        if (srv_hooks_deferred(&p->c->hooks, p->c, 0) == 1)
            unblock(p->c);
    } else if (p->c) {
        if (p->query == 0)
            srv_reply_int(p->c, 0);
        else
            answer_local(p->c, p->query, p->kind, p->nargs, p->args);
        unblock(p->c);
    }
    free(p->args);
}

/* ---- the link ---- */

/* The link went down: answer everything that waits for the broker. */
static void link_down(void)
{
    ps_pending p;

    if (ps.qlen)
        srv_log(SRV_LOG_WARNING, 0,
                "%zu pub/sub requests answered without the broker", ps.qlen);
    while (queue_pop(&p) == 0)
        answer_lost(&p);
}

/* A new connection: the broker learns every local count again. */
static void link_resend(void)
{
    for (int k = 0; k < SRV_PS_KINDS; k++) {
        srv_dict_iter it;
        srv_dict_entry *de;
        srv_dict_iter_init(&it, &ps.local[k]);
        while ((de = srv_dict_iter_next(&it)))
            link_count(k, de, ((ps_entry *)de->val)->n);
    }
}

/* ---- frames from the broker ---- */

static int answer_numsub(srv_conn *c, const srv_bframe *f)
{
    srv_bcursor cur;
    const char *name;
    size_t len;
    uint64_t n, pairs = 0;

    srv_bproto_cursor(&cur, f);
    while (cur.p < cur.end) {
        if (srv_bproto_get_field(&cur, &name, &len) ||
            srv_bproto_get_u64(&cur, &n))
            return -1;
        pairs++;
    }
    if (!c)
        return 0;
    srv_reply_array(c, (long long)(2 * pairs));
    srv_bproto_cursor(&cur, f);
    while (cur.p < cur.end) {
        srv_bproto_get_field(&cur, &name, &len);
        srv_bproto_get_u64(&cur, &n);
        srv_reply_bulk(c, name, len);
        srv_reply_int(c, (long long)n);
    }
    return 0;
}

static int answer_channels(srv_conn *c, const srv_bframe *f)
{
    srv_bcursor cur;
    const char *name;
    size_t len;
    uint64_t n = 0;

    srv_bproto_cursor(&cur, f);
    while (cur.p < cur.end) {
        if (srv_bproto_get_field(&cur, &name, &len))
            return -1;
        n++;
    }
    if (n != f->arg)
        return -1;
    if (!c)
        return 0;
    srv_reply_array(c, (long long)n);
    srv_bproto_cursor(&cur, f);
    while (srv_bproto_get_field(&cur, &name, &len) == 0)
        srv_reply_bulk(c, name, len);
    return 0;
}

/* An answer: it belongs to the oldest request. -1: a protocol error. */
static int handle_answer(const srv_bframe *f)
{
    static const int want[] = {
        [SRV_BP_PUBCOUNT] = 0,
        [SRV_BP_R_NUMSUB] = SRV_PS_Q_NUMSUB,
        [SRV_BP_R_CHANNELS] = SRV_PS_Q_CHANNELS,
        [SRV_BP_R_NUMPAT] = SRV_PS_Q_NUMPAT,
    };
    ps_pending p;
    int rc = 0;

    if (queue_pop(&p))
        return -1;
    if (p.query != want[f->type]) {
        answer_lost(&p);
        return -1;
    }
    switch (f->type) {
    case SRV_BP_PUBCOUNT:
        if (p.c && p.deferred) {
            if (srv_hooks_deferred(&p.c->hooks, p.c, (long long)f->arg) == 1)
                unblock(p.c);
            return 0;
        }
        if (p.c)
            srv_reply_int(p.c, (long long)f->arg);
        break;
    case SRV_BP_R_NUMPAT:
        if (p.c)
            srv_reply_int(p.c, (long long)f->arg);
        break;
    case SRV_BP_R_NUMSUB: rc = answer_numsub(p.c, f); break;
    default: rc = answer_channels(p.c, f); break;
    }
    if (rc) {
        answer_lost(&p);
        return -1;
    }
    if (p.c)
        unblock(p.c);
    free(p.args);
    return 0;
}

static int handle_frame(const srv_bframe *f)
{
    switch (f->type) {
    case SRV_BP_DELIVER:
        deliver_local(f->kind, f->body, (size_t)f->arg, f->body + f->arg,
                      (size_t)(f->len - f->arg));
        return 0;
    case SRV_BP_PUBCOUNT:
    case SRV_BP_R_NUMSUB:
    case SRV_BP_R_CHANNELS:
    case SRV_BP_R_NUMPAT: return handle_answer(f);
    default: return -1;
    }
}

/* After the link's frames: the blocked clients that got their answers
 * run their next commands; the messages and answers are all in place
 * first. */
static int link_settled(srv_worker *w)
{
    size_t n = ps.nresume;

    /* A (UN)SUBSCRIBE confirmed to its client must be counted by any
     * PUBLISH or NUMSUB sent after it, from any worker (the broker reads
     * every link before it answers): its COUNT is on the socket before
     * the confirmation, even when a slow broker left the link backed up. */
    if (counts_told) {
        counts_told = 0;
        if (srv_link_flush_wait(COUNT_FLUSH_MS))
            srv_log(SRV_LOG_VERBOSE, 0,
                    "subscription counts not yet written to the broker");
    }

    for (size_t i = 0; i < ps.nresume; i++)
        srv_group_wake(&w->group, ps.resume[i], 1);
    ps.nresume = 0;
    return n > 0;
}

static const int link_types[] = { SRV_BP_DELIVER,  SRV_BP_PUBCOUNT,
                                  SRV_BP_R_NUMSUB, SRV_BP_R_CHANNELS,
                                  SRV_BP_R_NUMPAT, 0 };

static const srv_link_feature link_feature = {
    .name = "pubsub",
    .types = link_types,
    .resend = link_resend,
    .frame = handle_frame,
    .down = link_down,
    .settled = link_settled,
};

static void service_start(srv_worker *w)
{
    if (srv_link_register(&link_feature))
        srv_log(SRV_LOG_WARNING, 0, "pub/sub could not join the link");
}

static void service_stop(srv_worker *w)
{
    ps_pending p;

    while (queue_pop(&p) == 0)
        free(p.args);
    srv_buf_free(&prefix);
    free(ps.q);
    ps.q = NULL;
    ps.qcap = ps.qhead = 0;
    free(ps.resume);
    ps.resume = NULL;
    ps.resume_cap = ps.nresume = 0;
}

/* ---- subscriptions ---- */

static const srv_hooks pubsub_hooks;

/* c's pub/sub state, NULL until its first subscription or request. */
static struct srv_pubsub_client *state_of(const srv_conn *c)
{
    return srv_hooks_state(&c->hooks, &pubsub_hooks);
}

/* c's state, attached now if needed; NULL when out of memory. */
static struct srv_pubsub_client *client_of(srv_conn *c)
{
    struct srv_pubsub_client *pc = state_of(c);

    if (pc)
        return pc;
    if (!(pc = calloc(1, sizeof *pc)) ||
        srv_hooks_attach(&c->hooks, &pubsub_hooks, pc)) {
        free(pc);
        return NULL;
    }
    return pc;
}

/* Once c has no subscription left it leaves subscribed mode, and its
 * tables give their memory back. */
static void client_gc(srv_conn *c)
{
    struct srv_pubsub_client *pc = state_of(c);

    if (!pc)
        return;
    for (int k = 0; k < SRV_PS_KINDS; k++)
        if (pc->n[k])
            return;
    for (int k = 0; k < SRV_PS_KINDS; k++)
        srv_dict_clear(&pc->names[k], NULL);
    c->flags &= ~SRV_CONN_SUBSCRIBED;
}

static void oom(srv_conn *c)
{
    srv_log(SRV_LOG_WARNING, ENOMEM, "subscription of %s", c->addr);
    c->flags |= SRV_CONN_CLOSE_ASAP;
}

int srv_pubsub_subscribe(srv_conn *c, int kind, const char *name, size_t len)
{
    uint64_t h = srv_dict_hash(name, len);
    struct srv_pubsub_client *pc = client_of(c);
    srv_dict_entry *ce, *de;
    ps_entry *e;

    if (!pc) {
        oom(c);
        return -1;
    }
    if (srv_dict_find(&pc->names[kind], name, len, h))
        return 0;
    if (!(de = srv_dict_find(&ps.local[kind], name, len, h))) {
        if (!(e = calloc(1, sizeof *e)) ||
            !(de = srv_dict_add(&ps.local[kind], name, len, h))) {
            free(e);
            goto nomem;
        }
        de->val = e;
        e->de = de;
    }
    e = de->val;
    if (e->n == e->cap) {
        unsigned cap = e->cap ? e->cap * 2 : SUBS_MIN;
        srv_conn **s = realloc(e->subs, cap * sizeof *s);
        if (!s)
            goto nomem_entry;
        e->subs = s;
        e->cap = cap;
    }
    if (!(ce = srv_dict_add(&pc->names[kind], name, len, h)))
        goto nomem_entry;
    ce->val = e;
    ce->aux = e->n;
    e->subs[e->n++] = c;
    pc->n[kind]++;
    c->flags |= SRV_CONN_SUBSCRIBED;
    link_count(kind, de, e->n);
    return 1;
nomem_entry:
    if (e->n == 0) {
        free(e->subs);
        free(e);
        srv_dict_remove(&ps.local[kind], de);
    }
nomem:
    client_gc(c);
    oom(c);
    return -1;
}

/* Take c out of the name's local entry (ce: c's entry for it). The
 * client's own table is left to the caller. */
static void unlink_sub(srv_conn *c, int kind, srv_dict_entry *ce)
{
    ps_entry *e = ce->val;
    size_t i = ce->aux;
    srv_conn *moved = e->subs[--e->n];

    if (i != e->n) {
        /* The last subscriber takes c's place: fix its index. */
        srv_dict_entry *me = srv_dict_find(&state_of(moved)->names[kind],
                                           e->de->key, e->de->klen,
                                           e->de->hash);
        e->subs[i] = moved;
        me->aux = i;
    }
    state_of(c)->n[kind]--;
    link_count(kind, e->de, e->n);
    if (e->n == 0) {
        srv_dict_remove(&ps.local[kind], e->de);
        free(e->subs);
        free(e);
    }
}

int srv_pubsub_unsubscribe(srv_conn *c, int kind, const char *name, size_t len)
{
    struct srv_pubsub_client *pc = state_of(c);
    srv_dict_entry *ce;

    if (!pc || !(ce = srv_dict_find(&pc->names[kind], name, len,
                                    srv_dict_hash(name, len))))
        return 0;
    unlink_sub(c, kind, ce);
    srv_dict_remove(&pc->names[kind], ce);
    client_gc(c);
    return 1;
}

size_t srv_pubsub_unsubscribe_all(srv_conn *c, int kind,
                                  void (*fn)(srv_conn *c, const char *name,
                                             size_t len))
{
    struct srv_pubsub_client *pc = state_of(c);
    srv_dict_iter it;
    srv_dict_entry *ce;
    size_t n = 0;

    if (!pc)
        return 0;
    srv_dict_iter_init(&it, &pc->names[kind]);
    while ((ce = srv_dict_iter_next(&it))) {
        unlink_sub(c, kind, ce);
        if (fn)
            fn(c, ce->key, ce->klen);
        srv_dict_remove(&pc->names[kind], ce);
        n++;
    }
    client_gc(c);
    return n;
}

size_t srv_pubsub_count(const srv_conn *c, int kind)
{
    const struct srv_pubsub_client *pc = state_of(c);

    return pc ? pc->n[kind] : 0;
}

void srv_pubsub_each_subscription(const srv_conn *c,
                                  int (*fn)(void *arg, const char *name,
                                            size_t len, int pattern),
                                  void *arg)
{
    const struct srv_pubsub_client *pc = state_of(c);
    srv_dict_iter it;
    srv_dict_entry *e;

    for (int k = 0; pc && k < SRV_PS_KINDS; k++) {
        srv_dict_iter_init(&it, &pc->names[k]);
        while ((e = srv_dict_iter_next(&it)))
            if (fn(arg, e->key, e->klen, k == SRV_PS_PATTERN))
                return;
    }
}

/* RESET: drop all of c's subscriptions. */
static void on_reset(srv_conn *c, void *state)
{
    for (int k = 0; k < SRV_PS_KINDS; k++)
        srv_pubsub_unsubscribe_all(c, k, NULL);
}

/* c closes: drop its subscriptions, forget its pending broker requests,
 * free its state. Resumes are run in the same dispatch that queued them,
 * so none can name c here. */
static void on_close(srv_conn *c, void *state)
{
    for (size_t i = 0; i < ps.qlen; i++)
        if (ps.q[(ps.qhead + i) % ps.qcap].c == c)
            ps.q[(ps.qhead + i) % ps.qcap].c = NULL;
    on_reset(c, state);
    srv_buf_free(&((struct srv_pubsub_client *)state)->held);
    free(state);
}

static void send_held(struct srv_pubsub_client *pc);

/* The commit holds: what c's scripts published goes out now. */
static void on_committed(srv_conn *c, void *state)
{
    struct srv_pubsub_client *pc = state;

    if (pc->held.len)
        send_held(pc);
}

/* The transaction is gone (or c's command failed alone in it): so are
 * the messages its scripts published. */
static void on_rewind(srv_conn *c, void *state)
{
    struct srv_pubsub_client *pc = state;

    pc->held.len = 0;
    srv_buf_trim(&pc->held, BUF_KEEP);
}

static const srv_hooks pubsub_hooks = {
    .name = "pubsub",
    .committed = on_committed,
    .rewind = on_rewind,
    .lost = on_rewind,
    .reset = on_reset,
    .close = on_close,
};

const srv_service srv_pubsub_service = {
    .name = "pubsub",
    .start = service_start,
    .stop = service_stop,
};

/* ---- inside scripts ---- */

/* How long a PUBSUB query in a script waits for the broker's answer
 * before it takes this worker's own (logged); the broker answers alone,
 * at once. */
#define SCRIPT_WAIT_MS 1000

/* Counts every worker's receivers for a script (set by the scripting
 * feature, which asks every worker); NULL: this worker's own. */
static srv_pubsub_counter_fn *counter;

void srv_pubsub_set_counter(srv_pubsub_counter_fn *fn) { counter = fn; }

long long srv_pubsub_receivers_here(int kind, const char *ch, size_t chlen)
{
    long long n = local_count(kind, ch, chlen);

    if (kind == SRV_PS_CHANNEL) {
        srv_dict_iter it;
        srv_dict_entry *de;
        srv_dict_iter_init(&it, &ps.local[SRV_PS_PATTERN]);
        while ((de = srv_dict_iter_next(&it)))
            if (srv_util_glob_match(de->key, de->klen, ch, chlen, 0))
                n += ((ps_entry *)de->val)->n;
    }
    return n;
}

/* Every worker's receivers of a message on `ch` (this worker's alone
 * when the broker is away or slow). */
static long long receivers_everywhere(int kind, const srv_slice *ch)
{
    long long n;

    if (counter && srv_link_up() && counter(kind, ch->ptr, ch->len, &n) == 0)
        return n;
    return srv_pubsub_receivers_here(kind, ch->ptr, ch->len);
}

/* The messages c's scripts held, now that their transaction committed:
 * to the broker as PUBLISH (nobody waits for the counts), or delivered
 * here when it is away. */
static void send_held(struct srv_pubsub_client *pc)
{
    srv_bframe f = { .body = pc->held.data, .len = pc->held.len };
    srv_bcursor cur;
    const char *ch, *msg;
    size_t chlen, mlen;
    uint64_t kind;
    ps_pending *p;

    srv_bproto_cursor(&cur, &f);
    while (cur.p < cur.end && srv_bproto_get_u64(&cur, &kind) == 0 &&
           srv_bproto_get_field(&cur, &ch, &chlen) == 0 &&
           srv_bproto_get_field(&cur, &msg, &mlen) == 0) {
        if (srv_link_up() && (p = queue_push())) {
            if (srv_link_put(SRV_BP_PUBLISH, (int)kind, chlen, ch, chlen, msg,
                             mlen) == 0)
                continue; /* p->c NULL: its count is dropped */
            queue_unpush();
        }
        deliver_local((int)kind, ch, chlen, msg, mlen);
    }
    pc->held.len = 0;
    srv_buf_trim(&pc->held, BUF_KEEP);
}

/*
 * PUBLISH inside a script. The script gets Redis's count at once: every
 * worker's receivers, asked through the broker while the script waits.
 * The message itself is held with c until the script's transaction
 * commits, and dropped when it does not (a script killed, a lost
 * transaction): a subscriber never hears of what did not happen, and
 * when it hears, the script's writes are visible on every worker (Redis
 * writes the message to the subscribers' buffers at once; they read it
 * once the script is over, except past busy-reply-threshold, and a
 * killed script's messages are delivered).
 */
static void publish_held(srv_conn *c, int kind, const srv_slice *ch,
                         const srv_slice *msg)
{
    struct srv_pubsub_client *pc = client_of(c);
    size_t mark;

    if (!pc) {
        srv_reply_error(c, "ERR out of memory");
        return;
    }
    mark = pc->held.len;
    if (srv_bproto_put_u64(&pc->held, (uint64_t)kind) ||
        srv_bproto_put_field(&pc->held, ch->ptr, ch->len) ||
        srv_bproto_put_field(&pc->held, msg->ptr, msg->len)) {
        pc->held.len = mark;
        srv_reply_error(c, "ERR out of memory");
        return;
    }
    srv_reply_int(c, receivers_everywhere(kind, ch));
}

size_t srv_pubsub_held(const srv_conn *c)
{
    const struct srv_pubsub_client *pc = state_of(c);

    return pc ? pc->held.len : 0;
}

void srv_pubsub_unhold(srv_conn *c, size_t mark)
{
    struct srv_pubsub_client *pc = state_of(c);

    if (pc && mark < pc->held.len)
        pc->held.len = mark;
}

/* The answer a PUBSUB query in a script waits for: the broker answers a
 * link's requests in order, so it is the one after those of the `skip`
 * requests queued before it. */
typedef struct query_wait {
    srv_conn *c;
    int want; /* the answer's frame type */
    size_t skip;
    int taken, ok;
} query_wait;

static int pick_answer(const srv_bframe *f, void *arg)
{
    query_wait *w = arg;

    if (f->type != SRV_BP_PUBCOUNT && f->type != SRV_BP_R_NUMSUB &&
        f->type != SRV_BP_R_CHANNELS && f->type != SRV_BP_R_NUMPAT)
        return SRV_LINK_LEAVE;
    if (w->skip) {
        w->skip--;
        return SRV_LINK_LEAVE;
    }
    w->taken = 1;
    if (f->type != w->want)
        w->ok = 0; /* out of step: a bug, answered from here */
    else if (f->type == SRV_BP_R_NUMPAT)
        w->ok = (srv_reply_int(w->c, (long long)f->arg), 1);
    else if (f->type == SRV_BP_R_NUMSUB)
        w->ok = answer_numsub(w->c, f) == 0;
    else
        w->ok = answer_channels(w->c, f) == 0;
    return SRV_LINK_DONE;
}

static int put_query(int query, int kind, int nargs, const srv_slice *args);

/* A PUBSUB query inside a script, answered for every worker before the
 * script goes on. 0, or -1 when it could not be (not sent, or no answer
 * in time: a late answer is then dropped). */
static int query_now(srv_conn *c, int query, int kind, int nargs,
                     const srv_slice *args)
{
    static const int want[] = {
        [SRV_PS_Q_NUMSUB] = SRV_BP_R_NUMSUB,
        [SRV_PS_Q_CHANNELS] = SRV_BP_R_CHANNELS,
        [SRV_PS_Q_NUMPAT] = SRV_BP_R_NUMPAT,
    };
    query_wait w = { c, want[query], ps.qlen, 0, 0 };
    size_t mark = c->out.len;
    ps_pending *p;

    if (!srv_link_up() || put_query(query, kind, nargs, args))
        return -1;
    if (srv_link_wait(pick_answer, &w, SCRIPT_WAIT_MS) == 0 && w.ok)
        return 0;
    c->out.len = mark;
    if (w.taken)
        return -1;
    if (!(p = queue_push())) {
        /* the answers would be matched to the wrong requests */
        srv_log(SRV_LOG_WARNING, ENOMEM, "a pub/sub request");
        return -1;
    }
    p->query = query; /* p->c NULL: dropped when it comes */
    srv_log(SRV_LOG_WARNING, 0,
            "PUBSUB in a script: no answer from the broker within %d ms, "
            "this worker's given",
            SCRIPT_WAIT_MS);
    return -1;
}

/* ---- publishing and queries ---- */

void srv_pubsub_publish(srv_conn *c, int kind, const srv_slice *ch,
                        const srv_slice *msg)
{
    ps_pending *p;

    if (c->flags & SRV_CONN_IN_SCRIPT) {
        publish_held(c, kind, ch, msg);
        return;
    }

    /* The state is attached first: its close hook forgets the request. */
    if (srv_link_up() && client_of(c) && (p = queue_push())) {
        if (srv_link_put(SRV_BP_PUBLISH, kind, ch->len, ch->ptr, ch->len,
                         msg->ptr, msg->len) == 0) {
            p->c = c;
            /* Inside EXEC the transaction goes on and its reply keeps a
             * place for the count; otherwise c waits for it. */
            p->deferred = srv_hooks_defer(&c->hooks, c);
            if (!p->deferred)
                c->blocked = 1;
            return;
        }
        queue_unpush();
    }
    srv_reply_int(c, deliver_local(kind, ch->ptr, ch->len, msg->ptr, msg->len));
}

static srv_slice *copy_args(int nargs, const srv_slice *args)
{
    size_t total = (size_t)nargs * sizeof(srv_slice);
    srv_slice *out;
    char *data;

    for (int i = 0; i < nargs; i++)
        total += args[i].len;
    if (!(out = malloc(total ? total : 1)))
        return NULL;
    data = (char *)(out + nargs);
    for (int i = 0; i < nargs; i++) {
        out[i].ptr = data;
        out[i].len = args[i].len;
        memcpy(data, args[i].ptr, args[i].len);
        data += args[i].len;
    }
    return out;
}

/* The query's frame; -1 if it could not be queued. */
static int put_query(int query, int kind, int nargs, const srv_slice *args)
{
    uint64_t body = 0;
    size_t off;

    /* NUMSUB names past a bulk's size: the answer (names and counts) might
     * not fit a frame the worker accepts; this worker answers instead. */
    for (int i = 0; query == SRV_PS_Q_NUMSUB && i < nargs; i++)
        body += SRV_BP_FIELD_HDR + args[i].len;
    if (body > (uint64_t)srv_her.cfg->proto_max_bulk_len)
        return -1;
    if (query == SRV_PS_Q_NUMPAT)
        return srv_link_put(SRV_BP_NUMPAT, 0, 0, NULL, 0, NULL, 0);
    if (query == SRV_PS_Q_CHANNELS)
        return srv_link_put(SRV_BP_CHANNELS, kind, nargs > 0,
                            nargs ? args[0].ptr : NULL, nargs ? args[0].len : 0,
                            NULL, 0);
    if ((off = srv_link_begin(SRV_BP_NUMSUB, kind, 0)) == (size_t)-1)
        return -1;
    for (int i = 0; i < nargs; i++)
        if (srv_link_field(off, args[i].ptr, args[i].len))
            return -1;
    srv_link_end(off);
    return 0;
}

void srv_pubsub_query(srv_conn *c, int query, int kind, int nargs,
                      const srv_slice *args)
{
    ps_pending *p;
    srv_slice *copy = NULL;

    /* A script waits for the broker's answer; inside EXEC a query
     * answers from this worker's subscribers: the transaction's reply
     * cannot wait for the broker in the middle. */
    if ((c->flags & SRV_CONN_IN_SCRIPT) &&
        query_now(c, query, kind, nargs, args) == 0)
        return;
    if (srv_link_up() && !(c->flags & SRV_CONN_IN_TXN) && client_of(c) &&
        (nargs == 0 || (copy = copy_args(nargs, args))) && (p = queue_push())) {
        if (put_query(query, kind, nargs, args) == 0) {
            p->c = c;
            p->query = query;
            p->kind = kind;
            p->nargs = nargs;
            p->args = copy;
            c->blocked = 1;
            return;
        }
        queue_unpush();
    }
    free(copy);
    answer_local(c, query, kind, nargs, args);
}
