/*
 * srv_broker.c - the pub/sub broker process.
 *
 * State: per kind (channel, pattern, shard channel) a table from name to
 * the subscription counts of each worker connection ("link") that has
 * any, and their total (srv_bsubs.h). A name is in its table only
 * while its total is above zero, so PUBSUB NUMPAT is the size of the
 * pattern table.
 *
 * Loop: epoll over the listening socket (inherited from the master) and
 * the links (and a wake-up per tick, 1/hz s, to apply configuration
 * changes, or sooner when a MONITOR gap's wait runs out); each wake-up
 * runs rounds until the links are quiet. A round takes a cut (what has
 * been read so far), then reads every link until it is empty (a sweep),
 * applies the COUNT frames of everything read, and only then handles the
 * frames before the cut, in order per link.
 *
 * Why: causality across workers. A worker writes a subscription's COUNT
 * frame to the broker before it writes the SUBSCRIBE (or UNSUBSCRIBE)
 * reply, so a PUBLISH or PUBSUB NUMSUB that the client causes after
 * reading that reply, on any worker, is written after the COUNT. A frame
 * before the cut was read before the sweep began, so every COUNT written
 * before it was in its socket when the sweep read that link: it is
 * applied before the frame is handled. Counts are absolute (a worker's
 * current number), so applying the newest one early is never wrong: it
 * only describes subscriptions already in effect on their worker, and a
 * worker delivers to whoever is subscribed when the message arrives.
 * (Reading only the links epoll reported is not enough: draining one can
 * pick up a frame written after a COUNT on a link that was not reported.)
 *
 * PUBLISH: the receivers are the channel's subscribers plus, for a plain
 * channel, the subscriptions of every pattern that matches it (Redis's
 * count); each worker with one of them gets one DELIVER frame (the worker
 * fans out to its own clients), and the publisher's worker then gets the
 * count, after any DELIVER of its own, so its subscribers see the message
 * before the publisher sees the reply, as with Redis.
 *
 * MONITOR: lines are held ahead (apply_ahead) in a reorder buffer
 * (srv_morder.h) stamped with the round that read them, and released at
 * the end of a later round in the order of their numbers. A worker writes
 * a line before its command's reply (its group's turn sends the link's
 * frames first), so by the same argument every line of a command that
 * finished before a held line's command started has been read by the
 * next round's sweep: it is released first. A gap (a number not seen) is
 * waited for MONITOR_GAP_MS at most; that bound is what orders a line
 * whose reply left first (a link socket that was full, replies written
 * in the middle of a turn before a long command).
 */
#include "server/srv_broker.h"
#include "server/srv_bproto.h"
#include "server/srv_bsubs.h"
#include "server/srv_buf.h"
#include "server/srv_bwait.h"
#include "server/srv_config.h"
#include "server/srv_heritage.h"
#include "server/srv_log.h"
#include "server/srv_morder.h"
#include "server/srv_notify.h"
#include "server/srv_role.h"
#include "server/srv_stats.h"
#include "server/srv_util.h"

#include <errno.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define READ_CHUNK (64 * 1024)
#define BUF_KEEP (64 * 1024)
#define LISTEN_BACKLOG 1024
#define LISTENER_TAG 0
#define LINKS_MIN 16
#define PROCESS_NAME "larder-broker"
/* Rounds per wake-up before the listener gets a turn (links that are
 * still busy go on right after it). */
#define MAX_ROUNDS 16
#define MS_PER_S 1000
/* How long a MONITOR line waits for a lower number that has not come (a
 * line still on its way, or never sent: its worker was killed), and how
 * many bytes of lines may wait (past that the oldest leave, in order). */
#define MONITOR_GAP_MS 100
#define MONITOR_HOLD_MAX (16 * 1024 * 1024)

typedef struct blink {
    int fd;
    uint32_t id; /* index in links[] */
    int worker;  /* index from HELLO; -1 before */
    srv_buf in;
    size_t need;  /* bytes the incomplete frame needs */
    size_t cut;   /* input read before this round's sweep */
    size_t ahead; /* input whose frames were applied ahead already */
    uint64_t interest[SRV_BP_NINTERESTS]; /* its tracking and MONITOR
                                           * clients */
    int fresh; /* this round's sweep read something */
    srv_buf out;
    size_t out_sent;
    uint32_t events; /* epoll interest */
    uint64_t mark;   /* last publish epoch it was a target of */
    int eof;         /* EOF or read error: close after its frames */
    int dead;        /* error or bad frame: close it now */
} blink;

static volatile sig_atomic_t stop;
static int ep = -1;
static blink **links; /* by id; NULL when free */
static uint32_t links_cap;
static blink **targets; /* of the publish being routed */
static struct epoll_event *events;
static uint32_t events_cap;
static srv_bsubs *subs; /* subscription counts per name and link */
static uint64_t epoch;
static srv_bwait *waiters;      /* blocked clients of every worker */
static srv_morder *lines;       /* MONITOR lines on their way, in order */
static uint64_t round_no;       /* rounds so far (the reorder buffer's clock) */
static int64_t round_ms;        /* when this round began (monotonic) */
static int64_t lines_wait = -1; /* srv_morder_release's last answer */

/* A question to every worker (ASK), waiting for their parts. */
typedef struct bquery {
    uint64_t qid;    /* 0: free */
    uint32_t origin; /* link id of the asker; NO_LINK once it is gone */
    uint64_t req;    /* the asker's request id */
    int kind;
    uint32_t pending; /* parts still to come */
    uint32_t nwait;
    uint8_t *wait; /* per link id: its part is due */
    srv_buf acc;   /* parts so far (concatenated kinds) */
    uint64_t sum;  /* summed kinds */
} bquery;

#define NO_LINK UINT32_MAX
#define QUERIES_MIN 8

/* A write transaction's ordered records (TXN), waiting for its outcome
 * (COMMITTED) and for every earlier transaction's (see the top). */
typedef struct bbatch {
    uint64_t txn;
    uint32_t link;
    int committed;
    srv_buf body;
} bbatch;

#define BATCHES_MIN 16
#define DB_FLAGS_SHIFT 32
#define NOTIFY_KEYSPACE SRV_NOTIFY_KEYSPACE /* the records' flags */
#define NOTIFY_KEYEVENT SRV_NOTIFY_KEYEVENT
#define CHANNEL_HEAD_MAX 40
static bbatch *batches; /* by txn id */
static size_t nbatches, capbatches;
static uint64_t txn_safe; /* newest txn of a TXN frame read before a cut */
static srv_buf evbuf;     /* an event's channel and message */
static srv_buf invbuf;    /* a batch's invalidations */
static bquery *queries;
static size_t nqueries;
static uint64_t next_qid;
/* a WAIT's keys, parsed (grown as needed) */
static const char **wkeys;
static size_t *wlens;
static size_t wcap;

static void queries_drop_link(uint32_t id);
static void batches_drop_link(uint32_t id);

static void on_term(int sig) { stop = 1; }

/* ---- the address (master and workers) ---- */

static socklen_t broker_addr(struct sockaddr_un *sa)
{
    size_t n = strlen(srv_her.broker_name);

    memset(sa, 0, sizeof *sa);
    sa->sun_family = AF_UNIX;
    /* sun_path[0] == '\0': the abstract namespace. */
    memcpy(sa->sun_path + 1, srv_her.broker_name, n);
    return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n);
}

int srv_broker_listen(void)
{
    struct sockaddr_un sa;
    unsigned long long nonce;
    socklen_t len;
    int fd, e;

    if (getrandom(&nonce, sizeof nonce, GRND_NONBLOCK) != (ssize_t)sizeof nonce)
        nonce = (unsigned long long)srv_util_ustime();
    snprintf(srv_her.broker_name, sizeof srv_her.broker_name,
             "larder-broker-%d-%016llx", (int)getpid(), nonce);
    len = broker_addr(&sa);
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return errno;
    if (bind(fd, (struct sockaddr *)&sa, len) || listen(fd, LISTEN_BACKLOG)) {
        e = errno;
        close(fd);
        return e;
    }
    srv_her.broker_fd = fd;
    return 0;
}

int srv_broker_connect(void)
{
    struct sockaddr_un sa;
    socklen_t len;
    int fd, e;

    if (!srv_her.broker_name[0]) {
        errno = ENOENT;
        return -1;
    }
    len = broker_addr(&sa);
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    if (connect(fd, (struct sockaddr *)&sa, len) && errno != EINPROGRESS) {
        e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    return fd;
}

/* ---- links ---- */

static void set_interest(blink *l)
{
    uint32_t want = EPOLLIN | (l->out_sent < l->out.len ? EPOLLOUT : 0);
    struct epoll_event ev = { .events = want, .data.u32 = l->id + 1 };

    if (want != l->events && epoll_ctl(ep, EPOLL_CTL_MOD, l->fd, &ev) == 0)
        l->events = want;
}

static int grow_links(void)
{
    uint32_t cap = links_cap ? links_cap * 2 : LINKS_MIN;
    blink **nl = realloc(links, cap * sizeof *nl);

    if (!nl)
        return -1;
    links = nl;
    memset(links + links_cap, 0, (cap - links_cap) * sizeof *links);
    blink **nt = realloc(targets, cap * sizeof *nt);
    if (!nt)
        return -1;
    targets = nt;
    links_cap = cap;
    return 0;
}

static void link_add(int fd)
{
    uint32_t id;
    blink *l;
    struct epoll_event ev;

    for (id = 0; id < links_cap && links[id]; id++)
        ;
    if ((id == links_cap && grow_links()) || !(l = calloc(1, sizeof *l))) {
        srv_log(SRV_LOG_WARNING, ENOMEM, "worker connection refused");
        close(fd);
        return;
    }
    l->fd = fd;
    l->id = id;
    l->worker = -1;
    l->events = EPOLLIN;
    ev.events = EPOLLIN;
    ev.data.u32 = id + 1;
    if (epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev)) {
        srv_log(SRV_LOG_WARNING, errno, "epoll_ctl() of a worker connection");
        close(fd);
        free(l);
        return;
    }
    links[id] = l;
}

static void link_close(blink *l)
{
    srv_log(SRV_LOG_VERBOSE, 0, "worker#%d disconnected", l->worker);
    srv_bsubs_drop_link(subs, l->id);
    srv_bwait_drop_link(waiters, l->id);
    queries_drop_link(l->id);
    batches_drop_link(l->id);
    epoll_ctl(ep, EPOLL_CTL_DEL, l->fd, NULL);
    close(l->fd);
    srv_buf_free(&l->in);
    srv_buf_free(&l->out);
    links[l->id] = NULL;
    free(l);
}

static void accept_all(int lfd)
{
    for (;;) {
        int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED)
                continue;
            if (errno != EAGAIN && errno != EWOULDBLOCK)
                srv_log(SRV_LOG_WARNING, errno, "accept4() failed");
            return;
        }
        link_add(fd);
    }
}

/* Read until the socket is empty (a short read or EAGAIN: what arrives
 * later is later). -1 on EOF or error. */
static int link_read(blink *l)
{
    for (;;) {
        size_t want = READ_CHUNK;
        ssize_t n;
        if (l->need > l->in.len && l->need - l->in.len > want)
            want = l->need - l->in.len;
        if (srv_buf_reserve(&l->in, want)) {
            srv_log(SRV_LOG_WARNING, ENOMEM, "input from worker#%d", l->worker);
            return -1;
        }
        n = read(l->fd, l->in.data + l->in.len, l->in.cap - l->in.len);
        if (n > 0) {
            size_t room = l->in.cap - l->in.len;
            l->in.len += (size_t)n;
            if ((size_t)n < room)
                return 0; /* drained: no EAGAIN round trip */
            continue;
        }
        if (n == 0)
            return -1;
        if (errno == EINTR)
            continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK)
            return 0;
        if (errno != ECONNRESET)
            srv_log(SRV_LOG_WARNING, errno, "read() from worker#%d", l->worker);
        return -1;
    }
}

static void link_flush(blink *l)
{
    while (l->out_sent < l->out.len) {
        ssize_t n = write(l->fd, l->out.data + l->out_sent,
                          l->out.len - l->out_sent);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK)
                break;
            if (errno != EPIPE && errno != ECONNRESET)
                srv_log(SRV_LOG_WARNING, errno, "write() to worker#%d",
                        l->worker);
            l->dead = 1;
            return;
        }
        l->out_sent += (size_t)n;
    }
    if (l->out_sent == l->out.len) {
        l->out.len = l->out_sent = 0;
        srv_buf_trim(&l->out, BUF_KEEP);
    }
    set_interest(l);
}

/* Append a frame for l; out of memory loses the link (its worker
 * reconnects and sends its state again). */
static void put(blink *l, int type, int kind, uint64_t arg, const void *p1,
                size_t n1, const void *p2, size_t n2)
{
    if (srv_bproto_put(&l->out, type, kind, arg, p1, n1, p2, n2)) {
        srv_log(SRV_LOG_WARNING, ENOMEM, "output to worker#%d", l->worker);
        l->dead = 1;
    }
}

/* ---- frames ---- */

static uint64_t max_body(void)
{
    return srv_bproto_max_body(srv_her.cfg->proto_max_bulk_len);
}

/* A link with a subscriber of the message being routed: a target, once
 * per publish (srv_bsubs_route names a link once per name it matched). */
static void target(void *ctx, uint32_t link)
{
    uint32_t *ntargets = ctx;
    blink *t = links[link];

    if (t && t->mark != epoch) {
        t->mark = epoch;
        targets[(*ntargets)++] = t;
    }
}

/*
 * A message on channel `ch` of `kind`: one DELIVER frame (body: the
 * channel then the message) to each link with a subscriber on it or on
 * a pattern matching it. Returns the receivers (Redis's count).
 */
static uint64_t route(int kind, const char *body, size_t chlen, size_t len)
{
    uint64_t receivers;
    uint32_t ntargets = 0;

    epoch++;
    receivers = srv_bsubs_route(subs, kind, body, chlen, target, &ntargets);
    for (uint32_t i = 0; i < ntargets; i++)
        put(targets[i], SRV_BP_DELIVER, kind, chlen, body, len, NULL, 0);
    return receivers;
}

static void route_publish(blink *l, const srv_bframe *f)
{
    uint64_t receivers = route(f->kind, f->body, (size_t)f->arg,
                               (size_t)f->len);

    put(l, SRV_BP_PUBCOUNT, 0, receivers, NULL, 0, NULL, 0);
}

/* ---- blocked clients ---- */

static void grant(void *ctx, uint32_t link, uint64_t token, const char *key,
                  size_t len)
{
    if (links[link])
        put(links[link], SRV_BP_GRANT, 0, token, key, len, NULL, 0);
}

static void bad_frame(blink *l, const char *what)
{
    srv_log(SRV_LOG_WARNING, 0, "bad %s frame from worker#%d", what, l->worker);
    l->dead = 1;
}

/* ---- questions to every worker ---- */

static uint64_t get_le64(const char *p)
{
    uint64_t v = 0;

    for (int i = 7; i >= 0; i--)
        v = (v << 8) | (unsigned char)p[i];
    return v;
}

/* Every part is in: answer the asker (if it is still there). */
static void query_finish(bquery *q)
{
    if (q->origin != NO_LINK && links[q->origin]) {
        if (q->kind == SRV_BP_Q_LIST) {
            put(links[q->origin], SRV_BP_REPLY, q->kind, q->req, q->acc.data,
                q->acc.len, NULL, 0);
        } else {
            unsigned char b[8];
            uint64_t v = q->sum;
            for (int i = 0; i < 8; i++, v >>= 8)
                b[i] = (unsigned char)v;
            put(links[q->origin], SRV_BP_REPLY, q->kind, q->req, b, sizeof b,
                NULL, 0);
        }
    }
    q->qid = 0;
    free(q->wait);
    q->wait = NULL;
    srv_buf_free(&q->acc);
}

/* Link `id`'s part of q (NULL: it is gone, an empty part). */
static void query_part(bquery *q, uint32_t id, const char *p, size_t n)
{
    if (id >= q->nwait || !q->wait[id])
        return;
    q->wait[id] = 0;
    if (p && q->kind == SRV_BP_Q_LIST) {
        if (srv_buf_append(&q->acc, p, n))
            srv_log(SRV_LOG_WARNING, ENOMEM, "a CLIENT LIST answer");
    } else if (p && n >= 8) {
        q->sum += get_le64(p);
    }
    if (--q->pending == 0)
        query_finish(q);
}

static void ask(blink *l, const srv_bframe *f)
{
    bquery *q = NULL;

    for (size_t i = 0; i < nqueries; i++)
        if (!queries[i].qid)
            q = &queries[i];
    if (!q) {
        bquery *n = realloc(queries, (nqueries + QUERIES_MIN) * sizeof *n);
        if (!n) {
            srv_log(SRV_LOG_WARNING, ENOMEM, "a question to the workers");
            l->dead = 1; /* its worker answers the asker itself */
            return;
        }
        memset(n + nqueries, 0, QUERIES_MIN * sizeof *n);
        queries = n;
        q = &queries[nqueries];
        nqueries += QUERIES_MIN;
    }
    memset(q, 0, sizeof *q);
    if (!(q->wait = calloc(links_cap, 1))) {
        srv_log(SRV_LOG_WARNING, ENOMEM, "a question to the workers");
        l->dead = 1;
        return;
    }
    q->qid = ++next_qid;
    q->origin = l->id;
    q->req = f->arg;
    q->kind = f->kind;
    q->nwait = links_cap;
    for (uint32_t id = 0; id < links_cap; id++) {
        blink *t = links[id];
        if (!t || t->dead || t->worker < 0)
            continue;
        q->wait[id] = 1;
        q->pending++;
        put(t, SRV_BP_QUERY, f->kind, q->qid, f->body, (size_t)f->len, NULL, 0);
    }
    if (q->pending == 0)
        query_finish(q);
}

static void answer(blink *l, const srv_bframe *f)
{
    for (size_t i = 0; i < nqueries; i++)
        if (queries[i].qid == f->arg) {
            query_part(&queries[i], l->id, f->body, (size_t)f->len);
            return;
        }
}

/* A link goes: its parts are empty, its questions have nobody to tell. */
static void queries_drop_link(uint32_t id)
{
    for (size_t i = 0; i < nqueries; i++) {
        bquery *q = &queries[i];
        if (!q->qid)
            continue;
        if (q->origin == id)
            q->origin = NO_LINK;
        query_part(q, id, NULL, 0);
    }
}

/* A frame for every link with clients of interest `what` (a MONITOR
 * line, invalidations), as it came. */
static void to_interested(int what, const srv_bframe *f)
{
    for (uint32_t id = 0; id < links_cap; id++) {
        blink *t = links[id];
        if (t && !t->dead && t->interest[what])
            put(t, f->type, f->kind, f->arg, f->body, (size_t)f->len, NULL, 0);
    }
}

/* A MONITOR line the reorder buffer releases. */
static void emit_line(void *ctx, uint64_t seq, const char *line, size_t len)
{
    srv_bframe f = {
        .type = SRV_BP_MONITOR, .arg = seq, .body = line, .len = len
    };

    to_interested(SRV_BP_I_MONITOR, &f);
}

/* A MONITOR frame, read this round: held until its turn. */
static void hold_line(const srv_bframe *f)
{
    if (srv_morder_add(lines, f->arg, round_no, round_ms, f->body,
                       (size_t)f->len)) {
        srv_log(SRV_LOG_WARNING, ENOMEM, "a MONITOR line sent out of order");
        to_interested(SRV_BP_I_MONITOR, f);
    }
}

/* A frame for every other worker link (a tracking redirection to a
 * client somewhere). */
static void to_others(blink *l, const srv_bframe *f)
{
    for (uint32_t id = 0; id < links_cap; id++) {
        blink *t = links[id];
        if (t && t != l && !t->dead && t->worker >= 0)
            put(t, f->type, f->kind, f->arg, f->body, (size_t)f->len, NULL, 0);
    }
}

/* ---- keyspace events in commit order ---- */

/* The link's oldest batch of `txn` still waiting for its outcome (a link
 * tells outcomes in order; ids may repeat, see apply_ahead). */
static bbatch *batch_find(uint32_t link, uint64_t txn, size_t *at)
{
    for (size_t i = 0; i < nbatches; i++)
        if (batches[i].link == link && batches[i].txn == txn &&
            !batches[i].committed) {
            if (at)
                *at = i;
            return &batches[i];
        }
    return NULL;
}

static void batch_remove(size_t i)
{
    srv_buf_free(&batches[i].body);
    memmove(batches + i, batches + i + 1, (nbatches - i - 1) * sizeof *batches);
    nbatches--;
}

/* A TXN frame, applied ahead: staged in txn order (once). */
static void stage_txn(blink *l, const srv_bframe *f)
{
    size_t i;

    if (nbatches == capbatches) {
        size_t cap = capbatches ? capbatches * 2 : BATCHES_MIN;
        bbatch *b = realloc(batches, cap * sizeof *b);
        if (!b) {
            srv_log(SRV_LOG_WARNING, ENOMEM, "keyspace events lost");
            return;
        }
        batches = b;
        capbatches = cap;
    }
    for (i = nbatches; i > 0 && batches[i - 1].txn > f->arg; i--)
        ;
    memmove(batches + i + 1, batches + i, (nbatches - i) * sizeof *batches);
    memset(&batches[i], 0, sizeof batches[i]);
    batches[i].txn = f->arg;
    batches[i].link = l->id;
    nbatches++;
    if (srv_buf_append(&batches[i].body, f->body, (size_t)f->len)) {
        srv_log(SRV_LOG_WARNING, ENOMEM, "keyspace events lost");
        batch_remove(i);
    }
}

/* One event as its two messages (each when asked for). */
static void publish_event(unsigned db, unsigned flags, const char *event,
                          size_t elen, const char *key, size_t klen)
{
    char head[CHANNEL_HEAD_MAX];
    int n;

    if (flags & NOTIFY_KEYSPACE) {
        n = snprintf(head, sizeof head, "__keyspace@%u__:", db);
        evbuf.len = 0;
        if (srv_buf_append(&evbuf, head, (size_t)n) ||
            srv_buf_append(&evbuf, key, klen) ||
            srv_buf_append(&evbuf, event, elen))
            return;
        route(SRV_BP_CHANNEL, evbuf.data, (size_t)n + klen, evbuf.len);
    }
    if (flags & NOTIFY_KEYEVENT) {
        n = snprintf(head, sizeof head, "__keyevent@%u__:", db);
        evbuf.len = 0;
        if (srv_buf_append(&evbuf, head, (size_t)n) ||
            srv_buf_append(&evbuf, event, elen) ||
            srv_buf_append(&evbuf, key, klen))
            return;
        route(SRV_BP_CHANNEL, evbuf.data, (size_t)n + elen, evbuf.len);
    }
}

/* A batch's records: its events' messages, and one INVAL frame of the
 * keys tracking clients must forget for every link that has some. */
static void deliver_batch(const bbatch *b)
{
    srv_bframe f = { .body = b->body.data, .len = b->body.len };
    srv_bcursor cur;
    uint64_t v, writer;
    const char *event, *key;
    size_t elen, klen;

    invbuf.len = 0;
    srv_bproto_cursor(&cur, &f);
    while (cur.p < cur.end && srv_bproto_get_u64(&cur, &v) == 0 &&
           srv_bproto_get_field(&cur, &event, &elen) == 0 &&
           srv_bproto_get_field(&cur, &key, &klen) == 0 &&
           srv_bproto_get_u64(&cur, &writer) == 0) {
        unsigned flags = (unsigned)(v >> DB_FLAGS_SHIFT);
        publish_event((unsigned)(v & UINT32_MAX), flags, event, elen, key,
                      klen);
        if ((flags & SRV_NOTIFY_INVALIDATE) &&
            (srv_bproto_put_u64(&invbuf, writer) ||
             srv_bproto_put_u64(&invbuf, (flags & SRV_NOTIFY_FLUSH) != 0) ||
             srv_bproto_put_field(&invbuf, key, klen)))
            srv_log(SRV_LOG_WARNING, ENOMEM, "tracking invalidations lost");
    }
    if (invbuf.len) {
        srv_bframe inv = { .type = SRV_BP_INVAL,
                           .body = invbuf.data,
                           .len = invbuf.len };
        to_interested(SRV_BP_I_TRACKING, &inv);
    }
}

/*
 * Deliver, in txn order, the committed batches no earlier transaction
 * can still come before: those up to txn_safe (every TXN frame of an
 * earlier transaction was written before the one that set txn_safe, so
 * it has been read and staged), stopping at one whose outcome is still
 * to come.
 */
static void deliver_ready(void)
{
    while (nbatches && batches[0].txn <= txn_safe && batches[0].committed) {
        deliver_batch(&batches[0]);
        batch_remove(0);
    }
}

static void batches_drop_link(uint32_t id)
{
    for (size_t i = 0; i < nbatches;)
        if (batches[i].link == id)
            batch_remove(i);
        else
            i++;
}

/* Register a WAIT: u64 db, u64 order, a group's reader's group, then its
 * keys as fields. */
static void apply_wait(blink *l, const srv_bframe *f)
{
    srv_bcursor cur;
    uint64_t db, order;
    const char *group = NULL;
    size_t n = 0, glen = 0;
    int rc;

    srv_bproto_cursor(&cur, f);
    if (srv_bproto_get_u64(&cur, &db) || db > UINT32_MAX ||
        srv_bproto_get_u64(&cur, &order) ||
        (f->kind == SRV_BP_GROUP &&
         srv_bproto_get_field(&cur, &group, &glen))) {
        bad_frame(l, "WAIT");
        return;
    }
    while (cur.p < cur.end) {
        if (n == wcap) {
            size_t cap = wcap ? wcap * 2 : LINKS_MIN;
            const char **k = realloc(wkeys, cap * sizeof *k);
            if (k)
                wkeys = k;
            size_t *ln = k ? realloc(wlens, cap * sizeof *ln) : NULL;
            if (!ln) {
                srv_log(SRV_LOG_WARNING, ENOMEM, "a blocked client");
                l->dead = 1;
                return;
            }
            wlens = ln;
            wcap = cap;
        }
        if (srv_bproto_get_field(&cur, &wkeys[n], &wlens[n])) {
            bad_frame(l, "WAIT");
            return;
        }
        n++;
    }
    rc = srv_bwait_add(waiters, l->id, f->arg, (unsigned)db, order, group, glen,
                       (int)n, wkeys, wlens);
    if (rc == ENOMEM) {
        srv_log(SRV_LOG_WARNING, ENOMEM, "a blocked client");
        l->dead = 1; /* its worker registers everyone again */
    } else if (rc == EINVAL) {
        bad_frame(l, "WAIT");
    }
    /* EEXIST: applied ahead in an earlier round already */
}

/* A group's name, the last field of a body when present: 0 (*group NULL
 * if absent), or -1 if the body goes on. */
static int group_field(srv_bcursor *cur, const char **group, size_t *glen)
{
    *group = NULL;
    *glen = 0;
    if (cur->p != cur->end && srv_bproto_get_field(cur, group, glen))
        return -1;
    return cur->p == cur->end ? 0 : -1;
}

/* SERVED: u64 db, u64 left, u64 txn, field key [, field group]. */
static void served(blink *l, const srv_bframe *f)
{
    srv_bcursor cur;
    uint64_t db, left, txn;
    const char *key, *group;
    size_t len, glen;

    srv_bproto_cursor(&cur, f);
    if (srv_bproto_get_u64(&cur, &db) || srv_bproto_get_u64(&cur, &left) ||
        srv_bproto_get_u64(&cur, &txn) ||
        srv_bproto_get_field(&cur, &key, &len) ||
        group_field(&cur, &group, &glen) || db > UINT32_MAX) {
        bad_frame(l, "SERVED");
        return;
    }
    srv_bwait_served(waiters, l->id, f->arg, f->kind == SRV_BP_DONE,
                     (unsigned)db, key, len, group, glen, left, txn);
}

/* HINT: u64 db, u64 elements, field key [, field group]; arg: txn. */
static void hint(blink *l, const srv_bframe *f)
{
    srv_bcursor cur;
    uint64_t db, n;
    const char *key, *group;
    size_t len, glen;

    srv_bproto_cursor(&cur, f);
    if (srv_bproto_get_u64(&cur, &db) || srv_bproto_get_u64(&cur, &n) ||
        srv_bproto_get_field(&cur, &key, &len) ||
        group_field(&cur, &group, &glen) || db > UINT32_MAX) {
        bad_frame(l, "HINT");
        return;
    }
    srv_bwait_hint(waiters, (unsigned)db, key, len, group, glen, n, f->arg);
}

/* COMMITTED: what came into being, as (u64 db, u64 n, field key); n 0
 * with no name is a whole database. */
static void committed(blink *l, const srv_bframe *f)
{
    srv_bcursor cur;
    uint64_t db, n;
    const char *key;
    size_t len;

    bbatch *b;
    size_t at;

    if ((b = batch_find(l->id, f->arg, &at))) {
        if (f->kind == SRV_BP_DONE)
            b->committed = 1;
        else
            batch_remove(at); /* it did not happen */
    }
    if (f->kind != SRV_BP_DONE)
        return;
    srv_bproto_cursor(&cur, f);
    while (cur.p < cur.end) {
        if (srv_bproto_get_u64(&cur, &db) || srv_bproto_get_u64(&cur, &n) ||
            srv_bproto_get_field(&cur, &key, &len) || db > UINT32_MAX) {
            bad_frame(l, "COMMITTED");
            return;
        }
        if (n == 0 && len == 0)
            srv_bwait_db_ready(waiters, (unsigned)db, f->arg);
        else
            srv_bwait_ready(waiters, (unsigned)db, key, len, n, f->arg);
    }
}

static void handle_frame(blink *l, const srv_bframe *f)
{
    switch (f->type) {
    case SRV_BP_HELLO:
        l->worker = f->arg > INT32_MAX ? -1 : (int)f->arg;
        srv_log(SRV_LOG_VERBOSE, 0, "worker#%d connected", l->worker);
        put(l, SRV_BP_WELCOME, 0, (uint64_t)getpid(), NULL, 0, NULL, 0);
        break;
    case SRV_BP_COUNT: break; /* applied ahead (apply_ahead) */
    case SRV_BP_PUBLISH: route_publish(l, f); break;
    case SRV_BP_NUMSUB:
        if (srv_bsubs_numsub(subs, f, &l->out))
            l->dead = 1;
        break;
    case SRV_BP_CHANNELS:
        if (srv_bsubs_channels(subs, f, max_body(), &l->out))
            l->dead = 1;
        break;
    case SRV_BP_NUMPAT:
        put(l, SRV_BP_R_NUMPAT, 0, srv_bsubs_names(subs, SRV_BP_PATTERN), NULL,
            0, NULL, 0);
        break;
    case SRV_BP_WAIT: break; /* applied ahead (apply_ahead) */
    case SRV_BP_TXN:         /* staged ahead; read before the cut: */
        if (f->arg > txn_safe)
            txn_safe = f->arg;
        break;
    case SRV_BP_UNWAIT: srv_bwait_remove(waiters, l->id, f->arg); break;
    case SRV_BP_SERVED: served(l, f); break;
    case SRV_BP_HINT: hint(l, f); break;
    case SRV_BP_COMMITTED: committed(l, f); break;
    case SRV_BP_ASK: ask(l, f); break;
    case SRV_BP_INTEREST: break; /* applied ahead */
    case SRV_BP_MONITOR: break;  /* held ahead (hold_line) */
    case SRV_BP_TOCLIENT: to_others(l, f); break;
    case SRV_BP_ANSWER: answer(l, f); break;
    default:
        srv_log(SRV_LOG_WARNING, 0, "worker#%d sent a broker's frame (%d)",
                l->worker, f->type);
        l->dead = 1;
    }
}

/* The link's COUNT, WAIT, TXN, INTEREST and MONITOR frames, all of them,
 * applied ahead of the other frames (in order: the newest count of each
 * name wins; a WAIT applied in an earlier round is known already). */
static void apply_ahead(blink *l)
{
    size_t off = l->ahead, size;
    srv_bframe f;

    /* Each frame once: what an earlier round applied is skipped (a TXN's
     * id alone does not name it: LMDB gives the id of a transaction that
     * wrote nothing, or failed, to the next one too). */
    while (!l->dead && off < l->in.len &&
           srv_bproto_decode(l->in.data + off, l->in.len - off, max_body(), &f,
                             &size) == 0) {
        if (f.type == SRV_BP_COUNT)
            srv_bsubs_set(subs, f.kind, f.body, (size_t)f.len, l->id, f.arg);
        else if (f.type == SRV_BP_WAIT)
            apply_wait(l, &f);
        else if (f.type == SRV_BP_TXN)
            stage_txn(l, &f);
        else if (f.type == SRV_BP_INTEREST)
            l->interest[f.kind] = f.arg;
        else if (f.type == SRV_BP_MONITOR)
            hold_line(&f);
        off += size;
    }
    l->ahead = off;
}

/* The complete frames before the cut, in order; consume them. */
static void handle_frames(blink *l)
{
    size_t off = 0, size;
    srv_bframe f;
    int rc;

    while (!l->dead && off < l->cut) {
        rc = srv_bproto_decode(l->in.data + off, l->in.len - off, max_body(),
                               &f, &size);
        if (rc == SRV_BP_MORE) {
            l->need = size;
            break;
        }
        if (rc) {
            srv_log(SRV_LOG_WARNING, 0, "bad frame from worker#%d: %s",
                    l->worker, srv_bproto_strerror(rc));
            l->dead = 1;
            break;
        }
        if (off + size > l->cut)
            break; /* read by the sweep: next round */
        handle_frame(l, &f);
        off += size;
    }
    /* The size of a big frame still arriving, so reads take it whole. */
    if (!l->dead && off < l->in.len &&
        srv_bproto_decode(l->in.data + off, l->in.len - off, max_body(), &f,
                          &size) == SRV_BP_MORE)
        l->need = size;
    srv_buf_consume(&l->in, off);
    l->ahead = l->ahead > off ? l->ahead - off : 0;
    if (l->in.len == 0) {
        l->need = 0;
        srv_buf_trim(&l->in, BUF_KEEP);
    }
}

/* ---- main ---- */

static int setup(sigset_t *waitmask)
{
    struct sigaction sa;
    sigset_t block;
    struct epoll_event ev = { .events = EPOLLIN, .data.u32 = LISTENER_TAG };
    srv_stats_slot *slot = srv_stats_slot_of(srv_her.stats, SRV_ROLE_BROKER,
                                             -1);

    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != srv_her.master_pid)
        return -1;
    prctl(PR_SET_NAME, PROCESS_NAME);
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_term;
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGINT, SIG_IGN);
    signal(SIGHUP, SIG_IGN);
    sigemptyset(&block);
    sigaddset(&block, SIGTERM);
    sigprocmask(SIG_BLOCK, &block, waitmask);
    sigdelset(waitmask, SIGTERM);
    atomic_store(&slot->pid, getpid());
    atomic_store(&slot->started_ms, srv_util_mstime());
    if ((ep = epoll_create1(EPOLL_CLOEXEC)) < 0 ||
        epoll_ctl(ep, EPOLL_CTL_ADD, srv_her.broker_fd, &ev)) {
        srv_log(SRV_LOG_WARNING, errno, "epoll set-up failed");
        return -1;
    }
    return 0;
}

/* Room for an event per link and the listener: one epoll_wait reports
 * every ready link. */
static int size_events(void)
{
    if (events_cap >= links_cap + 1)
        return 0;
    struct epoll_event *e = realloc(events, (links_cap + 1) * sizeof *e);
    if (!e)
        return -1;
    events = e;
    events_cap = links_cap + 1;
    return 0;
}

/* The sweep: read every link that has anything to read. epoll is level-
 * triggered, so a wait that does not block reports exactly those (one
 * call instead of a read per link). -1 when out of memory. */
static int sweep(int *more)
{
    int n;

    if (size_events())
        return -1;
    n = epoll_wait(ep, events, (int)events_cap, 0);
    for (int i = 0; i < n; i++) {
        uint32_t tag = events[i].data.u32;
        blink *l;
        size_t before;
        if (tag == LISTENER_TAG || !(l = links[tag - 1]) || l->eof || l->dead ||
            !(events[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR)))
            continue;
        before = l->in.len;
        if (link_read(l))
            l->eof = 1;
        if (l->in.len > before || l->eof)
            l->fresh = *more = 1;
    }
    return 0;
}

/*
 * One round (see the top comment): cut, sweep, counts, frames before the
 * cut, the MONITOR lines of earlier rounds, then send and close. Returns
 * 1 if another round must follow: the sweep read something, which the
 * next round handles, or lines of this round are held.
 */
static int round_once(void)
{
    int more = 0;

    round_no++;
    round_ms = srv_util_monotonic_ms();
    for (uint32_t id = 0; id < links_cap; id++)
        if (links[id]) {
            links[id]->cut = links[id]->in.len;
            links[id]->fresh = 0;
        }
    if (sweep(&more)) {
        srv_log(SRV_LOG_WARNING, ENOMEM, "epoll event array");
        return 0;
    }
    for (uint32_t id = 0; id < links_cap; id++)
        if (links[id] && !links[id]->dead)
            apply_ahead(links[id]);
    for (uint32_t id = 0; id < links_cap; id++)
        if (links[id])
            handle_frames(links[id]);
    for (uint32_t id = 0; id < links_cap; id++) {
        blink *l = links[id];
        /* At EOF, close once every frame it sent was before a cut. */
        if (l && l->eof && !l->fresh)
            l->dead = 1;
        if (l && l->dead)
            link_close(l); /* a pending batch of it blocks no more */
    }
    deliver_ready();
    lines_wait = srv_morder_release(lines, round_no, round_ms);
    for (uint32_t id = 0; id < links_cap; id++) {
        blink *l = links[id];
        if (l && l->out_sent < l->out.len)
            link_flush(l);
        if (l && l->dead)
            link_close(l);
    }
    return more || lines_wait == 0;
}

int srv_broker_main(void)
{
    sigset_t waitmask;
    int rounds, busy = 0;

    /* A restarted broker expects the counter's current number: lines
     * numbered before it are late (they leave as they come). */
    if (setup(&waitmask) || grow_links() || !(subs = srv_bsubs_create()) ||
        !(waiters = srv_bwait_create(grant, NULL)) ||
        !(lines = srv_morder_create(atomic_load(&srv_her.stats->monitor_seq),
                                    MONITOR_GAP_MS, MONITOR_HOLD_MAX, emit_line,
                                    NULL)))
        return 1;
    srv_log(SRV_LOG_VERBOSE, 0, "serving pub/sub");
    while (!stop) {
        int n;
        /* Idle, it still wakes once a tick to apply configuration
         * changes (hz itself among them). */
        srv_config_refresh();
        int tick_ms = (int)(MS_PER_S / srv_her.cfg->hz);
        int timeout_ms = busy ? 0 : tick_ms;
        if (lines_wait > 0 && lines_wait < timeout_ms)
            timeout_ms = (int)lines_wait; /* a MONITOR gap runs out */
        if (size_events()) {
            srv_log(SRV_LOG_WARNING, ENOMEM, "epoll event array");
            return 1;
        }
        n = epoll_pwait(ep, events, (int)events_cap, timeout_ms, &waitmask);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            srv_log(SRV_LOG_WARNING, errno, "epoll_pwait() failed");
            return 1;
        }
        for (int i = 0; i < n; i++) {
            uint32_t tag = events[i].data.u32;
            blink *l;
            if (tag == LISTENER_TAG)
                accept_all(srv_her.broker_fd);
            else if ((l = links[tag - 1]) && !l->eof &&
                     (events[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR)) &&
                     link_read(l))
                l->eof = 1;
        }
        for (rounds = 0; rounds < MAX_ROUNDS && round_once(); rounds++)
            ;
        busy = rounds == MAX_ROUNDS;
    }
    for (uint32_t id = 0; id < links_cap; id++)
        if (links[id])
            link_close(links[id]);
    srv_bsubs_destroy(&subs);
    srv_bwait_destroy(&waiters);
    srv_morder_destroy(&lines);
    while (nbatches)
        batch_remove(nbatches - 1);
    free(batches);
    srv_buf_free(&evbuf);
    srv_buf_free(&invbuf);
    for (size_t i = 0; i < nqueries; i++)
        if (queries[i].qid)
            query_finish(&queries[i]);
    free(queries);
    free(wkeys);
    free(wlens);
    return 0;
}
