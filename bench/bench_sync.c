/*
 * bench_sync: blocking RESP client (see bench_sync.h).
 */
#include "bench/bench_sync.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#define MS_PER_S 1000
#define READ_CHUNK 65536
#define PORT_TEXT_MAX 16

static int set_nonblocking(int fd)
{
    int flags = fcntl(fd, F_GETFL);

    if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0)
        return errno;
    return 0;
}

static int connect_unix(const char *path, int *fd)
{
    struct sockaddr_un sa;
    int s, rc;

    if (strlen(path) >= sizeof(sa.sun_path))
        return ENAMETOOLONG;
    memset(&sa, 0, sizeof(sa));
    sa.sun_family = AF_UNIX;
    strcpy(sa.sun_path, path);
    s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (s < 0)
        return errno;
    rc = set_nonblocking(s);
    if (rc == 0 && connect(s, (struct sockaddr *)&sa, sizeof(sa)) < 0 &&
        errno != EINPROGRESS && errno != EAGAIN)
        rc = errno;
    if (rc != 0) {
        close(s);
        return rc;
    }
    *fd = s;
    return 0;
}

int bench_target_connect(const bench_target *t, int *fd)
{
    struct addrinfo hints, *res = NULL, *ai;
    char port[PORT_TEXT_MAX];
    int s = -1, rc = ECONNREFUSED, one = 1;

    if (t->socket_path != NULL)
        return connect_unix(t->socket_path, fd);
    memset(&hints, 0, sizeof(hints));
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    snprintf(port, sizeof(port), "%d", t->port);
    if (getaddrinfo(t->host, port, &hints, &res) != 0)
        return EHOSTUNREACH;
    for (ai = res; ai != NULL; ai = ai->ai_next) {
        s = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC,
                   ai->ai_protocol);
        if (s < 0) {
            rc = errno;
            continue;
        }
        setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        rc = set_nonblocking(s);
        if (rc == 0 && connect(s, ai->ai_addr, ai->ai_addrlen) < 0 &&
            errno != EINPROGRESS)
            rc = errno;
        if (rc == 0)
            break;
        close(s);
        s = -1;
    }
    freeaddrinfo(res);
    if (s < 0)
        return rc;
    *fd = s;
    return 0;
}

/* Wait until fd is ready for events, or the timeout. */
static int wait_fd(int fd, short events)
{
    struct pollfd pfd = { .fd = fd, .events = events, .revents = 0 };
    int n;

    do {
        n = poll(&pfd, 1, BENCH_SYNC_TIMEOUT_S * MS_PER_S);
    } while (n < 0 && errno == EINTR);
    if (n < 0)
        return errno;
    if (n == 0)
        return ETIMEDOUT;
    return 0;
}

int bench_sync_flush(bench_sync *c)
{
    while (bench_buf_pending(&c->out) > 0) {
        ssize_t n = write(c->fd, c->out.data + c->out.off,
                          bench_buf_pending(&c->out));

        if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
            int rc = wait_fd(c->fd, POLLOUT);

            if (rc != 0)
                return rc;
            continue;
        }
        if (n < 0)
            return errno;
        c->out.off += (size_t)n;
    }
    c->out.off = c->out.len = 0;
    return 0;
}

int bench_sync_read(bench_sync *c, bench_reply *r)
{
    for (;;) {
        long used = bench_resp_scan_reply(&c->scan, c->in.data + c->in.off,
                                          bench_buf_pending(&c->in), r);
        ssize_t n;
        int rc;

        if (used < 0)
            return EPROTO;
        if (used > 0) {
            c->in.off += (size_t)used;
            return 0;
        }
        /* r would point into memory that compaction moves: compact only
         * before the reply is complete. */
        bench_buf_compact(&c->in);
        rc = bench_buf_reserve(&c->in, READ_CHUNK);
        if (rc != 0)
            return rc;
        n = read(c->fd, c->in.data + c->in.len, c->in.cap - c->in.len);
        if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
            rc = wait_fd(c->fd, POLLIN);
            if (rc != 0)
                return rc;
            continue;
        }
        if (n < 0)
            return errno;
        if (n == 0)
            return ECONNRESET;
        c->in.len += (size_t)n;
    }
}

int bench_sync_command(bench_sync *c, bench_reply *r, unsigned argc,
                       const char *const *argv)
{
    int rc;

    bench_cmd_argv(&c->out, argc, argv);
    rc = bench_sync_flush(c);
    if (rc != 0)
        return rc;
    return bench_sync_read(c, r);
}

/* Run one set-up command that must answer +OK. */
static int login_step(bench_sync *c, unsigned argc, const char *const *argv)
{
    bench_reply r;
    int rc = bench_sync_command(c, &r, argc, argv);

    if (rc != 0) {
        snprintf(c->err, sizeof(c->err), "%s: %s", argv[0], strerror(rc));
        return rc;
    }
    if (r.type == BENCH_REPLY_ERROR) {
        char text[sizeof(c->err) / 2];

        bench_reply_text(&r, text, sizeof(text));
        snprintf(c->err, sizeof(c->err), "%s refused: %s", argv[0], text);
        return BENCH_EREFUSED;
    }
    return 0;
}

int bench_sync_open(bench_sync *c, const bench_target *t)
{
    char db[PORT_TEXT_MAX];
    int rc, soerr = 0;
    socklen_t slen = sizeof(soerr);

    memset(c, 0, sizeof(*c));
    c->fd = -1;
    rc = bench_target_connect(t, &c->fd);
    if (rc == 0)
        rc = wait_fd(c->fd, POLLOUT);
    if (rc == 0 && getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &soerr, &slen) < 0)
        rc = errno;
    if (rc == 0)
        rc = soerr;
    if (rc != 0) {
        snprintf(c->err, sizeof(c->err), "connect to %s: %s",
                 t->socket_path ? t->socket_path : t->host, strerror(rc));
        return rc;
    }
    if (t->password != NULL) {
        const char *argv[] = { "AUTH", t->password };

        rc = login_step(c, 2, argv);
        if (rc != 0)
            return rc;
    }
    if (t->db != 0) {
        const char *argv[] = { "SELECT", db };

        snprintf(db, sizeof(db), "%d", t->db);
        rc = login_step(c, 2, argv);
        if (rc != 0)
            return rc;
    }
    return 0;
}

void bench_sync_close(bench_sync *c)
{
    if (c->fd >= 0)
        close(c->fd);
    c->fd = -1;
    bench_buf_fini(&c->in);
    bench_buf_fini(&c->out);
}
