/*
 * bench_engine: threads, connections and the load loops (see
 * bench_engine.h).
 *
 * Timing.  t0 is when the run starts; the window measured is
 * [t0 + warmup, t0 + warmup + duration), or with --requests from
 * t0 + warmup until that many operations completed.  An operation counts
 * when it *completes* inside the window, so the edges cost nothing at
 * steady state.  Its latency runs from its start time: in the closed loop
 * the moment it was queued for sending; in the open loop the moment the
 * schedule said it was due, however late it actually left, so a stall of
 * the server (or of this tool) shows up in the percentiles instead of
 * silently pausing the clock (coordinated omission).
 *
 * Each connection keeps a ring of pending replies in send order; RESP
 * answers in order, so the head of the ring is always what the next reply
 * answers.
 */
#include "bench/bench_engine.h"

#include <ctype.h>
#include <errno.h>
#include <event2/event.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define NS_PER_S 1000000000ULL
#define NS_PER_US 1000ULL
#define US_PER_S 1000000ULL
#define TICK_US 10000 /* stop and gate checks, 10 ms */
#define RECONNECT_DELAY_US 100000
#define READ_CHUNK 65536
#define RING_MIN_CAP 16
#define SUBSCRIBE_TIMEOUT_S 10
/* The main thread checks progress this often: often enough that a run
 * ends within a few ms of its last reply (quick suites start hundreds). */
#define PROGRESS_POLL_NS 5000000
#define ERRMSG_LEN 256
#define EMPTY_ERROR_KIND "empty_error"

typedef enum pend_kind {
    PEND_SETUP, /* AUTH / SELECT: an error is fatal */
    PEND_MID,   /* a reply inside an operation's phase */
    PEND_LAST,  /* the last reply of a phase */
    PEND_SUB,   /* a listener's command: SUBSCRIBE, BLPOP, BRPOP */
    PEND_INFO   /* CLIENT INFO: the worker= of --cross-worker */
} pend_kind;

typedef struct pending {
    uint64_t start_ns;
    pend_kind kind;
} pending;

typedef struct engine engine;
typedef struct thread thread;

typedef struct conn {
    thread *th;
    unsigned index; /* global, also the random stream */
    bool subscriber;
    int fd;
    bool connecting;
    bool connected;
    bool write_armed;
    bool subscribed;      /* counted in engine.subscribed */
    int worker;           /* --cross-worker: its larder worker, -1 unknown */
    unsigned next_target; /* wake: where its round robin is */
    struct event *ev_read;
    struct event *ev_write;
    struct event *ev_timer; /* open-loop schedule and reconnects */
    bench_buf in;
    bench_buf out;
    bench_resp_scan scan; /* the reply being received */
    pending *ring;
    size_t ring_cap; /* a power of two */
    size_t ring_head;
    size_t ring_count;
    unsigned inflight_ops;
    uint64_t next_due_ns; /* open loop */
    uint64_t interval_ns; /* open loop */
    bench_work_conn wc;
} conn;

struct thread {
    engine *eng;
    unsigned index;
    pthread_t tid;
    struct event_base *base;
    struct event *tick;
    conn *conns;
    unsigned n_conns;
    bench_stats stats;
    bool stopping;
    bool started; /* publish: workers were kicked off */
    uint64_t stop_ns;
    uint64_t last_op_ns;   /* last counted completion */
    int rc;                /* ENOMEM and the like */
    atomic_ulong progress; /* completions so far, read by main() */
    atomic_int finished;   /* the thread's loop has ended */
};

struct engine {
    const bench_opts *o;
    const bench_work *w;
    uint64_t t0_ns;
    uint64_t measure_start_ns;
    uint64_t measure_end_ns; /* UINT64_MAX with --requests */
    unsigned n_subscribers;  /* listeners: subscribers or waiters */
    atomic_uint subscribed;
    _Atomic int *listener_worker; /* wake: each waiter's worker, -1 */
    atomic_ulong measured;        /* --requests: ops counted so far */
    atomic_int stop;
    atomic_int fatal;
    char fatal_msg[ERRMSG_LEN];
    thread *threads;
};

uint64_t bench_now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * NS_PER_S + (uint64_t)ts.tv_nsec;
}

static void set_fatal(engine *e, const char *msg)
{
    int expected = 0;

    if (atomic_compare_exchange_strong(&e->fatal, &expected, 1))
        snprintf(e->fatal_msg, sizeof(e->fatal_msg), "%s", msg);
    atomic_store(&e->stop, 1);
}

static void oom(thread *t)
{
    t->rc = ENOMEM;
    set_fatal(t->eng, "out of memory");
}

static void timeval_from_us(struct timeval *tv, uint64_t us)
{
    tv->tv_sec = (time_t)(us / US_PER_S);
    tv->tv_usec = (suseconds_t)(us % US_PER_S);
}

/* --- pending ring ---------------------------------------------------- */

static int ring_push(conn *c, uint64_t start_ns, pend_kind kind)
{
    if (c->ring_count == c->ring_cap) {
        size_t cap = c->ring_cap ? c->ring_cap * 2 : RING_MIN_CAP, i;
        pending *p = malloc(cap * sizeof(*p));

        if (p == NULL)
            return ENOMEM;
        for (i = 0; i < c->ring_count; i++)
            p[i] = c->ring[(c->ring_head + i) & (c->ring_cap - 1)];
        free(c->ring);
        c->ring = p;
        c->ring_cap = cap;
        c->ring_head = 0;
    }
    c->ring[(c->ring_head + c->ring_count) & (c->ring_cap - 1)] = (pending){
        .start_ns = start_ns, .kind = kind
    };
    c->ring_count++;
    return 0;
}

static pending ring_pop(conn *c)
{
    pending p = c->ring[c->ring_head];

    c->ring_head = (c->ring_head + 1) & (c->ring_cap - 1);
    c->ring_count--;
    return p;
}

static int push_phase(conn *c, unsigned n, uint64_t start_ns)
{
    unsigned i;

    for (i = 0; i < n; i++) {
        if (ring_push(c, start_ns, i + 1 == n ? PEND_LAST : PEND_MID) != 0)
            return ENOMEM;
    }
    return 0;
}

/* --- connections ----------------------------------------------------- */

static void on_read(evutil_socket_t fd, short what, void *arg);
static void on_write(evutil_socket_t fd, short what, void *arg);
static void on_timer(evutil_socket_t fd, short what, void *arg);
static void conn_start(conn *c);

static void count_error(thread *t, const char *kind)
{
    bench_errors_add(&t->stats.errors, kind, strlen(kind), 1);
}

static const char *conn_error_kind(int err)
{
    switch (err) {
    case ECONNREFUSED: return "conn_refused";
    case ECONNRESET:
    case EPIPE: return "conn_reset";
    case 0: return "conn_closed";
    case ETIMEDOUT: return "conn_timeout";
    case EPROTO: return "protocol";
    default: return "conn_other";
    }
}

static void conn_close(conn *c)
{
    if (c->ev_read != NULL)
        event_free(c->ev_read);
    if (c->ev_write != NULL)
        event_free(c->ev_write);
    c->ev_read = c->ev_write = NULL;
    if (c->fd >= 0)
        close(c->fd);
    c->fd = -1;
    c->connected = c->connecting = c->write_armed = false;
    c->in.off = c->in.len = 0;
    c->out.off = c->out.len = 0;
    bench_resp_scan_reset(&c->scan);
    c->ring_head = c->ring_count = 0;
    c->inflight_ops = 0;
}

/*
 * The connection broke (err 0: the server closed it).  Count the failure
 * and the operations it took with it, then reconnect after a pause unless
 * the run is ending.
 */
static void conn_fail(conn *c, int err)
{
    thread *t = c->th;
    struct timeval tv;

    count_error(t, conn_error_kind(err));
    if (c->inflight_ops > 0 && !t->stopping)
        bench_errors_add(&t->stats.errors, "conn_lost_requests",
                         strlen("conn_lost_requests"), c->inflight_ops);
    if (c->subscribed) {
        /* Its subscription is gone with it; it re-subscribes. */
        atomic_fetch_sub(&t->eng->subscribed, 1);
        c->subscribed = false;
    }
    conn_close(c);
    if (t->stopping)
        return;
    timeval_from_us(&tv, RECONNECT_DELAY_US);
    evtimer_add(c->ev_timer, &tv);
}

static void arm_write(conn *c, bool on)
{
    if (on == c->write_armed)
        return;
    if (on)
        event_add(c->ev_write, NULL);
    else
        event_del(c->ev_write);
    c->write_armed = on;
}

/* Write what is queued; returns 0, or -1 after conn_fail(). */
static int conn_flush(conn *c)
{
    while (bench_buf_pending(&c->out) > 0) {
        ssize_t n = write(c->fd, c->out.data + c->out.off,
                          bench_buf_pending(&c->out));

        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == EAGAIN) {
            arm_write(c, true);
            return 0;
        }
        if (n < 0) {
            conn_fail(c, errno);
            return -1;
        }
        c->out.off += (size_t)n;
    }
    c->out.off = c->out.len = 0;
    if (!c->connecting)
        arm_write(c, false);
    return 0;
}

static bool in_window(const engine *e, uint64_t now)
{
    return now >= e->measure_start_ns && now < e->measure_end_ns;
}

static bool open_loop(const engine *e) { return e->o->rate > 0.0; }

/* Workloads whose pushers wait for their listeners (subscribers,
 * waiters) to be in place. */
static bool has_listeners(const bench_opts *o)
{
    return o->workload == BENCH_WL_PUBLISH || o->workload == BENCH_WL_WAKE ||
           o->workload == BENCH_WL_JOBS;
}

/*
 * wake: the waiter this push goes to, round robin; with --cross-worker,
 * skipping waiters known to be on this connection's worker (all are
 * taken if none is elsewhere).
 */
static unsigned pick_target(conn *c)
{
    engine *e = c->th->eng;
    unsigned n = e->n_subscribers;

    for (unsigned tries = 0; tries < n; tries++) {
        unsigned i = c->next_target++ % n;
        int w = atomic_load_explicit(&e->listener_worker[i],
                                     memory_order_relaxed);
        if (!e->o->cross_worker || c->worker < 0 || w < 0 || w != c->worker)
            return i;
    }
    return c->next_target++ % n;
}

static bool may_send(const conn *c)
{
    const thread *t = c->th;

    /* e->stop, not only t->stopping: with --requests the count can be
     * reached between two ticks, and every operation sent after it (a
     * SET of a new key, say) would still reach the server. */
    if (!c->connected || c->subscriber || t->stopping ||
        atomic_load_explicit(&t->eng->stop, memory_order_relaxed))
        return false;
    if (has_listeners(t->eng->o) && !t->started)
        return false;
    return true;
}

/* Start operations while the loop allows; queue only, the caller
 * flushes. */
static void conn_fill(conn *c, uint64_t now)
{
    engine *e = c->th->eng;
    unsigned depth = e->o->pipeline, n;
    struct timeval tv;

    if (!may_send(c))
        return;
    if (!open_loop(e)) {
        while (c->inflight_ops < depth) {
            if (e->o->workload == BENCH_WL_WAKE)
                c->wc.target = pick_target(c);
            n = bench_work_start(e->w, &c->wc, &c->out, now);
            if (push_phase(c, n, now) != 0) {
                oom(c->th);
                return;
            }
            c->inflight_ops++;
        }
        return;
    }
    while (c->inflight_ops < depth && c->next_due_ns <= now) {
        /* How late the tool itself is: if this grows, the generator, not
         * the server, is the bottleneck. */
        if (in_window(e, now))
            bench_hist_record(c->th->stats.lag, now - c->next_due_ns);
        if (e->o->workload == BENCH_WL_WAKE)
            c->wc.target = pick_target(c);
        n = bench_work_start(e->w, &c->wc, &c->out, c->next_due_ns);
        if (push_phase(c, n, c->next_due_ns) != 0) {
            oom(c->th);
            return;
        }
        c->inflight_ops++;
        c->next_due_ns += c->interval_ns;
    }
    /* Wake up when the next one is due (a completion also wakes us). */
    if (c->inflight_ops < depth && !evtimer_pending(c->ev_timer, NULL)) {
        timeval_from_us(&tv,
                        (c->next_due_ns - now + NS_PER_US - 1) / NS_PER_US);
        evtimer_add(c->ev_timer, &tv);
    }
}

/* Count one finished operation. */
static void record_op(thread *t, uint64_t now, uint64_t start,
                      bench_outcome outcome)
{
    engine *e = t->eng;
    uint64_t lat;
    size_t sec;

    if (!in_window(e, now) || t->stopping)
        return;
    if (e->o->requests > 0 &&
        atomic_fetch_add(&e->measured, 1) >= e->o->requests) {
        atomic_store(&e->stop, 1);
        return;
    }
    t->stats.outcomes[outcome]++;
    if (outcome == BENCH_OUT_ERROR)
        return; /* counted by kind when the error reply arrived */
    t->stats.ops++;
    t->last_op_ns = now;
    lat = now > start ? now - start : 0;
    bench_hist_record(t->stats.latency, lat);
    sec = (size_t)((now - e->measure_start_ns) / NS_PER_S);
    if (bench_stats_series_add(&t->stats, sec, 1, lat) != 0)
        oom(t);
}

/* Count an error reply under its first word ("ERR", "WRONGTYPE"); bytes
 * other than letters, digits, '-' and '_' become '_' so a kind is always
 * a clean JSON key.  The first message of each kind is kept. */
static void count_error_reply(thread *t, const bench_reply *r)
{
    char kind[BENCH_ERR_KIND_LEN], text[BENCH_ERR_SAMPLE_LEN];
    size_t n = 0;

    while (n < r->len && n < sizeof(kind) - 1 && r->str[n] != ' ') {
        char ch = r->str[n];

        kind[n++] = isalnum((unsigned char)ch) || ch == '-' ? ch : '_';
    }
    if (n == 0) {
        n = strlen(EMPTY_ERROR_KIND);
        memcpy(kind, EMPTY_ERROR_KIND, n);
    }
    bench_reply_text(r, text, sizeof(text));
    bench_errors_add_sample(&t->stats.errors, kind, n, 1, text);
}

/* A set-up command was refused: nothing sensible can run. */
static void setup_refused(engine *e, const bench_reply *r)
{
    char msg[ERRMSG_LEN], text[ERRMSG_LEN / 2];

    bench_reply_text(r, text, sizeof(text));
    snprintf(msg, sizeof(msg), "connection set-up refused: %s", text);
    set_fatal(e, msg);
}

/* The listener is in place: the pushers may start once all are. */
static void listener_in(conn *c)
{
    if (!c->subscribed) {
        c->subscribed = true;
        atomic_fetch_add(&c->th->eng->subscribed, 1);
    }
}

/* A listener's command (again, for wake and jobs, after an element). */
static int listen_again(conn *c)
{
    engine *e = c->th->eng;

    bench_work_listen(e->w, c->index - e->o->connections, &c->out);
    return ring_push(c, 0, PEND_SUB);
}

static void subscriber_reply(conn *c, const bench_reply *r, uint64_t now)
{
    thread *t = c->th;
    engine *e = t->eng;
    uint64_t stamp;
    pending p;

    if (bench_work_delivery_stamp(e->w, r, &stamp)) {
        if (bench_work_listens_again(e->w)) {
            /* A BLPOP / BRPOP reply: it waits again at once. */
            if (c->ring_count)
                ring_pop(c);
            if (!t->stopping && listen_again(c) != 0)
                oom(t);
        }
        if (!in_window(e, now) || t->stopping)
            return;
        t->stats.delivered++;
        bench_hist_record(t->stats.delivery, now > stamp ? now - stamp : 0);
        return;
    }
    if (r->type == BENCH_REPLY_ERROR)
        count_error_reply(t, r);
    if (c->ring_count == 0)
        return;
    p = ring_pop(c);
    if (r->type == BENCH_REPLY_ERROR) {
        setup_refused(e, r);
    } else if (p.kind == PEND_INFO) {
        int w = bench_work_client_worker(r);
        atomic_store(&e->listener_worker[c->index - e->o->connections], w);
        if (bench_work_listens_again(e->w))
            listener_in(c);
    } else if (p.kind == PEND_SUB && bench_work_is_subscribed(r)) {
        listener_in(c);
    }
}

/* Handle one reply of a worker connection; -1 when it must close. */
static int worker_reply(conn *c, const bench_reply *r, uint64_t now)
{
    thread *t = c->th;
    engine *e = t->eng;
    bench_step step;
    pending p;

    if (c->ring_count == 0) {
        count_error(t, "unexpected_reply");
        return -1;
    }
    p = ring_pop(c);
    if (r->type == BENCH_REPLY_ERROR)
        count_error_reply(t, r);
    if (p.kind == PEND_SETUP || p.kind == PEND_INFO) {
        if (r->type == BENCH_REPLY_ERROR)
            setup_refused(e, r);
        else if (p.kind == PEND_INFO)
            c->worker = bench_work_client_worker(r);
        return 0;
    }
    bench_work_reply(e->w, &c->wc, r, p.kind == PEND_LAST, &c->out, &step);
    if (p.kind != PEND_LAST)
        return 0;
    if (step.done) {
        c->inflight_ops--;
        atomic_fetch_add_explicit(&t->progress, 1, memory_order_relaxed);
        record_op(t, now, p.start_ns, step.outcome);
    } else if (step.next > 0 && push_phase(c, step.next, p.start_ns) != 0) {
        oom(t);
    }
    return 0;
}

/* Handle every whole reply in the read buffer, then top the pipeline up
 * and write: one write per read, however many replies it carried. */
static void conn_process(conn *c)
{
    uint64_t now = bench_now_ns();
    bench_reply r;

    for (;;) {
        long used = bench_resp_scan_reply(&c->scan, c->in.data + c->in.off,
                                          bench_buf_pending(&c->in), &r);

        if (used == 0)
            break;
        if (used < 0) {
            conn_fail(c, EPROTO);
            return;
        }
        c->in.off += (size_t)used;
        if (c->subscriber) {
            subscriber_reply(c, &r, now);
        } else if (worker_reply(c, &r, now) != 0) {
            conn_fail(c, EPROTO);
            return;
        }
    }
    bench_buf_compact(&c->in);
    /* A fresh clock: new requests start now, not when the replies that
     * made room for them arrived. */
    conn_fill(c, bench_now_ns());
    conn_flush(c);
}

static void on_read(evutil_socket_t fd, short what, void *arg)
{
    conn *c = arg;
    ssize_t n;

    if (bench_buf_reserve(&c->in, READ_CHUNK) != 0) {
        oom(c->th);
        return;
    }
    n = read(fd, c->in.data + c->in.len, c->in.cap - c->in.len);
    if (n < 0 && (errno == EAGAIN || errno == EINTR))
        return;
    if (n <= 0) {
        conn_fail(c, n == 0 ? 0 : errno);
        return;
    }
    c->in.len += (size_t)n;
    conn_process(c);
}

/* The socket connected: queue set-up, then the first operations. */
static void conn_ready(conn *c)
{
    engine *e = c->th->eng;
    const bench_target *tg = &e->o->target;

    int rc = 0;

    c->connecting = false;
    c->connected = true;
    if (tg->password != NULL) {
        const char *argv[] = { "AUTH", tg->password };

        bench_cmd_argv(&c->out, 2, argv);
        rc |= ring_push(c, 0, PEND_SETUP);
    }
    if (tg->db != 0) {
        bench_cmd_begin(&c->out, 2);
        bench_cmd_arg_str(&c->out, "SELECT");
        bench_cmd_arg_u64(&c->out, (uint64_t)tg->db);
        rc |= ring_push(c, 0, PEND_SETUP);
    }
    if (e->o->cross_worker) {
        const char *argv[] = { "CLIENT", "INFO" };

        bench_cmd_argv(&c->out, 2, argv);
        rc |= ring_push(c, 0, PEND_INFO);
    }
    if (c->subscriber) {
        rc |= listen_again(c);
        if (bench_work_listens_again(e->w) && !e->o->cross_worker)
            listener_in(c);
    }
    if (rc != 0) {
        oom(c->th);
        return;
    }
    conn_fill(c, bench_now_ns());
    conn_flush(c);
}

static void on_write(evutil_socket_t fd, short what, void *arg)
{
    conn *c = arg;
    int soerr = 0;
    socklen_t len = sizeof(soerr);

    if (c->connecting) {
        if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &len) < 0)
            soerr = errno;
        if (soerr != 0) {
            conn_fail(c, soerr);
            return;
        }
        conn_ready(c);
        return;
    }
    conn_flush(c);
}

static void on_timer(evutil_socket_t fd, short what, void *arg)
{
    conn *c = arg;

    if (c->fd < 0) {
        if (!c->th->stopping)
            conn_start(c);
        return;
    }
    conn_fill(c, bench_now_ns());
    conn_flush(c);
}

/* Open a connection; failures go through conn_fail (which retries). */
static void conn_start(conn *c)
{
    struct event_base *base = c->th->base;
    int rc = bench_target_connect(&c->th->eng->o->target, &c->fd);

    if (rc != 0) {
        c->fd = -1;
        conn_fail(c, rc);
        return;
    }
    c->ev_read = event_new(base, c->fd, EV_READ | EV_PERSIST, on_read, c);
    c->ev_write = event_new(base, c->fd, EV_WRITE | EV_PERSIST, on_write, c);
    if (c->ev_read == NULL || c->ev_write == NULL) {
        oom(c->th);
        return;
    }
    c->connecting = true;
    event_add(c->ev_read, NULL);
    arm_write(c, true);
}

/* --- threads --------------------------------------------------------- */

/* True when no worker connection of t awaits a reply. */
static bool thread_drained(const thread *t)
{
    unsigned i;

    for (i = 0; i < t->n_conns; i++) {
        if (!t->conns[i].subscriber && t->conns[i].ring_count > 0)
            return false;
    }
    return true;
}

/* publish: every subscriber is in, so this thread's publishers start. */
static void kick_workers(thread *t)
{
    uint64_t now = bench_now_ns();
    unsigned i;

    t->started = true;
    for (i = 0; i < t->n_conns; i++) {
        conn *c = &t->conns[i];

        if (c->subscriber || c->fd < 0)
            continue;
        /* The open-loop schedule starts now, not at t0. */
        if (open_loop(t->eng))
            c->next_due_ns = now + (c->next_due_ns - t->eng->t0_ns);
        conn_fill(c, now);
        conn_flush(c);
    }
}

/*
 * Every TICK_US: notice the end of the window (or a stop from another
 * thread), then stop sending and wait for replies in flight, at most
 * the drain limit; start publishers once all subscribers are in.
 */
static void on_tick(evutil_socket_t fd, short what, void *arg)
{
    thread *t = arg;
    engine *e = t->eng;
    uint64_t now = bench_now_ns();

    if (e->o->requests > 0 && !t->stopping &&
        now >= e->measure_start_ns + (uint64_t)(e->o->timeout_s * NS_PER_S)) {
        char msg[ERRMSG_LEN];

        snprintf(msg, sizeof(msg),
                 "%llu requests did not complete within "
                 "--timeout %gs",
                 (unsigned long long)e->o->requests, e->o->timeout_s);
        set_fatal(e, msg);
    }
    if (!t->stopping && (atomic_load(&e->stop) || now >= e->measure_end_ns)) {
        t->stopping = true;
        t->stop_ns = now;
    }
    if (t->stopping) {
        if (thread_drained(t) ||
            now - t->stop_ns >= (uint64_t)(e->o->max_drain_s * NS_PER_S))
            event_base_loopbreak(t->base);
        return;
    }
    if (has_listeners(e->o) && !t->started) {
        if (atomic_load(&e->subscribed) >= e->n_subscribers)
            kick_workers(t);
        else if (now - e->t0_ns >= SUBSCRIBE_TIMEOUT_S * NS_PER_S)
            set_fatal(e, "subscribers did not all subscribe in time");
    }
}

/* One load thread: its own event base, its share of the connections,
 * its own bench_stats; shares only the engine's atomics. */
static void *thread_main(void *arg)
{
    thread *t = arg;
    struct timeval tv;
    unsigned i;

    bool ok = true;

    timeval_from_us(&tv, TICK_US);
    t->tick = event_new(t->base, -1, EV_PERSIST, on_tick, t);
    for (i = 0; i < t->n_conns; i++) {
        t->conns[i].ev_timer = evtimer_new(t->base, on_timer, &t->conns[i]);
        ok = ok && t->conns[i].ev_timer != NULL;
    }
    if (t->tick == NULL || !ok) {
        oom(t);
    } else {
        event_add(t->tick, &tv);
        for (i = 0; i < t->n_conns; i++)
            conn_start(&t->conns[i]);
        event_base_loop(t->base, 0);
    }
    for (i = 0; i < t->n_conns; i++) {
        conn_close(&t->conns[i]);
        if (t->conns[i].ev_timer != NULL)
            event_free(t->conns[i].ev_timer);
        t->conns[i].ev_timer = NULL;
    }
    if (t->tick != NULL)
        event_free(t->tick);
    t->tick = NULL;
    atomic_store(&t->finished, 1);
    return NULL;
}

static double cpu_seconds(void)
{
    struct rusage ru;

    if (getrusage(RUSAGE_SELF, &ru) != 0)
        return 0.0;
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_stime.tv_sec +
           (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / US_PER_S;
}

/* Spread connections over threads: workers first, then subscribers. */
static int setup_threads(engine *e, unsigned run_index)
{
    const bench_opts *o = e->o;
    unsigned total = o->connections + e->n_subscribers, i;
    unsigned nt = o->threads;
    struct event_config *cfg;

    e->threads = calloc(nt, sizeof(*e->threads));
    if (e->threads == NULL)
        return ENOMEM;
    for (i = 0; i < nt; i++) {
        thread *t = &e->threads[i];

        t->eng = e;
        t->index = i;
        t->conns = calloc(total / nt + 1, sizeof(*t->conns));
        if (t->conns == NULL || bench_stats_init(&t->stats) != 0)
            return ENOMEM;
        t->started = !has_listeners(o);
        cfg = event_config_new();
        if (cfg == NULL)
            return ENOMEM;
        /* Open-loop timers must fire on time, not to the millisecond. */
        if (o->rate > 0.0)
            event_config_set_flag(cfg, EVENT_BASE_FLAG_PRECISE_TIMER);
        t->base = event_base_new_with_config(cfg);
        event_config_free(cfg);
        if (t->base == NULL)
            return ENOMEM;
    }
    for (i = 0; i < total; i++) {
        thread *t = &e->threads[i % nt];
        conn *c = &t->conns[t->n_conns++];

        c->th = t;
        c->index = i;
        c->fd = -1;
        c->subscriber = i >= o->connections;
        c->worker = -1;
        bench_work_conn_init(e->w, &c->wc, (uint64_t)run_index * total + i);
        if (o->rate > 0.0 && !c->subscriber) {
            c->interval_ns = (uint64_t)((double)o->connections * NS_PER_S /
                                        o->rate);
            if (c->interval_ns == 0)
                c->interval_ns = 1;
        }
    }
    return 0;
}

static void teardown(engine *e)
{
    unsigned i;

    if (e->threads == NULL)
        return;
    for (i = 0; i < e->o->threads; i++) {
        thread *t = &e->threads[i];
        unsigned k;

        for (k = 0; k < t->n_conns; k++) {
            bench_buf_fini(&t->conns[k].in);
            bench_buf_fini(&t->conns[k].out);
            free(t->conns[k].ring);
        }
        free(t->conns);
        bench_stats_fini(&t->stats);
        if (t->base != NULL)
            event_base_free(t->base);
    }
    free(e->threads);
    e->threads = NULL;
    free((void *)e->listener_worker);
    e->listener_worker = NULL;
}

/*
 * While the threads run, print one line a second on stderr (unless
 * --quiet): completions in the last second, all threads together.  The
 * figures are informal; the report counts only the measured window.
 */
static void watch_progress(engine *e, unsigned started)
{
    const struct timespec pause = { .tv_sec = 0, .tv_nsec = PROGRESS_POLL_NS };
    uint64_t last = 0, next_print = e->t0_ns + NS_PER_S;
    unsigned i, done;

    for (;;) {
        uint64_t now = bench_now_ns(), total = 0;

        for (i = 0, done = 0; i < started; i++) {
            total += atomic_load_explicit(&e->threads[i].progress,
                                          memory_order_relaxed);
            done += (unsigned)atomic_load(&e->threads[i].finished);
        }
        if (done == started)
            return;
        if (now >= next_print) {
            if (!e->o->quiet)
                fprintf(stderr, "larder-bench: %5.0fs %s %12llu ops/s\n",
                        (double)(now - e->t0_ns) / NS_PER_S,
                        next_print - NS_PER_S < e->measure_start_ns
                            ? "warm-up "
                            : "measured",
                        (unsigned long long)(total - last));
            last = total;
            next_print += NS_PER_S;
        }
        nanosleep(&pause, NULL);
    }
}

void bench_run_fini(bench_run *run) { bench_stats_fini(&run->stats); }

int bench_engine_run(const bench_opts *o, const bench_work *w,
                     unsigned run_index, bench_run *run, char *err,
                     size_t errlen)
{
    engine e;
    double cpu0;
    uint64_t last_op = 0;
    unsigned i, started = 0;
    int rc;

    memset(&e, 0, sizeof(e));
    memset(run, 0, sizeof(*run));
    e.o = o;
    e.w = w;
    e.n_subscribers = has_listeners(o) ? o->subscribers : 0;
    rc = bench_stats_init(&run->stats);
    if (rc == 0 && e.n_subscribers &&
        !(e.listener_worker = calloc(e.n_subscribers,
                                     sizeof *e.listener_worker)))
        rc = ENOMEM;
    for (unsigned k = 0; rc == 0 && k < e.n_subscribers; k++)
        atomic_store(&e.listener_worker[k], -1);
    if (rc == 0)
        rc = setup_threads(&e, run_index);
    if (rc != 0) {
        snprintf(err, errlen, "set-up: %s", strerror(rc));
        teardown(&e);
        return rc;
    }
    cpu0 = cpu_seconds();
    e.t0_ns = bench_now_ns();
    e.measure_start_ns = e.t0_ns + (uint64_t)(o->warmup_s * NS_PER_S);
    e.measure_end_ns = o->requests > 0
                           ? UINT64_MAX
                           : e.measure_start_ns +
                                 (uint64_t)(o->duration_s * NS_PER_S);
    /* Open loop: each connection's schedule starts at t0, staggered
     * evenly across connections. */
    for (i = 0; i < o->threads; i++) {
        thread *t = &e.threads[i];
        unsigned k;

        for (k = 0; k < t->n_conns; k++) {
            if (t->conns[k].interval_ns != 0)
                t->conns[k].next_due_ns = e.t0_ns + t->conns[k].interval_ns *
                                                        t->conns[k].index /
                                                        o->connections;
        }
    }
    for (i = 0; i < o->threads; i++) {
        rc = pthread_create(&e.threads[i].tid, NULL, thread_main,
                            &e.threads[i]);
        if (rc != 0) {
            set_fatal(&e, "pthread_create() failed");
            break;
        }
        started++;
    }
    watch_progress(&e, started);
    for (i = 0; i < started; i++)
        pthread_join(e.threads[i].tid, NULL);
    run->client_cpu_s = cpu_seconds() - cpu0;
    for (i = 0; i < o->threads && rc == 0; i++) {
        rc = bench_stats_merge(&run->stats, &e.threads[i].stats);
        if (e.threads[i].last_op_ns > last_op)
            last_op = e.threads[i].last_op_ns;
    }
    if (o->requests > 0)
        run->elapsed_s = last_op > e.measure_start_ns
                             ? (double)(last_op - e.measure_start_ns) / NS_PER_S
                             : 0.0;
    else
        run->elapsed_s = o->duration_s;
    run->ops_per_sec = run->elapsed_s > 0.0
                           ? (double)run->stats.ops / run->elapsed_s
                           : 0.0;
    teardown(&e);
    if (atomic_load(&e.fatal)) {
        snprintf(err, errlen, "%s", e.fatal_msg);
        return BENCH_ERUN;
    }
    if (rc != 0) {
        snprintf(err, errlen, "merge: %s", strerror(rc));
        return rc;
    }
    return 0;
}
