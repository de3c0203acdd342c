/*
 * srv_cmd_sync.c - SYNC and REPLCONF as far as a snapshot needs them:
 * what `redis-cli --rdb FILE` sends (REPLCONF capa eof, REPLCONF
 * rdb-only 1, SYNC) gets an RDB of the whole keyspace that redis-server
 * loads. Replication itself (the command stream after the snapshot,
 * PSYNC, offsets, ACKs) is not built: after the snapshot the connection
 * closes, which is what redis-cli --rdb and rdb-only replicas expect.
 *
 * The snapshot is written by a grandchild of the worker (double fork: the
 * worker waits only for the short-lived child, so no zombie is left and
 * the worker goes on serving at once). The grandchild keeps the client's
 * socket and nothing else, opens its own LMDB environment (LMDB handles
 * do not cross fork) without the shared cache, and streams the RDB from
 * one read snapshot: "$EOF:<40 random characters>\r\n", the RDB, the same
 * 40 characters, when the client said "capa eof"; otherwise the RDB goes
 * to an unlinked temporary file first, to be sent as "$<length>\r\n"
 * and the bytes.
 */
#include "rdb/rdb_file.h"
#include "rdb/rdb_io.h"
#include "server/cmd/srv_args.h"
#include "server/cmd/srv_cmd.h"
#include "server/srv_config.h"
#include "server/srv_conn.h"
#include "server/srv_heritage.h"
#include "server/srv_hooks.h"
#include "server/srv_log.h"
#include "server/srv_rdbfile.h"
#include "server/srv_reply.h"
#include "server/srv_util.h"
#include "storage/st_env.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#define EOF_MARK_LEN 40
#define SEND_TIMEOUT_S 60
#define WRITE_CHUNK (1u << 20)
#define HOST_MAX 256
#define FIRST_INHERITED_FD 3 /* after stdin, stdout, stderr */
#define HEX "0123456789abcdef"

/* ---- REPLCONF's per-connection state ---- */

typedef struct repl_state {
    int capa_eof;
    int no_keys; /* rdb-filter-only: functions only (larder has none) */
} repl_state;

static void state_close(srv_conn *c, void *state) { free(state); }

static const srv_hooks repl_hooks = { .name = "replconf",
                                      .close = state_close };

static repl_state *state_of(srv_conn *c, int create)
{
    repl_state *s = srv_hooks_state(&c->hooks, &repl_hooks);

    if (s || !create)
        return s;
    if (!(s = calloc(1, sizeof *s)))
        return NULL;
    if (srv_hooks_attach(&c->hooks, &repl_hooks, s)) {
        free(s);
        return NULL;
    }
    return s;
}

void srv_cmd_replconf(srv_conn *c)
{
    repl_state *s;
    long long v;

    if (c->argc % 2 == 0) {
        srv_reply_error(c, SRV_ERR_SYNTAX);
        return;
    }
    if (!(s = state_of(c, 1))) {
        srv_reply_error(c, "ERR out of memory");
        return;
    }
    for (int j = 1; j < c->argc; j += 2) {
        const srv_slice *o = &c->argv[j], *a = &c->argv[j + 1];
        if (srv_util_streq(o->ptr, o->len, "listening-port")) {
            if (srv_args_ll_or_reply(c, a, &v))
                return;
        } else if (srv_util_streq(o->ptr, o->len, "ip-address")) {
            if (a->len >= HOST_MAX) {
                srv_reply_errorf(c,
                                 "ERR REPLCONF ip-address provided by "
                                 "replica instance is too long: %zu bytes",
                                 a->len);
                return;
            }
        } else if (srv_util_streq(o->ptr, o->len, "capa")) {
            if (srv_util_streq(a->ptr, a->len, "eof"))
                s->capa_eof = 1;
        } else if (srv_util_streq(o->ptr, o->len, "ack") ||
                   srv_util_streq(o->ptr, o->len, "getack")) {
            return; /* for replicas and masters: no reply, as in Redis */
        } else if (srv_util_streq(o->ptr, o->len, "rdb-only")) {
            if (srv_args_ll_or_reply(c, a, &v))
                return;
            if (v < 0 || v > 1) {
                srv_reply_error(c, "ERR value is out of range, value must "
                                   "between 0 and 1");
                return;
            }
        } else if (srv_util_streq(o->ptr, o->len, "rdb-filter-only")) {
            if (a->len && !srv_util_streq(a->ptr, a->len, "functions")) {
                srv_reply_errorf(c,
                                 "ERR Unsupported rdb-filter-only option: "
                                 "%.*s",
                                 (int)a->len, a->ptr);
                return;
            }
            s->no_keys = 1;
        } else {
            srv_reply_errorf(c, "ERR Unrecognized REPLCONF option: %.*s",
                             (int)o->len, o->ptr);
            return;
        }
    }
    srv_reply_ok(c);
}

/* ---- the snapshot, in the grandchild ---- */

static int send_all(int fd, const void *p, size_t n)
{
    const char *q = p;

    while (n > 0) {
        ssize_t k = write(fd, q, n);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return errno ? errno : EPIPE;
        q += k;
        n -= (size_t)k;
    }
    return 0;
}

/* The RDB of env through a writer on fd. */
static int write_rdb(st_env *env, int fd, int no_keys)
{
    srv_rdbfile_stats st;
    rdb_writer w;
    int rc;

    rdb_writer_fd(&w, fd, WRITE_CHUNK, 1);
    if (no_keys) {
        /* No functions here: an RDB of nothing. */
        rc = rdb_file_write_header(&w);
        if (rc == 0)
            rc = rdb_file_write_end(&w);
    } else {
        rc = srv_rdbfile_write(env, srv_util_mstime(), &w, &st);
    }
    rdb_writer_fini(&w);
    return rc;
}

static int send_eof_style(st_env *env, int fd, int no_keys)
{
    char mark[EOF_MARK_LEN], head[EOF_MARK_LEN + 8];
    unsigned seed = (unsigned)srv_util_mstime() ^ (unsigned)getpid();
    int rc;

    for (int i = 0; i < EOF_MARK_LEN; i++)
        mark[i] = HEX[rand_r(&seed) % (sizeof HEX - 1)];
    snprintf(head, sizeof head, "$EOF:%.*s\r\n", EOF_MARK_LEN, mark);
    if ((rc = send_all(fd, head, strlen(head))) ||
        (rc = write_rdb(env, fd, no_keys)))
        return rc;
    return send_all(fd, mark, EOF_MARK_LEN);
}

static int send_bulk_style(st_env *env, int fd, int no_keys)
{
    char path[] = "/tmp/larder-sync.XXXXXX", head[32], buf[1 << 16];
    struct stat sb;
    int tmp = mkstemp(path), rc;

    if (tmp < 0)
        return errno;
    unlink(path);
    if ((rc = write_rdb(env, tmp, no_keys)) || fstat(tmp, &sb) ||
        lseek(tmp, 0, SEEK_SET) < 0) {
        close(tmp);
        return rc ? rc : errno;
    }
    snprintf(head, sizeof head, "$%lld\r\n", (long long)sb.st_size);
    rc = send_all(fd, head, strlen(head));
    for (ssize_t n; rc == 0 && (n = read(tmp, buf, sizeof buf)) > 0;)
        rc = send_all(fd, buf, (size_t)n);
    close(tmp);
    return rc;
}

/* Close every descriptor from 3 up but `a` and `b`: the other clients'
 * sockets, the listeners and the broker link must not outlive the
 * worker in this process. */
static void close_all_but(int a, int b)
{
    int lo = a < b ? a : b, hi = a < b ? b : a;

    if (lo < FIRST_INHERITED_FD)
        lo = hi; /* stderr logging: only the socket to keep */
    if (lo > FIRST_INHERITED_FD)
        close_range(FIRST_INHERITED_FD, (unsigned)lo - 1, 0);
    if (hi > lo + 1)
        close_range((unsigned)lo + 1, (unsigned)hi - 1, 0);
    close_range((unsigned)hi + 1, ~0u, 0);
}

/* The grandchild: keep only the socket, stream the snapshot, exit. */
static void snapshot_child(srv_conn *c, const repl_state *s)
{
    struct timeval tv = { .tv_sec = SEND_TIMEOUT_S };
    size_t pending = c->out.len - c->out_sent;
    st_env *env = NULL;
    int rc, fd;

    close_all_but(c->fd, srv_log_fd());
    fd = c->fd;
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    srv_her.cache = NULL; /* a reader of its own, outside the cache */
    if ((rc = srv_heritage_env_open(1, &env)) == 0) {
        /* Replies the worker had not sent yet come first. */
        rc = pending ? send_all(fd, c->out.data + c->out_sent, pending) : 0;
        if (rc == 0)
            rc = s->capa_eof ? send_eof_style(env, fd, s->no_keys)
                             : send_bulk_style(env, fd, s->no_keys);
        st_env_close(&env);
    }
    if (rc)
        srv_log(SRV_LOG_WARNING, rc > 0 ? rc : 0, "SYNC snapshot to %s failed",
                c->addr);
    else
        srv_log(SRV_LOG_NOTICE, 0, "SYNC snapshot sent to %s", c->addr);
    _exit(rc ? 1 : 0);
}

void srv_cmd_sync(srv_conn *c)
{
    repl_state none = { 0 }, *s = state_of(c, 0);
    pid_t pid;
    int status;

    if (!s)
        s = &none;
    if ((pid = fork()) < 0) {
        srv_reply_errorf(c, "ERR can't fork for SYNC: %s", strerror(errno));
        return;
    }
    if (pid == 0) {
        pid_t g = fork();
        if (g == 0)
            snapshot_child(c, s);
        _exit(g < 0 ? 1 : 0);
    }
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        srv_reply_error(c, "ERR can't fork for SYNC");
        return;
    }
    /* The grandchild owns the socket now: let go without a word. */
    c->flags |= SRV_CONN_CLOSE_ASAP;
}
