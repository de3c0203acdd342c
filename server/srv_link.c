/*
 * srv_link.c - the worker's link to the broker (see the header): one
 * nonblocking Unix stream connection, its buffers, its states and the
 * dispatch of frames to the registered features.
 *
 * Input is parsed in place in the link's buffer (no allocation per
 * frame); both buffers grow by doubling and are kept, trimmed after a
 * burst.
 */
#include "server/srv_link.h"
#include "server/srv_broker.h"
#include "server/srv_group.h"
#include "server/srv_heritage.h"
#include "server/srv_log.h"
#include "server/srv_util.h"

#include <errno.h>
#include <event2/event.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define READ_CHUNK (64 * 1024)
#define READ_MAX_PER_EVENT (1024 * 1024)
#define BUF_KEEP (64 * 1024)
#define RETRY_MIN_MS 10
#define RETRY_MAX_MS 1000
#define START_WAIT_MS 1000
#define US_PER_MS 1000
#define MS_PER_S 1000

static const char *const state_names[] = { "down", "hello", "up" };

static struct {
    srv_worker *w;
    const srv_link_feature *features[SRV_LINK_FEATURES_MAX];
    int nfeatures;
    const srv_link_feature *by_type[SRV_BP_NTYPES];
    int fd;
    int state;
    int lost; /* EOF, error or bad frame: reset it */
    int stopped;
    uint64_t generation;
    struct event *ev_read, *ev_write, *ev_retry;
    int writing;
    srv_buf in;
    size_t need;
    srv_buf out;
    size_t out_sent;
    int64_t backoff_ms;
    int plain;              /* no event loop (srv_link_open_plain) */
    uint64_t plain_who;     /* its HELLO */
    int64_t plain_retry_ms; /* when it may connect again */
} lk = { .fd = -1 };

static void link_connect(void);

/* ---- output ---- */

static void activate_group(void)
{
    if (lk.w)
        srv_group_schedule(&lk.w->group);
}

static void link_lost(void)
{
    lk.lost = 1;
    activate_group(); /* the service resets the link */
}

int srv_link_state(void) { return lk.state; }

int srv_link_up(void) { return lk.state == SRV_LINK_UP && !lk.lost; }

uint64_t srv_link_generation(void) { return lk.generation; }

int srv_link_usable(void) { return lk.state != SRV_LINK_DOWN && !lk.lost; }

static void nomem(const char *what)
{
    srv_log(SRV_LOG_WARNING, ENOMEM, "%s for the broker", what);
    link_lost();
}

static int write_some(void);

int srv_link_put(int type, int kind, uint64_t arg, const void *p1, size_t n1,
                 const void *p2, size_t n2)
{
    if (!srv_link_usable())
        return -1;
    if (srv_bproto_put(&lk.out, type, kind, arg, p1, n1, p2, n2)) {
        nomem("a frame");
        return -1;
    }
    if (lk.plain)
        write_some(); /* no loop will flush it */
    return 0;
}

size_t srv_link_begin(int type, int kind, uint64_t arg)
{
    size_t off;

    if (!srv_link_usable())
        return (size_t)-1;
    if ((off = srv_bproto_begin(&lk.out, type, kind, arg)) == (size_t)-1)
        nomem("a frame");
    return off;
}

/* A piece of the frame at off failed: drop the frame. */
static int piece_failed(size_t off)
{
    lk.out.len = off;
    nomem("a frame");
    return -1;
}

int srv_link_field(size_t off, const void *p, size_t n)
{
    return srv_bproto_put_field(&lk.out, p, n) ? piece_failed(off) : 0;
}

int srv_link_u64(size_t off, uint64_t v)
{
    return srv_bproto_put_u64(&lk.out, v) ? piece_failed(off) : 0;
}

void srv_link_end(size_t off)
{
    srv_bproto_end(&lk.out, off);
    if (lk.plain)
        write_some(); /* no loop will flush it */
}

void srv_link_set_arg(size_t off, uint64_t arg)
{
    srv_bproto_set_arg(&lk.out, off, arg);
}

/* Write what the socket takes; 1 when everything is written. */
static int write_some(void)
{
    if (lk.fd < 0 || lk.lost)
        return 0;
    while (lk.out_sent < lk.out.len) {
        ssize_t n = write(lk.fd, lk.out.data + lk.out_sent,
                          lk.out.len - lk.out_sent);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK)
                return 0;
            if (errno != EPIPE && errno != ECONNRESET)
                srv_log(SRV_LOG_WARNING, errno, "write() to the broker");
            link_lost();
            return 0;
        }
        lk.out_sent += (size_t)n;
    }
    lk.out.len = lk.out_sent = 0;
    srv_buf_trim(&lk.out, BUF_KEEP);
    return 1;
}

void srv_link_flush(void)
{
    int done = write_some();

    if (lk.fd < 0 || lk.lost || lk.plain)
        return;
    if (done && lk.writing) {
        event_del(lk.ev_write);
        lk.writing = 0;
    } else if (!done && !lk.writing) {
        event_add(lk.ev_write, NULL);
        lk.writing = 1;
    }
}

int srv_link_flush_wait(int timeout_ms)
{
    int64_t deadline = srv_util_monotonic_ms() + timeout_ms;

    for (;;) {
        if (write_some()) {
            srv_link_flush(); /* disarm the write event */
            return 0;
        }
        int64_t left = deadline - srv_util_monotonic_ms();
        struct pollfd p = { lk.fd, POLLOUT, 0 };
        if (lk.fd < 0 || lk.lost || left <= 0)
            break;
        if (poll(&p, 1, (int)left) < 0 && errno != EINTR)
            break;
    }
    srv_link_flush();
    return -1;
}

static void on_write(evutil_socket_t fd, short what, void *arg)
{
    srv_link_flush();
}

/* ---- input ---- */

/* Read what the broker sent; the frames are handled in `settled`. */
static void on_read(evutil_socket_t fd, short what, void *arg)
{
    size_t got = 0;

    while (got < READ_MAX_PER_EVENT) {
        size_t want = READ_CHUNK;
        ssize_t n;
        if (lk.need > lk.in.len && lk.need - lk.in.len > want)
            want = lk.need - lk.in.len;
        if (srv_buf_reserve(&lk.in, want)) {
            srv_log(SRV_LOG_WARNING, ENOMEM, "input from the broker");
            link_lost();
            break;
        }
        n = read(lk.fd, lk.in.data + lk.in.len, lk.in.cap - lk.in.len);
        if (n > 0) {
            size_t room = lk.in.cap - lk.in.len;
            lk.in.len += (size_t)n;
            got += (size_t)n;
            if ((size_t)n < room)
                break; /* drained: no EAGAIN round trip */
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            break;
        if (n < 0 && errno != ECONNRESET)
            srv_log(SRV_LOG_WARNING, errno, "read() from the broker");
        event_del(lk.ev_read);
        link_lost();
        break;
    }
    activate_group();
}

static int handle_frame(const srv_bframe *f)
{
    const srv_link_feature *feat;

    if (f->type == SRV_BP_WELCOME) {
        if (lk.state != SRV_LINK_HELLO)
            return -1;
        lk.state = SRV_LINK_UP;
        lk.backoff_ms = 0;
        srv_log(SRV_LOG_VERBOSE, 0, "broker[%llu] connected",
                (unsigned long long)f->arg);
        return 0;
    }
    if (lk.state != SRV_LINK_UP || !(feat = lk.by_type[f->type]) ||
        !feat->frame)
        return -1;
    return feat->frame(f);
}

/* Handle the complete frames in the input buffer. */
static void read_frames(void)
{
    size_t off = 0, size;
    srv_bframe f;
    int rc;

    while (!lk.stopped && !lk.lost && off < lk.in.len) {
        rc = srv_bproto_decode(lk.in.data + off, lk.in.len - off,
                               srv_bproto_max_body(
                                   srv_her.cfg->proto_max_bulk_len),
                               &f, &size);
        if (rc == SRV_BP_MORE) {
            lk.need = size;
            break;
        }
        if (rc || handle_frame(&f)) {
            srv_log(SRV_LOG_WARNING, 0,
                    "bad frame from the broker (%s, link %s)",
                    rc ? srv_bproto_strerror(rc) : "unexpected frame",
                    state_names[lk.state]);
            lk.lost = 1;
            off = lk.in.len;
            break;
        }
        off += size;
    }
    srv_buf_consume(&lk.in, off);
    if (lk.in.len == 0) {
        lk.need = 0;
        srv_buf_trim(&lk.in, BUF_KEEP);
    }
}

/* ---- answers in the middle of a command ---- */

/* Read what the socket holds now (at most READ_MAX_PER_EVENT bytes);
 * -1 when the link is lost. */
static int read_now(void)
{
    size_t got = 0;

    while (got < READ_MAX_PER_EVENT) {
        ssize_t n;
        if (srv_buf_reserve(&lk.in, READ_CHUNK)) {
            nomem("input");
            return -1;
        }
        n = read(lk.fd, lk.in.data + lk.in.len, lk.in.cap - lk.in.len);
        if (n > 0) {
            lk.in.len += (size_t)n;
            got += (size_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return 0;
        if (n < 0 && errno != ECONNRESET)
            srv_log(SRV_LOG_WARNING, errno, "read() from the broker");
        link_lost();
        return -1;
    }
    return 0;
}

/* Show the complete frames from *off on to pick (see srv_link_wait);
 * *off moves past those left. 1 when pick said done. */
static int pick_frames(size_t *off, srv_link_pick_fn *pick, void *arg)
{
    uint64_t max = srv_bproto_max_body(srv_her.cfg->proto_max_bulk_len);
    size_t size;
    srv_bframe f;

    while (*off < lk.in.len) {
        int rc = srv_bproto_decode(lk.in.data + *off, lk.in.len - *off, max, &f,
                                   &size);
        if (rc) /* incomplete, or bad: read_frames meets it in turn */
            return 0;
        rc = pick(&f, arg);
        if (rc == SRV_LINK_LEAVE) {
            *off += size;
            continue;
        }
        memmove(lk.in.data + *off, lk.in.data + *off + size,
                lk.in.len - *off - size);
        lk.in.len -= size;
        if (rc == SRV_LINK_DONE)
            return 1;
    }
    return 0;
}

int srv_link_wait(srv_link_pick_fn *pick, void *arg, int timeout_ms)
{
    int64_t deadline = srv_util_monotonic_ms() + timeout_ms;
    size_t off = 0;
    int done = 0;

    for (;;) {
        if (!srv_link_up() || lk.plain)
            break;
        write_some();
        if (read_now())
            break;
        done = pick_frames(&off, pick, arg);
        write_some(); /* what pick answered */
        if (done)
            break;
        int64_t left = deadline - srv_util_monotonic_ms();
        struct pollfd p = { lk.fd, POLLIN, 0 };
        if (lk.out_sent < lk.out.len)
            p.events |= POLLOUT;
        if (left <= 0 || lk.lost)
            break;
        if (poll(&p, 1, (int)left) < 0 && errno != EINTR)
            break;
    }
    if (lk.fd >= 0 && !lk.plain) {
        srv_link_flush(); /* arm the write event for the rest */
        if (lk.in.len)
            activate_group(); /* what was left, in the group's turn */
    }
    return done ? 0 : -1;
}

/* ---- states ---- */

static void schedule_retry(void)
{
    struct timeval tv = { (time_t)(lk.backoff_ms / MS_PER_S),
                          (suseconds_t)(lk.backoff_ms % MS_PER_S * US_PER_MS) };

    if (lk.stopped || !lk.ev_retry)
        return;
    evtimer_add(lk.ev_retry, &tv);
    lk.backoff_ms = lk.backoff_ms ? lk.backoff_ms * 2 : RETRY_MIN_MS;
    if (lk.backoff_ms > RETRY_MAX_MS)
        lk.backoff_ms = RETRY_MAX_MS;
}

static void link_close(void)
{
    if (lk.ev_read) {
        event_free(lk.ev_read);
        lk.ev_read = NULL;
    }
    if (lk.ev_write) {
        event_free(lk.ev_write);
        lk.ev_write = NULL;
    }
    if (lk.fd >= 0)
        close(lk.fd);
    lk.fd = -1;
    lk.writing = 0;
    lk.in.len = lk.out.len = lk.out_sent = lk.need = 0;
    srv_buf_trim(&lk.in, BUF_KEEP);
    srv_buf_trim(&lk.out, BUF_KEEP);
}

/* The connection broke (or the broker misbehaved): every feature answers
 * what waits for it, and the link connects again (at once the first time:
 * the master keeps the listening socket, so a respawning broker finds us
 * queued). */
static void link_down(void)
{
    if (lk.state == SRV_LINK_UP)
        srv_log(SRV_LOG_WARNING, 0, "lost the broker, reconnecting");
    link_close();
    lk.state = SRV_LINK_DOWN;
    lk.lost = 0;
    for (int i = 0; i < lk.nfeatures; i++)
        if (lk.features[i]->down)
            lk.features[i]->down();
    schedule_retry();
}

static void on_retry(evutil_socket_t fd, short what, void *arg)
{
    link_connect();
    if (lk.state == SRV_LINK_DOWN)
        schedule_retry();
}

/* Connect, say HELLO and have every feature queue its state. */
static void link_connect(void)
{
    int fd;

    if (lk.stopped || lk.fd >= 0)
        return;
    if ((fd = srv_broker_connect()) < 0) {
        srv_log(SRV_LOG_VERBOSE, errno, "connecting to the broker");
        return;
    }
    lk.fd = fd;
    lk.ev_read = event_new(lk.w->base, fd, EV_READ | EV_PERSIST, on_read, NULL);
    lk.ev_write = event_new(lk.w->base, fd, EV_WRITE | EV_PERSIST, on_write,
                            NULL);
    /*
     * The link is read at the group's priority, not the clients': libevent
     * runs only the most urgent priority that has events in a loop turn,
     * and the broker's frames (messages published on other workers) can
     * arrive without pause, which would hold back the group (and with it
     * the delivery of those very messages) until a quiet moment or the
     * tick. Measured: delivery p99 ~100 ms (the 1/hz tick) before, with
     * 4 publishers and 4 subscribers on 2 workers.
     */
    if (!lk.ev_read || !lk.ev_write ||
        event_priority_set(lk.ev_read,
                           event_get_priority(lk.w->group.ev_commit)) ||
        event_priority_set(lk.ev_write, SRV_WORKER_PRIORITY_IO) ||
        event_add(lk.ev_read, NULL)) {
        srv_log(SRV_LOG_WARNING, ENOMEM, "broker link events");
        link_close();
        return;
    }
    lk.state = SRV_LINK_HELLO;
    lk.generation++;
    srv_link_put(SRV_BP_HELLO, 0, (uint64_t)lk.w->index, NULL, 0, NULL, 0);
    for (int i = 0; i < lk.nfeatures; i++)
        if (lk.features[i]->resend)
            lk.features[i]->resend();
    srv_link_flush();
}

int srv_link_register(const srv_link_feature *f)
{
    if (lk.nfeatures == SRV_LINK_FEATURES_MAX)
        return -1;
    for (const int *t = f->types; t && *t; t++)
        if (*t <= 0 || *t >= SRV_BP_NTYPES || *t == SRV_BP_WELCOME ||
            (lk.by_type[*t] && lk.by_type[*t] != f))
            return -1;
    for (int i = 0; i < lk.nfeatures; i++)
        if (lk.features[i] == f)
            return 0;
    for (const int *t = f->types; t && *t; t++)
        lk.by_type[*t] = f;
    lk.features[lk.nfeatures++] = f;
    if (srv_link_usable() && f->resend) {
        f->resend();
        srv_link_flush();
    }
    return 0;
}

/* ---- plain mode ---- */

#define PLAIN_RETRY_MS 1000
#define PLAIN_CONNECT_MS 1000

int srv_link_open_plain(uint64_t who)
{
    struct pollfd p;
    int fd;

    lk.plain = 1;
    lk.plain_who = who;
    lk.plain_retry_ms = srv_util_monotonic_ms() + PLAIN_RETRY_MS;
    if (lk.fd >= 0)
        return 0;
    if ((fd = srv_broker_connect()) < 0)
        return -1;
    p = (struct pollfd){ fd, POLLOUT, 0 };
    if (poll(&p, 1, PLAIN_CONNECT_MS) != 1 ||
        (p.revents & (POLLERR | POLLHUP))) {
        close(fd);
        return -1;
    }
    lk.fd = fd;
    lk.lost = 0;
    lk.state = SRV_LINK_HELLO; /* frames may be put; no WELCOME is read */
    lk.generation++;
    srv_link_put(SRV_BP_HELLO, 0, who, NULL, 0, NULL, 0);
    return srv_link_flush_wait(PLAIN_CONNECT_MS);
}

void srv_link_pump(void)
{
    char drop[READ_CHUNK];

    if (!lk.plain)
        return;
    write_some(); /* what a full socket left */
    while (lk.fd >= 0 && !lk.lost) {
        ssize_t n = read(lk.fd, drop, sizeof drop);
        if (n > 0)
            continue;
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            break;
        lk.lost = 1; /* EOF or an error */
    }
    if (lk.lost || lk.fd < 0) {
        link_close();
        lk.state = SRV_LINK_DOWN;
        lk.lost = 0;
        if (srv_util_monotonic_ms() >= lk.plain_retry_ms)
            srv_link_open_plain(lk.plain_who);
    }
}

void srv_link_close_plain(void)
{
    link_close();
    lk.state = SRV_LINK_DOWN;
    lk.plain = 0;
}

/* ---- the service ---- */

static int service_settled(srv_worker *w)
{
    int ran = 0;

    if (lk.stopped || !lk.w)
        return 0;
    read_frames();
    if (lk.lost)
        link_down();
    /* Now the features resume the clients that got their answers; the
     * messages and answers above are all in place first. */
    for (int i = 0; i < lk.nfeatures; i++)
        if (lk.features[i]->settled && lk.features[i]->settled(w))
            ran = 1;
    srv_link_flush();
    if (lk.lost)
        activate_group(); /* reset it on the next turn */
    return ran;
}

static void service_start(srv_worker *w)
{
    int64_t deadline = srv_util_monotonic_ms() + START_WAIT_MS;

    lk.w = w;
    lk.stopped = 0;
    lk.ev_retry = event_new(w->base, -1, 0, on_retry, NULL);
    if (!lk.ev_retry ||
        event_priority_set(lk.ev_retry, SRV_WORKER_PRIORITY_IO)) {
        srv_log(SRV_LOG_WARNING, ENOMEM, "broker retry timer");
        return;
    }
    link_connect();
    if (lk.fd < 0) {
        schedule_retry();
        return;
    }
    /* Wait (bounded) for the broker to welcome us before serving. */
    while (lk.state == SRV_LINK_HELLO && !lk.lost) {
        int64_t left = deadline - srv_util_monotonic_ms();
        struct pollfd p = { lk.fd, POLLIN, 0 };
        if (left <= 0)
            break;
        srv_link_flush();
        if (poll(&p, 1, (int)left) > 0) {
            on_read(lk.fd, EV_READ, NULL);
            read_frames();
        }
    }
    if (lk.lost)
        link_down();
    if (lk.state != SRV_LINK_UP)
        srv_log(SRV_LOG_VERBOSE, 0, "serving before the broker answered");
}

static void service_stop(srv_worker *w)
{
    lk.stopped = 1;
    link_close();
    lk.state = SRV_LINK_DOWN;
    for (int i = 0; i < lk.nfeatures; i++)
        if (lk.features[i]->down)
            lk.features[i]->down();
    if (lk.ev_retry) {
        event_free(lk.ev_retry);
        lk.ev_retry = NULL;
    }
    srv_buf_free(&lk.in);
    srv_buf_free(&lk.out);
    lk.w = NULL;
}

const srv_service srv_link_service = {
    .name = "link",
    .start = service_start,
    .stop = service_stop,
    .settled = service_settled,
};
