/*
 * srv_ask.c - questions to every worker (see the header). Questions in
 * flight are a small table by request id (the broker answers each one
 * when its last part is in, so answers may overtake one another).
 */
#include "server/srv_ask.h"
#include "server/srv_bproto.h"
#include "server/srv_group.h"
#include "server/srv_hooks.h"
#include "server/srv_link.h"
#include "server/srv_log.h"
#include "server/srv_reply.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define PENDING_MIN 8
#define U64_BYTES 8

typedef struct ask_pending {
    uint64_t id; /* 0: free */
    srv_conn *c; /* NULL once it is gone */
    int kind;
    srv_ask_reply_fn *reply;
    srv_buf q; /* a copy, to answer without the broker */
} ask_pending;

static struct {
    srv_worker *w;
    srv_ask_part_fn *part[SRV_BP_NQUERIES];
    int anytime[SRV_BP_NQUERIES]; /* answered in a command's middle too */
    ask_pending *p;
    size_t np, cap;
    uint64_t next_id;
    srv_conn **resume;
    size_t nresume, capresume;
    srv_buf scratch;
} ak;

static const srv_hooks ask_hooks;

void srv_ask_register(int kind, srv_ask_part_fn *part)
{
    if (kind >= 0 && kind < SRV_BP_NQUERIES)
        ak.part[kind] = part;
}

void srv_ask_register_anytime(int kind, srv_ask_part_fn *part)
{
    srv_ask_register(kind, part);
    if (kind >= 0 && kind < SRV_BP_NQUERIES)
        ak.anytime[kind] = 1;
}

int srv_ask_put_count(srv_buf *part, uint64_t n)
{
    unsigned char b[U64_BYTES];

    for (int i = 0; i < U64_BYTES; i++, n >>= 8)
        b[i] = (unsigned char)n;
    return srv_buf_append(part, b, sizeof b);
}

uint64_t srv_ask_count(const char *ans, size_t len)
{
    const unsigned char *p = (const unsigned char *)ans;
    uint64_t n = 0;

    if (len < U64_BYTES)
        return 0;
    for (int i = U64_BYTES - 1; i >= 0; i--)
        n = (n << 8) | p[i];
    return n;
}

/* This worker's answer alone, replied to c. */
static void answer_here(srv_conn *c, int kind, const void *q, size_t qlen,
                        srv_ask_reply_fn *reply)
{
    ak.scratch.len = 0;
    if (ak.part[kind] && ak.part[kind](q, qlen, &ak.scratch) == 0)
        reply(c, ak.scratch.data ? ak.scratch.data : "", ak.scratch.len);
    else
        srv_reply_error(c, "ERR out of memory");
    ak.scratch.len = 0;
}

static ask_pending *find(uint64_t id)
{
    for (size_t i = 0; i < ak.np; i++)
        if (ak.p[i].id == id)
            return &ak.p[i];
    return NULL;
}

static ask_pending *slot(void)
{
    ask_pending *p = find(0);

    if (p)
        return p;
    if (ak.np == ak.cap) {
        size_t cap = ak.cap ? ak.cap * 2 : PENDING_MIN;
        ask_pending *n = realloc(ak.p, cap * sizeof *n);
        if (!n)
            return NULL;
        memset(n + ak.cap, 0, (cap - ak.cap) * sizeof *n);
        ak.p = n;
        ak.cap = cap;
    }
    return &ak.p[ak.np++];
}

/* The asking state is attached so that a closing client is forgotten. */
static int attach(srv_conn *c)
{
    static char attached; /* the hooks keep no state of their own */

    if (srv_hooks_state(&c->hooks, &ask_hooks))
        return 0;
    return srv_hooks_attach(&c->hooks, &ask_hooks, &attached);
}

void srv_ask(srv_conn *c, int kind, const void *q, size_t qlen,
             srv_ask_reply_fn *reply)
{
    ask_pending *p;

    if (!ak.w || !srv_link_up() || (c->flags & SRV_CONN_IN_TXN) || attach(c) ||
        !(p = slot())) {
        answer_here(c, kind, q, qlen, reply);
        return;
    }
    p->q.len = 0;
    if (srv_buf_append(&p->q, q, qlen) ||
        srv_link_put(SRV_BP_ASK, kind, ++ak.next_id, q, qlen, NULL, 0)) {
        answer_here(c, kind, q, qlen, reply);
        return;
    }
    p->id = ak.next_id;
    p->c = c;
    p->kind = kind;
    p->reply = reply;
    c->blocked = 1;
}

/* The answer is in c's output: it runs its next commands after the
 * frames of this turn. */
static void done(ask_pending *p)
{
    srv_conn *c = p->c;

    p->id = 0;
    p->c = NULL;
    srv_buf_trim(&p->q, 0);
    if (!c)
        return;
    c->blocked = 0;
    srv_group_wake(&c->worker->group, c, 0);
    if (ak.nresume == ak.capresume) {
        size_t cap = ak.capresume ? ak.capresume * 2 : PENDING_MIN;
        srv_conn **r = realloc(ak.resume, cap * sizeof *r);
        if (!r) {
            srv_log(SRV_LOG_WARNING, ENOMEM, "resuming a client");
            return;
        }
        ak.resume = r;
        ak.capresume = cap;
    }
    ak.resume[ak.nresume++] = c;
}

/* This worker's part of a question, put on the link. */
static void answer_query(const srv_bframe *f)
{
    ak.scratch.len = 0;
    if (ak.part[f->kind] &&
        ak.part[f->kind](f->body, (size_t)f->len, &ak.scratch))
        srv_log(SRV_LOG_WARNING, ENOMEM, "a worker's answer");
    srv_link_put(SRV_BP_ANSWER, 0, f->arg, ak.scratch.data, ak.scratch.len,
                 NULL, 0);
    ak.scratch.len = 0;
}

static int on_frame(const srv_bframe *f)
{
    if (f->type == SRV_BP_QUERY) {
        answer_query(f);
        return 0;
    }
    if (f->type == SRV_BP_REPLY) {
        ask_pending *p = find(f->arg);
        if (!p || p->kind != f->kind)
            return -1;
        if (p->c)
            p->reply(p->c, f->body, (size_t)f->len);
        done(p);
        return 0;
    }
    return -1;
}

/* ---- waiting in the middle of a command ---- */

typedef struct wait_for {
    uint64_t id; /* the REPLY awaited, 0 for none */
    srv_buf *ans;
} wait_for;

static int pick(const srv_bframe *f, void *arg)
{
    wait_for *w = arg;

    if (f->type == SRV_BP_QUERY && ak.anytime[f->kind]) {
        answer_query(f);
        return SRV_LINK_TAKEN;
    }
    if (f->type == SRV_BP_REPLY && w->id && f->arg == w->id) {
        if (srv_buf_append(w->ans, f->body, (size_t)f->len))
            w->ans->len = 0; /* an empty answer: the caller's fallback */
        return SRV_LINK_DONE;
    }
    return SRV_LINK_LEAVE;
}

int srv_ask_wait(int kind, const void *q, size_t qlen, int timeout_ms,
                 srv_buf *ans)
{
    wait_for w = { 0, ans };
    ask_pending *p;

    ans->len = 0;
    if (!ak.w || !srv_link_up() ||
        srv_link_put(SRV_BP_ASK, kind, ++ak.next_id, q, qlen, NULL, 0))
        return -1;
    w.id = ak.next_id;
    if (srv_link_wait(pick, &w, timeout_ms) == 0 && ans->len)
        return 0;
    /* No answer in time: it is dropped when it comes (an asker that is
     * gone), or the link is down and nothing comes. */
    if (srv_link_up() && (p = slot())) {
        p->id = w.id;
        p->c = NULL;
        p->kind = kind;
        p->reply = NULL;
        p->q.len = 0;
    }
    ans->len = 0;
    return -1;
}

void srv_ask_answer_waiting(void)
{
    wait_for w = { 0, NULL };

    if (ak.w && srv_link_up())
        srv_link_wait(pick, &w, 0);
}

/* The broker is gone: what waits is answered from this worker. */
static void on_down(void)
{
    for (size_t i = 0; i < ak.np; i++) {
        ask_pending *p = &ak.p[i];
        if (!p->id)
            continue;
        if (p->c)
            answer_here(p->c, p->kind, p->q.data ? p->q.data : "", p->q.len,
                        p->reply);
        done(p);
    }
}

static int on_settled(srv_worker *w)
{
    size_t n = ak.nresume;

    for (size_t i = 0; i < ak.nresume; i++)
        if (ak.resume[i])
            srv_group_wake(&w->group, ak.resume[i], 1);
    ak.nresume = 0;
    return n > 0;
}

static void on_close(srv_conn *c, void *state)
{
    for (size_t i = 0; i < ak.np; i++)
        if (ak.p[i].c == c)
            ak.p[i].c = NULL;
    for (size_t i = 0; i < ak.nresume; i++)
        if (ak.resume[i] == c)
            ak.resume[i] = NULL;
}

static const srv_hooks ask_hooks = {
    .name = "ask",
    .close = on_close,
};

static const int link_types[] = { SRV_BP_QUERY, SRV_BP_REPLY, 0 };

static const srv_link_feature link_feature = {
    .name = "ask",
    .types = link_types,
    .frame = on_frame,
    .down = on_down,
    .settled = on_settled,
};

static void service_start(srv_worker *w)
{
    ak.w = w;
    if (srv_link_register(&link_feature))
        srv_log(SRV_LOG_WARNING, 0, "client control could not join the link");
}

static void service_stop(srv_worker *w)
{
    for (size_t i = 0; i < ak.np; i++)
        srv_buf_free(&ak.p[i].q);
    free(ak.p);
    ak.p = NULL;
    ak.np = ak.cap = 0;
    free(ak.resume);
    ak.resume = NULL;
    ak.nresume = ak.capresume = 0;
    srv_buf_free(&ak.scratch);
    ak.w = NULL;
}

const srv_service srv_ask_service = {
    .name = "ask",
    .start = service_start,
    .stop = service_stop,
};
