/*
 * srv_cmd_server.c - server commands: DBSIZE FLUSHDB FLUSHALL TIME INFO
 * SHUTDOWN ROLE LASTSAVE SAVE BGSAVE DEBUG (CONFIG: srv_cmd_config.c).
 */
#include "server/cmd/srv_args.h"
#include "server/cmd/srv_cmd.h"
#include "server/cmd/srv_multi.h"
#include "server/cmd/srv_txn.h"
#include "server/srv_config.h"
#include "server/srv_conn.h"
#include "server/srv_heritage.h"
#include "server/srv_log.h"
#include "server/srv_reply.h"
#include "server/srv_util.h"
#include "server/srv_worker.h"
#include "shm/shm_cache.h"
#include "storage/st_env.h"
#include "storage/st_err.h"
#include "storage/st_keyspace.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#define MS_PER_S 1000
#define US_PER_S 1000000
#define S_PER_DAY 86400
#define INFO_LINE_MAX 512
#define CONFIG_ARGS_MAX 16
#define KIB 1024.0
#define MIB (1024.0 * 1024.0)
#define GIB (1024.0 * 1024.0 * 1024.0)
#define BYTES_PER_MB (1024 * 1024)

void srv_cmd_dbsize(srv_conn *c)
{
    struct st_txn *t = srv_txn_read_or_reply(c);
    uint64_t keys, expires;
    int rc;

    if (!t)
        return;
    if ((rc = st_keyspace_dbsize(t, c->db, &keys, &expires)))
        srv_txn_error(c, rc);
    else
        srv_reply_int(c, (long long)keys);
}

/* FLUSHDB / FLUSHALL [ASYNC|SYNC]: both run synchronously and in bounded
 * chunks, so ASYNC gives the same result a moment sooner or later. */
static void flush_generic(srv_conn *c, int db)
{
    uint64_t version;
    int rc;

    if (c->argc > 2 ||
        (c->argc == 2 &&
         !srv_util_streq(c->argv[1].ptr, c->argv[1].len, "async") &&
         !srv_util_streq(c->argv[1].ptr, c->argv[1].len, "sync"))) {
        srv_reply_error(c, SRV_ERR_SYNTAX);
        return;
    }
    if (c->flags & SRV_CONN_IN_EXEC) {
        /* Inside EXEC: in the transaction's own write transaction. */
        struct st_txn *t = srv_txn_write_or_reply(c);
        if (!t)
            return;
        rc = st_keyspace_flush_txn(t, db);
    } else {
        rc = st_keyspace_flush(c->worker->env, db, &version);
    }
    if (rc) {
        srv_txn_error(c, rc);
        return;
    }
    srv_reply_ok(c);
}

void srv_cmd_flushdb(srv_conn *c) { flush_generic(c, (int)c->db); }
void srv_cmd_flushall(srv_conn *c) { flush_generic(c, -1); }

void srv_cmd_time(srv_conn *c)
{
    int64_t us = srv_util_ustime();

    srv_reply_array(c, 2);
    srv_reply_bulk_ll(c, us / US_PER_S);
    srv_reply_bulk_ll(c, us % US_PER_S);
}

void srv_cmd_role(srv_conn *c)
{
    srv_reply_array(c, 3);
    srv_reply_bulk_cstr(c, "master");
    srv_reply_int(c, 0);
    srv_reply_array(c, 0);
}

static int64_t last_save_s(void)
{
    int64_t ms = atomic_load(&srv_her.stats->last_save_ms);

    return (ms ? ms : srv_her.start_ms) / MS_PER_S;
}

/* ---- SAVE / BGSAVE: a compacted LMDB copy at dir/dbfilename ---- */

static int backup_path(char *buf, size_t size)
{
    const char *f = srv_her.cfg->dbfilename;

    return (size_t)snprintf(buf, size, "%s%s%s",
                            f[0] == '/' ? "" : srv_her.cfg->dir,
                            f[0] == '/' ? "" : "/", f) < size
               ? 0
               : -1;
}

/* Run the copy and record its outcome for LASTSAVE and INFO. */
static int do_save(st_env *env)
{
    char path[SRV_PATH_MAX + SRV_PATH_MAX];
    int64_t t0 = srv_util_ustime();
    int rc = backup_path(path, sizeof path) ? ENAMETOOLONG
                                            : st_env_backup(env, path);

    atomic_store(&srv_her.stats->last_save_status, rc);
    atomic_store(&srv_her.stats->last_save_us, srv_util_ustime() - t0);
    if (rc == 0) {
        atomic_store(&srv_her.stats->last_save_ms, srv_util_mstime());
        srv_log(SRV_LOG_NOTICE, 0, "DB saved on disk: %s", path);
    } else {
        srv_log(SRV_LOG_WARNING, rc > 0 ? rc : 0, "saving %s failed: %s", path,
                st_strerror(rc));
    }
    return rc;
}

void srv_cmd_save(srv_conn *c)
{
    int64_t none = 0;

    if (!atomic_compare_exchange_strong(&srv_her.stats->save_in_progress, &none,
                                        getpid())) {
        srv_reply_error(c, "ERR Background save already in progress");
        return;
    }
    int rc = do_save(c->worker->env);
    atomic_store(&srv_her.stats->save_in_progress, 0);
    if (rc)
        srv_reply_errorf(c, "ERR save failed: %s", st_strerror(rc));
    else
        srv_reply_ok(c);
}

static void *bgsave_thread(void *env)
{
    do_save(env);
    atomic_store(&srv_her.stats->save_in_progress, 0);
    return NULL;
}

void srv_cmd_bgsave(srv_conn *c)
{
    pthread_attr_t attr;
    pthread_t tid;
    int64_t none = 0;

    if (c->argc > 2 ||
        (c->argc == 2 &&
         !srv_util_streq(c->argv[1].ptr, c->argv[1].len, "schedule"))) {
        srv_reply_error(c, SRV_ERR_SYNTAX);
        return;
    }
    if (!atomic_compare_exchange_strong(&srv_her.stats->save_in_progress, &none,
                                        getpid())) {
        srv_reply_error(c, "ERR Background save already in progress");
        return;
    }
    /* A thread of this worker: LMDB lets it read in its own transaction
     * while this thread goes on serving. */
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    int rc = pthread_create(&tid, &attr, bgsave_thread, c->worker->env);
    pthread_attr_destroy(&attr);
    if (rc) {
        atomic_store(&srv_her.stats->save_in_progress, 0);
        srv_reply_errorf(c, "ERR can't start the background save: %s",
                         strerror(rc));
        return;
    }
    srv_reply_simple(c, "Background saving started");
}

void srv_cmd_lastsave(srv_conn *c) { srv_reply_int(c, last_save_s()); }

/* ---- INFO ---- */

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

static void human_bytes(char *out, size_t size, double n)
{
    if (n < KIB)
        snprintf(out, size, "%.0fB", n);
    else if (n < MIB)
        snprintf(out, size, "%.2fK", n / KIB);
    else if (n < GIB)
        snprintf(out, size, "%.2fM", n / MIB);
    else
        snprintf(out, size, "%.2fG", n / GIB);
}

static long long rss_bytes(void)
{
    long long pages = 0, rss = 0;
    FILE *f = fopen("/proc/self/statm", "r");

    if (f) {
        if (fscanf(f, "%lld %lld", &pages, &rss) != 2)
            rss = 0;
        fclose(f);
    }
    return rss * sysconf(_SC_PAGESIZE);
}

static const char *const sync_names[] = { "no", "everysec", "always" };

static void info_server(srv_buf *b)
{
    struct utsname u;
    int64_t now = srv_util_mstime();
    int64_t up = (now - srv_her.start_ms) / MS_PER_S;

    uname(&u);
    add(b, "# Server\r\n");
    add(b, "redis_version:%s\r\n", SRV_REDIS_VERSION);
    add(b, "larder_version:%s\r\n", SRV_VERSION);
    add(b, "redis_git_sha1:00000000\r\nredis_git_dirty:0\r\n");
    add(b, "redis_mode:standalone\r\n");
    add(b, "os:%s %s %s\r\n", u.sysname, u.release, u.machine);
    add(b, "arch_bits:%d\r\n", (int)(sizeof(void *) * 8));
    add(b, "multiplexing_api:epoll\r\n");
    add(b, "process_id:%d\r\n", (int)srv_her.master_pid);
    add(b, "worker_process_id:%d\r\n", (int)getpid());
    add(b, "workers:%d\r\n", srv_her.nworkers);
    add(b, "run_id:%016llx%016llx\r\n", (unsigned long long)srv_her.start_ms,
        (unsigned long long)srv_her.master_pid);
    add(b, "tcp_port:%lld\r\n", srv_her.cfg->port);
    add(b, "server_time_usec:%lld\r\n", (long long)srv_util_ustime());
    add(b, "uptime_in_seconds:%lld\r\n", (long long)up);
    add(b, "uptime_in_days:%lld\r\n", (long long)(up / S_PER_DAY));
    add(b, "hz:%lld\r\n", srv_her.cfg->hz);
    add(b, "executable:%s\r\n", srv_her.executable);
    add(b, "config_file:%s\r\n", srv_her.cfg->config_file);
}

static void info_clients(srv_buf *b)
{
    add(b, "# Clients\r\n");
    add(b, "connected_clients:%lld\r\n",
        (long long)SRV_STATS_SUM(srv_her.stats, connected));
    add(b, "maxclients:%lld\r\n", srv_her.cfg->maxclients);
    add(b, "blocked_clients:0\r\n");
}

static void info_memory(const srv_conn *c, srv_buf *b)
{
    char h[INFO_LINE_MAX];
    long long rss = rss_bytes();
    st_env_stat st = { 0 };

    st_env_stat_get(c->worker->env, &st);
    add(b, "# Memory\r\n");
    human_bytes(h, sizeof h, (double)rss);
    add(b, "used_memory:%lld\r\nused_memory_human:%s\r\n", rss, h);
    add(b, "used_memory_rss:%lld\r\n", rss);
    add(b,
        "maxmemory:0\r\nmaxmemory_human:0B\r\nmaxmemory_policy:noeviction\r\n");
    human_bytes(h, sizeof h, (double)st.used_bytes);
    add(b, "used_disk:%llu\r\nused_disk_human:%s\r\n",
        (unsigned long long)st.used_bytes, h);
    add(b, "maxdisk:%llu\r\n", (unsigned long long)st.map_size);
}

static void info_persistence(const srv_conn *c, srv_buf *b)
{
    st_env_stat st = { 0 };
    int64_t last_sync = atomic_load(&srv_her.stats->last_sync_ms);

    st_env_stat_get(c->worker->env, &st);
    add(b, "# Persistence\r\n");
    add(b, "loading:0\r\n");
    add(b, "rdb_changes_since_last_save:0\r\n");
    add(b, "rdb_bgsave_in_progress:%d\r\n",
        atomic_load(&srv_her.stats->save_in_progress) != 0);
    add(b, "rdb_last_save_time:%lld\r\n", (long long)last_save_s());
    add(b, "rdb_last_bgsave_status:%s\r\n",
        atomic_load(&srv_her.stats->last_save_status) ? "err" : "ok");
    add(b, "rdb_last_bgsave_time_sec:%lld\r\n",
        (long long)(atomic_load(&srv_her.stats->last_save_us) / US_PER_S));
    add(b, "rdb_saves:%d\r\n", atomic_load(&srv_her.stats->last_save_ms) != 0);
    add(b, "backup_file:%s/%s\r\n", srv_her.cfg->dir, srv_her.cfg->dbfilename);
    add(b, "aof_enabled:0\r\n");
    add(b, "sync:%s\r\n", sync_names[srv_her.cfg->sync]);
    add(b, "last_sync_time_ms:%lld\r\n", (long long)last_sync);
    add(b, "last_sync_duration_us:%lld\r\n",
        (long long)atomic_load(&srv_her.stats->last_sync_us));
    add(b, "syncs:%lld\r\n", (long long)SRV_STATS_SUM(srv_her.stats, syncs));
    add(b, "durable_txnid:%lld\r\n",
        (long long)atomic_load(&srv_her.stats->durable_txn));
    add(b, "committed_txnid:%llu\r\n", (unsigned long long)st.last_txn);
    add(b, "lmdb_last_txnid:%llu\r\n", (unsigned long long)st.last_txn);
    add(b, "lmdb_map_size:%llu\r\n", (unsigned long long)st.map_size);
    add(b, "lmdb_used_bytes:%llu\r\n", (unsigned long long)st.used_bytes);
    add(b, "lmdb_file_bytes:%llu\r\n", (unsigned long long)st.file_bytes);
    add(b, "lmdb_readers:%u\r\nlmdb_max_readers:%u\r\n", st.readers_used,
        st.readers_max);
}

static void info_stats(srv_buf *b)
{
    srv_stats *s = srv_her.stats;

    add(b, "# Stats\r\n");
    add(b, "total_connections_received:%lld\r\n",
        (long long)SRV_STATS_SUM(s, total_connections));
    add(b, "total_commands_processed:%lld\r\n",
        (long long)SRV_STATS_SUM(s, total_commands));
    add(b, "instantaneous_ops_per_sec:%lld\r\n",
        (long long)SRV_STATS_SUM(s, ops_per_sec));
    add(b, "total_net_input_bytes:%lld\r\n",
        (long long)SRV_STATS_SUM(s, net_input_bytes));
    add(b, "total_net_output_bytes:%lld\r\n",
        (long long)SRV_STATS_SUM(s, net_output_bytes));
    add(b, "rejected_connections:%lld\r\n",
        (long long)SRV_STATS_SUM(s, rejected_connections));
    add(b, "expired_keys:%lld\r\n", (long long)SRV_STATS_SUM(s, expired_keys));
    add(b, "evicted_keys:0\r\n");
    add(b, "lazyfree_pending_objects:%lld\r\n",
        (long long)atomic_load(&s->lazyfree_pending));
    add(b, "reaper_ticks:%lld\r\n", (long long)SRV_STATS_SUM(s, ticks));
    add(b, "reaper_time_us:%lld\r\n", (long long)SRV_STATS_SUM(s, busy_us));
    add(b, "keyspace_hits:%lld\r\n",
        (long long)SRV_STATS_SUM(s, keyspace_hits));
    add(b, "keyspace_misses:%lld\r\n",
        (long long)SRV_STATS_SUM(s, keyspace_misses));
    add(b, "write_transactions:%lld\r\n", (long long)SRV_STATS_SUM(s, commits));
    add(b, "worker_respawns:%lld\r\n", (long long)SRV_STATS_SUM(s, respawns));
}

static void info_cache(srv_buf *b)
{
    shm_cache_stats_t st;

    shm_cache_stats(srv_her.cache, &st);
    add(b, "# Cache\r\n");
    add(b, "cache_enabled:%d\r\n", shm_cache_enabled(srv_her.cache));
    add(b, "cache_policy:%s\r\n", shm_cache_policy_name(st.policy));
    add(b, "cache_stripes:%u\r\n", st.nstripes);
    add(b, "cache_budget_bytes:%llu\r\n", (unsigned long long)st.budget);
    add(b, "cache_max_bytes:%llu\r\n", (unsigned long long)st.max_bytes);
    add(b, "cache_used_bytes:%llu\r\n", (unsigned long long)st.bytes_used);
    add(b, "cache_slab_bytes:%llu\r\n", (unsigned long long)st.bytes_slab);
    add(b, "cache_entries:%llu\r\n", (unsigned long long)st.entries);
    add(b, "cache_tombstones:%llu\r\n", (unsigned long long)st.tombstones);
    add(b, "cache_hits:%llu\r\n", (unsigned long long)st.hits);
    add(b, "cache_misses:%llu\r\n", (unsigned long long)st.misses);
    add(b, "cache_evictions:%llu\r\n", (unsigned long long)st.evictions);
    add(b, "cache_fills_refused_stale:%llu\r\n",
        (unsigned long long)st.fills_refused);
    add(b, "cache_puts_dropped:%llu\r\n", (unsigned long long)st.puts_dropped);
    add(b, "cache_lock_waits:%llu\r\n", (unsigned long long)st.lock_waits);
    add(b, "cache_owner_dead_recoveries:%llu\r\n",
        (unsigned long long)st.owner_dead);
    add(b, "cache_max_item_bytes:%zu\r\n", st.max_item);
}

static void info_replication(srv_buf *b)
{
    add(b, "# Replication\r\nrole:master\r\nconnected_slaves:0\r\n");
}

static void info_keyspace(srv_conn *c, srv_buf *b)
{
    struct st_txn *t = srv_txn_read_or_reply(c);

    add(b, "# Keyspace\r\n");
    if (!t)
        return;
    for (unsigned db = 0; db < (unsigned)srv_her.cfg->databases; db++) {
        uint64_t keys, expires;
        if (st_keyspace_dbsize(t, db, &keys, &expires) == 0 && keys)
            add(b, "db%u:keys=%llu,expires=%llu,avg_ttl=0\r\n", db,
                (unsigned long long)keys, (unsigned long long)expires);
    }
}

typedef struct info_section {
    const char *name;
    int in_default;
} info_section;

static const info_section sections[] = {
    { "server", 1 },      { "clients", 1 },  { "memory", 1 },
    { "persistence", 1 }, { "stats", 1 },    { "replication", 1 },
    { "cache", 1 },       { "keyspace", 1 },
};
#define NSECTIONS (sizeof sections / sizeof sections[0])

static int wanted(srv_conn *c, const info_section *s)
{
    if (c->argc == 1)
        return s->in_default;
    for (int i = 1; i < c->argc; i++) {
        const srv_slice *a = &c->argv[i];
        if (srv_util_streq(a->ptr, a->len, s->name) ||
            srv_util_streq(a->ptr, a->len, "all") ||
            srv_util_streq(a->ptr, a->len, "everything") ||
            (srv_util_streq(a->ptr, a->len, "default") && s->in_default))
            return 1;
    }
    return 0;
}

void srv_cmd_info(srv_conn *c)
{
    srv_buf b = { NULL, 0, 0 };
    int first = 1;

    for (size_t i = 0; i < NSECTIONS; i++) {
        if (!wanted(c, &sections[i]))
            continue;
        if (!first)
            add(&b, "\r\n");
        first = 0;
        switch (i) {
        case 0: info_server(&b); break;
        case 1: info_clients(&b); break;
        case 2: info_memory(c, &b); break;
        case 3: info_persistence(c, &b); break;
        case 4: info_stats(&b); break;
        case 5: info_replication(&b); break;
        case 6: info_cache(&b); break;
        default: info_keyspace(c, &b); break;
        }
    }
    srv_reply_verbatim(c, b.data ? b.data : "", b.len);
    srv_buf_free(&b);
}

/* ---- SHUTDOWN ---- */

void srv_cmd_shutdown(srv_conn *c)
{
    int abort_ = 0;

    for (int i = 1; i < c->argc; i++) {
        const srv_slice *a = &c->argv[i];
        if (srv_util_streq(a->ptr, a->len, "abort"))
            abort_ = 1;
        else if (!srv_util_streq(a->ptr, a->len, "nosave") &&
                 !srv_util_streq(a->ptr, a->len, "save") &&
                 !srv_util_streq(a->ptr, a->len, "now") &&
                 !srv_util_streq(a->ptr, a->len, "force")) {
            srv_reply_error(c, SRV_ERR_SYNTAX);
            return;
        }
    }
    if (abort_) {
        if (c->argc != 2)
            srv_reply_error(c, SRV_ERR_SYNTAX);
        else
            srv_reply_error(c, "ERR No shutdown in progress.");
        return;
    }
    if (srv_her.master_pid <= 0) {
        srv_reply_error(c, "ERR Errors trying to SHUTDOWN. Check logs.");
        return; /* an embedded worker: no master */
    }
    srv_log(SRV_LOG_NOTICE, 0, "SHUTDOWN requested by client %s", c->addr);
    kill(srv_her.master_pid, SIGTERM);
    /* As Redis: no reply; the connection closes with the server. */
    c->flags |= SRV_CONN_CLOSE_ASAP;
}

/* ---- DEBUG (tests and diagnosis; off unless enable-debug-command) ---- */

static int debug_allowed(srv_conn *c)
{
    long long mode = srv_her.cfg->enable_debug_command;

    if (mode == SRV_DEBUG_YES)
        return 1;
    if (mode == SRV_DEBUG_LOCAL)
        return (c->flags & SRV_CONN_UNIX) ||
               strncmp(c->addr, "127.", strlen("127.")) == 0 ||
               strncmp(c->addr, "::1:", strlen("::1:")) == 0;
    return 0;
}

static void sleep_us(int64_t us)
{
    struct timespec ts = { us / US_PER_S, (us % US_PER_S) * 1000 };

    while (nanosleep(&ts, &ts) && errno == EINTR)
        ;
}

/*
 * DEBUG SLEEP <seconds>: block this worker (as Redis blocks its server).
 * DEBUG TXN-SLEEP <ms>: hold the LMDB write transaction (with one write
 * in it) for ms, then commit; crash tests kill the worker meanwhile.
 */
void srv_cmd_debug(srv_conn *c)
{
    const srv_slice *sub = &c->argv[1];

    if (!debug_allowed(c)) {
        srv_reply_error(c, "ERR DEBUG command not allowed. If the "
                           "enable-debug-command option is set to \"local\", "
                           "you can run it from a local connection, otherwise "
                           "you need to set this option in the configuration "
                           "file, and then restart the server.");
        return;
    }
    if (srv_util_streq(sub->ptr, sub->len, "sleep") && c->argc == 3) {
        double s;
        if (!srv_util_str2d(c->argv[2].ptr, c->argv[2].len, &s) || s < 0) {
            srv_reply_error(c, SRV_ERR_NOT_FLOAT);
            return;
        }
        sleep_us((int64_t)(s * US_PER_S));
        srv_reply_ok(c);
    } else if (srv_util_streq(sub->ptr, sub->len, "txn-sleep") &&
               c->argc == 3) {
        long long ms;
        struct st_txn *t;
        st_keyref k;
        if (srv_args_ll_or_reply(c, &c->argv[2], &ms))
            return;
        if (!(t = srv_txn_write_or_reply(c)))
            return;
        st_codec_keyref_init(&k, c->db, "__debug_txn_sleep__",
                             strlen("__debug_txn_sleep__"));
        int rc = st_keyspace_string_set(t, &k, "1", 1, 0);
        if (rc) {
            srv_txn_error(c, rc);
            return;
        }
        srv_log(SRV_LOG_NOTICE, 0,
                "DEBUG TXN-SLEEP: holding the write "
                "transaction for %lld ms",
                ms);
        sleep_us(ms * 1000);
        srv_reply_ok(c);
    } else {
        srv_args_subcommand_error(c);
    }
}
