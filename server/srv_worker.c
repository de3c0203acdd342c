/*
 * srv_worker.c - the worker process: accept, read, parse, run commands in
 * batch transactions, write replies; periodic duties; graceful stop.
 *
 * Group commit: the commands of every connection read in one turn of the
 * event loop share one write transaction, committed by a low-priority
 * event after all the turn's reads, before any reply leaves; so a reply is
 * never sent for a write that is not committed. If a write fails in a
 * transaction that already holds other writes, or the commit fails, the
 * members' replies since their last commit are discarded and their
 * commands replayed one transaction each, so every reply matches what is
 * committed. Input stays in the buffer until its commands are committed,
 * which is what makes the replay possible.
 */
#include "server/srv_worker.h"
#include "server/cmd/srv_txn.h"
#include "server/cmd/srv_cmd.h"
#include "server/srv_syncer.h"
#include "server/srv_heritage.h"
#include "server/srv_log.h"
#include "server/cmd/srv_multi.h"
#include "server/srv_pubsub.h"
#include "server/srv_reply.h"
#include "server/srv_util.h"
#include "storage/st_coll.h"
#include "storage/st_env.h"
#include "storage/st_err.h"
#include "storage/st_keyspace.h"
#include "storage/st_txn.h"

#include <arpa/inet.h>
#include <errno.h>
#include <event2/event.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#define READ_CHUNK (16 * 1024)
#define ACCEPTS_PER_EVENT 16
#define BUF_KEEP (64 * 1024)
#define MS_PER_S 1000
#define STOP_DEADLINE_S 10
#define KEEPALIVE_PROBES 3
#define KEEPALIVE_DIVISOR 3
#define US_PER_MS 1000
#define PREFETCH_KEYS 64        /* keys hinted per input buffer */
#define PREFETCH_ARGS 16        /* arguments a look-ahead looks at */
/* Reads and accepts run first; the group commit after all of them. */
#define SRV_PRIORITIES 2
#define SRV_PRIORITY_GROUP 1

srv_worker *srv_w;

static void on_read(evutil_socket_t fd, short what, void *arg);
static void on_write(evutil_socket_t fd, short what, void *arg);
static void leave_group(srv_conn *c);

/* ---- connections ---- */

static void describe_peer(srv_conn *c, int fd)
{
    struct sockaddr_storage ss;
    socklen_t len = sizeof ss;
    char host[INET6_ADDRSTRLEN];

    if (c->flags & SRV_CONN_UNIX) {
        snprintf(c->addr, sizeof c->addr, "%.*s:0", SRV_CONN_ADDR_MAX - 3,
                 srv_her.cfg->unixsocket);
        memcpy(c->laddr, c->addr, sizeof c->laddr);
        return;
    }
    if (getpeername(fd, (struct sockaddr *)&ss, &len) == 0) {
        if (ss.ss_family == AF_INET6) {
            struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;
            inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof host);
            snprintf(c->addr, sizeof c->addr, "%s:%d", host,
                     ntohs(a->sin6_port));
        } else {
            struct sockaddr_in *a = (struct sockaddr_in *)&ss;
            inet_ntop(AF_INET, &a->sin_addr, host, sizeof host);
            snprintf(c->addr, sizeof c->addr, "%s:%d", host,
                     ntohs(a->sin_port));
        }
    }
    len = sizeof ss;
    if (getsockname(fd, (struct sockaddr *)&ss, &len) == 0 &&
        ss.ss_family == AF_INET) {
        struct sockaddr_in *a = (struct sockaddr_in *)&ss;
        inet_ntop(AF_INET, &a->sin_addr, host, sizeof host);
        snprintf(c->laddr, sizeof c->laddr, "%s:%d", host,
                 ntohs(a->sin_port));
    }
}

static void tune_socket(int fd)
{
    int one = 1;
    int idle = (int)srv_her.cfg->tcp_keepalive;

    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (idle > 0) {
        int intvl = idle / KEEPALIVE_DIVISOR ? idle / KEEPALIVE_DIVISOR : 1;
        int cnt = KEEPALIVE_PROBES;
        setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof one);
        setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle);
        setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof intvl);
        setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof cnt);
    }
}

/* An event of the first priority: I/O and timers run before the group. */
static struct event *new_event(srv_worker *w, evutil_socket_t fd, short what,
                               event_callback_fn cb, void *arg)
{
    struct event *ev = event_new(w->base, fd, what, cb, arg);

    if (ev && event_priority_set(ev, 0)) {
        event_free(ev);
        return NULL;
    }
    return ev;
}

static srv_conn *conn_new(int fd, int is_unix)
{
    srv_worker *w = srv_w;
    srv_conn *c = calloc(1, sizeof *c);

    if (!c)
        return NULL;
    c->fd = fd;
    c->worker = w;
    c->resp = 2;
    c->flags = is_unix ? SRV_CONN_UNIX : 0;
    c->authed = srv_her.cfg->requirepass[0] == '\0';
    c->id = atomic_fetch_add(&srv_her.stats->next_client_id, 1);
    c->created_ms = c->last_ms = srv_util_mstime();
    srv_resp_parser_init(&c->parser, srv_her.cfg->proto_max_bulk_len);
    c->ev_read = new_event(w, fd, EV_READ | EV_PERSIST, on_read, c);
    c->ev_write = new_event(w, fd, EV_WRITE | EV_PERSIST, on_write, c);
    if (!c->ev_read || !c->ev_write || event_add(c->ev_read, NULL)) {
        if (c->ev_read)
            event_free(c->ev_read);
        if (c->ev_write)
            event_free(c->ev_write);
        srv_resp_parser_fini(&c->parser);
        free(c);
        return NULL;
    }
    if (!is_unix)
        tune_socket(fd);
    describe_peer(c, fd);
    c->next = w->clients;
    if (w->clients)
        w->clients->prev = c;
    w->clients = c;
    w->nclients++;
    SRV_STAT_ADD(w->stats, connected, 1);
    SRV_STAT_ADD(w->stats, total_connections, 1);
    return c;
}

void srv_conn_close(srv_conn *c)
{
    srv_worker *w = c->worker;

    srv_pubsub_conn_close(c);
    leave_group(c);
    if (c->prev)
        c->prev->next = c->next;
    else
        w->clients = c->next;
    if (c->next)
        c->next->prev = c->prev;
    w->nclients--;
    event_free(c->ev_read);
    event_free(c->ev_write);
    close(c->fd);
    srv_buf_free(&c->in);
    srv_buf_free(&c->out);
    srv_resp_parser_fini(&c->parser);
    srv_multi_free(c);
    free(c);
    SRV_STAT_ADD(w->stats, connected, -1);
    atomic_fetch_sub(&srv_her.stats->clients, 1);
}

void srv_worker_each_conn(void (*fn)(srv_conn *c, void *ctx), void *ctx)
{
    for (srv_conn *c = srv_w->clients; c; c = c->next)
        fn(c, ctx);
}

static void on_accept(evutil_socket_t lfd, short what, void *arg)
{
    int is_unix = arg != NULL;

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
            SRV_STAT_ADD(srv_w->stats, rejected_connections, 1);
            if (write(fd, msg, sizeof msg - 1) < 0) {
                /* the client is gone already */
            }
            close(fd);
            continue;
        }
        if (!conn_new(fd, is_unix)) {
            srv_log(SRV_LOG_WARNING, ENOMEM, "connection setup failed");
            atomic_fetch_sub(&srv_her.stats->clients, 1);
            close(fd);
        }
    }
}

/* ---- output ---- */

/* Write what is pending; arm or disarm the write event. 0, or -1 when the
 * connection was closed. */
static int flush_output(srv_conn *c)
{
    if (c->hold_ver) {
        if (c->hold_ver > atomic_load(&srv_her.stats->durable_txn)) {
            if (c->writing) {
                event_del(c->ev_write);
                c->writing = 0;
            }
            return 0;                   /* the syncer will wake us */
        }
        c->hold_ver = 0;
    }
    while (c->out_sent < c->out.len) {
        ssize_t n = write(c->fd, c->out.data + c->out_sent,
                          c->out.len - c->out_sent);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK)
                break;
            srv_conn_close(c);
            return -1;
        }
        c->out_sent += (size_t)n;
        SRV_STAT_ADD(c->worker->stats, net_output_bytes, n);
    }
    if (c->out_sent == c->out.len) {
        c->out.len = c->out_sent = 0;
        srv_buf_trim(&c->out, BUF_KEEP);
        if (c->writing) {
            event_del(c->ev_write);
            c->writing = 0;
        }
        if (c->flags & SRV_CONN_CLOSE_AFTER_REPLY ||
            (c->worker->stopping && !event_pending(c->ev_read, EV_READ, NULL))) {
            srv_conn_close(c);
            return -1;
        }
        return 0;
    }
    if (!c->writing) {
        event_add(c->ev_write, NULL);
        c->writing = 1;
    }
    return 0;
}

static void on_write(evutil_socket_t fd, short what, void *arg)
{
    flush_output(arg);
}

/* ---- the group transaction ---- */

static void join_group(srv_conn *c)
{
    srv_group *g = &c->worker->group;

    if (c->in_group)
        return;
    if (g->nconns == g->cap) {
        unsigned cap = g->cap ? g->cap * 2 : 16;
        srv_conn **n = realloc(g->conns, cap * sizeof *n);
        if (!n) {
            c->flags |= SRV_CONN_CLOSE_ASAP;
            return;
        }
        g->conns = n;
        g->cap = cap;
    }
    g->conns[g->nconns++] = c;
    c->in_group = 1;
    c->grp_out_mark = c->out.len;
    c->grp_db = c->db;
    c->grp_resp = c->resp;
    event_active(g->ev_commit, EV_TIMEOUT, 0);
}

static void leave_group(srv_conn *c)
{
    srv_group *g = &c->worker->group;

    if (!c->in_group)
        return;
    for (unsigned i = 0; i < g->nconns; i++)
        if (g->conns[i] == c) {
            g->conns[i] = g->conns[--g->nconns];
            break;
        }
    c->in_group = 0;
}

/* Every member's executed input is now committed: drop it from `in`. */
static void members_committed(srv_group *g)
{
    for (unsigned i = 0; i < g->nconns; i++) {
        srv_conn *m = g->conns[i];
        if (m->in_done) {
            srv_buf_consume(&m->in, m->in_done);
            m->in_done = 0;
        }
        m->grp_out_mark = m->out.len;
        m->grp_db = m->db;
        m->grp_resp = m->resp;
        srv_multi_committed(m);
    }
}

/* The transaction is lost: every member discards the replies made since
 * its last commit and will re-run those commands one transaction each. */
static void members_rewind(srv_group *g)
{
    for (unsigned i = 0; i < g->nconns; i++) {
        srv_conn *m = g->conns[i];
        m->out.len = m->grp_out_mark;
        m->db = m->grp_db;
        m->resp = m->grp_resp;
        if (m->in_done > m->replay_until)
            m->replay_until = m->in_done;
        m->in_done = 0;
        m->single = m->replay_until > 0;
        srv_resp_parser_reset(&m->parser);
        srv_multi_rewind(m);
    }
}

/*
 * Commit the group's transactions. On success the members' input is
 * consumed; on failure they are rewound for a replay. Returns 0 or the
 * storage code of the failure.
 */
static int group_commit(srv_worker *w)
{
    srv_group *g = &w->group;
    int rc = 0;

    if (g->rtxn) {
        int64_t v = (int64_t)st_txn_version(g->rtxn);
        if (v > g->hold_ver)
            g->hold_ver = v;
        st_txn_commit(&g->rtxn);
    }
    if (g->wtxn && g->failed) {
        st_txn_abort(&g->wtxn);
    } else if (g->wtxn) {
        int64_t v = (int64_t)st_txn_version(g->wtxn);
        if ((rc = st_txn_commit(&g->wtxn)) == 0) {
            SRV_STAT_ADD(w->stats, commits, 1);
            /* Only a committed id may hold replies: a failed one is never
             * made durable (it is reused by the next transaction). */
            if (v > g->hold_ver)
                g->hold_ver = v;
        } else {
            srv_log(SRV_LOG_WARNING, rc > 0 ? rc : 0, "commit failed: %s",
                    st_strerror(rc));
            g->failed = g->writes > 0;
        }
    }
    g->cmds = g->writes = 0;
    if (g->failed) {
        members_rewind(g);
        g->failed = 0;
        return rc ? rc : ST_ELMDB;
    }
    members_committed(g);
    return 0;
}

void srv_worker_commit_after(void)
{
    srv_w->group.commit_after = 1;
}

/* After each command: account it and handle a failed write. Returns 1
 * when the connection must stop processing (the group will replay). */
static int after_command(srv_conn *c, size_t pos)
{
    srv_worker *w = c->worker;
    srv_group *g = &w->group;
    int earlier_writes = g->writes;

    c->in_done = pos;
    g->cmds++;
    if (g->cmd_wrote)
        g->writes++;
    if (g->poisoned) {
        g->poisoned = 0;
        if (earlier_writes > 0 && !c->single) {
            /* Other commands' writes went down with the transaction. */
            g->failed = 1;
            st_txn_abort(&g->wtxn);
            return 1;
        }
        if (g->wtxn)
            st_txn_abort(&g->wtxn);     /* nothing else was in it */
        g->writes = 0;
    }
    if (c->single) {
        int rc = group_commit(w);
        if (rc) {
            /* Only this command was in it: its reply becomes the error. */
            c->out.len = g->cmd_out_mark;
            srv_txn_error(c, rc);
            c->in_done = pos;
            srv_multi_lost(c);
            members_committed(g);
        }
        if (pos >= c->replay_until) {
            c->single = 0;
            c->replay_until = 0;
        }
    } else if (g->cmds >= SRV_GROUP_MAX_CMDS || g->commit_after) {
        group_commit(w);
    }
    g->commit_after = 0;
    return 0;
}

/*
 * Before running a pipeline's commands one by one, look ahead over the
 * complete ones buffered and ask storage to prefetch the cache memory of
 * their keys, all at once: each lookup would otherwise wait in turn for
 * its bucket and then its item to come from memory (issue #4's profile:
 * most of a cache hit's cost), while this way the misses overlap. Only a
 * hint: nothing here changes what the commands do. A single command gets
 * nothing from it and skips it. (Fetching each entry later instead, as
 * the command before it starts, measured 5% more CPU per GET: isolated
 * prefetches stall where a burst of them overlaps.)
 */
static void prefetch_keys(srv_conn *c)
{
    const void *names[PREFETCH_KEYS];
    size_t lens[PREFETCH_KEYS], pos = c->in_done, n = 0;
    srv_slice argv[PREFETCH_ARGS], last_name = { NULL, 0 };
    const srv_command *cmd = NULL;
    long long argc;
    int cmds = 0;

    if (!st_keyspace_prefetch_useful(c->worker->env))
        return;
    while (n < PREFETCH_KEYS) {
        size_t used = srv_resp_peek(c->in.data + pos, c->in.len - pos, argv,
                                    PREFETCH_ARGS, &argc);
        long long j, last;

        if (used == 0 || (cmds++ == 0 && pos + used == c->in.len))
            break;
        pos += used;
        /* a pipeline mostly repeats one command: look its name up once */
        if (argv[0].len != last_name.len ||
            memcmp(argv[0].ptr, last_name.ptr, last_name.len) != 0) {
            cmd = srv_cmd_lookup(argv[0].ptr, argv[0].len);
            last_name = argv[0];
        }
        if (!cmd || cmd->first_key <= 0 || cmd->key_step <= 0)
            continue;
        last = cmd->last_key >= 0 ? cmd->last_key : argc + cmd->last_key;
        for (j = cmd->first_key; j <= last && j < argc && j < PREFETCH_ARGS &&
                                 n < PREFETCH_KEYS; j += cmd->key_step) {
            names[n] = argv[j].ptr;
            lens[n++] = argv[j].len;
        }
    }
    if (cmds > 1 && n > 0)
        st_keyspace_prefetch(c->worker->env, (unsigned)c->db, names, lens, n);
}

/* Parse and run every complete command in the input buffer. */
static void process_input(srv_conn *c)
{
    srv_worker *w = c->worker;
    srv_group *g = &w->group;

    join_group(c);
    prefetch_keys(c);
    while (!(c->flags & (SRV_CONN_CLOSE_AFTER_REPLY | SRV_CONN_CLOSE_ASAP)) &&
           !g->failed && !c->blocked) {
        size_t pos = c->in_done;
        int rc = srv_resp_parse(&c->parser, c->in.data + pos, c->in.len - pos);
        if (rc == SRV_PARSE_MORE)
            break;
        if (rc != SRV_PARSE_DONE) {
            if (rc == SRV_PARSE_ERROR)
                srv_reply_errorf(c, "ERR %s", c->parser.error);
            srv_log(SRV_LOG_VERBOSE, 0, "protocol error from %s: %s", c->addr,
                    c->parser.error ? c->parser.error : "out of memory");
            c->flags |= rc == SRV_PARSE_ERROR ? SRV_CONN_CLOSE_AFTER_REPLY
                                              : SRV_CONN_CLOSE_ASAP;
            break;
        }
        size_t consumed = c->parser.consumed;
        if (c->parser.argc == 0) {
            c->in_done = pos + consumed;
            srv_resp_parser_reset(&c->parser);
            continue;
        }
        c->argc = c->parser.argc;
        c->argv = c->parser.argv;
        c->cmd = srv_cmd_lookup(c->argv[0].ptr, c->argv[0].len);
        if (c->cmd && (c->cmd->flags & F_BARRIER) && (g->rtxn || g->wtxn)) {
            if (group_commit(w))
                break;                  /* rewound: replay comes first */
            pos = c->in_done;           /* input was consumed */
            srv_resp_parse(&c->parser, c->in.data + pos, c->in.len - pos);
            c->argv = c->parser.argv;
        }
        g->cmd_out_mark = c->out.len;
        g->cmd_wrote = 0;
        g->commit_after = 0;
        srv_cmd_execute(c);
        srv_resp_parser_reset(&c->parser);
        if (after_command(c, pos + consumed))
            break;
    }
}

void srv_worker_wake(srv_conn *c, int resume)
{
    if (!c->in_group)
        join_group(c);                  /* its mark is after the output */
    else if (c->in_done == 0)
        c->grp_out_mark = c->out.len;   /* nothing uncommitted before it */
    if (resume) {
        process_input(c);
        if (c->flags & (SRV_CONN_CLOSE_AFTER_REPLY | SRV_CONN_CLOSE_ASAP))
            event_del(c->ev_read);
    }
}

/* Commit the group; members rewound by a lost transaction replay (one
 * transaction per command) until a commit holds. */
static void group_settle(srv_worker *w)
{
    srv_group *g = &w->group;

    do {
        /* Also members that ran nothing: read after the group failed, or
         * rewound at a barrier before their first command. */
        for (unsigned i = 0; i < g->nconns; i++)
            if ((g->conns[i]->single ||
                 g->conns[i]->in_done < g->conns[i]->in.len) &&
                !(g->conns[i]->flags & SRV_CONN_CLOSE_ASAP))
                process_input(g->conns[i]);
    } while (group_commit(w));
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

    group_settle(w);
    if (srv_pubsub_dispatch(w))
        group_settle(w);                /* what the unblocked clients ran */
    if (srv_her.cfg->sync == SRV_SYNC_ALWAYS && g->hold_ver >
                                                    atomic_load(&srv_her.stats->durable_txn)) {
        /* Replies wait until what they show is on disk. */
        for (unsigned i = 0; i < g->nconns; i++)
            if (g->conns[i]->hold_ver < g->hold_ver)
                g->conns[i]->hold_ver = g->hold_ver;
        srv_syncer_poke();
    }
    g->hold_ver = 0;
    while (g->nconns) {
        srv_conn *m = g->conns[--g->nconns];
        m->in_group = 0;
        if (m->flags & SRV_CONN_CLOSE_ASAP)
            srv_conn_close(m);
        else
            flush_output(m);
    }
    /*
     * Keys reads found expired are deleted now (Redis's lazy expiry, so
     * DBSIZE and the keyspace agree at once), unless the reaper is in the
     * middle of expiring batches: then waiting for the write lock behind
     * it would stall this worker (measured during a 50,000-key mass
     * expiry: GET p99 10-45 ms against 1 ms), and the reaper deletes them
     * anyway within its tick.
     */
    if (!atomic_load(&srv_her.stats->reaper_expiring) &&
        st_keyspace_reap_seen(w->env, srv_util_mstime(), &reaped) == 0 && reaped)
        SRV_STAT_ADD(w->stats, expired_keys, (int64_t)reaped);
}

static void on_group(evutil_socket_t fd, short what, void *arg)
{
    group_finish(arg);
}

static void on_read(evutil_socket_t fd, short what, void *arg)
{
    srv_conn *c = arg;
    size_t want = READ_CHUNK;
    size_t need = c->in_done + c->parser.need;
    ssize_t n;

    if (c->parser.need && need > c->in.len && need - c->in.len > want)
        want = need - c->in.len;
    if (srv_buf_reserve(&c->in, want)) {
        srv_log(SRV_LOG_WARNING, ENOMEM, "input buffer of %s", c->addr);
        srv_conn_close(c);
        return;
    }
    n = read(fd, c->in.data + c->in.len, c->in.cap - c->in.len);
    if (n <= 0) {
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
            return;
        if (c->in_group) {
            /* Its commands still commit with the group; then it closes. */
            event_del(c->ev_read);
            c->flags |= SRV_CONN_CLOSE_ASAP;
            return;
        }
        srv_conn_close(c);
        return;
    }
    c->in.len += (size_t)n;
    c->last_ms = srv_util_mstime();
    SRV_STAT_ADD(c->worker->stats, net_input_bytes, n);
    if (c->in.len - c->in_done >
        (size_t)srv_her.cfg->client_query_buffer_limit) {
        srv_log(SRV_LOG_WARNING, 0,
                "closing client %s that reached max query buffer length",
                c->addr);
        srv_reply_error(c, "ERR Protocol error: query buffer limit exceeded");
        c->flags |= SRV_CONN_CLOSE_AFTER_REPLY;
        event_del(c->ev_read);
        join_group(c);
        return;
    }
    process_input(c);
    if (c->flags & (SRV_CONN_CLOSE_AFTER_REPLY | SRV_CONN_CLOSE_ASAP))
        event_del(c->ev_read);
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
            !c->pubsub && !c->blocked) {   /* as Redis: not subscribers */
            srv_log(SRV_LOG_VERBOSE, 0, "closing idle client %s", c->addr);
            srv_conn_close(c);
        }
    }
}

static void on_tick(evutil_socket_t fd, short what, void *arg)
{
    srv_worker *w = arg;
    int64_t now = srv_util_mstime();
    int64_t mono = srv_util_monotonic_ms();

    srv_config_refresh();
    group_finish(w);                    /* its own txns below need the slot */
    close_idle(w, now);
    if (mono - w->last_sample_ms >= MS_PER_S) {
        int64_t cmds = atomic_load(&w->stats->total_commands);
        atomic_store(&w->stats->ops_per_sec,
                     (cmds - w->last_sample_cmds) * MS_PER_S /
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
            flush_output(c);
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
    struct timeval deadline = { STOP_DEADLINE_S, 0 };

    if (w->stopping)
        return;
    w->stopping = 1;
    srv_log(SRV_LOG_NOTICE, 0, "stopping: %u clients to finish", w->nclients);
    for (int i = 0; i < w->nlisten; i++)
        event_del(w->listen_ev[i]);
    for (srv_conn *c = w->clients, *next; c; c = next) {
        next = c->next;
        event_del(c->ev_read);
        on_read(c->fd, EV_READ, c);     /* what is already in the socket */
    }
    group_finish(w);
    for (srv_conn *c = w->clients, *next; c; c = next) {
        next = c->next;
        if (event_pending(c->ev_read, EV_READ, NULL))
            event_del(c->ev_read);
        if (c->out.len == c->out_sent && !c->blocked)
            srv_conn_close(c);
    }
    w->ev_deadline = new_event(w, -1, 0, on_deadline, w);
    if (w->ev_deadline)
        evtimer_add(w->ev_deadline, &deadline);
    maybe_finish(w);
}

static void on_check_finish(evutil_socket_t fd, short what, void *arg)
{
    maybe_finish(arg);
}

/* ---- main ---- */

static int add_listener(srv_worker *w, int fd, int is_unix)
{
    struct event *ev = new_event(w, fd, EV_READ | EV_PERSIST, on_accept,
                                 is_unix ? (void *)w : NULL);

    if (!ev || event_add(ev, NULL))
        return -1;
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
    int rc = srv_heritage_env_open(1, &w->env);   /* the syncer flushes */

    if (rc)
        srv_log(SRV_LOG_WARNING, rc > 0 ? rc : 0, "opening LMDB in '%s' failed: %s",
                srv_her.cfg->dir, rc > 0 ? "system error" : st_strerror(rc));
    return rc;
}

int srv_worker_main(int index)
{
    static srv_worker worker;
    srv_worker *w = &worker;
    struct timeval tick = { 0, (int)(MS_PER_S / srv_her.cfg->hz) * US_PER_MS };
    struct timeval check = { 0, 100 * US_PER_MS };
    struct event *ev_check;
    int status = 1;

    srv_w = w;
    w->index = index;
    srv_log_set_role("worker", index);
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != srv_her.master_pid)
        return 1;                       /* the master died meanwhile */
    signal(SIGTERM, SIG_DFL);
    signal(SIGINT, SIG_IGN);
    signal(SIGHUP, SIG_IGN);
    w->stats = &srv_her.stats->slot[index];
    atomic_store(&w->stats->pid, getpid());
    atomic_store(&w->stats->started_ms, srv_util_mstime());
    atomic_store(&w->stats->connected, 0);
    w->last_sample_ms = srv_util_monotonic_ms();
    w->last_sample_cmds = atomic_load(&w->stats->total_commands);
    srv_cmd_init();
    seed_random();
    if (open_env(w))
        return 1;
    if (!(w->base = event_base_new()) ||
        event_base_priority_init(w->base, SRV_PRIORITIES))
        goto out;
    w->group.ev_commit = event_new(w->base, -1, 0, on_group, w);
    if (!w->group.ev_commit ||
        event_priority_set(w->group.ev_commit, SRV_PRIORITY_GROUP))
        goto out;
    w->listen_ev = calloc((size_t)srv_her.ntcp + 1, sizeof *w->listen_ev);
    if (!w->listen_ev)
        goto out;
    for (int i = 0; i < srv_her.ntcp; i++)
        if (add_listener(w, srv_her.tcp_fds[index * srv_her.ntcp + i], 0))
            goto out;
    if (srv_her.unix_fd >= 0 && add_listener(w, srv_her.unix_fd, 1))
        goto out;
    w->ev_tick = new_event(w, -1, EV_PERSIST, on_tick, w);
    w->ev_term = new_event(w, SIGTERM, EV_SIGNAL | EV_PERSIST, on_term, w);
    ev_check = new_event(w, -1, EV_PERSIST, on_check_finish, w);
    w->ev_durable = new_event(w, srv_her.worker_efd[index], EV_READ | EV_PERSIST,
                              on_durable, w);
    if (!w->ev_durable || event_add(w->ev_durable, NULL))
        goto out;
    if (!w->ev_tick || !w->ev_term || !ev_check || event_add(w->ev_tick, &tick) ||
        event_add(w->ev_term, NULL) || event_add(ev_check, &check))
        goto out;
    srv_pubsub_start(w);
    srv_log(SRV_LOG_VERBOSE, 0, "serving");
    event_base_dispatch(w->base);
    status = 0;
    event_free(ev_check);
out:
    while (w->clients)
        srv_conn_close(w->clients);
    srv_pubsub_stop();
    if (w->base)
        group_finish(w);
    if (srv_her.cfg->sync != SRV_SYNC_NO)
        st_env_sync(w->env);
    st_env_close(&w->env);
    if (status)
        srv_log(SRV_LOG_WARNING, errno, "worker setup failed");
    return status;
}

/* ---- embedded worker (tests, fuzzing) ---- */

int srv_worker_embed_open(const char *dir)
{
    static srv_worker worker;
    static srv_config cfg;
    srv_worker *w = &worker;

    srv_config_defaults(&cfg);
    snprintf(cfg.dir, sizeof cfg.dir, "%s", dir);
    cfg.sync = SRV_SYNC_NO;
    cfg.workers = 1;
    srv_her.cfg = &cfg;
    srv_her.nworkers = 1;
    srv_her.unix_fd = -1;
    srv_her.sync_efd = -1;
    srv_her.master_pid = 0;             /* no master to signal */
    srv_her.start_ms = srv_util_mstime();
    if (!srv_her.stats && !(srv_her.stats = srv_stats_create(1)))
        return -1;
    memset(w, 0, sizeof *w);
    srv_w = w;
    w->stats = &srv_her.stats->slot[0];
    srv_cmd_init();
    if (open_env(w))
        return -1;
    if (!(w->base = event_base_new()) ||
        event_base_priority_init(w->base, SRV_PRIORITIES) ||
        !(w->group.ev_commit = event_new(w->base, -1, 0, on_group, w))) {
        srv_worker_embed_close();
        return -1;
    }
    return 0;
}

srv_conn *srv_worker_embed_conn(void)
{
    /* A pollable descriptor that never becomes readable. */
    int fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    srv_conn *c;

    if (fd < 0)
        return NULL;
    if (!(c = conn_new(fd, 1))) {
        close(fd);
        return NULL;
    }
    event_del(c->ev_read);
    atomic_fetch_add(&srv_her.stats->clients, 1);
    return c;
}

int srv_worker_embed_feed(srv_conn *c, const void *data, size_t len)
{
    srv_worker *w = c->worker;

    if (srv_buf_append(&c->in, data, len)) {
        srv_conn_close(c);
        return -1;
    }
    process_input(c);
    /* group_finish would write the replies to the socket: commit only. */
    group_settle(w);
    leave_group(c);
    w->group.nconns = 0;
    if (c->flags & (SRV_CONN_CLOSE_ASAP | SRV_CONN_CLOSE_AFTER_REPLY)) {
        srv_conn_close(c);
        return -1;
    }
    return 0;
}

void srv_worker_embed_close(void)
{
    srv_worker *w = srv_w;

    if (!w)
        return;
    while (w->clients)
        srv_conn_close(w->clients);
    if (w->group.ev_commit)
        event_free(w->group.ev_commit);
    if (w->base)
        event_base_free(w->base);
    free(w->group.conns);
    st_env_close(&w->env);
    srv_stats_destroy(&srv_her.stats);
    memset(w, 0, sizeof *w);
    srv_w = NULL;
}
