/*
 * srv_broker.c - the pub/sub broker process.
 *
 * State: per kind (channel, pattern, shard channel) a table from name to
 * the subscription counts of each worker connection ("link") that has
 * any, and their total. A name is in its table only while its total is
 * above zero, so PUBSUB NUMPAT is the size of the pattern table.
 *
 * Loop: epoll over the listening socket (inherited from the master) and
 * the links (and a wake-up per tick, 1/hz s, to apply configuration
 * changes); each wake-up runs rounds until the links are quiet. A round
 * takes a cut (what has been read so far), then reads every link until
 * it is empty (a sweep), applies the COUNT frames of everything read, and
 * only then handles the frames before the cut, in order per link.
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
 */
#include "server/srv_broker.h"
#include "server/srv_bproto.h"
#include "server/srv_buf.h"
#include "server/srv_config.h"
#include "server/srv_dict.h"
#include "server/srv_heritage.h"
#include "server/srv_log.h"
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
#define COUNTS_MIN 2
#define PROCESS_NAME "larder-broker"
/* Rounds per wake-up before the listener gets a turn (links that are
 * still busy go on right after it). */
#define MAX_ROUNDS 16
#define MS_PER_S 1000

typedef struct blink {
    int fd;
    uint32_t id; /* index in links[] */
    int worker;  /* index from HELLO; -1 before */
    srv_buf in;
    size_t need; /* bytes the incomplete frame needs */
    size_t cut;  /* input read before this round's sweep */
    int fresh;   /* this round's sweep read something */
    srv_buf out;
    size_t out_sent;
    uint32_t events; /* epoll interest */
    uint64_t mark;   /* last publish epoch it was a target of */
    int eof;         /* EOF or read error: close after its frames */
    int dead;        /* error or bad frame: close it now */
} blink;

/* One link's subscriptions to a name. */
typedef struct bcount {
    uint32_t link;
    uint32_t n;
} bcount;

/* A name's counts; the value of its dict entry. */
typedef struct bentry {
    uint64_t total;
    unsigned n, cap;
    bcount *per;
} bentry;

static volatile sig_atomic_t stop;
static int ep = -1;
static blink **links; /* by id; NULL when free */
static uint32_t links_cap;
static blink **targets; /* of the publish being routed */
static struct epoll_event *events;
static uint32_t events_cap;
static srv_dict names[SRV_BP_NKINDS];
static uint64_t epoch;

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

/* ---- counts ---- */

static void entry_free(srv_dict_entry *de)
{
    bentry *b = de->val;

    if (b) {
        free(b->per);
        free(b);
    }
}

/* Set link `id`'s subscriptions to a name; drop the name at total 0. */
static void set_count(int kind, const char *name, size_t len, uint32_t id,
                      uint64_t n64)
{
    uint32_t n = n64 > UINT32_MAX ? UINT32_MAX : (uint32_t)n64;
    uint64_t h = srv_dict_hash(name, len);
    srv_dict_entry *de = srv_dict_find(&names[kind], name, len, h);
    bentry *b;
    unsigned i;

    if (!de) {
        if (n == 0)
            return;
        if (!(b = calloc(1, sizeof *b)) ||
            !(de = srv_dict_add(&names[kind], name, len, h))) {
            free(b);
            srv_log(SRV_LOG_WARNING, ENOMEM, "subscription count lost");
            return;
        }
        de->val = b;
    }
    b = de->val;
    for (i = 0; i < b->n && b->per[i].link != id; i++)
        ;
    if (i < b->n) {
        b->total -= b->per[i].n;
        if (n)
            b->per[i].n = n;
        else
            b->per[i] = b->per[--b->n];
    } else if (n) {
        if (b->n == b->cap) {
            unsigned cap = b->cap ? b->cap * 2 : COUNTS_MIN;
            bcount *p = realloc(b->per, cap * sizeof *p);
            if (!p) {
                srv_log(SRV_LOG_WARNING, ENOMEM, "subscription count lost");
                n = 0;
            } else {
                b->per = p;
                b->cap = cap;
            }
        }
        if (n)
            b->per[b->n++] = (bcount){ id, n };
    }
    b->total += n;
    if (b->total == 0) {
        entry_free(de);
        srv_dict_remove(&names[kind], de);
    }
}

/* A link went away: its workers' subscriptions leave every count. */
static void drop_counts(uint32_t id)
{
    for (int k = 0; k < SRV_BP_NKINDS; k++) {
        srv_dict_iter it;
        srv_dict_entry *de;
        srv_dict_iter_init(&it, &names[k]);
        while ((de = srv_dict_iter_next(&it))) {
            bentry *b = de->val;
            for (unsigned i = 0; i < b->n; i++)
                if (b->per[i].link == id) {
                    b->total -= b->per[i].n;
                    b->per[i] = b->per[--b->n];
                    break;
                }
            if (b->total == 0) {
                entry_free(de);
                srv_dict_remove(&names[k], de);
            }
        }
    }
}

static uint64_t total_of(int kind, const char *name, size_t len)
{
    srv_dict_entry *de = srv_dict_find(&names[kind], name, len,
                                       srv_dict_hash(name, len));

    return de ? ((bentry *)de->val)->total : 0;
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
    drop_counts(l->id);
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

static void target(const bentry *b, uint32_t *ntargets)
{
    for (unsigned i = 0; i < b->n; i++) {
        blink *t = links[b->per[i].link];
        if (t && t->mark != epoch) {
            t->mark = epoch;
            targets[(*ntargets)++] = t;
        }
    }
}

static void route_publish(blink *l, const srv_bframe *f)
{
    const char *ch = f->body;
    size_t chlen = (size_t)f->arg;
    uint64_t receivers = 0;
    uint32_t ntargets = 0;
    srv_dict_entry *de;

    epoch++;
    if ((de = srv_dict_find(&names[f->kind], ch, chlen,
                            srv_dict_hash(ch, chlen)))) {
        receivers += ((bentry *)de->val)->total;
        target(de->val, &ntargets);
    }
    if (f->kind == SRV_BP_CHANNEL) {
        srv_dict_iter it;
        srv_dict_iter_init(&it, &names[SRV_BP_PATTERN]);
        while ((de = srv_dict_iter_next(&it)))
            if (srv_util_glob_match(de->key, de->klen, ch, chlen, 0)) {
                receivers += ((bentry *)de->val)->total;
                target(de->val, &ntargets);
            }
    }
    for (uint32_t i = 0; i < ntargets; i++)
        put(targets[i], SRV_BP_DELIVER, f->kind, f->arg, f->body,
            (size_t)f->len, NULL, 0);
    put(l, SRV_BP_PUBCOUNT, 0, receivers, NULL, 0, NULL, 0);
}

static void answer_numsub(blink *l, const srv_bframe *f)
{
    size_t off = srv_bproto_begin(&l->out, SRV_BP_R_NUMSUB, f->kind, 0);
    srv_bcursor cur;
    const char *name;
    size_t len;

    if (off == (size_t)-1)
        goto nomem;
    srv_bproto_cursor(&cur, f);
    while (srv_bproto_get_field(&cur, &name, &len) == 0)
        if (srv_bproto_put_field(&l->out, name, len) ||
            srv_bproto_put_u64(&l->out, total_of(f->kind, name, len)))
            goto nomem;
    srv_bproto_end(&l->out, off);
    return;
nomem:
    srv_log(SRV_LOG_WARNING, ENOMEM, "PUBSUB NUMSUB answer");
    l->dead = 1;
}

/* Names of a kind matching the pattern (all without one). A list past
 * what a worker accepts in one frame is cut there. */
static void answer_channels(blink *l, const srv_bframe *f)
{
    size_t off = srv_bproto_begin(&l->out, SRV_BP_R_CHANNELS, f->kind, 0);
    uint64_t limit = max_body() - SRV_BP_BODY_SLACK, n = 0;
    srv_dict_iter it;
    srv_dict_entry *de;

    if (off == (size_t)-1)
        goto nomem;
    srv_dict_iter_init(&it, &names[f->kind]);
    while ((de = srv_dict_iter_next(&it))) {
        if (f->arg &&
            !srv_util_glob_match(f->body, (size_t)f->len, de->key, de->klen, 0))
            continue;
        if (l->out.len - off + SRV_BP_FIELD_HDR + de->klen > limit)
            break;
        if (srv_bproto_put_field(&l->out, de->key, de->klen))
            goto nomem;
        n++;
    }
    srv_bproto_set_arg(&l->out, off, n);
    srv_bproto_end(&l->out, off);
    return;
nomem:
    srv_log(SRV_LOG_WARNING, ENOMEM, "PUBSUB CHANNELS answer");
    l->dead = 1;
}

static void handle_frame(blink *l, const srv_bframe *f)
{
    switch (f->type) {
    case SRV_BP_HELLO:
        l->worker = f->arg > INT32_MAX ? -1 : (int)f->arg;
        srv_log(SRV_LOG_VERBOSE, 0, "worker#%d connected", l->worker);
        put(l, SRV_BP_WELCOME, 0, (uint64_t)getpid(), NULL, 0, NULL, 0);
        break;
    case SRV_BP_COUNT: break; /* applied ahead (apply_counts) */
    case SRV_BP_PUBLISH: route_publish(l, f); break;
    case SRV_BP_NUMSUB: answer_numsub(l, f); break;
    case SRV_BP_CHANNELS: answer_channels(l, f); break;
    case SRV_BP_NUMPAT:
        put(l, SRV_BP_R_NUMPAT, 0, names[SRV_BP_PATTERN].count, NULL, 0, NULL,
            0);
        break;
    default:
        srv_log(SRV_LOG_WARNING, 0, "worker#%d sent a broker's frame (%d)",
                l->worker, f->type);
        l->dead = 1;
    }
}

/* The link's COUNT frames, all of them, applied ahead of the other
 * frames (in order: the newest count of each name wins). */
static void apply_counts(blink *l)
{
    size_t off = 0, size;
    srv_bframe f;

    while (off < l->in.len &&
           srv_bproto_decode(l->in.data + off, l->in.len - off, max_body(), &f,
                             &size) == 0) {
        if (f.type == SRV_BP_COUNT)
            set_count(f.kind, f.body, (size_t)f.len, l->id, f.arg);
        off += size;
    }
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

/*
 * One round (see the top comment): cut, sweep, counts, frames before the
 * cut, then send and close. Returns 1 if the sweep read something, which
 * the next round handles.
 */
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

static int round_once(void)
{
    int more = 0;

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
            apply_counts(links[id]);
    for (uint32_t id = 0; id < links_cap; id++)
        if (links[id])
            handle_frames(links[id]);
    for (uint32_t id = 0; id < links_cap; id++) {
        blink *l = links[id];
        if (!l)
            continue;
        /* At EOF, close once every frame it sent was before a cut. */
        if (l->eof && !l->fresh)
            l->dead = 1;
        if (!l->dead && l->out_sent < l->out.len)
            link_flush(l);
        if (l->dead)
            link_close(l);
    }
    return more;
}

int srv_broker_main(void)
{
    sigset_t waitmask;
    int rounds, busy = 0;

    if (setup(&waitmask) || grow_links())
        return 1;
    srv_log(SRV_LOG_VERBOSE, 0, "serving pub/sub");
    while (!stop) {
        int n;
        /* Idle, it still wakes once a tick to apply configuration
         * changes (hz itself among them). */
        srv_config_refresh();
        int tick_ms = (int)(MS_PER_S / srv_her.cfg->hz);
        if (size_events()) {
            srv_log(SRV_LOG_WARNING, ENOMEM, "epoll event array");
            return 1;
        }
        n = epoll_pwait(ep, events, (int)events_cap, busy ? 0 : tick_ms,
                        &waitmask);
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
    for (int k = 0; k < SRV_BP_NKINDS; k++)
        srv_dict_clear(&names[k], entry_free);
    return 0;
}
