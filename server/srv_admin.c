/*
 * srv_admin.c - the master's admin control socket (see the header): the
 * listener and its clients on the master's poll, their RESP requests
 * parsed by srv_resp.c and answered with srv_reply.c (each client carries
 * a srv_conn for its buffers and protocol; no worker is behind it), the
 * verbs, and the backup child.
 */
#include "server/srv_admin.h"
#include "server/srv_cfgops.h"
#include "server/srv_config.h"
#include "server/srv_conn.h"
#include "server/srv_heritage.h"
#include "server/srv_log.h"
#include "server/srv_reply.h"
#include "server/srv_resp.h"
#include "server/srv_stats.h"
#include "server/srv_util.h"
#include "shm/shm_cache.h"
#include "shm/shm_error.h"
#include "storage/st_env.h"
#include "storage/st_err.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#define ADMIN_MODE 0600
#define ADMIN_BACKLOG 16
#define ADMIN_READ_CHUNK 4096
/* Requests larger than this close the client (nothing the admin verbs
 * take comes near it). */
#define ADMIN_REQUEST_MAX (1024 * 1024)
#define ADMIN_PROCS_MAX (SRV_WORKERS_LIMIT + SRV_ROLE_DUTY_SLOTS + 1)
#define ADMIN_LIST_MAX 8192
#define ADMIN_ERR_MAX 1024
#define MS_PER_S 1000

typedef struct admin_client {
    srv_conn c; /* fd, in, out, parser, resp: the rest is unused */
    int used;
} admin_client;

/* The backup job, in a shared page so the backup child can report. */
enum backup_state { BACKUP_NONE, BACKUP_RUNNING, BACKUP_DONE, BACKUP_FAILED };

typedef struct backup_sh {
    _Atomic int64_t total; /* atomic; written by the child: bytes expected */
    _Atomic int64_t rc;    /* atomic; written by the child: st_env codes */
} backup_sh;

static struct {
    int fd;
    char path[SRV_PATH_MAX];
    srv_admin_ops ops;
    admin_client client[SRV_ADMIN_CLIENTS_MAX];
    /* the backup */
    backup_sh *job;
    enum backup_state state;
    pid_t pid;
    char target[SRV_PATH_MAX];
    int64_t started_ms, ended_ms;
    char error[ADMIN_ERR_MAX];
} admin = { .fd = -1 };

/* ---- the listener ---- */

/* Is something listening on path? (a live master: refuse to replace) */
static int live(const struct sockaddr_un *sa)
{
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int up;

    if (fd < 0)
        return 0;
    up = connect(fd, (const struct sockaddr *)sa, sizeof *sa) == 0;
    close(fd);
    return up;
}

int srv_admin_open(const char *path, const srv_admin_ops *ops, char *err,
                   size_t errlen)
{
    struct sockaddr_un sa;
    struct stat st;
    mode_t old;
    int fd, e;

    admin.ops = *ops;
    if (strlen(path) >= sizeof sa.sun_path) {
        snprintf(err, errlen,
                 "admin-socket path '%s' is too long (at most "
                 "%zu bytes)",
                 path, sizeof sa.sun_path - 1);
        return ENAMETOOLONG;
    }
    memset(&sa, 0, sizeof sa);
    sa.sun_family = AF_UNIX;
    memcpy(sa.sun_path, path, strlen(path));
    if (lstat(path, &st) == 0) {
        if (!S_ISSOCK(st.st_mode)) {
            snprintf(err, errlen,
                     "admin-socket '%s' exists and is not a "
                     "socket",
                     path);
            return EEXIST;
        }
        if (live(&sa)) {
            snprintf(err, errlen,
                     "admin-socket '%s' is in use: is another "
                     "larder-server running with this dir?",
                     path);
            return EADDRINUSE;
        }
        unlink(path); /* left by a master that died */
    }
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        e = errno;
        snprintf(err, errlen, "socket() for the admin socket: %s", strerror(e));
        return e;
    }
    /* Created with mode 0600 from the start: no window where another user
     * could connect. */
    old = umask(0177);
    e = bind(fd, (struct sockaddr *)&sa, sizeof sa) ? errno : 0;
    umask(old);
    if (!e && chmod(path, ADMIN_MODE))
        e = errno;
    if (!e && listen(fd, ADMIN_BACKLOG))
        e = errno;
    if (e) {
        snprintf(err, errlen, "can't listen on the admin socket %s: %s", path,
                 strerror(e));
        close(fd);
        return e;
    }
    admin.fd = fd;
    snprintf(admin.path, sizeof admin.path, "%s", path);
    admin.job = mmap(NULL, sizeof *admin.job, PROT_READ | PROT_WRITE,
                     MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (admin.job == MAP_FAILED)
        admin.job = NULL;
    return 0;
}

static void client_close(admin_client *a)
{
    close(a->c.fd);
    srv_buf_free(&a->c.in);
    srv_buf_free(&a->c.out);
    srv_resp_parser_fini(&a->c.parser);
    memset(a, 0, sizeof *a);
}

void srv_admin_close(void)
{
    for (int i = 0; i < SRV_ADMIN_CLIENTS_MAX; i++)
        if (admin.client[i].used) {
            /* Say what is pending (SHUTDOWN's OK) before going. */
            srv_conn *c = &admin.client[i].c;
            if (c->out.len > c->out_sent &&
                write(c->fd, c->out.data + c->out_sent,
                      c->out.len - c->out_sent) < 0) {
                /* gone */
            }
            client_close(&admin.client[i]);
        }
    if (admin.fd >= 0) {
        close(admin.fd);
        unlink(admin.path);
        admin.fd = -1;
    }
}

void srv_admin_forget(void)
{
    for (int i = 0; i < SRV_ADMIN_CLIENTS_MAX; i++)
        if (admin.client[i].used)
            close(admin.client[i].c.fd);
    if (admin.fd >= 0)
        close(admin.fd);
    admin.fd = -1;
    memset(admin.client, 0, sizeof admin.client);
}

int srv_admin_pollfds(struct pollfd *fds)
{
    int n = 0;

    if (admin.fd < 0)
        return 0;
    fds[n++] = (struct pollfd){ admin.fd, POLLIN, 0 };
    for (int i = 0; i < SRV_ADMIN_CLIENTS_MAX; i++) {
        srv_conn *c = &admin.client[i].c;
        if (!admin.client[i].used)
            continue;
        fds[n++] = (struct pollfd){
            c->fd, (short)(POLLIN | (c->out.len > c->out_sent ? POLLOUT : 0)), 0
        };
    }
    return n;
}

static void accept_clients(void)
{
    int fd;

    while ((fd = accept4(admin.fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC)) >=
           0) {
        admin_client *a = NULL;
        for (int i = 0; i < SRV_ADMIN_CLIENTS_MAX && !a; i++)
            if (!admin.client[i].used)
                a = &admin.client[i];
        if (!a) {
            static const char busy[] = "-ERR too many admin clients\r\n";
            if (write(fd, busy, sizeof busy - 1) < 0) {
                /* gone */
            }
            close(fd);
            continue;
        }
        memset(a, 0, sizeof *a);
        a->used = 1;
        a->c.fd = fd;
        a->c.resp = 2;
        a->c.authed = 1;
        snprintf(a->c.addr, sizeof a->c.addr, "admin");
        srv_resp_parser_init(&a->c.parser, ADMIN_REQUEST_MAX);
    }
}

/* ---- verbs ---- */

static void verb_help(srv_conn *c)
{
    static const char *const help[] = {
        "larder admin socket. Verbs are:",
        "PING",
        "    Reply PONG.",
        "STATUS",
        "    Every process: role, pid, state, uptime, connections, commands,",
        "    memory, respawns and the cause of the last death.",
        "WORKERS [<n>]",
        "    The worker count, or grow or shrink the pool to n workers.",
        "RELOAD",
        "    Re-read the config file, apply what can change live, list",
        "    what needs a restart.",
        "BACKUP <path>",
        "    Start a hot, consistent, compacted copy of the data to path.",
        "BACKUP STATUS",
        "    Progress of the last backup.",
        "SHUTDOWN [NOW]",
        "    Stop the server (NOW: without waiting for clients).",
        "CACHE STATS|FLUSH",
        "    The shared cache's counters, or empty it.",
        "LOGLEVEL [<level>]",
        "    The log level, or set it (debug, verbose, notice, warning).",
        "CONFIG GET <pattern> ... | SET <name> <value> ... | REWRITE",
        "    As the CONFIG command.",
        "HELP",
        "    Print this help.",
    };

    srv_reply_lines(c, help, sizeof help / sizeof help[0]);
}

static void pair_ll(srv_conn *c, const char *name, long long v)
{
    srv_reply_bulk_cstr(c, name);
    srv_reply_int(c, v);
}

static void pair_str(srv_conn *c, const char *name, const char *v)
{
    srv_reply_bulk_cstr(c, name);
    srv_reply_bulk_cstr(c, v);
}

static const char *const state_names[] = {
    [SRV_ADMIN_RUNNING] = "running",
    [SRV_ADMIN_STOPPING] = "stopping",
    [SRV_ADMIN_RESPAWNING] = "respawning",
    [SRV_ADMIN_STOPPED] = "stopped",
};

/* Resident memory of pid, bytes (0 if unknown). */
static long long rss_of(pid_t pid)
{
    char path[SRV_CONN_NAME_MAX];
    long long pages = 0, rss = 0;
    FILE *f;

    snprintf(path, sizeof path, "/proc/%d/statm", (int)pid);
    if (!(f = fopen(path, "r")))
        return 0;
    if (fscanf(f, "%lld %lld", &pages, &rss) != 2)
        rss = 0;
    fclose(f);
    return rss * sysconf(_SC_PAGESIZE);
}

static void reply_proc(srv_conn *c, const srv_admin_proc *p, int64_t now)
{
    srv_stats_slot *slot = p->proc.slot >= 0
                               ? &srv_her.stats->slot[p->proc.slot]
                               : NULL;
    char name[SRV_CONN_NAME_MAX];

    srv_proc_name(&p->proc, name, sizeof name);
    srv_reply_map(c, 12);
    pair_str(c, "name", name);
    pair_str(c, "role", srv_role_name(p->proc.role));
    pair_ll(c, "index", p->proc.index);
    pair_ll(c, "pid", p->proc.pid);
    pair_str(c, "state", state_names[p->state]);
    pair_ll(c, "uptime_s",
            p->proc.pid && p->started_ms ? (now - p->started_ms) / MS_PER_S
                                         : 0);
    pair_ll(c, "connections",
            slot && p->proc.pid ? (long long)atomic_load(&slot->connected) : 0);
    pair_ll(c, "commands",
            slot ? (long long)atomic_load(&slot->total_commands) : 0);
    pair_ll(c, "rss_bytes", p->proc.pid ? rss_of(p->proc.pid) : 0);
    pair_ll(c, "respawns", p->respawns);
    pair_str(c, "last_exit", p->last_exit);
    pair_ll(c, "last_exit_age_s",
            p->last_exit_ms ? (now - p->last_exit_ms) / MS_PER_S : -1);
}

static void verb_status(srv_conn *c)
{
    static srv_admin_proc procs[ADMIN_PROCS_MAX];
    int n = admin.ops.procs(procs, ADMIN_PROCS_MAX), max = 0, running = 0;
    int target = admin.ops.workers(&max);
    int64_t now = srv_util_mstime();

    for (int i = 0; i < n; i++)
        running += procs[i].proc.role == SRV_ROLE_WORKER && procs[i].proc.pid;
    srv_reply_map(c, 9);
    pair_str(c, "version", SRV_VERSION);
    pair_str(c, "redis_version", SRV_REDIS_VERSION);
    pair_ll(c, "pid", srv_her.master_pid);
    pair_ll(c, "uptime_s", (now - srv_her.start_ms) / MS_PER_S);
    pair_ll(c, "workers", target);
    pair_ll(c, "workers_running", running);
    pair_ll(c, "workers_max", max);
    pair_ll(c, "connected_clients",
            (long long)atomic_load(&srv_her.stats->clients));
    srv_reply_bulk_cstr(c, "processes");
    srv_reply_array(c, n);
    for (int i = 0; i < n; i++)
        reply_proc(c, &procs[i], now);
}

static int arg_ll(srv_conn *c, int i, long long *v)
{
    return srv_util_str2ll(c->argv[i].ptr, c->argv[i].len, v);
}

static void verb_workers(srv_conn *c)
{
    char err[ADMIN_ERR_MAX];
    int max = 0, now = admin.ops.workers(&max);
    long long n;

    if (c->argc == 1) {
        srv_reply_int(c, now);
        return;
    }
    if (c->argc != 2 || !arg_ll(c, 1, &n) || n < 1 || n > max) {
        srv_reply_errorf(c,
                         "ERR WORKERS takes a count between 1 and %d "
                         "(workers-max)",
                         max);
        return;
    }
    if (admin.ops.set_workers((int)n, err, sizeof err))
        srv_reply_errorf(c, "ERR %s", err);
    else
        srv_reply_ok(c);
}

static void reply_words(srv_conn *c, const char *list)
{
    char copy[ADMIN_LIST_MAX], *save = NULL;
    long long n = 0;

    snprintf(copy, sizeof copy, "%s", list);
    for (char *w = strtok_r(copy, " ", &save); w;
         w = strtok_r(NULL, " ", &save))
        n++;
    srv_reply_array(c, n);
    snprintf(copy, sizeof copy, "%s", list);
    save = NULL;
    for (char *w = strtok_r(copy, " ", &save); w;
         w = strtok_r(NULL, " ", &save))
        srv_reply_bulk_cstr(c, w);
}

static void verb_reload(srv_conn *c)
{
    static char applied[ADMIN_LIST_MAX], restart[ADMIN_LIST_MAX];
    char err[ADMIN_ERR_MAX];

    if (admin.ops.reload(applied, restart, sizeof applied, err, sizeof err)) {
        srv_reply_error(c, err);
        return;
    }
    srv_reply_map(c, 2);
    srv_reply_bulk_cstr(c, "applied");
    reply_words(c, applied);
    srv_reply_bulk_cstr(c, "restart");
    reply_words(c, restart);
}

/* The backup child: open LMDB (never across fork: here, after it), copy
 * with compaction, report, exit. */
static void backup_child(void)
{
    st_env *env;
    st_env_stat st = { 0 };
    struct sigaction sa;
    int rc;

    memset(&sa, 0, sizeof sa);
    sa.sa_handler = SIG_DFL;
    sigaction(SIGCHLD, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    srv_log_set_role("backup", -1);
    if ((rc = srv_heritage_env_open(1, &env)) == 0) {
        if (st_env_stat_get(env, &st) == 0)
            atomic_store(&admin.job->total, (int64_t)st.used_bytes);
        rc = st_env_backup(env, admin.target);
        st_env_close(&env);
    }
    atomic_store(&admin.job->rc, rc);
    if (rc)
        srv_log(SRV_LOG_WARNING, rc > 0 ? rc : 0, "backup to %s failed: %s",
                admin.target, rc > 0 ? "system error" : st_strerror(rc));
    _exit(rc ? 1 : 0);
}

static long long file_size(const char *path)
{
    struct stat st;

    return stat(path, &st) == 0 ? (long long)st.st_size : 0;
}

static void verb_backup_status(srv_conn *c)
{
    static const char *const names[] = { "none", "running", "done", "failed" };
    char tmp[SRV_PATH_MAX + 8];
    long long bytes = 0, total = admin.job ? atomic_load(&admin.job->total) : 0;
    int64_t end = admin.state == BACKUP_RUNNING ? srv_util_mstime()
                                                : admin.ended_ms;

    if (admin.state == BACKUP_RUNNING) {
        snprintf(tmp, sizeof tmp, "%s.tmp", admin.target);
        bytes = file_size(tmp);
    } else if (admin.state == BACKUP_DONE) {
        bytes = file_size(admin.target);
    }
    srv_reply_map(c, 7);
    pair_str(c, "state", names[admin.state]);
    pair_str(c, "path", admin.target);
    pair_ll(c, "pid", admin.state == BACKUP_RUNNING ? admin.pid : 0);
    pair_ll(c, "bytes", bytes);
    pair_ll(c, "total", admin.state == BACKUP_DONE ? bytes : total);
    pair_ll(c, "elapsed_ms",
            admin.state == BACKUP_NONE ? 0 : end - admin.started_ms);
    pair_str(c, "error", admin.error);
}

static void verb_backup(srv_conn *c)
{
    const srv_slice *a = &c->argv[1];
    pid_t pid;

    if (c->argc == 2 && srv_util_streq(a->ptr, a->len, "status")) {
        verb_backup_status(c);
        return;
    }
    if (c->argc != 2) {
        srv_reply_error(c, "ERR BACKUP takes a path or STATUS");
        return;
    }
    if (a->len == 0 || a->ptr[0] != '/' || a->len >= sizeof admin.target ||
        memchr(a->ptr, '\0', a->len)) {
        srv_reply_error(c, "ERR BACKUP needs an absolute file path");
        return;
    }
    if (admin.state == BACKUP_RUNNING) {
        srv_reply_errorf(c, "ERR a backup to %s is in progress", admin.target);
        return;
    }
    if (!admin.job) {
        srv_reply_error(c, "ERR no memory for the backup's status");
        return;
    }
    memcpy(admin.target, a->ptr, a->len);
    admin.target[a->len] = '\0';
    atomic_store(&admin.job->total, 0);
    atomic_store(&admin.job->rc, 0);
    admin.error[0] = '\0';
    admin.started_ms = srv_util_mstime();
    if ((pid = fork()) < 0) {
        srv_reply_errorf(c, "ERR fork() of the backup failed: %s",
                         strerror(errno));
        return;
    }
    if (pid == 0)
        backup_child();
    admin.pid = pid;
    admin.state = BACKUP_RUNNING;
    srv_log(SRV_LOG_NOTICE, 0, "backup to %s started by pid %d", admin.target,
            (int)pid);
    srv_reply_simple(c, "Backup started");
}

int srv_admin_child_exited(pid_t pid, int status)
{
    char how[SRV_ADMIN_CAUSE_MAX];
    int64_t rc;

    if (!pid || pid != admin.pid)
        return 0;
    admin.pid = 0;
    admin.ended_ms = srv_util_mstime();
    rc = admin.job ? atomic_load(&admin.job->rc) : 0;
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
        admin.state = BACKUP_DONE;
        srv_log(SRV_LOG_NOTICE, 0, "backup to %s done: %lld bytes in %lld ms",
                admin.target, file_size(admin.target),
                (long long)(admin.ended_ms - admin.started_ms));
        return 1;
    }
    admin.state = BACKUP_FAILED;
    srv_admin_describe_exit(status, how, sizeof how);
    if (rc)
        snprintf(admin.error, sizeof admin.error, "%s",
                 rc > 0 ? strerror((int)rc) : st_strerror((int)rc));
    else
        snprintf(admin.error, sizeof admin.error, "the backup process %s", how);
    srv_log(SRV_LOG_WARNING, 0, "backup to %s failed: %s", admin.target,
            admin.error);
    return 1;
}

pid_t srv_admin_backup_pid(void) { return admin.pid; }

static void verb_shutdown(srv_conn *c)
{
    int now = c->argc == 2 &&
              srv_util_streq(c->argv[1].ptr, c->argv[1].len, "now");

    if (c->argc > 2 || (c->argc == 2 && !now)) {
        srv_reply_error(c, SRV_ERR_SYNTAX);
        return;
    }
    srv_reply_ok(c);
    admin.ops.shutdown(now);
}

static void verb_cache(srv_conn *c)
{
    const srv_slice *a = &c->argv[1];
    shm_cache_stats_t st;

    if (c->argc == 2 && srv_util_streq(a->ptr, a->len, "flush")) {
        /* Entries newer than the newest transaction known stay: they are
         * current. */
        int64_t v = atomic_load(&srv_her.stats->committed_txn);
        int64_t d = atomic_load(&srv_her.stats->durable_txn);
        int rc = srv_her.cache ? shm_cache_flush_all(srv_her.cache,
                                                     (uint64_t)(v > d ? v : d))
                               : 0;
        if (rc)
            srv_reply_errorf(c, "ERR cache flush: %s", shm_strerror(rc));
        else
            srv_reply_ok(c);
        return;
    }
    if (c->argc != 2 || !srv_util_streq(a->ptr, a->len, "stats")) {
        srv_reply_error(c, "ERR CACHE takes STATS or FLUSH");
        return;
    }
    shm_cache_stats(srv_her.cache, &st);
    srv_reply_map(c, 14);
    pair_ll(c, "enabled", shm_cache_enabled(srv_her.cache));
    pair_str(c, "policy", shm_cache_policy_name(st.policy));
    pair_ll(c, "stripes", st.nstripes);
    pair_ll(c, "budget_bytes", (long long)st.budget);
    pair_ll(c, "max_bytes", (long long)st.max_bytes);
    pair_ll(c, "used_bytes", (long long)st.bytes_used);
    pair_ll(c, "entries", (long long)st.entries);
    pair_ll(c, "hits", (long long)st.hits);
    pair_ll(c, "misses", (long long)st.misses);
    pair_ll(c, "evictions", (long long)st.evictions);
    pair_ll(c, "fills_refused_stale", (long long)st.fills_refused);
    pair_ll(c, "puts_dropped", (long long)st.puts_dropped);
    pair_ll(c, "lock_waits", (long long)st.lock_waits);
    pair_ll(c, "owner_dead_recoveries", (long long)st.owner_dead);
}

/* CONFIG SET through srv_cfgops, as a worker's CONFIG SET. */
static void config_set(srv_conn *c, int first)
{
    char err[ADMIN_ERR_MAX];

    if ((c->argc - first) < 2 || (c->argc - first) % 2) {
        srv_reply_error(c, SRV_ERR_SYNTAX);
        return;
    }
    if (srv_cfgops_set(c->argv + first, (c->argc - first) / 2, err, sizeof err))
        srv_reply_error(c, err);
    else
        srv_reply_ok(c);
}

static void verb_loglevel(srv_conn *c)
{
    static char name[] = "loglevel";

    if (c->argc == 1) {
        srv_config_refresh();
        srv_reply_bulk_cstr(c, srv_log_level_name((int)srv_her.cfg->loglevel));
        return;
    }
    if (c->argc != 2) {
        srv_reply_error(c, SRV_ERR_SYNTAX);
        return;
    }
    srv_slice pair[2] = { { name, sizeof name - 1 }, c->argv[1] };
    char err[ADMIN_ERR_MAX];
    if (srv_cfgops_set(pair, 1, err, sizeof err))
        srv_reply_error(c, err);
    else
        srv_reply_ok(c);
}

static void verb_config(srv_conn *c)
{
    const srv_slice *sub = &c->argv[1];
    char err[ADMIN_ERR_MAX];

    if (c->argc >= 3 && srv_util_streq(sub->ptr, sub->len, "get")) {
        srv_cfgops_reply_get(c, c->argv + 2, c->argc - 2);
    } else if (srv_util_streq(sub->ptr, sub->len, "set")) {
        config_set(c, 2);
    } else if (c->argc == 2 && srv_util_streq(sub->ptr, sub->len, "rewrite")) {
        if (srv_cfgops_rewrite(err, sizeof err))
            srv_reply_error(c, err);
        else
            srv_reply_ok(c);
    } else {
        srv_reply_error(c, "ERR CONFIG takes GET <pattern> ..., SET <name> "
                           "<value> ... or REWRITE");
    }
}

static void verb_ping(srv_conn *c) { srv_reply_simple(c, "PONG"); }

/* HELLO [2|3]: the protocol of the replies (larderctl asks for 3). */
static void verb_hello(srv_conn *c)
{
    long long proto = 2;

    if (c->argc > 2 || (c->argc == 2 && (!arg_ll(c, 1, &proto) ||
                                         (proto != 2 && proto != 3)))) {
        srv_reply_error(c, "NOPROTO unsupported protocol version");
        return;
    }
    c->resp = (int)proto;
    srv_reply_map(c, 3);
    pair_str(c, "server", "larder-admin");
    pair_str(c, "version", SRV_VERSION);
    pair_ll(c, "proto", proto);
}

typedef struct verb {
    const char *name;
    int min_args; /* the name included */
    void (*fn)(srv_conn *c);
} verb;

static const verb verbs[] = {
    { "ping", 1, verb_ping },       { "help", 1, verb_help },
    { "hello", 1, verb_hello },     { "status", 1, verb_status },
    { "workers", 1, verb_workers }, { "reload", 1, verb_reload },
    { "backup", 2, verb_backup },   { "shutdown", 1, verb_shutdown },
    { "cache", 2, verb_cache },     { "loglevel", 1, verb_loglevel },
    { "config", 2, verb_config },
};

static void run(srv_conn *c)
{
    for (size_t i = 0; i < sizeof verbs / sizeof verbs[0]; i++)
        if (srv_util_streq(c->argv[0].ptr, c->argv[0].len, verbs[i].name)) {
            if (c->argc < verbs[i].min_args)
                srv_reply_errorf(c, "ERR wrong number of arguments for '%s'",
                                 verbs[i].name);
            else
                verbs[i].fn(c);
            return;
        }
    srv_reply_errorf(c, "ERR unknown admin verb '%.*s' (try HELP)",
                     (int)(c->argv[0].len > 64 ? 64 : c->argv[0].len),
                     c->argv[0].ptr);
}

/* Parse and answer every complete request of a's input. */
static void serve_input(admin_client *a)
{
    srv_conn *c = &a->c;

    for (;;) {
        int rc = srv_resp_parse(&c->parser, c->in.data + c->in_done,
                                c->in.len - c->in_done);
        if (rc == SRV_PARSE_MORE)
            break;
        if (rc != SRV_PARSE_DONE) {
            srv_reply_errorf(c, "ERR %s",
                             c->parser.error ? c->parser.error : "no memory");
            c->flags |= SRV_CONN_CLOSE_AFTER_REPLY;
            break;
        }
        size_t used = c->parser.consumed;
        if (c->parser.argc > 0) {
            c->argc = c->parser.argc;
            c->argv = c->parser.argv;
            run(c);
        }
        srv_resp_parser_reset(&c->parser);
        c->in_done += used;
    }
    srv_buf_consume(&c->in, c->in_done);
    c->in_done = 0;
}

/* Write what is pending; 0, or -1 when a is to be closed. */
static int flush(admin_client *a)
{
    srv_conn *c = &a->c;

    while (c->out_sent < c->out.len) {
        ssize_t n = write(c->fd, c->out.data + c->out_sent,
                          c->out.len - c->out_sent);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return errno == EAGAIN ? 0 : -1;
        }
        c->out_sent += (size_t)n;
    }
    c->out.len = c->out_sent = 0;
    return (c->flags & SRV_CONN_CLOSE_AFTER_REPLY) ? -1 : 0;
}

static void on_client(admin_client *a, short revents)
{
    srv_conn *c = &a->c;

    if (revents & (POLLIN | POLLHUP | POLLERR)) {
        if (srv_buf_reserve(&c->in, ADMIN_READ_CHUNK)) {
            client_close(a);
            return;
        }
        ssize_t n = read(c->fd, c->in.data + c->in.len, c->in.cap - c->in.len);
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
            client_close(a);
            return;
        }
        if (n > 0) {
            c->in.len += (size_t)n;
            if (c->in.len > ADMIN_REQUEST_MAX) {
                client_close(a);
                return;
            }
            serve_input(a);
        }
    }
    if (flush(a))
        client_close(a);
}

void srv_admin_serve(const struct pollfd *fds, int n)
{
    for (int i = 0; i < n; i++) {
        if (!fds[i].revents)
            continue;
        if (fds[i].fd == admin.fd) {
            accept_clients();
            continue;
        }
        for (int k = 0; k < SRV_ADMIN_CLIENTS_MAX; k++)
            if (admin.client[k].used && admin.client[k].c.fd == fds[i].fd) {
                on_client(&admin.client[k], fds[i].revents);
                break;
            }
    }
}

void srv_admin_describe_exit(int status, char *out, size_t size)
{
    if (WIFSIGNALED(status))
        snprintf(out, size, "killed by signal %d (%s)%s", WTERMSIG(status),
                 strsignal(WTERMSIG(status)),
                 WCOREDUMP(status) ? ", core dumped" : "");
    else
        snprintf(out, size, "exited with status %d", WEXITSTATUS(status));
}
