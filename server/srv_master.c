/*
 * srv_master.c - the master process (nginx's master cycle is the model).
 *
 * It parses the configuration, opens LMDB once to create or check the
 * environment and closes it again (LMDB must not cross fork), creates the
 * listening sockets and shared regions (the published configuration among
 * them), forks the children and then only supervises: signal handlers set
 * flags and the loop acts on them. Each child has a record (srv_proc: its
 * role, worker index, pid and stats slot) in `children`, in slot order:
 * the workers, then the reaper, the syncer and the broker. A dead child is
 * respawned (with back-off if it keeps dying young); SIGTERM or SIGINT
 * stops the workers gracefully, then the others, and exits 0; SIGHUP
 * reopens the log. The loop also applies what CONFIG SET publishes (the
 * log level), so children forked later start from the current settings.
 */
#include "server/srv_master.h"
#include "server/cmd/srv_cmd.h"
#include "server/cmd/srv_script.h"
#include "server/srv_aclconn.h"
#include "server/srv_broker.h"
#include "server/srv_config.h"
#include "server/srv_conn.h"
#include "server/srv_heritage.h"
#include "server/srv_log.h"
#include "server/srv_reaper.h"
#include "server/srv_role.h"
#include "server/srv_services.h"
#include "server/srv_stats.h"
#include "server/srv_syncer.h"
#include "server/srv_tls.h"
#include "server/srv_util.h"
#include "server/srv_worker.h"
#include "shm/shm_cache.h"
#include "shm/shm_error.h"
#include "storage/st_env.h"
#include "storage/st_err.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#define LOOP_TICK_MS 100
#define RESPAWN_MIN_MS 100
#define RESPAWN_MAX_MS 5000
#define YOUNG_DEATH_MS 1000
#define STOP_WAIT_MS 15000
#define NS_PER_MS 1000000
#define MS_PER_S 1000

static volatile sig_atomic_t got_term, got_chld, got_hup;

typedef struct child {
    srv_proc proc;         /* role, index, pid (0: not running), slot */
    int64_t started_ms;    /* monotonic */
    int64_t respawn_at_ms; /* monotonic; when to fork again */
    int64_t backoff_ms;
} child;

static child *children; /* by stats slot: workers, then the duties */
static int nchildren;

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

/* The master's own copy of the configuration; children inherit it and
 * srv_config_share publishes it for CONFIG SET (srv_config.h). */
static srv_config *load_config(int argc, char **argv)
{
    static srv_config master_cfg;
    char err[SRV_CONFIG_ERR_SIZE];
    srv_config *cfg = &master_cfg;
    int first = 1;

    srv_config_defaults(cfg);
    if (argc > 1 && strncmp(argv[1], "--", 2) != 0) {
        if (srv_config_load_file(cfg, argv[1], err, sizeof err))
            die("%s", err);
        first = 2;
    }
    if (srv_config_load_args(cfg, argc - first, argv + first, err, sizeof err))
        die("%s", err);
    return cfg;
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
 * One SO_REUSEPORT group of listeners per bind address, a socket for each
 * worker: the kernel spreads connections over the workers evenly with no
 * thundering herd. A plain bind first proves nobody else holds the port
 * (a reuseport group would silently share it with another of our uid).
 */
static void open_tcp_listeners(long long port, int **fds, int *count)
{
    char binds[SRV_PATH_MAX], *save = NULL;
    const char *addrs[SRV_MAX_BINDS];
    int n = 0;

    if (port == 0)
        return; /* as Redis: port 0 = no TCP */
    snprintf(binds, sizeof binds, "%s", srv_her.cfg->bind);
    for (char *tok = strtok_r(binds, " ", &save); tok && n < SRV_MAX_BINDS;
         tok = strtok_r(NULL, " ", &save))
        addrs[n++] = tok;
    *fds = calloc((size_t)(n * srv_her.nworkers), sizeof(int));
    if (!*fds)
        die("%s", "out of memory");
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
        for (int w = 0; w < srv_her.nworkers; w++) {
            int fd = tcp_socket(&ss, len, 1);
            if (fd < 0) {
                fprintf(stderr, "larder-server: can't listen on %s:%lld: %s\n",
                        addr, port, strerror(errno));
                exit(1);
            }
            (*fds)[w * n + *count] = fd;
        }
        (*count)++;
    }
    /* Compact the per-worker rows if optional addresses were skipped. */
    for (int w = 0; w < srv_her.nworkers; w++)
        for (int i = 0; i < *count; i++)
            (*fds)[w * *count + i] = (*fds)[w * n + i];
}

/* The tls-port listeners and the TLS context, before any fork (issue 16). */
static void open_tls_listeners(void)
{
    char err[SRV_PATH_MAX + SRV_CONFIG_ERR_SIZE];

    if (srv_tls_boot(err, sizeof err)) {
        srv_log(SRV_LOG_WARNING, 0, "%s", err);
        die("Failed to configure TLS: %s", err);
    }
    open_tcp_listeners(srv_her.cfg->tls_port, &srv_her.tls_fds, &srv_her.ntls);
    if (srv_her.ntls)
        srv_log(SRV_LOG_NOTICE, 0, "TLS on port %lld", srv_her.cfg->tls_port);
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
    if ((rc = srv_script_master_init(env, (unsigned)srv_her.nworkers))) {
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

static void write_pidfile(void)
{
    FILE *f;

    if (!srv_her.cfg->pidfile[0])
        return;
    if (!(f = fopen(srv_her.cfg->pidfile, "w"))) {
        srv_log(SRV_LOG_WARNING, errno, "can't write pidfile %s",
                srv_her.cfg->pidfile);
        return;
    }
    fprintf(f, "%d\n", (int)getpid());
    fclose(f);
}

/* Tell systemd (Type=notify) we are ready, if it is listening. */
static void notify_systemd(const char *state)
{
    const char *path = getenv("NOTIFY_SOCKET");
    struct sockaddr_un sa;
    int fd;

    if (!path || (path[0] != '/' && path[0] != '@') ||
        strlen(path) >= sizeof sa.sun_path)
        return;
    memset(&sa, 0, sizeof sa);
    sa.sun_family = AF_UNIX;
    memcpy(sa.sun_path, path, strlen(path));
    if (sa.sun_path[0] == '@')
        sa.sun_path[0] = '\0';
    fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return;
    if (sendto(fd, state, strlen(state), 0, (struct sockaddr *)&sa,
               (socklen_t)(offsetof(struct sockaddr_un, sun_path) +
                           strlen(path))) < 0)
        srv_log(SRV_LOG_WARNING, errno, "sd_notify sendto() failed");
    close(fd);
}

/* One record per child, indexed by its stats slot. */
static void plan_children(void)
{
    nchildren = srv_role_nslots(srv_her.nworkers);
    if (!(children = calloc((size_t)nchildren, sizeof *children)))
        die("%s", "out of memory");
    for (int r = 0; r < SRV_NROLES; r++) {
        int n = r == SRV_ROLE_WORKER ? srv_her.nworkers : 1;
        for (int i = 0; i < n && r != SRV_ROLE_MASTER; i++) {
            srv_proc p;
            srv_proc_init(&p, (enum srv_role)r, i, srv_her.nworkers);
            children[p.slot].proc = p;
        }
    }
}

static child *find_child(enum srv_role role)
{
    for (int i = 0; i < nchildren; i++)
        if (children[i].proc.role == role)
            return &children[i];
    return NULL;
}

/* The syncer slot is empty when the syncer runs as a reaper thread. */
static int child_wanted(const child *c)
{
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

    srv_config_refresh(); /* the child starts from our copy */
    if ((pid = fork()) < 0) {
        srv_proc_name(&c->proc, name, sizeof name);
        srv_log(SRV_LOG_WARNING, errno, "fork() of %s failed", name);
        c->respawn_at_ms = srv_util_monotonic_ms() + RESPAWN_MAX_MS;
        return;
    }
    if (pid == 0)
        become_child(&c->proc);
    c->proc.pid = pid;
    c->started_ms = srv_util_monotonic_ms();
    c->respawn_at_ms = 0;
    srv_config_track(&c->proc);
}

static void reap_children(void)
{
    int status;
    pid_t pid;

    while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
        for (int i = 0; i < nchildren; i++) {
            child *w = &children[i];
            char name[SRV_CONN_NAME_MAX];
            if (w->proc.pid != pid)
                continue;
            int64_t now = srv_util_monotonic_ms();
            w->proc.pid = 0;
            srv_config_track(&w->proc);
            if (got_term)
                break;
            srv_proc_name(&w->proc, name, sizeof name);
            if (WIFSIGNALED(status))
                srv_log(SRV_LOG_WARNING, 0, "%s[%d] killed by signal %d", name,
                        (int)pid, WTERMSIG(status));
            else
                srv_log(SRV_LOG_WARNING, 0, "%s[%d] exited with status %d",
                        name, (int)pid, WEXITSTATUS(status));
            if (now - w->started_ms < YOUNG_DEATH_MS)
                w->backoff_ms = w->backoff_ms ? w->backoff_ms * 2
                                              : RESPAWN_MIN_MS;
            else
                w->backoff_ms = 0;
            if (w->backoff_ms > RESPAWN_MAX_MS)
                w->backoff_ms = RESPAWN_MAX_MS;
            w->respawn_at_ms = now + w->backoff_ms;
            srv_stats_slot *slot = srv_stats_slot_of(srv_her.stats,
                                                     w->proc.role,
                                                     w->proc.index);
            SRV_STAT_ADD(slot, respawns, 1);
            /* Its reader slot may pin a snapshot: have it cleared now. */
            child *reaper = find_child(SRV_ROLE_REAPER);
            if (w != reaper && reaper->proc.pid)
                kill(reaper->proc.pid, SIGUSR1);
            /* Its connections are gone: take them off the client count. */
            atomic_fetch_sub(&srv_her.stats->clients,
                             atomic_exchange(&slot->connected, 0));
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

/* Stop the workers, or the other children: ask, wait (bounded), force. */
static void stop_group(int workers, const sigset_t *waitmask)
{
    int64_t deadline = srv_util_monotonic_ms() + STOP_WAIT_MS;

    for (int i = 0; i < nchildren; i++)
        if (in_group(&children[i], workers) && children[i].proc.pid)
            kill(children[i].proc.pid, SIGTERM);
    while (children_alive(workers) && srv_util_monotonic_ms() < deadline) {
        struct timespec ts = { 0, LOOP_TICK_MS * NS_PER_MS };
        ppoll(NULL, 0, &ts, waitmask);
        got_chld = 0;
        reap_children();
    }
    for (int i = 0; i < nchildren; i++) {
        child *w = &children[i];
        if (in_group(w, workers) && w->proc.pid) {
            char name[SRV_CONN_NAME_MAX];
            srv_proc_name(&w->proc, name, sizeof name);
            srv_log(SRV_LOG_WARNING, 0, "%s[%d] did not stop: SIGKILL", name,
                    (int)w->proc.pid);
            kill(w->proc.pid, SIGKILL);
            waitpid(w->proc.pid, NULL, 0);
            w->proc.pid = 0;
            srv_config_track(&w->proc);
        }
    }
}

/* Workers first (their held replies need the syncer), then the duties. */
static void stop_children(const sigset_t *waitmask)
{
    stop_group(1, waitmask);
    stop_group(0, waitmask);
}

/* Eventfds between workers and the syncer, made before any fork. */
static void create_eventfds(void)
{
    srv_her.sync_efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    srv_her.worker_efd = calloc((size_t)srv_her.nworkers, sizeof(int));
    if (srv_her.sync_efd < 0 || !srv_her.worker_efd)
        die("eventfd() failed: %s", strerror(errno));
    for (int i = 0; i < srv_her.nworkers; i++)
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

int srv_master_main(int argc, char **argv)
{
    sigset_t waitmask;
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
    srv_her.cfg = load_config(argc, argv);
    srv_her.master_pid = getpid();
    srv_proc_init(&srv_self, SRV_ROLE_MASTER, -1, 0);
    srv_self.pid = srv_her.master_pid;
    srv_her.start_ms = srv_util_mstime();
    srv_her.nworkers = srv_config_workers(srv_her.cfg);
    if (!realpath("/proc/self/exe", srv_her.executable))
        snprintf(srv_her.executable, sizeof srv_her.executable, "%s", argv[0]);
    srv_log_set_role(srv_role_name(SRV_ROLE_MASTER), -1);
    srv_log_set_level((int)srv_her.cfg->loglevel);
    if ((rc = srv_log_open(srv_her.cfg->logfile)))
        die("can't open logfile: %s", strerror(rc));
    check_storage();
    open_tcp_listeners(srv_her.cfg->port, &srv_her.tcp_fds, &srv_her.ntcp);
    open_tls_listeners();
    open_unix_listener();
    if (srv_her.ntcp == 0 && srv_her.ntls == 0 && srv_her.unix_fd < 0)
        die("%s", "nothing to listen on: set port or unixsocket");
    create_cache();
    load_acl();
    plan_children();
    if (!(srv_her.stats = srv_stats_create((unsigned)srv_her.nworkers)))
        die("mmap() of the stats region failed: %s", strerror(errno));
    if ((rc = srv_config_share((unsigned)nchildren)))
        die("can't create the shared configuration: %s",
            rc > 0 ? strerror(rc) : shm_strerror(rc));
    create_eventfds();
    if ((rc = srv_broker_listen()))
        die("can't create the pub/sub broker socket: %s", strerror(rc));
    install_signals(&waitmask);
    for (int i = 0; i < nchildren; i++)
        if (child_wanted(&children[i]))
            spawn_child(&children[i]);
    write_pidfile();
    srv_log(SRV_LOG_NOTICE, 0,
            "larder %s (Redis %s protocol) ready: port %lld%s%s, %d workers, "
            "data in %s",
            SRV_VERSION, SRV_REDIS_VERSION, srv_her.cfg->port,
            srv_her.unix_fd >= 0 ? ", unix socket " : "",
            srv_her.unix_fd >= 0 ? srv_her.cfg->unixsocket : "",
            srv_her.nworkers, srv_her.cfg->dir);
    notify_systemd("READY=1");
    while (!got_term) {
        struct timespec ts = { 0, LOOP_TICK_MS * NS_PER_MS };
        ppoll(NULL, 0, &ts, &waitmask);
        srv_config_refresh();
        if (got_chld) {
            got_chld = 0;
            reap_children();
        }
        if (got_hup) {
            got_hup = 0;
            if ((rc = srv_log_open(srv_her.cfg->logfile)))
                srv_log(SRV_LOG_WARNING, rc, "reopening the log failed");
            srv_log(SRV_LOG_NOTICE, 0, "SIGHUP: log reopened");
        }
        int64_t now = srv_util_monotonic_ms();
        for (int i = 0; i < nchildren && !got_term; i++)
            if (!children[i].proc.pid && now >= children[i].respawn_at_ms &&
                child_wanted(&children[i]))
                spawn_child(&children[i]);
    }
    notify_systemd("STOPPING=1");
    srv_log(SRV_LOG_NOTICE, 0, "shutting down: stopping %d workers",
            children_alive(1));
    stop_children(&waitmask);
    if (srv_her.cfg->pidfile[0])
        unlink(srv_her.cfg->pidfile);
    if (srv_her.unix_fd >= 0)
        unlink(srv_her.cfg->unixsocket);
    srv_log(SRV_LOG_NOTICE, 0, "larder is now ready to exit, bye bye...");
    return 0;
}
