/*
 * srv_conn.c - the connection layer: a connection per accepted socket,
 * reading, the request path (parse in place, look up, dispatch, group
 * commit after each command), writing replies (held under sync always
 * until what they show is durable), closing.
 */
#include "server/srv_conn.h"
#include "server/cmd/srv_cmd.h"
#include "server/cmd/srv_dispatch.h"
#include "server/srv_group.h"
#include "server/srv_heritage.h"
#include "server/srv_log.h"
#include "server/srv_reply.h"
#include "server/srv_util.h"
#include "server/srv_worker.h"
#include "storage/st_keyspace.h"

#include <arpa/inet.h>
#include <errno.h>
#include <event2/event.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define READ_CHUNK (16 * 1024)
#define BUF_KEEP (64 * 1024)
#define KEEPALIVE_PROBES 3
#define KEEPALIVE_DIVISOR 3
#define PREFETCH_KEYS 64 /* keys hinted per input buffer */
#define PREFETCH_ARGS 16 /* arguments a look-ahead looks at */
#define MS_PER_S 1000

static void on_write(evutil_socket_t fd, short what, void *arg);

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
        snprintf(c->laddr, sizeof c->laddr, "%s:%d", host, ntohs(a->sin_port));
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
srv_conn *srv_conn_create(srv_worker *w, int fd, int is_unix)
{
    srv_conn *c = calloc(1, sizeof *c);

    if (!c)
        return NULL;
    c->fd = fd;
    c->worker = w;
    c->resp = 2;
    c->multi_queued = -1;
    c->flags = is_unix ? SRV_CONN_UNIX : 0;
    c->authed = srv_her.cfg->requirepass[0] == '\0';
    c->id = atomic_fetch_add(&srv_her.stats->next_client_id, 1);
    c->created_ms = c->last_ms = srv_util_mstime();
    srv_resp_parser_init(&c->parser, srv_her.cfg->proto_max_bulk_len);
    c->ev_read = srv_worker_io_event(w, fd, EV_READ | EV_PERSIST,
                                     srv_conn_on_read, c);
    c->ev_write = srv_worker_io_event(w, fd, EV_WRITE | EV_PERSIST, on_write,
                                      c);
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

    if (c->flags & SRV_CONN_OVER_LIMIT)
        srv_log(SRV_LOG_WARNING, 0,
                "closing client %s: its replies passed client-reply-limit "
                "(%zu bytes)",
                c->addr, c->out_limit);

    srv_hooks_close(&c->hooks, c);
    srv_group_leave(&w->group, c);
    if (c->prev)
        c->prev->next = c->next;
    else
        w->clients = c->next;
    if (c->next)
        c->next->prev = c->prev;
    w->nclients--;
    event_free(c->ev_read);
    event_free(c->ev_write);
    if (c->tr)
        c->tr->close(c);
    close(c->fd);
    srv_buf_free(&c->in);
    srv_buf_free(&c->out);
    srv_resp_parser_fini(&c->parser);
    free(c);
    SRV_STAT_ADD(w->stats, connected, -1);
    atomic_fetch_sub(&srv_her.stats->clients, 1);
}

/* Unsent replies. */
static size_t backlog(const srv_conn *c) { return c->out.len - c->out_sent; }

/* c's replies are written down to half its backlog: read and run its
 * input again (what is buffered runs at the next turn of the loop). */
static void resume_input(srv_conn *c)
{
    if (!(c->flags & SRV_CONN_PAUSED) ||
        backlog(c) > (size_t)srv_her.cfg->client_reply_backlog / 2 ||
        c->flags & (SRV_CONN_CLOSE_AFTER_REPLY | SRV_CONN_CLOSE_ASAP))
        return;
    c->flags &= ~SRV_CONN_PAUSED;
    if (event_add(c->ev_read, NULL) == 0)
        event_active(c->ev_read, EV_READ, 0);
}

/*
 * client-output-buffer-limit, as Redis applies it: output still unsent
 * past the hard limit of the connection's class (pubsub while it has
 * subscriptions, else normal) closes it at once; past the soft limit for
 * longer than its seconds, too. 1 when c is over.
 */
static int over_output_limit(srv_conn *c)
{
    int cls = (c->flags & SRV_CONN_SUBSCRIBED) ? SRV_OBUF_PUBSUB
                                               : SRV_OBUF_NORMAL;
    const long long *l = srv_her.cfg->client_output_buffer_limit +
                         cls * SRV_OBUF_FIELDS;
    unsigned long long used = c->out.len - c->out_sent;
    int64_t now;

    if (l[SRV_OBUF_HARD] && used >= (unsigned long long)l[SRV_OBUF_HARD])
        return 1;
    if (!l[SRV_OBUF_SOFT] || used < (unsigned long long)l[SRV_OBUF_SOFT]) {
        c->obuf_soft_ms = 0;
        return 0;
    }
    now = srv_util_mstime();
    if (!c->obuf_soft_ms) {
        c->obuf_soft_ms = now;
        return 0;
    }
    return (now - c->obuf_soft_ms) / MS_PER_S > l[SRV_OBUF_SECONDS];
}

int srv_conn_flush(srv_conn *c)
{
    /* Only what is committed may leave (the group's turn writes the
     * rest after its commit). */
    size_t end = c->in_group ? c->grp_out_mark : c->out.len;

    if (c->in_group && c->out_sent >= end) {
        if (c->writing) {
            event_del(c->ev_write);
            c->writing = 0;
        }
        return 0;
    }
    if (c->hold_ver) {
        if (c->hold_ver > atomic_load(&srv_her.stats->durable_txn)) {
            if (c->writing) {
                event_del(c->ev_write);
                c->writing = 0;
            }
            return 0; /* the syncer will wake us */
        }
        c->hold_ver = 0;
    }
    while (c->out_sent < end) {
        ssize_t n = c->tr ? c->tr->write(c, c->out.data + c->out_sent,
                                         end - c->out_sent)
                          : write(c->fd, c->out.data + c->out_sent,
                                  end - c->out_sent);
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
        c->grp_out_mark = 0; /* (written mid-turn: the mark was the end) */
        c->obuf_soft_ms = 0;
        srv_buf_trim(&c->out, BUF_KEEP);
        if (c->writing) {
            event_del(c->ev_write);
            c->writing = 0;
        }
        if (c->flags & SRV_CONN_CLOSE_AFTER_REPLY ||
            (c->worker->stopping &&
             !event_pending(c->ev_read, EV_READ, NULL))) {
            srv_conn_close(c);
            return -1;
        }
        resume_input(c);
        return 0;
    }
    /* A client that reads while it sends must not keep the written part
     * of a buffer that never empties (no marks point into it outside
     * the group). */
    if (!c->in_group && c->out_sent >= BUF_KEEP &&
        c->out_sent >= c->out.len / 2) {
        srv_buf_consume(&c->out, c->out_sent);
        c->out_sent = 0;
    }
    if (over_output_limit(c)) {
        srv_log(SRV_LOG_WARNING, 0,
                "Client %s closed for overcoming of output buffer limits "
                "(%zu bytes unsent).",
                c->addr, c->out.len - c->out_sent);
        srv_conn_close(c);
        return -1;
    }
    resume_input(c);
    if (c->tr_want & SRV_TR_WRITE_WANTS_READ) {
        /* The transport must read first: the read event drives it. */
        if (c->writing) {
            event_del(c->ev_write);
            c->writing = 0;
        }
        if (!event_pending(c->ev_read, EV_READ, NULL))
            event_add(c->ev_read, NULL);
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
    srv_conn *c = arg;

    if (c->tr_want & SRV_TR_READ_WANTS_WRITE) {
        c->tr_want &= ~SRV_TR_READ_WANTS_WRITE;
        if (c->out_sent == c->out.len && c->writing) {
            event_del(c->ev_write);
            c->writing = 0;
        }
        srv_conn_on_read(fd, EV_READ, c);
        return;
    }
    srv_conn_flush(c);
}

int srv_conn_set_transport(srv_conn *c, const srv_transport *tr)
{
    c->tr = tr;
    if (tr->open(c)) {
        c->tr = NULL;
        return -1;
    }
    return 0;
}

void srv_conn_want_write(srv_conn *c)
{
    if (!c->writing) {
        event_add(c->ev_write, NULL);
        c->writing = 1;
    }
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
        for (j = cmd->first_key;
             j <= last && j < argc && j < PREFETCH_ARGS && n < PREFETCH_KEYS;
             j += cmd->key_step) {
            names[n] = argv[j].ptr;
            lens[n++] = argv[j].len;
        }
    }
    if (cmds > 1 && n > 0)
        st_keyspace_prefetch(c->worker->env, (unsigned)c->db, names, lens, n);
}

void srv_conn_run_input(srv_conn *c)
{
    srv_worker *w = c->worker;
    srv_group *g = &w->group;

    int solo;

    c->out_limit = (size_t)srv_her.cfg->client_reply_limit;
    srv_group_join(g, c);
    prefetch_keys(c);
    /* A client closing at once still replays what it had run (a failed
     * group's commands ran before it closed: as in Redis, they stand). */
    while (!(c->flags & SRV_CONN_CLOSE_AFTER_REPLY) &&
           (!(c->flags & SRV_CONN_CLOSE_ASAP) || c->single) && !g->failed &&
           !c->blocked) {
        size_t pos = c->in_done;
        if (backlog(c) > (size_t)srv_her.cfg->client_reply_backlog) {
            /* The client is not reading: stop reading it. */
            c->flags |= SRV_CONN_PAUSED;
            event_del(c->ev_read);
            break;
        }
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
        solo = c->cmd && w->solo && !c->single && w->solo(c) &&
               srv_group_others_pending(g, c);
        if (c->cmd &&
            (((c->cmd->flags & F_BARRIER) && (g->rtxn || g->wtxn)) || solo)) {
            if (srv_group_commit(g))
                break;        /* rewound: replay comes first */
            pos = c->in_done; /* input was consumed */
            srv_resp_parse(&c->parser, c->in.data + pos, c->in.len - pos);
            c->argv = c->parser.argv;
            if (solo) /* it may run long: the others' replies go now */
                srv_worker_write_group(w, c);
        }
        if (w->hold && w->hold(c)) {
            /* Held (CLIENT PAUSE): the command runs when c is woken. */
            srv_resp_parser_reset(&c->parser);
            break;
        }
        srv_group_command_begins(g, c);
        srv_dispatch_execute(c);
        srv_resp_parser_reset(&c->parser);
        if (srv_group_command_ends(g, c, pos + consumed))
            break;
    }
}

void srv_conn_serve_busy(srv_conn *c, srv_busy_answer_fn *answer, void *arg,
                         const char *busy)
{
    ssize_t n;

    if (c->in_group || c->blocked || c->in_done ||
        (c->flags & (SRV_CONN_CLOSE_AFTER_REPLY | SRV_CONN_CLOSE_ASAP)) ||
        srv_buf_reserve(&c->in, READ_CHUNK))
        return;
    n = read(c->fd, c->in.data + c->in.len, c->in.cap - c->in.len);
    if (n > 0) {
        c->in.len += (size_t)n;
        SRV_STAT_ADD(c->worker->stats, net_input_bytes, n);
    }
    /* An end of file or error is the loop's to see, after the command. */
    while (c->in_done < c->in.len) {
        size_t pos = c->in_done;
        int rc = srv_resp_parse(&c->parser, c->in.data + pos, c->in.len - pos);
        if (rc != SRV_PARSE_DONE) {
            if (rc != SRV_PARSE_MORE) /* the loop meets it again */
                srv_resp_parser_reset(&c->parser);
            break;
        }
        if (c->parser.argc > 0) {
            c->argc = c->parser.argc;
            c->argv = c->parser.argv;
            c->cmd = srv_cmd_lookup(c->argv[0].ptr, c->argv[0].len);
            if (!answer(c, arg))
                srv_reply_error(c, busy);
        }
        c->in_done = pos + c->parser.consumed;
        srv_resp_parser_reset(&c->parser);
    }
    srv_buf_consume(&c->in, c->in_done);
    c->in_dropped += c->in_done;
    c->in_done = 0;
    srv_conn_flush(c);
}

void srv_conn_on_read(int fd, short what, void *arg)
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
    if (c->tr) {
        if (c->tr_want & SRV_TR_WRITE_WANTS_READ) {
            c->tr_want &= ~SRV_TR_WRITE_WANTS_READ;
            /* (in the group, its turn flushes after the commit) */
            if (!c->in_group && srv_conn_flush(c))
                return; /* closed */
        }
        n = c->tr->read(c, c->in.data + c->in.len, c->in.cap - c->in.len);
    } else {
        n = read(fd, c->in.data + c->in.len, c->in.cap - c->in.len);
    }
    if (n <= 0) {
        if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
            /* Resumed after a pause: run what was buffered. */
            if (c->in.len > c->in_done && !c->in_group)
                srv_conn_run_input(c);
            return;
        }
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
        srv_group_join(&c->worker->group, c);
        return;
    }
    srv_conn_run_input(c);
    if (c->flags & (SRV_CONN_CLOSE_AFTER_REPLY | SRV_CONN_CLOSE_ASAP))
        event_del(c->ev_read);
    else if (c->tr && c->tr->pending(c))
        event_active(c->ev_read, EV_READ, 0); /* the socket won't say so */
}
