/*
 * srv_master.c - the master process (nginx's master cycle is the model).
 *
 * It parses the configuration, opens LMDB once to create or check the
 * environment and closes it again (LMDB must not cross fork), creates the
 * listening sockets and shared regions (the published configuration among
 * them), forks the children and then only supervises: signal handlers set
 * flags and the loop acts on them. Each child has a record (srv_proc: its
 * role, worker index, pid and stats slot) in `children`, in slot order:
 * the workers (a slot for each the pool may grow to, workers-max), then
 * the reaper, the syncer and the broker. A dead child is respawned (with
 * back-off if it keeps dying young) and the cause of each death logged;
 * SIGTERM, SIGINT or the admin socket's SHUTDOWN stop the workers
 * gracefully, then the others, within shutdown-timeout (a worker stuck
 * past it is killed), and exit 0; SIGHUP re-reads the config file and
 * reopens the log. The loop serves the admin socket (srv_admin.h: the pool
 * grows and shrinks there) and applies what CONFIG SET publishes (the log
 * level), so children forked later start from the current settings.
 */
#include "server/srv_master.h"
#include "server/cmd/srv_cmd.h"
#include "server/cmd/srv_script.h"
#include "server/srv_aclconn.h"
#include "server/srv_admin.h"
#include "server/srv_broker.h"
#include "server/srv_cfgops.h"
#include "server/srv_cmdstats.h"
#include "server/srv_config.h"
#include "server/srv_conn.h"
#include "server/srv_daemon.h"
#include "server/srv_heritage.h"
#include "server/srv_latency.h"
#include "server/srv_log.h"
#include "server/srv_rdbtool.h"
#include "server/srv_reaper.h"
#include "server/srv_role.h"
#include "server/srv_services.h"
#include "server/srv_slowlog.h"
#include "server/srv_stats.h"
#include "server/srv_syncer.h"
#include "server/srv_tls.h"
#include "server/srv_util.h"
#include "server/srv_worker.h"
#include "shm/shm_cache.h"
#include "shm/shm_clock.h"
#include "shm/shm_error.h"
#include "storage/st_env.h"
#include "storage/st_err.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#define LOOP_TICK_MS 100
#define RESPAWN_MIN_MS 100
#define RESPAWN_MAX_MS 5000
#define YOUNG_DEATH_MS 1000
/* At shutdown the duties (the syncer's last flush) get at least this
 * long after the workers, and the workers at most this much of
 * shutdown-timeout less. */
#define DUTY_STOP_MS 1000
#define NS_PER_MS 1000000
#define MS_PER_S 1000

static volatile sig_atomic_t got_term, got_chld, got_hup;
static int shutdown_now; /* the admin socket's SHUTDOWN NOW */

typedef struct child {
    srv_proc proc;      /* role, index, pid (0: not running), slot */
    int64_t started_ms; /* monotonic */
    int64_t started_wall_ms;
    int64_t respawn_at_ms; /* monotonic; when to fork again */
    int64_t backoff_ms;
    int64_t respawns;
    int retiring;               /* WORKERS removed it: told to stop */
    int64_t retire_deadline_ms; /* monotonic; then SIGKILL */
    char last_exit[SRV_ADMIN_CAUSE_MAX];
    int64_t last_exit_ms; /* wall clock */
} child;

static child *children; /* by stats slot: workers, then the duties */
static int nchildren;
static int target_workers; /* the pool's size now asked for */

/* What the command line said, for a reload (file, then these). */
static int saved_argc;
static char **saved_argv;

static void on_signal(int sig)
{
    if (sig == SIGCHLD)
        got_chld = 1;
    else if (sig == SIGHUP)
        got_hup = 1;
    else
        got_term = 1;
}

static void usage(FILE *out)
{
    fprintf(
        out,
        "Usage: larder-server [/path/to/larder.conf] [--directive value ...]\n"
        "       larder-server [config] [--directive value ...] --import-rdb "
        "FILE\n"
        "       larder-server [config] [--directive value ...] --export-rdb "
        "FILE\n"
        "       larder-server -v | --version\n"
        "       larder-server -h | --help\n\n"
        "Examples:\n"
        "       larder-server --port 7777 --dir /var/lib/larder\n"
        "       larder-server /etc/larder/larder.conf --loglevel verbose\n");
}

static void die(const char *fmt, const char *arg)
{
    fprintf(stderr, "larder-server: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\n");
    exit(1);
}

/* Read the configuration the command line names into *cfg: defaults,
 * the file, then the --directive overrides. 0, or -1 with err. */
static int parse_config(srv_config *cfg, int argc, char **argv, char *err,
                        size_t errlen)
{
    int first = 1;

    srv_config_defaults(cfg);
    if (argc > 1 && strncmp(argv[1], "--", 2) != 0) {
        if (srv_config_load_file(cfg, argv[1], err, errlen))
            return -1;
        first = 2;
    }
    return srv_config_load_args(cfg, argc - first, argv + first, err, errlen);
}

/* The master's own copy of the configuration; children inherit it and
 * srv_config_share publishes it for CONFIG SET (srv_config.h). */
static srv_config *load_config(int argc, char **argv)
{
    static srv_config master_cfg;
    char err[SRV_CONFIG_ERR_SIZE];

    if (parse_config(&master_cfg, argc, argv, err, sizeof err))
        die("%s", err);
    saved_argc = argc;
    saved_argv = argv;
    return &master_cfg;
}

/* Parse one bind address into ss; "*" is any IPv4 address. */
static int parse_addr(const char *addr, int port, struct sockaddr_storage *ss,
                      socklen_t *len)
{
    struct sockaddr_in *a4 = (struct sockaddr_in *)ss;
    struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)ss;

    memset(ss, 0, sizeof *ss);
    if (strcmp(addr, "*") == 0)
        addr = "0.0.0.0";
    if (inet_pton(AF_INET, addr, &a4->sin_addr) == 1) {
        a4->sin_family = AF_INET;
        a4->sin_port = htons((uint16_t)port);
        *len = sizeof *a4;
        return 0;
    }
    if (strcmp(addr, "::*") == 0)
        addr = "::";
    if (inet_pton(AF_INET6, addr, &a6->sin6_addr) == 1) {
        a6->sin6_family = AF_INET6;
        a6->sin6_port = htons((uint16_t)port);
        *len = sizeof *a6;
        return 0;
    }
    return -1;
}

static int tcp_socket(const struct sockaddr_storage *ss, socklen_t len,
                      int reuseport)
{
    int one = 1;
    int fd = socket(ss->ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
                    0);

    if (fd < 0)
        return -1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (ss->ss_family == AF_INET6)
        setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
    if (reuseport)
        setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one);
    if (bind(fd, (const struct sockaddr *)ss, len) ||
        listen(fd, (int)srv_her.cfg->tcp_backlog)) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    return fd;
}

/*
 * The bind addresses of one port (port, tls-port), parsed once: a worker
 * the pool grows by gets its sockets from them. `fds` and `count` are the
 * heritage's workers_max * count table of that port and its addresses
 * per worker.
 */
typedef struct listen_set {
    struct sockaddr_storage ss[SRV_MAX_BINDS];
    socklen_t len[SRV_MAX_BINDS];
    int **fds;
    int *count;
} listen_set;

static listen_set tcp_set = { .fds = &srv_her.tcp_fds, .count = &srv_her.ntcp };
static listen_set tls_set = { .fds = &srv_her.tls_fds, .count = &srv_her.ntls };
static listen_set *const listen_sets[] = { &tcp_set, &tls_set };
#define NLISTEN_SETS (sizeof listen_sets / sizeof listen_sets[0])

/* Close this process's copies of worker w's sockets of set *ls. */
static void close_set_listeners(const listen_set *ls, int w)
{
    for (int i = 0; i < *ls->count; i++) {
        int *fd = &(*ls->fds)[w * *ls->count + i];
        if (*fd >= 0)
            close(*fd);
        *fd = -1;
    }
}

/* Close this process's copies of worker w's sockets (TCP and TLS). */
static void close_worker_listeners(int w)
{
    for (size_t k = 0; k < NLISTEN_SETS; k++)
        close_set_listeners(listen_sets[k], w);
}

/* Worker w's sockets, one per bind address of each port (the master,
 * before it forks w). 0, or -1 with errno (none left open). */
static int open_worker_listeners(int w)
{
    for (size_t k = 0; k < NLISTEN_SETS; k++) {
        const listen_set *ls = listen_sets[k];
        for (int i = 0; i < *ls->count; i++) {
            int *fd = &(*ls->fds)[w * *ls->count + i];
            if (*fd >= 0)
                continue;
            if ((*fd = tcp_socket(&ls->ss[i], ls->len[i], 1)) < 0) {
                int e = errno;
                close_worker_listeners(w);
                errno = e;
                return -1;
            }
        }
    }
    return 0;
}

/*
 * One SO_REUSEPORT group of listeners per bind address of `port`, a
 * socket for each worker: the kernel spreads connections over the workers
 * evenly with no thundering herd. A plain bind first proves nobody else
 * holds the port (a reuseport group would silently share it with another
 * of our uid). Room is made in *ls for workers-max workers; the sockets
 * of the workers at start are opened by open_start_listeners.
 */
static void open_tcp_listeners(long long port, listen_set *ls)
{
    char binds[SRV_PATH_MAX], *save = NULL;
    const char *addrs[SRV_MAX_BINDS];
    int n = 0, max = srv_her.workers_max;

    if (port == 0)
        return; /* as Redis: port 0 = no TCP */
    snprintf(binds, sizeof binds, "%s", srv_her.cfg->bind);
    for (char *tok = strtok_r(binds, " ", &save); tok && n < SRV_MAX_BINDS;
         tok = strtok_r(NULL, " ", &save))
        addrs[n++] = tok;
    for (int i = 0; i < n; i++) {
        struct sockaddr_storage ss;
        socklen_t len;
        int optional = addrs[i][0] == '-';
        const char *addr = addrs[i] + optional;
        if (parse_addr(addr, (int)port, &ss, &len))
            die("bind: '%s' is not an IP address", addr);
        int probe = tcp_socket(&ss, len, 0);
        if (probe < 0) {
            if (optional)
                continue;
            fprintf(stderr, "larder-server: can't listen on %s:%lld: %s\n",
                    addr, port, strerror(errno));
            exit(1);
        }
        close(probe);
        ls->ss[*ls->count] = ss;
        ls->len[*ls->count] = len;
        (*ls->count)++;
    }
    *ls->fds = malloc((size_t)(max * (*ls->count ? *ls->count : 1)) *
                      sizeof(int));
    if (!*ls->fds)
        die("%s", "out of memory");
    for (int i = 0; i < max * *ls->count; i++)
        (*ls->fds)[i] = -1;
}

/* The tls-port listeners and the TLS context, before any fork (issue 16). */
static void open_tls_listeners(void)
{
    char err[SRV_PATH_MAX + SRV_CONFIG_ERR_SIZE];

    if (srv_tls_boot(err, sizeof err)) {
        srv_log(SRV_LOG_WARNING, 0, "%s", err);
        die("Failed to configure TLS: %s", err);
    }
    open_tcp_listeners(srv_her.cfg->tls_port, &tls_set);
    if (srv_her.ntls)
        srv_log(SRV_LOG_NOTICE, 0, "TLS on port %lld", srv_her.cfg->tls_port);
}

/* The sockets of the workers at start, on every port. */
static void open_start_listeners(void)
{
    for (int w = 0; w < srv_her.nworkers; w++)
        if (open_worker_listeners(w)) {
            fprintf(stderr, "larder-server: can't listen on port %lld: %s\n",
                    srv_her.cfg->port, strerror(errno));
            exit(1);
        }
}

static void open_unix_listener(void)
{
    const char *path = srv_her.cfg->unixsocket;
    struct sockaddr_un sa;
    int fd;

    srv_her.unix_fd = -1;
    if (!path[0])
        return;
    if (strlen(path) >= sizeof sa.sun_path)
        die("unixsocket path '%s' is too long", path);
    memset(&sa, 0, sizeof sa);
    sa.sun_family = AF_UNIX;
    memcpy(sa.sun_path, path, strlen(path));
    unlink(path);
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof sa) ||
        listen(fd, (int)srv_her.cfg->tcp_backlog)) {
        fprintf(stderr, "larder-server: can't listen on unix socket %s: %s\n",
                path, strerror(errno));
        exit(1);
    }
    if (srv_her.cfg->unixsocketperm &&
        chmod(path, (mode_t)srv_her.cfg->unixsocketperm)) {
        fprintf(stderr, "larder-server: chmod(%s) failed: %s\n", path,
                strerror(errno));
        exit(1);
    }
    srv_her.unix_fd = fd;
}

/* Create or check the environment, then close it before any fork. */
/* Descriptors the server keeps beside its clients (Redis reserves 32),
 * and per worker (its listeners, eventfds, LMDB files): per worker slot,
 * since WORKERS may grow the pool up to workers-max at run time. */
#define RESERVED_FDS 32
#define RESERVED_FDS_PER_WORKER 4

/*
 * As Redis does for maxclients: raise the open files limit (inherited by
 * every child) to room for maxclients connections plus what the server
 * keeps open, the hard limit too when allowed; when the hard limit says
 * no, take what it allows and lower maxclients to fit, with a warning.
 */
static void adjust_open_files(void)
{
    rlim_t reserved = RESERVED_FDS +
                      RESERVED_FDS_PER_WORKER * (rlim_t)srv_her.workers_max;
    rlim_t want = (rlim_t)srv_her.cfg->maxclients + reserved;
    struct rlimit rl, up;

    if (getrlimit(RLIMIT_NOFILE, &rl)) {
        srv_log(SRV_LOG_WARNING, errno, "getrlimit(RLIMIT_NOFILE) failed");
        return;
    }
    if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur >= want)
        return;
    up.rlim_cur = want;
    up.rlim_max = rl.rlim_max == RLIM_INFINITY || rl.rlim_max >= want
                      ? rl.rlim_max
                      : want;
    if (setrlimit(RLIMIT_NOFILE, &up) == 0)
        return;
    up.rlim_cur = up.rlim_max = rl.rlim_max;
    if (rl.rlim_max == RLIM_INFINITY || setrlimit(RLIMIT_NOFILE, &up))
        up.rlim_cur = rl.rlim_cur;
    if (up.rlim_cur <= reserved) {
        srv_log(SRV_LOG_WARNING, 0,
                "open files limit %llu leaves no room for clients: "
                "maxclients %lld kept (raise 'ulimit -n')",
                (unsigned long long)up.rlim_cur, srv_her.cfg->maxclients);
        return;
    }
    srv_log(SRV_LOG_WARNING, 0,
            "maxclients %lld needs %llu open files but the limit is %llu: "
            "maxclients reduced to %llu (raise 'ulimit -n' for more)",
            srv_her.cfg->maxclients, (unsigned long long)want,
            (unsigned long long)up.rlim_cur,
            (unsigned long long)(up.rlim_cur - reserved));
    srv_her.cfg->maxclients = (long long)(up.rlim_cur - reserved);
}

static void check_storage(void)
{
    int rc = srv_heritage_boot();

    if (rc) {
        fprintf(stderr, "larder-server: can't open the database in '%s': %s\n",
                srv_her.cfg->dir, st_strerror(rc));
        exit(1);
    }
    st_env *env;
    if ((rc = srv_heritage_env_open(0, &env))) {
        fprintf(stderr, "larder-server: can't open the database in '%s': %s\n",
                srv_her.cfg->dir, st_strerror(rc));
        exit(1);
    }
    if ((rc = srv_script_master_init(env, (unsigned)srv_her.workers_max))) {
        fprintf(stderr, "larder-server: can't set scripting up: %s\n",
                rc > 0 ? strerror(rc) : st_strerror(rc));
        exit(1);
    }
    st_env_close(&env);
}

#define BYTES_PER_MB (1024 * 1024)

/* The shared cache, mapped before any fork so every child inherits it. */
static void create_cache(void)
{
    shm_cache_opts_t o = {
        .budget_bytes = (size_t)srv_her.cfg->cache_mb * BYTES_PER_MB,
        .nstripes = (unsigned)srv_her.cfg->cache_stripes,
        .policy = SHM_POLICY_DEFAULT,
    };
    int rc;

    if (o.budget_bytes == 0)
        return;
    if ((rc = shm_cache_create(&o, &srv_her.cache)))
        die("can't create the cache (cache-mb, cache-stripes): %s",
            shm_strerror(rc));
}

/* The users (aclfile or requirepass) in their shared region, before any
 * fork (issue 16). */
static void load_acl(void)
{
    char err[SRV_PATH_MAX + SRV_CONFIG_ERR_SIZE];

    srv_cmd_init();
    if (srv_aclconn_boot(err, sizeof err)) {
        srv_log(SRV_LOG_WARNING, 0, "%s", err);
        die("%s", err);
    }
}

/* The keys' access clock, mapped before any fork like the cache. */
static void create_clock(void)
{
    int rc = shm_clock_create(SHM_CLOCK_DEFAULT_SLOTS,
                              (uint32_t)(srv_util_mstime() / MS_PER_S),
                              &srv_her.clock);

    if (rc)
        die("can't create the access clock: %s", shm_strerror(rc));
}

/* One record per child, indexed by its stats slot. */
static void plan_children(void)
{
    int max = srv_her.workers_max;

    nchildren = srv_role_nslots(max);
    if (!(children = calloc((size_t)nchildren, sizeof *children)))
        die("%s", "out of memory");
    for (int r = 0; r < SRV_NROLES; r++) {
        int n = r == SRV_ROLE_WORKER ? max : 1;
        for (int i = 0; i < n && r != SRV_ROLE_MASTER; i++) {
            srv_proc p;
            srv_proc_init(&p, (enum srv_role)r, i, max);
            children[p.slot].proc = p;
        }
    }
    target_workers = srv_her.nworkers;
}

static child *find_child(enum srv_role role)
{
    for (int i = 0; i < nchildren; i++)
        if (children[i].proc.role == role)
            return &children[i];
    return NULL;
}

/* The syncer slot is empty when the syncer runs as a reaper thread; the
 * worker slots past the pool's size are empty. */
static int child_wanted(const child *c)
{
    if (c->proc.role == SRV_ROLE_WORKER)
        return c->proc.index < target_workers && !c->retiring;
    return !(c->proc.role == SRV_ROLE_SYNCER && srv_her.cfg->syncer_thread);
}

static int child_main(const srv_proc *p)
{
    switch (p->role) {
    case SRV_ROLE_WORKER: return srv_worker_main(p->index, srv_services);
    case SRV_ROLE_REAPER: return srv_reaper_main();
    case SRV_ROLE_SYNCER: return srv_syncer_main();
    case SRV_ROLE_BROKER: return srv_broker_main();
    default: return 1;
    }
}

/*
 * In a child: close what is not its to hold. A listening socket stays
 * open while any process has it, and the kernel keeps queueing
 * connections on it: so each worker keeps only its own TCP and TLS
 * sockets (and the shared Unix one), every other child none, and the
 * admin socket is the master's alone. Then a worker the pool drops takes
 * its sockets with it.
 */
static void drop_inherited(const srv_proc *p)
{
    for (int w = 0; w < srv_her.workers_max; w++)
        if (!(p->role == SRV_ROLE_WORKER && w == p->index))
            close_worker_listeners(w);
    if (p->role != SRV_ROLE_WORKER && srv_her.unix_fd >= 0) {
        close(srv_her.unix_fd);
        srv_her.unix_fd = -1;
    }
    srv_admin_forget();
    if (p->role == SRV_ROLE_WORKER)
        srv_cmdstats_use((unsigned)p->index);
}

/* In the child: become p (its record, log name, the shared configuration
 * checked), then run its role. Never returns. */
static void become_child(const srv_proc *p)
{
    struct sigaction sa;
    sigset_t none;
    int rc;

    memset(&sa, 0, sizeof sa);
    sa.sa_handler = SIG_DFL;
    sigaction(SIGCHLD, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    srv_self = *p;
    srv_self.pid = getpid();
    srv_log_set_role(srv_role_name(p->role), p->index);
    drop_inherited(p);
    if ((rc = srv_config_attach())) {
        srv_log(SRV_LOG_WARNING, 0, "the shared configuration is unusable: %s",
                shm_strerror(rc));
        _exit(1);
    }
    if ((rc = srv_aclconn_attach())) {
        srv_log(SRV_LOG_WARNING, 0, "the shared ACL region is unusable: %s",
                shm_strerror(rc));
        _exit(1);
    }
    _exit(child_main(p));
}

static void spawn_child(child *c)
{
    char name[SRV_CONN_NAME_MAX];
    pid_t pid;

    srv_proc_name(&c->proc, name, sizeof name);
    if (c->proc.role == SRV_ROLE_WORKER && srv_her.ntcp + srv_her.ntls &&
        open_worker_listeners(c->proc.index)) {
        srv_log(SRV_LOG_WARNING, errno, "can't listen for %s", name);
        c->respawn_at_ms = srv_util_monotonic_ms() + RESPAWN_MAX_MS;
        return;
    }
    srv_config_refresh(); /* the child starts from our copy */
    /*
     * Hand the heap's free top back to the kernel first. A child's large
     * calloc (LMDB's write-transaction lists, 2 MB) carved from memory our
     * heap used before is cleared page by page, so every child wrote (and
     * kept) ~2 MB of it; from freshly grown heap it is zero already and
     * costs only the pages used. Measured on an idle server: 3.1 MB of
     * anonymous memory per process before, 1.0-1.2 MB after.
     */
    malloc_trim(0);
    if ((pid = fork()) < 0) {
        srv_log(SRV_LOG_WARNING, errno, "fork() of %s failed", name);
        c->respawn_at_ms = srv_util_monotonic_ms() + RESPAWN_MAX_MS;
        return;
    }
    if (pid == 0)
        become_child(&c->proc);
    c->proc.pid = pid;
    c->started_ms = srv_util_monotonic_ms();
    c->started_wall_ms = srv_util_mstime();
    c->respawn_at_ms = 0;
    if (c->last_exit_ms)
        c->respawns++;
    srv_config_track(&c->proc);
    srv_log(SRV_LOG_NOTICE, 0, "%s[%d] started", name, (int)pid);
}

static void reap_children(void)
{
    int status;
    pid_t pid;

    while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
        if (srv_admin_child_exited(pid, status))
            continue; /* the backup */
        for (int i = 0; i < nchildren; i++) {
            child *w = &children[i];
            char name[SRV_CONN_NAME_MAX];
            if (w->proc.pid != pid)
                continue;
            int64_t now = srv_util_monotonic_ms();
            w->proc.pid = 0;
            srv_config_track(&w->proc);
            srv_admin_describe_exit(status, w->last_exit, sizeof w->last_exit);
            w->last_exit_ms = srv_util_mstime();
            srv_stats_slot *slot = srv_stats_slot_of(srv_her.stats,
                                                     w->proc.role,
                                                     w->proc.index);
            /* Its connections are gone: take them off the client count. */
            atomic_fetch_sub(&srv_her.stats->clients,
                             atomic_exchange(&slot->connected, 0));
            /* ... and its blocked clients off the count of key waiters. */
            atomic_fetch_sub(&srv_her.stats->key_waiters,
                             atomic_exchange(&slot->key_waiters, 0));
            if (got_term)
                break;
            srv_proc_name(&w->proc, name, sizeof name);
            if (w->retiring) {
                w->retiring = 0;
                srv_log(SRV_LOG_NOTICE, 0, "%s[%d] left the pool: %s", name,
                        (int)pid, w->last_exit);
                break;
            }
            srv_log(SRV_LOG_WARNING, 0, "%s[%d] %s", name, (int)pid,
                    w->last_exit);
            if (now - w->started_ms < YOUNG_DEATH_MS)
                w->backoff_ms = w->backoff_ms ? w->backoff_ms * 2
                                              : RESPAWN_MIN_MS;
            else
                w->backoff_ms = 0;
            if (w->backoff_ms > RESPAWN_MAX_MS)
                w->backoff_ms = RESPAWN_MAX_MS;
            w->respawn_at_ms = now + w->backoff_ms;
            if (w->backoff_ms && child_wanted(w))
                srv_log(SRV_LOG_WARNING, 0,
                        "%s died %lld ms after it started: respawning in "
                        "%lld ms",
                        name, (long long)(now - w->started_ms),
                        (long long)w->backoff_ms);
            SRV_STAT_ADD(slot, respawns, 1);
            /* Its reader slot may pin a snapshot: have it cleared now. */
            child *reaper = find_child(SRV_ROLE_REAPER);
            if (w != reaper && reaper->proc.pid)
                kill(reaper->proc.pid, SIGUSR1);
        }
    }
}

/* The children to stop together: the workers, or everyone else. */
static int in_group(const child *c, int workers)
{
    return (c->proc.role == SRV_ROLE_WORKER) == workers;
}

static int children_alive(int workers)
{
    int n = 0;

    for (int i = 0; i < nchildren; i++)
        n += in_group(&children[i], workers) && children[i].proc.pid != 0;
    return n;
}

/* Stop the workers, or the other children: ask, wait until deadline_ms
 * (monotonic), then force. */
static void stop_group(int workers, const sigset_t *waitmask,
                       int64_t deadline_ms)
{
    for (int i = 0; i < nchildren; i++)
        if (in_group(&children[i], workers) && children[i].proc.pid)
            kill(children[i].proc.pid, SIGTERM);
    while (children_alive(workers) && srv_util_monotonic_ms() < deadline_ms) {
        int64_t left = deadline_ms - srv_util_monotonic_ms();
        struct timespec ts = { 0, (left < LOOP_TICK_MS ? left : LOOP_TICK_MS) *
                                      NS_PER_MS };
        ppoll(NULL, 0, &ts, waitmask);
        got_chld = 0;
        reap_children();
    }
    for (int i = 0; i < nchildren; i++) {
        child *w = &children[i];
        if (in_group(w, workers) && w->proc.pid) {
            char name[SRV_CONN_NAME_MAX];
            srv_proc_name(&w->proc, name, sizeof name);
            srv_log(SRV_LOG_WARNING, 0,
                    "%s[%d] did not stop within shutdown-timeout: SIGKILL",
                    name, (int)w->proc.pid);
            kill(w->proc.pid, SIGKILL);
            waitpid(w->proc.pid, NULL, 0);
            w->proc.pid = 0;
            srv_config_track(&w->proc);
        }
    }
}

/*
 * Workers first (their held replies need the syncer), then the duties,
 * all within shutdown-timeout (NOW: the workers at once); the duties get
 * at least DUTY_STOP_MS for the syncer's last flush. A backup running is
 * stopped too.
 */
static void stop_children(const sigset_t *waitmask)
{
    int64_t now = srv_util_monotonic_ms();
    int64_t timeout = shutdown_now ? 0
                                   : srv_her.cfg->shutdown_timeout * MS_PER_S;
    int64_t reserve = timeout / 4 < DUTY_STOP_MS ? timeout / 4 : DUTY_STOP_MS;
    pid_t backup = srv_admin_backup_pid();

    if (backup) {
        kill(backup, SIGTERM);
        waitpid(backup, NULL, 0);
        srv_admin_child_exited(backup, 0);
    }
    stop_group(1, waitmask, now + timeout - reserve);
    now = srv_util_monotonic_ms();
    stop_group(0, waitmask,
               now + (reserve > DUTY_STOP_MS ? reserve : DUTY_STOP_MS));
}

/* ---- the pool, the reload and the shutdown, for the admin socket ---- */

static int admin_procs(srv_admin_proc *out, int max)
{
    int n = 0;

    if (n < max) {
        memset(&out[n], 0, sizeof out[n]);
        out[n].proc = srv_self;
        out[n].started_ms = srv_her.start_ms;
        n++;
    }
    for (int i = 0; i < nchildren && n < max; i++) {
        child *c = &children[i];
        int wanted = child_wanted(c);
        if (c->proc.role == SRV_ROLE_WORKER && !wanted && !c->proc.pid &&
            !c->last_exit_ms)
            continue; /* a slot never used */
        srv_admin_proc *p = &out[n++];
        p->proc = c->proc;
        p->started_ms = c->proc.pid ? c->started_wall_ms : 0;
        p->respawns = c->respawns;
        snprintf(p->last_exit, sizeof p->last_exit, "%s", c->last_exit);
        p->last_exit_ms = c->last_exit_ms;
        p->state = c->retiring   ? SRV_ADMIN_STOPPING
                   : c->proc.pid ? SRV_ADMIN_RUNNING
                   : wanted      ? SRV_ADMIN_RESPAWNING
                                 : SRV_ADMIN_STOPPED;
    }
    return n;
}

static int admin_workers(int *max)
{
    *max = srv_her.workers_max;
    return target_workers;
}

/* Grow or shrink the pool to n. A worker removed stops accepting,
 * answers its clients and closes them (its SIGTERM), killed if it takes
 * longer than shutdown-timeout. */
static int admin_set_workers(int n, char *err, size_t errlen)
{
    int was = target_workers;

    if (n < 1 || n > srv_her.workers_max) {
        snprintf(err, errlen, "the pool has room for 1 to %d workers",
                 srv_her.workers_max);
        return -1;
    }
    target_workers = n;
    atomic_store(&srv_her.stats->workers, n);
    for (int i = n; i < was; i++) {
        child *c =
            &children[srv_role_slot(SRV_ROLE_WORKER, i, srv_her.workers_max)];
        close_worker_listeners(i);
        if (!c->proc.pid)
            continue;
        c->retiring = 1;
        c->retire_deadline_ms = srv_util_monotonic_ms() +
                                srv_her.cfg->shutdown_timeout * MS_PER_S;
        kill(c->proc.pid, SIGTERM);
    }
    for (int i = was; i < n; i++) {
        child *c =
            &children[srv_role_slot(SRV_ROLE_WORKER, i, srv_her.workers_max)];
        c->backoff_ms = 0;
        c->respawn_at_ms = 0;
        if (!c->proc.pid && !c->retiring)
            spawn_child(c);
    }
    srv_log(SRV_LOG_NOTICE, 0, "workers: %d -> %d", was, n);
    return 0;
}

/* A removed worker still there after shutdown-timeout is killed. */
static void retire_overdue(void)
{
    int64_t now = srv_util_monotonic_ms();

    for (int i = 0; i < nchildren; i++) {
        child *c = &children[i];
        if (c->retiring && c->proc.pid && now >= c->retire_deadline_ms) {
            srv_log(SRV_LOG_WARNING, 0,
                    "worker#%d[%d] did not stop within shutdown-timeout: "
                    "SIGKILL",
                    c->proc.index, (int)c->proc.pid);
            kill(c->proc.pid, SIGKILL);
            c->retire_deadline_ms = INT64_MAX;
        }
    }
}

static int admin_reload(char *applied, char *restart, size_t size, char *err,
                        size_t errlen)
{
    static srv_config fresh;
    char why[SRV_CONFIG_ERR_SIZE];
    int rc;

    if (!srv_her.cfg->config_file[0]) {
        snprintf(err, errlen,
                 "ERR The server is running without a config "
                 "file");
        return -1;
    }
    srv_daemon_notify(srv_her.cfg, "RELOADING=1\nSTATUS=Reloading the "
                                   "configuration");
    rc = parse_config(&fresh, saved_argc, saved_argv, why, sizeof why);
    if (rc == 0)
        rc = srv_cfgops_reload(&fresh, applied, restart, size, err, errlen);
    else
        snprintf(err, errlen, "ERR reload: %s", why);
    if ((errno = srv_log_open(srv_her.cfg->logfile)))
        srv_log(SRV_LOG_WARNING, errno, "reopening the log failed");
    if (rc == 0)
        srv_log(SRV_LOG_NOTICE, 0,
                "configuration reloaded from %s; applied: %s; needs a "
                "restart: %s",
                srv_her.cfg->config_file, applied[0] ? applied : "(nothing)",
                restart[0] ? restart : "(nothing)");
    else
        srv_log(SRV_LOG_WARNING, 0, "reload failed: %s", err);
    srv_daemon_notify(srv_her.cfg, "READY=1\nSTATUS=Ready to accept "
                                   "connections");
    return rc;
}

static void admin_shutdown(int now)
{
    srv_log(SRV_LOG_NOTICE, 0, "SHUTDOWN%s requested on the admin socket",
            now ? " NOW" : "");
    shutdown_now = now;
    got_term = 1;
}

static const srv_admin_ops admin_ops = {
    admin_procs, admin_workers, admin_set_workers, admin_reload, admin_shutdown,
};

/* The admin socket's path: admin-socket, relative to dir unless absolute;
 * "" turns it off. */
static void open_admin(void)
{
    char path[SRV_PATH_MAX * 2], err[SRV_CONFIG_ERR_SIZE];
    const char *a = srv_her.cfg->admin_socket;

    if (!a[0])
        return;
    snprintf(path, sizeof path, "%s%s%s", a[0] == '/' ? "" : srv_her.cfg->dir,
             a[0] == '/' ? "" : "/", a);
    int rc = srv_admin_open(path, &admin_ops, err, sizeof err);
    if (rc == ENAMETOOLONG)
        /* A deep dir: serve without it rather than not at all. */
        srv_log(SRV_LOG_WARNING, 0,
                "%s; no admin socket (set admin-socket "
                "to a shorter absolute path)",
                err);
    else if (rc)
        die("%s", err);
}

/* The monitoring regions (srv_cmdstats.h, srv_slowlog.h, srv_latency.h),
 * before any fork. */
static void create_monitoring(void)
{
    int ncmds;

    srv_cmd_table(&ncmds);
    if (!srv_cmdstats_create((unsigned)srv_her.workers_max, (unsigned)ncmds) ||
        !srv_slowlog_create() || !srv_latency_create())
        die("can't map the statistics regions: %s", strerror(errno));
}

/* Eventfds between workers and the syncer, made before any fork. */
static void create_eventfds(void)
{
    srv_her.sync_efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    srv_her.worker_efd = calloc((size_t)srv_her.workers_max, sizeof(int));
    if (srv_her.sync_efd < 0 || !srv_her.worker_efd)
        die("eventfd() failed: %s", strerror(errno));
    for (int i = 0; i < srv_her.workers_max; i++)
        if ((srv_her.worker_efd[i] = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) <
            0)
            die("eventfd() failed: %s", strerror(errno));
}

static void install_signals(sigset_t *waitmask)
{
    struct sigaction sa;
    sigset_t block;

    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGCHLD, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    signal(SIGUSR1, SIG_IGN); /* inherited: only the reaper handles it */
    sigemptyset(&block);
    sigaddset(&block, SIGCHLD);
    sigaddset(&block, SIGTERM);
    sigaddset(&block, SIGINT);
    sigaddset(&block, SIGHUP);
    sigprocmask(SIG_BLOCK, &block, waitmask);
    sigdelset(waitmask, SIGCHLD);
    sigdelset(waitmask, SIGTERM);
    sigdelset(waitmask, SIGINT);
    sigdelset(waitmask, SIGHUP);
}

/* syslog-enabled: every process's lines go to syslog too. */
static void open_syslog(void)
{
    if (srv_her.cfg->syslog_enabled)
        srv_log_syslog(srv_her.cfg->syslog_ident,
                       (int)srv_her.cfg->syslog_facility);
}

/* The master's loop until a stop is asked for: signals, the admin
 * socket, children to respawn or to kill. */
static void supervise(const sigset_t *waitmask)
{
    char applied[SRV_CONFIG_ERR_SIZE * 4], restart[SRV_CONFIG_ERR_SIZE * 4];
    char err[SRV_CONFIG_ERR_SIZE];

    while (!got_term) {
        struct pollfd fds[SRV_ADMIN_POLLFDS];
        struct timespec ts = { 0, LOOP_TICK_MS * NS_PER_MS };
        int n = srv_admin_pollfds(fds);
        if (ppoll(fds, (nfds_t)n, &ts, waitmask) > 0)
            srv_admin_serve(fds, n);
        srv_config_refresh();
        if (got_chld) {
            got_chld = 0;
            reap_children();
        }
        if (got_hup) {
            got_hup = 0;
            if (srv_her.cfg->config_file[0])
                admin_reload(applied, restart, sizeof applied, err, sizeof err);
            else if ((errno = srv_log_open(srv_her.cfg->logfile)))
                srv_log(SRV_LOG_WARNING, errno, "reopening the log failed");
            else
                srv_log(SRV_LOG_NOTICE, 0, "SIGHUP: log reopened");
        }
        retire_overdue();
        int64_t now = srv_util_monotonic_ms();
        for (int i = 0; i < nchildren && !got_term; i++)
            if (!children[i].proc.pid && now >= children[i].respawn_at_ms &&
                child_wanted(&children[i]))
                spawn_child(&children[i]);
    }
}

int srv_master_main(int argc, char **argv)
{
    sigset_t waitmask;
    char status[SRV_CONFIG_ERR_SIZE];
    int rc;

    if (argc == 2 &&
        (!strcmp(argv[1], "-v") || !strcmp(argv[1], "--version"))) {
        printf("larder-server v=%s redis_version=%s\n", SRV_VERSION,
               SRV_REDIS_VERSION);
        return 0;
    }
    if (argc == 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
        usage(stdout);
        return 0;
    }
    const char *rdb_file;
    int rdb_mode = srv_rdbtool_take_args(&argc, argv, &rdb_file);
    if (rdb_mode < 0)
        die("%s", rdb_file);
    srv_her.cfg = load_config(argc, argv);
    if (rdb_mode != SRV_RDBTOOL_NONE)
        return srv_rdbtool_run(rdb_mode, rdb_file);
    if (srv_her.cfg->daemonize && srv_daemon_detach())
        die("can't daemonize: %s", strerror(errno));
    srv_her.master_pid = getpid();
    srv_proc_init(&srv_self, SRV_ROLE_MASTER, -1, 0);
    srv_self.pid = srv_her.master_pid;
    srv_her.start_ms = srv_util_mstime();
    srv_her.nworkers = srv_config_workers(srv_her.cfg);
    srv_her.workers_max = srv_config_workers_max(srv_her.cfg);
    if (!realpath("/proc/self/exe", srv_her.executable))
        snprintf(srv_her.executable, sizeof srv_her.executable, "%s", argv[0]);
    srv_log_set_role(srv_role_name(SRV_ROLE_MASTER), -1);
    srv_log_set_level((int)srv_her.cfg->loglevel);
    if ((rc = srv_log_open(srv_her.cfg->logfile)))
        die("can't open logfile: %s", strerror(rc));
    open_syslog();
    adjust_open_files();
    check_storage();
    open_tcp_listeners(srv_her.cfg->port, &tcp_set);
    open_tls_listeners();
    open_start_listeners();
    open_unix_listener();
    if (srv_her.ntcp == 0 && srv_her.ntls == 0 && srv_her.unix_fd < 0)
        die("%s", "nothing to listen on: set port or unixsocket");
    open_admin();
    create_cache();
    load_acl();
    create_clock();
    plan_children();
    if (!(srv_her.stats = srv_stats_create((unsigned)srv_her.workers_max)))
        die("mmap() of the stats region failed: %s", strerror(errno));
    atomic_store(&srv_her.stats->workers, srv_her.nworkers);
    create_monitoring();
    if ((rc = srv_config_share((unsigned)nchildren)))
        die("can't create the shared configuration: %s",
            rc > 0 ? strerror(rc) : shm_strerror(rc));
    create_eventfds();
    if ((rc = srv_broker_listen()))
        die("can't create the pub/sub broker socket: %s", strerror(rc));
    install_signals(&waitmask);
    srv_daemon_quiet();
    for (int i = 0; i < nchildren; i++)
        if (child_wanted(&children[i]))
            spawn_child(&children[i]);
    srv_daemon_pidfile_write(srv_her.cfg);
    srv_log(SRV_LOG_NOTICE, 0,
            "larder %s (Redis %s protocol) ready: port %lld%s%s, %d workers "
            "(at most %d), data in %s",
            SRV_VERSION, SRV_REDIS_VERSION, srv_her.cfg->port,
            srv_her.unix_fd >= 0 ? ", unix socket " : "",
            srv_her.unix_fd >= 0 ? srv_her.cfg->unixsocket : "",
            srv_her.nworkers, srv_her.workers_max, srv_her.cfg->dir);
    srv_log(SRV_LOG_NOTICE, 0, "Ready to accept connections");
    snprintf(status, sizeof status, "Ready to accept connections (%d workers)",
             srv_her.nworkers);
    srv_daemon_ready(srv_her.cfg, status);
    supervise(&waitmask);
    srv_daemon_notify(srv_her.cfg, "STOPPING=1\nSTATUS=Shutting down");
    srv_log(SRV_LOG_NOTICE, 0, "shutting down: stopping %d workers%s",
            children_alive(1), shutdown_now ? " now" : "");
    stop_children(&waitmask);
    srv_daemon_pidfile_remove(srv_her.cfg);
    if (srv_her.unix_fd >= 0)
        unlink(srv_her.cfg->unixsocket);
    srv_admin_close();
    srv_log(SRV_LOG_NOTICE, 0, "larder is now ready to exit, bye bye...");
    return 0;
}
