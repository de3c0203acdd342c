/*
 * srv_cmd_info.c - INFO: every section and field Redis 7.0 reports, for
 * the whole server (the counters of all workers summed from the shared
 * regions, the memory and CPU of every process), with larder's own
 * fields and sections (cache, processes) beside them.
 *
 * A section is a table of fields, each a name and what prints its value
 * (a function, or a constant for what larder does not have: a replica's
 * offsets, an allocator's fragmentation). Another issue adds its fields
 * in its marked place of the section's table. Sections whose fields are
 * not fixed (commandstats, errorstats, latencystats, keyspace, processes)
 * have a generator instead.
 */
#include "server/cmd/srv_cmd.h"
#include "server/cmd/srv_txn.h"
#include "server/srv_buf.h"
#include "server/srv_cmdstats.h"
#include "server/srv_config.h"
#include "server/srv_conn.h"
#include "server/srv_daemon.h"
#include "server/srv_heritage.h"
#include "server/srv_reply.h"
#include "server/srv_stats.h"
#include "server/srv_util.h"
#include "server/srv_worker.h"
#include "shm/shm_cache.h"
#include "storage/st_env.h"
#include "storage/st_keyspace.h"

#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysinfo.h>
#include <sys/utsname.h>
#include <unistd.h>

#define MS_PER_S 1000
#define US_PER_S 1000000
#define NS_PER_US 1000.0
#define S_PER_DAY 86400
#define INFO_LINE_MAX 512
#define KIB 1024.0
#define MIB (1024.0 * 1024.0)
#define GIB (1024.0 * 1024.0 * 1024.0)
#define PERCENT 100.0
#define LRU_CLOCK_MASK ((1 << 24) - 1) /* Redis's 24-bit LRU clock */
#define RUN_ID_WORDS 5
#define PCT_MAX 16
#define STAT_PATH_MAX 64
#define STAT_LINE_MAX 1024
/* Fields 14 and 15 of /proc/PID/stat: user and system time in ticks. */
#define PROC_STAT_UTIME 14

/* What a field prints from: the connection, and figures gathered once
 * per INFO. */
typedef struct info_ctx {
    srv_conn *c;
    srv_buf *b;
    int64_t now_ms;
    int have_env;
    st_env_stat env;
    int have_procs;
    long long rss, rss_private;         /* every process, bytes */
    double cpu_user, cpu_sys;           /* every process, seconds */
    double cpu_user_self, cpu_sys_self; /* the master */
} info_ctx;

typedef void info_value(info_ctx *x);

typedef struct info_field {
    const char *name;
    info_value *value; /* or NULL: the constant */
    const char *constant;
} info_field;

static void add(srv_buf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void add(srv_buf *b, const char *fmt, ...)
{
    char line[INFO_LINE_MAX];
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (n > 0)
        srv_buf_append(b, line,
                       (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
}

static void human_bytes(srv_buf *b, double n)
{
    if (n < KIB)
        add(b, "%.0fB", n);
    else if (n < MIB)
        add(b, "%.2fK", n / KIB);
    else if (n < GIB)
        add(b, "%.2fM", n / MIB);
    else
        add(b, "%.2fG", n / GIB);
}

static srv_stats *stats(void) { return srv_her.stats; }

static const st_env_stat *env(info_ctx *x)
{
    if (!x->have_env) {
        memset(&x->env, 0, sizeof x->env);
        st_env_stat_get(x->c->worker->env, &x->env);
        x->have_env = 1;
    }
    return &x->env;
}

/* Resident and private memory and CPU of one process, from /proc. */
static void proc_usage(info_ctx *x, pid_t pid, int self)
{
    char path[STAT_PATH_MAX], line[STAT_LINE_MAX];
    long long pages = 0, rss = 0, shared = 0;
    long page = sysconf(_SC_PAGESIZE), hz = sysconf(_SC_CLK_TCK);
    FILE *f;

    snprintf(path, sizeof path, "/proc/%d/statm", (int)pid);
    if ((f = fopen(path, "r"))) {
        if (fscanf(f, "%lld %lld %lld", &pages, &rss, &shared) == 3) {
            x->rss += rss * page;
            x->rss_private += (rss - shared) * page;
        }
        fclose(f);
    }
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    if (!(f = fopen(path, "r")))
        return;
    if (fgets(line, sizeof line, f)) {
        /* After the command name in parentheses, field 3 on. */
        char *p = strrchr(line, ')');
        unsigned long long ut = 0, st = 0;
        for (int field = 2; p && field < PROC_STAT_UTIME; field++)
            p = strchr(p + 1, ' ');
        if (p && sscanf(p + 1, "%llu %llu", &ut, &st) == 2) {
            x->cpu_user += (double)ut / (double)hz;
            x->cpu_sys += (double)st / (double)hz;
            if (self) {
                x->cpu_user_self = (double)ut / (double)hz;
                x->cpu_sys_self = (double)st / (double)hz;
            }
        }
    }
    fclose(f);
}

static void procs(info_ctx *x)
{
    if (x->have_procs)
        return;
    x->have_procs = 1;
    if (srv_her.master_pid > 0)
        proc_usage(x, srv_her.master_pid, 1);
    for (unsigned i = 0; i < stats()->nslots; i++) {
        pid_t pid = (pid_t)atomic_load(&stats()->slot[i].pid);
        if (pid && pid != srv_her.master_pid && kill(pid, 0) == 0)
            proc_usage(x, pid, 0);
    }
}

/* What INFO calls used_memory: the processes' private memory and the
 * shared cache's data (the same bytes Redis's allocator would hold). */
static long long used_memory(info_ctx *x)
{
    shm_cache_stats_t st;

    procs(x);
    shm_cache_stats(srv_her.cache, &st);
    return x->rss_private + (long long)st.bytes_used;
}

static long long peak_memory(info_ctx *x)
{
    static _Atomic long long peak; /* this worker's view; enough for INFO */
    long long now = used_memory(x), was = atomic_load(&peak);

    while (now > was && !atomic_compare_exchange_weak(&peak, &was, now))
        ;
    return now > was ? now : was;
}

#define SUM(field) ((long long)SRV_STATS_SUM(stats(), field))

/* ---- server ---- */

static void v_redis_version(info_ctx *x) { add(x->b, "%s", SRV_REDIS_VERSION); }
static void v_larder_version(info_ctx *x) { add(x->b, "%s", SRV_VERSION); }

static void v_build_id(info_ctx *x)
{
    add(x->b, "%08x%08x", (unsigned)(sizeof(srv_config) * 2654435761u),
        (unsigned)SRV_CFG_TEXT_MAX);
}

static void v_os(info_ctx *x)
{
    struct utsname u;

    uname(&u);
    add(x->b, "%s %s %s", u.sysname, u.release, u.machine);
}

static void v_arch_bits(info_ctx *x)
{
    add(x->b, "%d", (int)(sizeof(void *) * 8));
}

static void v_gcc_version(info_ctx *x)
{
#ifdef __GNUC__
    add(x->b, "%d.%d.%d", __GNUC__, __GNUC_MINOR__, __GNUC_PATCHLEVEL__);
#else
    add(x->b, "0.0.0");
#endif
}

static void v_process_id(info_ctx *x)
{
    add(x->b, "%d", (int)srv_her.master_pid);
}

static void v_supervised(info_ctx *x)
{
    static const char *const names[] = { "no", "upstart", "systemd", "auto" };

    add(x->b, "%s", names[srv_daemon_supervision(srv_her.cfg)]);
}

/* A run id of 40 hex digits from the start time and the master's pid
 * (stable for the server's life, as Redis's). */
static void v_run_id(info_ctx *x)
{
    uint64_t h = (uint64_t)srv_her.start_ms * 0x9e3779b97f4a7c15ull ^
                 (uint64_t)srv_her.master_pid;

    for (int i = 0; i < RUN_ID_WORDS; i++) {
        h ^= h >> 31;
        h *= 0xbf58476d1ce4e5b9ull;
        add(x->b, "%08x", (unsigned)(h >> 32));
    }
}

static void v_tcp_port(info_ctx *x) { add(x->b, "%lld", srv_her.cfg->port); }

static void v_time_usec(info_ctx *x)
{
    add(x->b, "%lld", (long long)srv_util_ustime());
}

static long long uptime_s(info_ctx *x)
{
    return (x->now_ms - srv_her.start_ms) / MS_PER_S;
}

static void v_uptime_s(info_ctx *x) { add(x->b, "%lld", uptime_s(x)); }
static void v_uptime_d(info_ctx *x)
{
    add(x->b, "%lld", uptime_s(x) / S_PER_DAY);
}
static void v_hz(info_ctx *x) { add(x->b, "%lld", srv_her.cfg->hz); }

static void v_lru_clock(info_ctx *x)
{
    add(x->b, "%lld", (long long)((x->now_ms / MS_PER_S) & LRU_CLOCK_MASK));
}

static void v_executable(info_ctx *x) { add(x->b, "%s", srv_her.executable); }
static void v_config_file(info_ctx *x)
{
    add(x->b, "%s", srv_her.cfg->config_file);
}

static void v_workers(info_ctx *x)
{
    add(x->b, "%lld", (long long)atomic_load(&stats()->workers));
}

static void v_workers_max(info_ctx *x) { add(x->b, "%u", stats()->nworkers); }
static void v_worker_pid(info_ctx *x) { add(x->b, "%d", (int)getpid()); }

static const info_field server_fields[] = {
    { "redis_version", v_redis_version, NULL },
    { "redis_git_sha1", NULL, "00000000" },
    { "redis_git_dirty", NULL, "0" },
    { "redis_build_id", v_build_id, NULL },
    { "redis_mode", NULL, "standalone" },
    { "os", v_os, NULL },
    { "arch_bits", v_arch_bits, NULL },
    { "monotonic_clock", NULL, "POSIX clock_gettime" },
    { "multiplexing_api", NULL, "epoll" },
    { "atomicvar_api", NULL, "c11-builtin" },
    { "gcc_version", v_gcc_version, NULL },
    { "process_id", v_process_id, NULL },
    { "process_supervised", v_supervised, NULL },
    { "run_id", v_run_id, NULL },
    { "tcp_port", v_tcp_port, NULL },
    { "server_time_usec", v_time_usec, NULL },
    { "uptime_in_seconds", v_uptime_s, NULL },
    { "uptime_in_days", v_uptime_d, NULL },
    { "hz", v_hz, NULL },
    { "configured_hz", v_hz, NULL },
    { "lru_clock", v_lru_clock, NULL },
    { "executable", v_executable, NULL },
    { "config_file", v_config_file, NULL },
    { "io_threads_active", NULL, "0" },
    { "larder_version", v_larder_version, NULL },
    { "workers", v_workers, NULL },
    { "workers_max", v_workers_max, NULL },
    { "worker_process_id", v_worker_pid, NULL },
    /* ==== issue 11 ==== */
    /* ==== issue 16 ==== */
    { NULL, NULL, NULL },
};

/* ---- clients ---- */

static void v_connected(info_ctx *x) { add(x->b, "%lld", SUM(connected)); }
static void v_blocked(info_ctx *x) { add(x->b, "%lld", SUM(blocked_clients)); }
static void v_tracking(info_ctx *x)
{
    add(x->b, "%lld", SUM(tracking_clients));
}
static void v_maxclients(info_ctx *x)
{
    add(x->b, "%lld", srv_her.cfg->maxclients);
}

static const info_field clients_fields[] = {
    { "connected_clients", v_connected, NULL },
    { "cluster_connections", NULL, "0" },
    { "maxclients", v_maxclients, NULL },
    { "client_recent_max_input_buffer", NULL, "0" },
    { "client_recent_max_output_buffer", NULL, "0" },
    /* ==== issue 11: blocked_clients, tracking_clients ==== */
    { "blocked_clients", v_blocked, NULL },
    { "tracking_clients", v_tracking, NULL },
    { "clients_in_timeout_table", NULL, "0" },
    /* ==== issue 16 ==== */
    { NULL, NULL, NULL },
};

/* ---- memory ---- */

static void v_used(info_ctx *x) { add(x->b, "%lld", used_memory(x)); }
static void v_used_h(info_ctx *x) { human_bytes(x->b, (double)used_memory(x)); }

static void v_rss(info_ctx *x)
{
    procs(x);
    add(x->b, "%lld", x->rss);
}

static void v_rss_h(info_ctx *x)
{
    procs(x);
    human_bytes(x->b, (double)x->rss);
}

static void v_peak(info_ctx *x) { add(x->b, "%lld", peak_memory(x)); }
static void v_peak_h(info_ctx *x) { human_bytes(x->b, (double)peak_memory(x)); }

static void v_peak_perc(info_ctx *x)
{
    long long peak = peak_memory(x);

    add(x->b, "%.2f%%",
        peak ? (double)used_memory(x) * PERCENT / (double)peak : PERCENT);
}

static void v_overhead(info_ctx *x)
{
    procs(x);
    add(x->b, "%lld", x->rss_private);
}

static void v_dataset(info_ctx *x)
{
    shm_cache_stats_t st;

    shm_cache_stats(srv_her.cache, &st);
    add(x->b, "%llu", (unsigned long long)st.bytes_used);
}

static void v_dataset_perc(info_ctx *x)
{
    shm_cache_stats_t st;
    long long used = used_memory(x);

    shm_cache_stats(srv_her.cache, &st);
    add(x->b, "%.2f%%",
        used ? (double)st.bytes_used * PERCENT / (double)used : 0.0);
}

static long long system_memory(void)
{
    struct sysinfo si;

    return sysinfo(&si) == 0 ? (long long)si.totalram * si.mem_unit : 0;
}

static void v_sysmem(info_ctx *x) { add(x->b, "%lld", system_memory()); }
static void v_sysmem_h(info_ctx *x)
{
    human_bytes(x->b, (double)system_memory());
}

static void v_maxmemory(info_ctx *x)
{
    add(x->b, "%llu", (unsigned long long)srv_her.cfg->maxmemory);
}

static void v_maxmemory_h(info_ctx *x)
{
    human_bytes(x->b, (double)(unsigned long long)srv_her.cfg->maxmemory);
}

static void v_policy(info_ctx *x)
{
    char v[SRV_CONFIG_ERR_SIZE];

    srv_config_get_one(srv_her.cfg, "maxmemory-policy", v, sizeof v);
    add(x->b, "%s", v);
}

static void v_frag(info_ctx *x)
{
    long long used = used_memory(x);

    add(x->b, "%.2f", used ? (double)x->rss / (double)used : 1.0);
}

static void v_frag_bytes(info_ctx *x)
{
    add(x->b, "%lld", x->rss - used_memory(x));
}

static void v_lazyfree(info_ctx *x)
{
    add(x->b, "%lld", (long long)atomic_load(&stats()->lazyfree_pending));
}

static void v_used_disk(info_ctx *x)
{
    add(x->b, "%llu", (unsigned long long)env(x)->used_bytes);
}

static void v_used_disk_h(info_ctx *x)
{
    human_bytes(x->b, (double)env(x)->used_bytes);
}

static void v_maxdisk(info_ctx *x)
{
    add(x->b, "%llu", (unsigned long long)env(x)->map_size);
}

static const info_field memory_fields[] = {
    { "used_memory", v_used, NULL },
    { "used_memory_human", v_used_h, NULL },
    { "used_memory_rss", v_rss, NULL },
    { "used_memory_rss_human", v_rss_h, NULL },
    { "used_memory_peak", v_peak, NULL },
    { "used_memory_peak_human", v_peak_h, NULL },
    { "used_memory_peak_perc", v_peak_perc, NULL },
    { "used_memory_overhead", v_overhead, NULL },
    { "used_memory_startup", NULL, "0" },
    { "used_memory_dataset", v_dataset, NULL },
    { "used_memory_dataset_perc", v_dataset_perc, NULL },
    { "allocator_allocated", v_used, NULL },
    { "allocator_active", v_used, NULL },
    { "allocator_resident", v_rss, NULL },
    { "total_system_memory", v_sysmem, NULL },
    { "total_system_memory_human", v_sysmem_h, NULL },
    /* ==== issue 12: scripting's memory ==== */
    { "used_memory_lua", NULL, "0" },
    { "used_memory_vm_eval", NULL, "0" },
    { "used_memory_lua_human", NULL, "0B" },
    { "used_memory_scripts_eval", NULL, "0" },
    { "number_of_cached_scripts", NULL, "0" },
    { "number_of_functions", NULL, "0" },
    { "number_of_libraries", NULL, "0" },
    { "used_memory_vm_functions", NULL, "0" },
    { "used_memory_vm_total", NULL, "0" },
    { "used_memory_vm_total_human", NULL, "0B" },
    { "used_memory_functions", NULL, "0" },
    { "used_memory_scripts", NULL, "0" },
    { "used_memory_scripts_human", NULL, "0B" },
    { "maxmemory", v_maxmemory, NULL },
    { "maxmemory_human", v_maxmemory_h, NULL },
    { "maxmemory_policy", v_policy, NULL },
    { "allocator_frag_ratio", NULL, "1.00" },
    { "allocator_frag_bytes", NULL, "0" },
    { "allocator_rss_ratio", v_frag, NULL },
    { "allocator_rss_bytes", v_frag_bytes, NULL },
    { "rss_overhead_ratio", NULL, "1.00" },
    { "rss_overhead_bytes", NULL, "0" },
    { "mem_fragmentation_ratio", v_frag, NULL },
    { "mem_fragmentation_bytes", v_frag_bytes, NULL },
    { "mem_not_counted_for_evict", NULL, "0" },
    { "mem_replication_backlog", NULL, "0" },
    { "mem_total_replication_buffers", NULL, "0" },
    { "mem_clients_slaves", NULL, "0" },
    { "mem_clients_normal", NULL, "0" },
    { "mem_cluster_links", NULL, "0" },
    { "mem_aof_buffer", NULL, "0" },
    { "mem_allocator", NULL, "libc" },
    { "active_defrag_running", NULL, "0" },
    { "lazyfree_pending_objects", v_lazyfree, NULL },
    { "lazyfreed_objects", NULL, "0" },
    { "used_disk", v_used_disk, NULL },
    { "used_disk_human", v_used_disk_h, NULL },
    { "maxdisk", v_maxdisk, NULL },
    { NULL, NULL, NULL },
};

/* ---- persistence ---- */

static const char *const sync_names[] = { "no", "everysec", "always" };

static int64_t last_save_s(void)
{
    int64_t ms = atomic_load(&stats()->last_save_ms);

    return (ms ? ms : srv_her.start_ms) / MS_PER_S;
}

static void v_changes(info_ctx *x)
{
    int64_t since = atomic_load(&stats()->last_save_txn);
    int64_t now = (int64_t)env(x)->last_txn;

    add(x->b, "%lld", (long long)(now > since ? now - since : 0));
}

static void v_bgsave(info_ctx *x)
{
    add(x->b, "%d", atomic_load(&stats()->save_in_progress) != 0);
}

static void v_last_save(info_ctx *x)
{
    add(x->b, "%lld", (long long)last_save_s());
}

static void v_save_status(info_ctx *x)
{
    add(x->b, "%s", atomic_load(&stats()->last_save_status) ? "err" : "ok");
}

static void v_save_time(info_ctx *x)
{
    add(x->b, "%lld",
        atomic_load(&stats()->last_save_ms)
            ? (long long)(atomic_load(&stats()->last_save_us) / US_PER_S)
            : -1LL);
}

static void v_saves(info_ctx *x)
{
    add(x->b, "%lld", (long long)atomic_load(&stats()->saves));
}

static void v_aof_enabled(info_ctx *x)
{
    add(x->b, "%d", srv_her.cfg->sync != SRV_SYNC_NO);
}

static void v_backup_file(info_ctx *x)
{
    add(x->b, "%s/%s", srv_her.cfg->dir, srv_her.cfg->dbfilename);
}

static void v_sync(info_ctx *x)
{
    add(x->b, "%s", sync_names[srv_her.cfg->sync]);
}

static void v_last_sync(info_ctx *x)
{
    add(x->b, "%lld", (long long)atomic_load(&stats()->last_sync_ms));
}

static void v_sync_us(info_ctx *x)
{
    add(x->b, "%lld", (long long)atomic_load(&stats()->last_sync_us));
}

static void v_syncs(info_ctx *x) { add(x->b, "%lld", SUM(syncs)); }

static void v_durable(info_ctx *x)
{
    add(x->b, "%lld", (long long)atomic_load(&stats()->durable_txn));
}

static void v_last_txn(info_ctx *x)
{
    add(x->b, "%llu", (unsigned long long)env(x)->last_txn);
}

static void v_map_size(info_ctx *x)
{
    add(x->b, "%llu", (unsigned long long)env(x)->map_size);
}

static void v_file_bytes(info_ctx *x)
{
    add(x->b, "%llu", (unsigned long long)env(x)->file_bytes);
}

static void v_readers(info_ctx *x) { add(x->b, "%u", env(x)->readers_used); }
static void v_readers_max(info_ctx *x) { add(x->b, "%u", env(x)->readers_max); }

static const info_field persistence_fields[] = {
    { "loading", NULL, "0" },
    { "async_loading", NULL, "0" },
    { "current_cow_peak", NULL, "0" },
    { "current_cow_size", NULL, "0" },
    { "current_cow_size_age", NULL, "0" },
    { "current_fork_perc", NULL, "0.00" },
    { "current_save_keys_processed", NULL, "0" },
    { "current_save_keys_total", NULL, "0" },
    { "rdb_changes_since_last_save", v_changes, NULL },
    { "rdb_bgsave_in_progress", v_bgsave, NULL },
    { "rdb_last_save_time", v_last_save, NULL },
    { "rdb_last_bgsave_status", v_save_status, NULL },
    { "rdb_last_bgsave_time_sec", v_save_time, NULL },
    { "rdb_current_bgsave_time_sec", NULL, "-1" },
    { "rdb_saves", v_saves, NULL },
    { "rdb_last_cow_size", NULL, "0" },
    { "rdb_last_load_keys_expired", NULL, "0" },
    { "rdb_last_load_keys_loaded", NULL, "0" },
    { "aof_enabled", v_aof_enabled, NULL },
    { "aof_rewrite_in_progress", NULL, "0" },
    { "aof_rewrite_scheduled", NULL, "0" },
    { "aof_last_rewrite_time_sec", NULL, "-1" },
    { "aof_current_rewrite_time_sec", NULL, "-1" },
    { "aof_last_bgrewrite_status", NULL, "ok" },
    { "aof_rewrites", NULL, "0" },
    { "aof_rewrites_consecutive_failures", NULL, "0" },
    { "aof_last_write_status", NULL, "ok" },
    { "aof_last_cow_size", NULL, "0" },
    { "module_fork_in_progress", NULL, "0" },
    { "module_fork_last_cow_size", NULL, "0" },
    { "backup_file", v_backup_file, NULL },
    { "sync", v_sync, NULL },
    { "last_sync_time_ms", v_last_sync, NULL },
    { "last_sync_duration_us", v_sync_us, NULL },
    { "syncs", v_syncs, NULL },
    { "durable_txnid", v_durable, NULL },
    { "committed_txnid", v_last_txn, NULL },
    { "lmdb_last_txnid", v_last_txn, NULL },
    { "lmdb_map_size", v_map_size, NULL },
    { "lmdb_used_bytes", v_used_disk, NULL },
    { "lmdb_file_bytes", v_file_bytes, NULL },
    { "lmdb_readers", v_readers, NULL },
    { "lmdb_max_readers", v_readers_max, NULL },
    { NULL, NULL, NULL },
};

/* With aof_enabled, Redis adds its file's figures: the data file's here. */
static const info_field aof_fields[] = {
    { "aof_current_size", v_file_bytes, NULL },
    { "aof_base_size", v_file_bytes, NULL },
    { "aof_pending_rewrite", NULL, "0" },
    { "aof_buffer_length", NULL, "0" },
    { "aof_pending_bio_fsync", NULL, "0" },
    { "aof_delayed_fsync", NULL, "0" },
    { NULL, NULL, NULL },
};

/* ---- stats ---- */

static void v_conns(info_ctx *x) { add(x->b, "%lld", SUM(total_connections)); }
static void v_cmds(info_ctx *x) { add(x->b, "%lld", SUM(total_commands)); }
static void v_ops(info_ctx *x) { add(x->b, "%lld", SUM(ops_per_sec)); }
static void v_in(info_ctx *x) { add(x->b, "%lld", SUM(net_input_bytes)); }
static void v_out(info_ctx *x) { add(x->b, "%lld", SUM(net_output_bytes)); }
static void v_rejected(info_ctx *x)
{
    add(x->b, "%lld", SUM(rejected_connections));
}
static void v_expired(info_ctx *x) { add(x->b, "%lld", SUM(expired_keys)); }
static void v_expire_ms(info_ctx *x)
{
    add(x->b, "%lld", SUM(busy_us) / MS_PER_S);
}
static void v_hits(info_ctx *x) { add(x->b, "%lld", SUM(keyspace_hits)); }
static void v_misses(info_ctx *x) { add(x->b, "%lld", SUM(keyspace_misses)); }

static void v_errors(info_ctx *x)
{
    add(x->b, "%llu",
        (unsigned long long)srv_cmdstats_total_errors(srv_cmdstats_region()));
}

static void v_ticks(info_ctx *x) { add(x->b, "%lld", SUM(ticks)); }
static void v_busy(info_ctx *x) { add(x->b, "%lld", SUM(busy_us)); }
static void v_commits(info_ctx *x) { add(x->b, "%lld", SUM(commits)); }
static void v_respawns(info_ctx *x) { add(x->b, "%lld", SUM(respawns)); }

static const info_field stats_fields[] = {
    { "total_connections_received", v_conns, NULL },
    { "total_commands_processed", v_cmds, NULL },
    { "instantaneous_ops_per_sec", v_ops, NULL },
    { "total_net_input_bytes", v_in, NULL },
    { "total_net_output_bytes", v_out, NULL },
    { "total_net_repl_input_bytes", NULL, "0" },
    { "total_net_repl_output_bytes", NULL, "0" },
    { "instantaneous_input_kbps", NULL, "0.00" },
    { "instantaneous_output_kbps", NULL, "0.00" },
    { "instantaneous_input_repl_kbps", NULL, "0.00" },
    { "instantaneous_output_repl_kbps", NULL, "0.00" },
    { "rejected_connections", v_rejected, NULL },
    { "sync_full", NULL, "0" },
    { "sync_partial_ok", NULL, "0" },
    { "sync_partial_err", NULL, "0" },
    { "expired_keys", v_expired, NULL },
    { "expired_stale_perc", NULL, "0.00" },
    { "expired_time_cap_reached_count", NULL, "0" },
    { "expire_cycle_cpu_milliseconds", v_expire_ms, NULL },
    { "evicted_keys", NULL, "0" },
    { "evicted_clients", NULL, "0" },
    { "total_eviction_exceeded_time", NULL, "0" },
    { "current_eviction_exceeded_time", NULL, "0" },
    { "keyspace_hits", v_hits, NULL },
    { "keyspace_misses", v_misses, NULL },
    /* ==== issue 11: pub/sub and tracking counts ==== */
    { "pubsub_channels", NULL, "0" },
    { "pubsub_patterns", NULL, "0" },
    { "pubsubshard_channels", NULL, "0" },
    { "latest_fork_usec", NULL, "0" },
    { "total_forks", NULL, "0" },
    { "migrate_cached_sockets", NULL, "0" },
    { "slave_expires_tracked_keys", NULL, "0" },
    { "active_defrag_hits", NULL, "0" },
    { "active_defrag_misses", NULL, "0" },
    { "active_defrag_key_hits", NULL, "0" },
    { "active_defrag_key_misses", NULL, "0" },
    { "total_active_defrag_time", NULL, "0" },
    { "current_active_defrag_time", NULL, "0" },
    { "tracking_total_keys", NULL, "0" },
    { "tracking_total_items", NULL, "0" },
    { "tracking_total_prefixes", NULL, "0" },
    { "unexpected_error_replies", NULL, "0" },
    { "total_error_replies", v_errors, NULL },
    { "dump_payload_sanitizations", NULL, "0" },
    { "total_reads_processed", NULL, "0" },
    { "total_writes_processed", NULL, "0" },
    { "io_threaded_reads_processed", NULL, "0" },
    { "io_threaded_writes_processed", NULL, "0" },
    { "reply_buffer_shrinks", NULL, "0" },
    { "reply_buffer_expands", NULL, "0" },
    { "lazyfree_pending_objects", v_lazyfree, NULL },
    { "reaper_ticks", v_ticks, NULL },
    { "reaper_time_us", v_busy, NULL },
    { "write_transactions", v_commits, NULL },
    { "worker_respawns", v_respawns, NULL },
    /* ==== issue 16 ==== */
    { NULL, NULL, NULL },
};

/* ---- replication ---- */

static void v_replid(info_ctx *x) { v_run_id(x); }

static void v_backlog_size(info_ctx *x)
{
    add(x->b, "%lld", srv_her.cfg->repl_backlog_size);
}

static const info_field replication_fields[] = {
    { "role", NULL, "master" },
    { "connected_slaves", NULL, "0" },
    { "master_failover_state", NULL, "no-failover" },
    { "master_replid", v_replid, NULL },
    { "master_replid2", NULL, "0000000000000000000000000000000000000000" },
    { "master_repl_offset", NULL, "0" },
    { "second_repl_offset", NULL, "-1" },
    { "repl_backlog_active", NULL, "0" },
    { "repl_backlog_size", v_backlog_size, NULL },
    { "repl_backlog_first_byte_offset", NULL, "0" },
    { "repl_backlog_histlen", NULL, "0" },
    { NULL, NULL, NULL },
};

/* ---- cpu: every process of the tree ---- */

static void v_sys(info_ctx *x)
{
    procs(x);
    add(x->b, "%.6f", x->cpu_sys);
}

static void v_user(info_ctx *x)
{
    procs(x);
    add(x->b, "%.6f", x->cpu_user);
}

static void v_sys_main(info_ctx *x)
{
    procs(x);
    add(x->b, "%.6f", x->cpu_sys_self);
}

static void v_user_main(info_ctx *x)
{
    procs(x);
    add(x->b, "%.6f", x->cpu_user_self);
}

static const info_field cpu_fields[] = {
    { "used_cpu_sys", v_sys, NULL },
    { "used_cpu_user", v_user, NULL },
    { "used_cpu_sys_children", NULL, "0.000000" },
    { "used_cpu_user_children", NULL, "0.000000" },
    { "used_cpu_sys_main_thread", v_sys_main, NULL },
    { "used_cpu_user_main_thread", v_user_main, NULL },
    { NULL, NULL, NULL },
};

static const info_field modules_fields[] = { { NULL, NULL, NULL } };

static const info_field cluster_fields[] = {
    { "cluster_enabled", NULL, "0" },
    { NULL, NULL, NULL },
};

/* ---- cache (larder's) ---- */

static shm_cache_stats_t cache_stats(void)
{
    shm_cache_stats_t st;

    shm_cache_stats(srv_her.cache, &st);
    return st;
}

static void v_c_enabled(info_ctx *x)
{
    add(x->b, "%d", shm_cache_enabled(srv_her.cache));
}
static void v_c_policy(info_ctx *x)
{
    add(x->b, "%s", shm_cache_policy_name(cache_stats().policy));
}
static void v_c_stripes(info_ctx *x)
{
    add(x->b, "%u", cache_stats().nstripes);
}

#define CACHE_U64(fn, field)                                        \
    static void fn(info_ctx *x)                                     \
    {                                                               \
        add(x->b, "%llu", (unsigned long long)cache_stats().field); \
    }
CACHE_U64(v_c_budget, budget)
CACHE_U64(v_c_max, max_bytes)
CACHE_U64(v_c_used, bytes_used)
CACHE_U64(v_c_slab, bytes_slab)
CACHE_U64(v_c_entries, entries)
CACHE_U64(v_c_tomb, tombstones)
CACHE_U64(v_c_hits, hits)
CACHE_U64(v_c_misses, misses)
CACHE_U64(v_c_evict, evictions)
CACHE_U64(v_c_refused, fills_refused)
CACHE_U64(v_c_dropped, puts_dropped)
CACHE_U64(v_c_waits, lock_waits)
CACHE_U64(v_c_dead, owner_dead)
CACHE_U64(v_c_item, max_item)

static const info_field cache_fields[] = {
    { "cache_enabled", v_c_enabled, NULL },
    { "cache_policy", v_c_policy, NULL },
    { "cache_stripes", v_c_stripes, NULL },
    { "cache_budget_bytes", v_c_budget, NULL },
    { "cache_max_bytes", v_c_max, NULL },
    { "cache_used_bytes", v_c_used, NULL },
    { "cache_slab_bytes", v_c_slab, NULL },
    { "cache_entries", v_c_entries, NULL },
    { "cache_tombstones", v_c_tomb, NULL },
    { "cache_hits", v_c_hits, NULL },
    { "cache_misses", v_c_misses, NULL },
    { "cache_evictions", v_c_evict, NULL },
    { "cache_fills_refused_stale", v_c_refused, NULL },
    { "cache_puts_dropped", v_c_dropped, NULL },
    { "cache_lock_waits", v_c_waits, NULL },
    { "cache_owner_dead_recoveries", v_c_dead, NULL },
    { "cache_max_item_bytes", v_c_item, NULL },
    { NULL, NULL, NULL },
};

static void print_fields(info_ctx *x, const info_field *f)
{
    for (; f->name; f++) {
        add(x->b, "%s:", f->name);
        if (f->value)
            f->value(x);
        else
            add(x->b, "%s", f->constant);
        add(x->b, "\r\n");
    }
}

/* ---- generated sections ---- */

static void gen_persistence(info_ctx *x)
{
    print_fields(x, persistence_fields);
    if (srv_her.cfg->sync != SRV_SYNC_NO)
        print_fields(x, aof_fields);
}

/* cmdstat_<name>: for each command and subcommand called or refused. */
static void gen_commandstats(info_ctx *x)
{
    int n;
    const srv_command *table = srv_cmd_table(&n);
    static srv_cmdstat_sum sum;

    for (int i = 0; i < n; i++) {
        srv_cmdstats_sum(srv_cmdstats_region(), (unsigned)i, &sum);
        if (!sum.calls && !sum.rejected)
            continue;
        double us = (double)sum.ns / NS_PER_US;
        add(x->b,
            "cmdstat_%s:calls=%llu,usec=%llu,usec_per_call=%.2f,"
            "rejected_calls=%llu,failed_calls=%llu\r\n",
            table[i].name, (unsigned long long)sum.calls,
            (unsigned long long)(us), sum.calls ? us / (double)sum.calls : 0.0,
            (unsigned long long)sum.rejected, (unsigned long long)sum.failed);
    }
}

static void print_error(void *arg, const char *code, uint64_t count)
{
    info_ctx *x = arg;

    add(x->b, "errorstat_%s:count=%llu\r\n", code, (unsigned long long)count);
}

static void gen_errorstats(info_ctx *x)
{
    srv_cmdstats_each_error(srv_cmdstats_region(), print_error, x);
}

/* The percentiles latency-tracking-info-percentiles asks for. */
static int percentiles(double *p, int max)
{
    char copy[SRV_CFG_TEXT_MAX], *save = NULL;
    int n = 0;

    snprintf(copy, sizeof copy, "%s",
             srv_her.cfg->latency_tracking_info_percentiles);
    for (char *w = strtok_r(copy, " ", &save); w && n < max;
         w = strtok_r(NULL, " ", &save))
        p[n++] = strtod(w, NULL);
    return n;
}

/* latency_percentiles_usec_<name>:p50=...,p99=...: printed as Redis
 * prints the percentiles' names (%f without trailing zeros). */
static void gen_latencystats(info_ctx *x)
{
    double pct[PCT_MAX];
    int npct, n;
    const srv_command *table = srv_cmd_table(&n);
    static srv_cmdstat_sum sum;

    if (!srv_her.cfg->latency_tracking)
        return;
    npct = percentiles(pct, PCT_MAX);
    for (int i = 0; i < n; i++) {
        srv_cmdstats_sum(srv_cmdstats_region(), (unsigned)i, &sum);
        if (!sum.calls)
            continue;
        add(x->b, "latency_percentiles_usec_%s:", table[i].name);
        for (int j = 0; j < npct; j++) {
            char name[SRV_DSTR_SIZE];
            int k = snprintf(name, sizeof name, "%f", pct[j]);
            while (k > 0 && name[k - 1] == '0')
                name[--k] = '\0';
            if (k > 0 && name[k - 1] == '.')
                name[--k] = '\0';
            add(x->b, "%sp%s=%.3f", j ? "," : "", name,
                (double)srv_cmdstats_percentile_ns(&sum, pct[j]) / NS_PER_US);
        }
        add(x->b, "\r\n");
    }
}

static void gen_keyspace(info_ctx *x)
{
    struct st_txn *t = srv_txn_read_or_reply(x->c);

    if (!t)
        return;
    for (unsigned db = 0; db < (unsigned)srv_her.cfg->databases; db++) {
        uint64_t keys, expires;
        if (st_keyspace_dbsize(t, db, &keys, &expires) == 0 && keys)
            add(x->b, "db%u:keys=%llu,expires=%llu,avg_ttl=0\r\n", db,
                (unsigned long long)keys, (unsigned long long)expires);
    }
}

/* larder's processes: one line per running process of the tree. */
static void gen_processes(info_ctx *x)
{
    static const char *const names[] = { "worker", "reaper", "syncer",
                                         "broker" };
    srv_stats *s = stats();

    add(x->b, "process_master:pid=%d,uptime_in_seconds=%lld\r\n",
        (int)srv_her.master_pid, uptime_s(x));
    for (unsigned i = 0; i < s->nslots; i++) {
        srv_stats_slot *slot = &s->slot[i];
        pid_t pid = (pid_t)atomic_load(&slot->pid);
        unsigned duty = i < s->nworkers ? 0 : i - s->nworkers + 1;
        if (!pid || kill(pid, 0))
            continue;
        if (duty == 0)
            add(x->b, "process_worker%u:", i);
        else
            add(x->b, "process_%s:", names[duty]);
        add(x->b,
            "pid=%d,uptime_in_seconds=%lld,connected_clients=%lld,"
            "commands=%lld,respawns=%lld\r\n",
            (int)pid,
            (long long)(x->now_ms - atomic_load(&slot->started_ms)) / MS_PER_S,
            (long long)atomic_load(&slot->connected),
            (long long)atomic_load(&slot->total_commands),
            (long long)atomic_load(&slot->respawns));
    }
}

/* ---- the sections ---- */

#define IN_DEFAULT 0x1 /* INFO, INFO default */
#define IN_ALL 0x2     /* INFO all (and everything) */

typedef struct info_section {
    const char *name;  /* lower case, as INFO takes it */
    const char *title; /* its header */
    int flags;
    const info_field *fields; /* or NULL: */
    void (*generate)(info_ctx *x);
} info_section;

static const info_section sections[] = {
    { "server", "Server", IN_DEFAULT | IN_ALL, server_fields, NULL },
    { "clients", "Clients", IN_DEFAULT | IN_ALL, clients_fields, NULL },
    { "memory", "Memory", IN_DEFAULT | IN_ALL, memory_fields, NULL },
    { "persistence", "Persistence", IN_DEFAULT | IN_ALL, NULL,
      gen_persistence },
    { "stats", "Stats", IN_DEFAULT | IN_ALL, stats_fields, NULL },
    { "replication", "Replication", IN_DEFAULT | IN_ALL, replication_fields,
      NULL },
    { "cpu", "CPU", IN_DEFAULT | IN_ALL, cpu_fields, NULL },
    { "modules", "Modules", IN_DEFAULT | IN_ALL, modules_fields, NULL },
    { "commandstats", "Commandstats", IN_ALL, NULL, gen_commandstats },
    { "errorstats", "Errorstats", IN_DEFAULT | IN_ALL, NULL, gen_errorstats },
    { "latencystats", "Latencystats", IN_ALL, NULL, gen_latencystats },
    { "cluster", "Cluster", IN_DEFAULT | IN_ALL, cluster_fields, NULL },
    /* ==== issue 16 ==== */
    { "cache", "Cache", IN_DEFAULT | IN_ALL, cache_fields, NULL },
    { "processes", "Processes", IN_DEFAULT | IN_ALL, NULL, gen_processes },
    { "keyspace", "Keyspace", IN_DEFAULT | IN_ALL, NULL, gen_keyspace },
};
#define NSECTIONS (sizeof sections / sizeof sections[0])

static int wanted(srv_conn *c, const info_section *s)
{
    if (c->argc == 1)
        return s->flags & IN_DEFAULT;
    for (int i = 1; i < c->argc; i++) {
        const srv_slice *a = &c->argv[i];
        if (srv_util_streq(a->ptr, a->len, s->name) ||
            (srv_util_streq(a->ptr, a->len, "all") && (s->flags & IN_ALL)) ||
            srv_util_streq(a->ptr, a->len, "everything") ||
            (srv_util_streq(a->ptr, a->len, "default") &&
             (s->flags & IN_DEFAULT)))
            return 1;
    }
    return 0;
}

void srv_cmd_info(srv_conn *c)
{
    srv_buf b = { NULL, 0, 0 };
    info_ctx x = { .c = c, .b = &b, .now_ms = srv_util_mstime() };
    int first = 1;

    for (size_t i = 0; i < NSECTIONS; i++) {
        if (!wanted(c, &sections[i]))
            continue;
        if (!first)
            add(&b, "\r\n");
        first = 0;
        add(&b, "# %s\r\n", sections[i].title);
        if (sections[i].fields)
            print_fields(&x, sections[i].fields);
        else
            sections[i].generate(&x);
    }
    srv_reply_verbatim(c, b.data ? b.data : "", b.len);
    srv_buf_free(&b);
}
