/*
 * srv_cmd_migrate.c - MIGRATE: move keys to another Redis-protocol server
 * (redis-server or larder) as RESTORE commands carrying DUMP payloads,
 * then delete them here unless COPY.
 *
 * As in Redis the transfer is synchronous: the worker connects, writes
 * and reads with the command's timeout on each step (its other clients
 * wait meanwhile, as all of Redis's do). It holds no write transaction
 * across the network: the row has F_BARRIER, so the group commits before
 * MIGRATE runs; the keys are serialised in a read snapshot, the transfer
 * happens, and only then does a write transaction delete the keys the
 * target acknowledged, each only if its version is still the one sent
 * (a key another client wrote meanwhile stays, newer than the copy).
 * Redis keeps a cache of target connections; larder connects per call
 * (always sending SELECT), which no reply shows.
 */
#include "rdb/rdb_obj.h"
#include "server/cmd/srv_args.h"
#include "server/cmd/srv_cmd.h"
#include "server/cmd/srv_key.h"
#include "server/cmd/srv_txn.h"
#include "server/srv_buf.h"
#include "server/srv_notify.h"
#include "server/srv_rdbkey.h"
#include "server/srv_reply.h"
#include "server/srv_util.h"
#include "storage/st_err.h"
#include "storage/st_keyspace.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define FIRST_OPTION 6
#define DEFAULT_TIMEOUT_MS 1000
#define REPLY_LINE_MAX 1024
#define HOST_MAX 256
#define PORT_MAX 16
#define WRITE_CHUNK (64 * 1024)
#define LL_TEXT 24

typedef struct mig_args {
    int copy, replace;
    const srv_slice *user, *pass;
    int first_key, nkeys;
    long long timeout, dbid;
} mig_args;

static int args_or_reply(srv_conn *c, mig_args *a)
{
    memset(a, 0, sizeof *a);
    a->first_key = 3;
    a->nkeys = 1;
    for (int j = FIRST_OPTION; j < c->argc; j++) {
        const srv_slice *o = &c->argv[j];
        int more = c->argc - 1 - j;
        if (srv_util_streq(o->ptr, o->len, "copy")) {
            a->copy = 1;
        } else if (srv_util_streq(o->ptr, o->len, "replace")) {
            a->replace = 1;
        } else if (srv_util_streq(o->ptr, o->len, "auth")) {
            if (!more)
                goto syntax;
            a->pass = &c->argv[++j];
        } else if (srv_util_streq(o->ptr, o->len, "auth2")) {
            if (more < 2)
                goto syntax;
            a->user = &c->argv[++j];
            a->pass = &c->argv[++j];
        } else if (srv_util_streq(o->ptr, o->len, "keys")) {
            if (c->argv[3].len != 0) {
                srv_reply_error(c, "ERR When using MIGRATE KEYS option, the "
                                   "key argument must be set to the empty "
                                   "string");
                return -1;
            }
            a->first_key = j + 1;
            a->nkeys = c->argc - j - 1;
            break;
        } else {
            goto syntax;
        }
    }
    if (srv_args_ll_or_reply(c, &c->argv[5], &a->timeout) ||
        srv_args_ll_or_reply(c, &c->argv[4], &a->dbid))
        return -1;
    if (a->timeout <= 0)
        a->timeout = DEFAULT_TIMEOUT_MS;
    return 0;
syntax:
    srv_reply_error(c, SRV_ERR_SYNTAX);
    return -1;
}

/* ---- the request ---- */

static int put_bulk(srv_buf *b, const void *p, size_t n)
{
    char head[LL_TEXT + 4];
    int h = snprintf(head, sizeof head, "$%zu\r\n", n);

    return srv_buf_append(b, head, (size_t)h) || srv_buf_append(b, p, n) ||
           srv_buf_append(b, "\r\n", 2);
}

static int put_count(srv_buf *b, int n)
{
    char head[LL_TEXT];
    int h = snprintf(head, sizeof head, "*%d\r\n", n);

    return srv_buf_append(b, head, (size_t)h);
}

static int put_ll(srv_buf *b, long long v)
{
    char t[LL_TEXT];
    int n = snprintf(t, sizeof t, "%lld", v);

    return put_bulk(b, t, (size_t)n);
}

/* A key the target is sent: its argv index and the version dumped. */
typedef struct sent {
    int argi;
    uint64_t version;
} sent;

/*
 * AUTH, SELECT and one RESTORE per live key into `req`; *n gets how many
 * keys. 0, 1 when no key exists (NOKEY), -1 after an error reply.
 */
static int build_request(srv_conn *c, const mig_args *a, srv_buf *req,
                         sent *keys, int *n)
{
    struct st_txn *t = srv_txn_read_or_reply(c);
    srv_rdbkey_kit *kit;
    int found = 0, rc = 0;

    *n = 0;
    if (!t)
        return -1;
    if (a->pass) {
        if (put_count(req, a->user ? 3 : 2) || put_bulk(req, "AUTH", 4) ||
            (a->user && put_bulk(req, a->user->ptr, a->user->len)) ||
            put_bulk(req, a->pass->ptr, a->pass->len))
            goto nomem;
    }
    if (put_count(req, 2) || put_bulk(req, "SELECT", 6) || put_ll(req, a->dbid))
        goto nomem;
    kit = srv_rdbkey_kit_get();
    for (int i = 0; i < a->nkeys; i++) {
        int argi = a->first_key + i;
        st_keyref k;
        st_rec r;
        srv_key_ref(c, argi, &k);
        rc = st_keyspace_lookup(t, &k, srv_cmd_now(c), &r);
        if (rc == ST_ENOTFOUND) {
            rc = 0;
            continue;
        }
        if (rc)
            break;
        found++;
        long long ttl = 0;
        if (r.expire_at) {
            ttl = r.expire_at - srv_cmd_now(c);
            if (ttl < 0)
                continue; /* expired since the lookup: not sent */
            if (ttl < 1)
                ttl = 1;
        }
        if ((rc = srv_rdbkey_dump(t, &k, &r, &kit->w, &kit->e)))
            break;
        if (put_count(req, a->replace ? 5 : 4) || put_bulk(req, "RESTORE", 7) ||
            put_bulk(req, c->argv[argi].ptr, c->argv[argi].len) ||
            put_ll(req, ttl) ||
            put_bulk(req, kit->w.buf.data, kit->w.buf.len) ||
            (a->replace && put_bulk(req, "REPLACE", 7))) {
            srv_rdbkey_kit_trim(kit);
            goto nomem;
        }
        keys[(*n)++] = (sent){ argi, r.version };
    }
    srv_rdbkey_kit_trim(kit);
    if (rc == ENOMEM)
        goto nomem;
    if (rc) {
        srv_txn_error(c, rc);
        return -1;
    }
    return found ? 0 : 1;
nomem:
    srv_reply_error(c, "ERR out of memory building the MIGRATE request");
    return -1;
}

/* ---- the transfer, each step bounded by the timeout ---- */

static int wait_fd(int fd, short events, long long timeout_ms)
{
    struct pollfd p = { .fd = fd, .events = events };
    int rc;

    do
        rc = poll(&p, 1, timeout_ms > INT32_MAX ? INT32_MAX : (int)timeout_ms);
    while (rc < 0 && errno == EINTR);
    if (rc == 0)
        errno = ETIMEDOUT;
    return rc > 0 ? 0 : -1;
}

/*
 * The port as Redis reads it, with glibc's atoi: leading white space, a
 * sign and the digits that follow ("12ab" is 12, garbage 0), saturated
 * at the limits of a long and then cut to an int ("-2^63" is 0).
 */
static int port_atoi(const srv_slice *a)
{
    const char *p = a->ptr, *end = p + a->len;
    unsigned long long v = 0, lim;
    int neg = 0;

    while (p < end && (*p == ' ' || (*p >= '\t' && *p <= '\r')))
        p++;
    if (p < end && (*p == '+' || *p == '-'))
        neg = *p++ == '-';
    lim = neg ? (unsigned long long)LONG_MAX + 1 : LONG_MAX;
    for (; p < end && *p >= '0' && *p <= '9'; p++) {
        unsigned d = (unsigned)(*p - '0');
        v = v > (lim - d) / 10 ? lim : v * 10 + d;
    }
    /* To an int the way gcc converts: modulo 2^32. */
    return (int)(unsigned)(neg ? 0 - v : v);
}

/* A TCP connection to host:port within the timeout; -1 on failure. */
static int connect_to(const srv_slice *host, const srv_slice *port,
                      long long timeout)
{
    char h[HOST_MAX], p[PORT_MAX];
    struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *res, *ai;
    int fd = -1;

    if (host->len >= sizeof h)
        return -1;
    memcpy(h, host->ptr, host->len);
    h[host->len] = '\0';
    snprintf(p, sizeof p, "%d", port_atoi(port));
    if (getaddrinfo(h, p, &hints, &res))
        return -1;
    for (ai = res; ai && fd < 0; ai = ai->ai_next) {
        fd = socket(ai->ai_family,
                    ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
                    ai->ai_protocol);
        if (fd < 0)
            continue;
        if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0)
            break;
        if (errno == EINPROGRESS) {
            /* As Redis: wait for the connection within the timeout but
             * take the socket whatever came of it; a refused or pending
             * connection then fails the first write ("writing"). */
            wait_fd(fd, POLLOUT, timeout);
            break;
        }
        close(fd);
        fd = -1;
    }
    freeaddrinfo(res);
    if (fd >= 0)
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &(int){ 1 }, sizeof(int));
    return fd;
}

static int write_all(int fd, const char *p, size_t n, long long timeout)
{
    while (n > 0) {
        ssize_t k = write(fd, p, n < WRITE_CHUNK ? n : WRITE_CHUNK);
        if (k > 0) {
            p += k;
            n -= (size_t)k;
        } else if (k < 0 && errno == EINTR) {
            continue;
        } else if (k < 0 && errno == EAGAIN) {
            if (wait_fd(fd, POLLOUT, timeout))
                return -1;
        } else {
            return -1;
        }
    }
    return 0;
}

/* Replies of the target, one line at a time. */
typedef struct lines {
    int fd;
    long long timeout;
    char buf[REPLY_LINE_MAX * 4];
    size_t len, pos;
} lines;

/* The next reply line (CRLF stripped, cut to REPLY_LINE_MAX - 1) into
 * out; 0, or -1 on a socket error or timeout. */
static int read_line(lines *l, char *out)
{
    size_t o = 0;

    for (;;) {
        while (l->pos < l->len) {
            char ch = l->buf[l->pos++];
            if (ch == '\n') {
                if (o > 0 && out[o - 1] == '\r')
                    o--;
                out[o] = '\0';
                return 0;
            }
            if (o < REPLY_LINE_MAX - 1)
                out[o++] = ch;
        }
        ssize_t k = read(l->fd, l->buf, sizeof l->buf);
        if (k > 0) {
            l->len = (size_t)k;
            l->pos = 0;
        } else if (k < 0 && errno == EINTR) {
            continue;
        } else if (k < 0 && errno == EAGAIN) {
            if (wait_fd(l->fd, POLLIN, l->timeout))
                return -1;
        } else {
            return -1;
        }
    }
}

/* ---- after the transfer ---- */

/* Delete the acknowledged keys whose version is still the one sent. */
static int delete_sent(srv_conn *c, const sent *keys, const int *acked, int n)
{
    struct st_txn *t = NULL;

    for (int i = 0; i < n; i++) {
        st_keyref k;
        st_rec r;
        int rc;
        if (!acked[i])
            continue;
        if (!t && !(t = srv_txn_write_or_reply(c)))
            return -1;
        srv_key_ref(c, keys[i].argi, &k);
        rc = st_keyspace_lookup(t, &k, srv_cmd_now(c), &r);
        if (rc == 0 && r.version == keys[i].version &&
            (rc = st_keyspace_delete(t, &k, srv_cmd_now(c))) == 0)
            srv_notify_arg(c, SRV_NOTIFY_GENERIC, "del", keys[i].argi);
        if (rc && rc != ST_ENOTFOUND) {
            srv_txn_error(c, rc);
            return -1;
        }
    }
    return 0;
}

void srv_cmd_migrate(srv_conn *c)
{
    mig_args a;
    srv_buf req = { 0 };
    sent *keys = NULL;
    int *acked = NULL, n = 0, fd = -1, rc;
    lines *l = NULL;
    char line[REPLY_LINE_MAX], err[REPLY_LINE_MAX] = "";
    const char *io = NULL;

    if (args_or_reply(c, &a))
        return;
    keys = calloc((size_t)a.nkeys + 1, sizeof *keys); /* KEYS may be empty */
    acked = calloc((size_t)a.nkeys + 1, sizeof *acked);
    l = calloc(1, sizeof *l);
    if (!keys || !acked || !l) {
        srv_reply_error(c, "ERR out of memory");
        goto out;
    }
    if ((rc = build_request(c, &a, &req, keys, &n)) < 0)
        goto out;
    if (rc == 1) {
        srv_reply_simple(c, "NOKEY");
        goto out;
    }
    if ((fd = connect_to(&c->argv[1], &c->argv[2], a.timeout)) < 0) {
        srv_reply_error(c, "IOERR error or timeout connecting to the client");
        goto out;
    }
    if (write_all(fd, req.data, req.len, a.timeout)) {
        io = "writing";
        goto io_error;
    }
    l->fd = fd;
    l->timeout = a.timeout;
    /* AUTH's and SELECT's replies: an error there fails every RESTORE;
     * the first error is the one told. */
    for (int i = 0; i < (a.pass ? 2 : 1); i++) {
        if (read_line(l, line)) {
            io = "reading";
            goto io_error;
        }
        if (line[0] == '-' && !err[0])
            snprintf(err, sizeof err, "%s", line + 1);
    }
    int refused = err[0] != '\0';
    for (int i = 0; i < n; i++) {
        if (read_line(l, line)) {
            io = "reading";
            break;
        }
        if (line[0] == '-' && !err[0])
            snprintf(err, sizeof err, "%s", line + 1);
        acked[i] = !refused && line[0] != '-' && !a.copy;
    }
    if (delete_sent(c, keys, acked, n))
        goto out;
    if (err[0])
        srv_reply_errorf(c, "ERR Target instance replied with error: %s", err);
    else if (io)
        goto io_error;
    else
        srv_reply_ok(c);
    goto out;
io_error:
    srv_reply_errorf(c, "IOERR error or timeout %s to target instance", io);
out:
    if (fd >= 0)
        close(fd);
    srv_buf_free(&req);
    free(keys);
    free(acked);
    free(l);
}
