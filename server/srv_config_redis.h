/*
 * srv_config_redis.h - issue 15's rows of the directive table
 * (srv_config.h): larder's operational directives (admin socket, worker
 * pool, shutdown, daemon and syslog, slow log and latency, the Redis names
 * mapped onto larder's durability and cache), then every other parameter
 * Redis 7.0 has, accepted, checked, stored and answered as Redis does so
 * that tools and test suites that set them go on (they change nothing in
 * larder). The value tables of enum directives and the checkers of the
 * special ones (save, oom-score-adj-values, ...) are
 * srv_config_redis.c's.
 *
 * A row of another issue with the same name wins (srv_config.c looks the
 * table up in order and CONFIG GET lists a name once): a parameter that
 * gains a meaning moves to its issue's section and its row here goes.
 */
#ifndef SRV_CONFIG_REDIS_H
#define SRV_CONFIG_REDIS_H

#include <stddef.h>

/* Room for a SRV_CFG_TEXT or SRV_CFG_SPECIAL value, NUL included. */
#define SRV_CFG_TEXT_MAX 512
/* The most workers a tree may have (workers, workers-max). */
#define SRV_WORKERS_LIMIT 256

#define SRV_CFG_INT_MAX 2147483647ll
#define SRV_CFG_INT_MIN (-2147483647ll - 1)
#define SRV_CFG_UINT_MAX 4294967295ll
#define SRV_CFG_LLONG_MAX 0x7fffffffffffffffll

/* Value tables of SRV_CFG_ENUM directives (the row's `min`). */
enum srv_cfg_enum {
    SRV_ENUM_SUPERVISED,
    SRV_ENUM_FACILITY,
    SRV_ENUM_MAXMEMORY_POLICY,
    SRV_ENUM_REPL_DISKLESS_LOAD,
    SRV_ENUM_OOM_SCORE_ADJ,
    SRV_ENUM_ACL_PUBSUB,
    SRV_ENUM_SANITIZE,
    SRV_ENUM_PROTECTED,
    SRV_ENUM_ENDPOINT,
    SRV_ENUM_PROPAGATION_ERROR,
    SRV_NENUMS
};

/* supervised's values. */
enum srv_supervised {
    SRV_SUPERVISED_NO,
    SRV_SUPERVISED_UPSTART,
    SRV_SUPERVISED_SYSTEMD,
    SRV_SUPERVISED_AUTO
};

/* Checkers of SRV_CFG_SPECIAL directives (the row's `min`). */
enum srv_cfg_special {
    SRV_SPECIAL_SAVE,        /* "seconds changes ..." pairs, or "" */
    SRV_SPECIAL_OOMV,        /* oom-score-adj-values: three integers */
    SRV_SPECIAL_PERCENTILES, /* latency-tracking-info-percentiles */
    SRV_SPECIAL_SHUTDOWN,    /* shutdown-on-sigint / -sigterm flags */
    SRV_SPECIAL_REPLICAOF,   /* "host port", "no one" or "" */
    SRV_NSPECIALS
};

#define SRV_CFG_R_ 0x1 /* SRV_CFG_RUNTIME, spelt short for the rows */

/*
 * larder's operational directives, X(name, field, kind, default, min,
 * max, flags) as srv_config.h's table. admin-socket is relative to dir
 * unless absolute; workers-max 0 means max(4 x workers, 16) up to
 * SRV_WORKERS_LIMIT. appendonly, appendfsync and sync are one setting
 * seen three ways (srv_config.c links them): appendonly no is sync no,
 * appendonly yes is sync = appendfsync. maxmemory, when not 0, caps the
 * shared cache's budget (cache-mb).
 */
#define SRV_CONFIG_OPS_DIRECTIVES(X)                                           \
    X("admin-socket", admin_socket, SRV_CFG_STRING, "larder-admin.sock", 0, 0, \
      0)                                                                       \
    X("workers-max", workers_max, SRV_CFG_INT, "0", 0, SRV_WORKERS_LIMIT, 0)   \
    X("shutdown-timeout", shutdown_timeout, SRV_CFG_INT, "10", 0,              \
      SRV_CFG_INT_MAX, SRV_CFG_R_)                                             \
    X("daemonize", daemonize, SRV_CFG_YESNO, "no", 0, 0, 0)                    \
    X("supervised", supervised, SRV_CFG_ENUM, "no", SRV_ENUM_SUPERVISED, 0, 0) \
    X("syslog-enabled", syslog_enabled, SRV_CFG_YESNO, "no", 0, 0, 0)          \
    X("syslog-ident", syslog_ident, SRV_CFG_TEXT, "larder", 0, 0, 0)           \
    X("syslog-facility", syslog_facility, SRV_CFG_ENUM, "local0",              \
      SRV_ENUM_FACILITY, 0, 0)                                                 \
    X("slowlog-log-slower-than", slowlog_log_slower_than, SRV_CFG_INT,         \
      "10000", -1, SRV_CFG_LLONG_MAX, SRV_CFG_R_)                              \
    X("slowlog-max-len", slowlog_max_len, SRV_CFG_INT, "128", 0,               \
      SRV_CFG_LLONG_MAX, SRV_CFG_R_)                                           \
    X("latency-monitor-threshold", latency_monitor_threshold, SRV_CFG_INT,     \
      "0", 0, SRV_CFG_LLONG_MAX, SRV_CFG_R_)                                   \
    X("latency-tracking", latency_tracking, SRV_CFG_YESNO, "yes", 0, 0,        \
      SRV_CFG_R_)                                                              \
    X("latency-tracking-info-percentiles", latency_tracking_info_percentiles,  \
      SRV_CFG_SPECIAL, "50 99 99.9", SRV_SPECIAL_PERCENTILES, 0,               \
      SRV_CFG_R_ | SRV_CFG_MULTIARG)                                           \
    X("appendonly", appendonly, SRV_CFG_APPENDONLY, "yes", 0, 0, SRV_CFG_R_)   \
    X("appendfsync", appendfsync, SRV_CFG_APPENDFSYNC, "everysec", 0, 0,       \
      SRV_CFG_R_)                                                              \
    X("maxmemory", maxmemory, SRV_CFG_UBYTES, "0", 0, 0, SRV_CFG_R_)           \
    X("save", save, SRV_CFG_SPECIAL, "", SRV_SPECIAL_SAVE, 0,                  \
      SRV_CFG_R_ | SRV_CFG_MULTIARG)

#define SRV_CONFIG_OPS_FIELDS                                 \
    char admin_socket[4096];                                  \
    long long workers_max;                                    \
    long long shutdown_timeout;                               \
    long long daemonize;                                      \
    long long supervised;                                     \
    long long syslog_enabled;                                 \
    char syslog_ident[SRV_CFG_TEXT_MAX];                      \
    long long syslog_facility;                                \
    long long slowlog_log_slower_than;                        \
    long long slowlog_max_len;                                \
    long long latency_monitor_threshold;                      \
    long long latency_tracking;                               \
    char latency_tracking_info_percentiles[SRV_CFG_TEXT_MAX]; \
    long long appendonly;                                     \
    long long appendfsync;                                    \
    long long maxmemory;                                      \
    char save[SRV_CFG_TEXT_MAX];

/* The field a row of the Redis table below adds to srv_config, by kind. */
#define SRV_CFG_FIELD_SRV_CFG_YESNO(f) long long f;
#define SRV_CFG_FIELD_SRV_CFG_INT(f) long long f;
#define SRV_CFG_FIELD_SRV_CFG_BYTES(f) long long f;
#define SRV_CFG_FIELD_SRV_CFG_UBYTES(f) long long f;
#define SRV_CFG_FIELD_SRV_CFG_BYTES_PCT(f) long long f;
#define SRV_CFG_FIELD_SRV_CFG_ENUM(f) long long f;
#define SRV_CFG_FIELD_SRV_CFG_TEXT(f) char f[SRV_CFG_TEXT_MAX];
#define SRV_CFG_FIELD_SRV_CFG_SPECIAL(f) char f[SRV_CFG_TEXT_MAX];

/* Flag of the rows below: any other row of the same name wins. */
#define SRV_CFG_COMPAT 0x10

/* Row shorthands: any kind, a boolean, an integer, a memory value, a
 * text; each marks its row SRV_CFG_COMPAT. */
#define SRV_CFG_X_(X, n, f, k, d, lo, hi, fl) \
    X(n, f, k, d, lo, hi, (fl) | SRV_CFG_COMPAT)
#define SRV_CFG_B_(X, n, f, d, fl) \
    SRV_CFG_X_(X, n, f, SRV_CFG_YESNO, d, 0, 0, fl)
#define SRV_CFG_I_(X, n, f, d, lo, hi, fl) \
    SRV_CFG_X_(X, n, f, SRV_CFG_INT, d, lo, hi, fl)
#define SRV_CFG_M_(X, n, f, d, lo, hi, fl) \
    SRV_CFG_X_(X, n, f, SRV_CFG_BYTES, d, lo, hi, fl)
#define SRV_CFG_T_(X, n, f, d, fl) \
    SRV_CFG_X_(X, n, f, SRV_CFG_TEXT, d, 0, 0, fl)

/*
 * Every other parameter of Redis 7.0 (CONFIG GET * of redis-server
 * 7.0.15), with its default, bounds and mutability. X rows have a field;
 * A rows are aliases (SRV_CFG_ALIAS) of the row before, sharing its
 * field. A flags value of 0 means immutable, as Redis's IMMUTABLE_CONFIG.
 */
#define SRV_CONFIG_REDIS_DIRECTIVES(X, A)                                      \
    SRV_CFG_B_(X, "rdbchecksum", rdbchecksum, "yes", 0)                        \
    SRV_CFG_B_(X, "io-threads-do-reads", io_threads_do_reads, "no", 0)         \
    SRV_CFG_B_(X, "always-show-logo", always_show_logo, "no", 0)               \
    SRV_CFG_B_(X, "rdbcompression", rdbcompression, "yes", SRV_CFG_R_)         \
    SRV_CFG_B_(X, "rdb-del-sync-files", rdb_del_sync_files, "no", SRV_CFG_R_)  \
    SRV_CFG_B_(X, "activerehashing", activerehashing, "yes", SRV_CFG_R_)       \
    SRV_CFG_B_(X, "stop-writes-on-bgsave-error", stop_writes_on_bgsave_error,  \
               "yes", SRV_CFG_R_)                                              \
    SRV_CFG_B_(X, "set-proc-title", set_proc_title, "yes", 0)                  \
    SRV_CFG_B_(X, "dynamic-hz", dynamic_hz, "yes", SRV_CFG_R_)                 \
    SRV_CFG_B_(X, "lazyfree-lazy-eviction", lazyfree_lazy_eviction, "no",      \
               SRV_CFG_R_)                                                     \
    SRV_CFG_B_(X, "lazyfree-lazy-expire", lazyfree_lazy_expire, "no",          \
               SRV_CFG_R_)                                                     \
    SRV_CFG_B_(X, "lazyfree-lazy-server-del", lazyfree_lazy_server_del, "no",  \
               SRV_CFG_R_)                                                     \
    SRV_CFG_B_(X, "lazyfree-lazy-user-del", lazyfree_lazy_user_del, "no",      \
               SRV_CFG_R_)                                                     \
    SRV_CFG_B_(X, "lazyfree-lazy-user-flush", lazyfree_lazy_user_flush, "no",  \
               SRV_CFG_R_)                                                     \
    SRV_CFG_B_(X, "repl-disable-tcp-nodelay", repl_disable_tcp_nodelay, "no",  \
               SRV_CFG_R_)                                                     \
    SRV_CFG_B_(X, "repl-diskless-sync", repl_diskless_sync, "yes", SRV_CFG_R_) \
    SRV_CFG_B_(X, "aof-rewrite-incremental-fsync",                             \
               aof_rewrite_incremental_fsync, "yes", SRV_CFG_R_)               \
    SRV_CFG_B_(X, "no-appendfsync-on-rewrite", no_appendfsync_on_rewrite,      \
               "no", SRV_CFG_R_)                                               \
    SRV_CFG_B_(X, "cluster-require-full-coverage",                             \
               cluster_require_full_coverage, "yes", SRV_CFG_R_)               \
    SRV_CFG_B_(X, "rdb-save-incremental-fsync", rdb_save_incremental_fsync,    \
               "yes", SRV_CFG_R_)                                              \
    SRV_CFG_B_(X, "aof-load-truncated", aof_load_truncated, "yes", SRV_CFG_R_) \
    SRV_CFG_B_(X, "aof-use-rdb-preamble", aof_use_rdb_preamble, "yes",         \
               SRV_CFG_R_)                                                     \
    SRV_CFG_B_(X, "aof-timestamp-enabled", aof_timestamp_enabled, "no",        \
               SRV_CFG_R_)                                                     \
    SRV_CFG_B_(X, "cluster-replica-no-failover", cluster_replica_no_failover,  \
               "no", SRV_CFG_R_)                                               \
    SRV_CFG_B_(A, "cluster-slave-no-failover", cluster_replica_no_failover,    \
               "no", SRV_CFG_R_ | SRV_CFG_ALIAS)                               \
    SRV_CFG_B_(X, "replica-lazy-flush", replica_lazy_flush, "no", SRV_CFG_R_)  \
    SRV_CFG_B_(A, "slave-lazy-flush", replica_lazy_flush, "no",                \
               SRV_CFG_R_ | SRV_CFG_ALIAS)                                     \
    SRV_CFG_B_(X, "replica-serve-stale-data", replica_serve_stale_data, "yes", \
               SRV_CFG_R_)                                                     \
    SRV_CFG_B_(A, "slave-serve-stale-data", replica_serve_stale_data, "yes",   \
               SRV_CFG_R_ | SRV_CFG_ALIAS)                                     \
    SRV_CFG_B_(X, "replica-read-only", replica_read_only, "yes", SRV_CFG_R_)   \
    SRV_CFG_B_(A, "slave-read-only", replica_read_only, "yes",                 \
               SRV_CFG_R_ | SRV_CFG_ALIAS)                                     \
    SRV_CFG_B_(X, "replica-ignore-maxmemory", replica_ignore_maxmemory, "yes", \
               SRV_CFG_R_)                                                     \
    SRV_CFG_B_(A, "slave-ignore-maxmemory", replica_ignore_maxmemory, "yes",   \
               SRV_CFG_R_ | SRV_CFG_ALIAS)                                     \
    SRV_CFG_B_(X, "jemalloc-bg-thread", jemalloc_bg_thread, "yes", SRV_CFG_R_) \
    SRV_CFG_B_(X, "activedefrag", activedefrag, "no", SRV_CFG_R_)              \
    SRV_CFG_B_(X, "cluster-enabled", cluster_enabled, "no", 0)                 \
    SRV_CFG_B_(X, "cluster-allow-reads-when-down",                             \
               cluster_allow_reads_when_down, "no", SRV_CFG_R_)                \
    SRV_CFG_B_(X, "cluster-allow-pubsubshard-when-down",                       \
               cluster_allow_pubsubshard_when_down, "yes", SRV_CFG_R_)         \
    SRV_CFG_B_(X, "crash-log-enabled", crash_log_enabled, "yes", SRV_CFG_R_)   \
    SRV_CFG_B_(X, "crash-memcheck-enabled", crash_memcheck_enabled, "yes",     \
               SRV_CFG_R_)                                                     \
    SRV_CFG_B_(X, "disable-thp", disable_thp, "yes", 0)                        \
    SRV_CFG_B_(X, "cluster-allow-replica-migration",                           \
               cluster_allow_replica_migration, "yes", SRV_CFG_R_)             \
    SRV_CFG_B_(X, "replica-announced", replica_announced, "yes", SRV_CFG_R_)   \
    SRV_CFG_B_(X, "aof-disable-auto-gc", aof_disable_auto_gc, "no",            \
               SRV_CFG_R_)                                                     \
    SRV_CFG_B_(X, "replica-ignore-disk-write-errors",                          \
               replica_ignore_disk_write_errors, "no", SRV_CFG_R_)             \
    SRV_CFG_T_(X, "replica-announce-ip", replica_announce_ip, "", SRV_CFG_R_)  \
    SRV_CFG_T_(A, "slave-announce-ip", replica_announce_ip, "",                \
               SRV_CFG_R_ | SRV_CFG_ALIAS)                                     \
    SRV_CFG_T_(X, "masteruser", masteruser, "", SRV_CFG_R_)                    \
    SRV_CFG_T_(X, "masterauth", masterauth, "", SRV_CFG_R_)                    \
    SRV_CFG_T_(X, "cluster-announce-ip", cluster_announce_ip, "", SRV_CFG_R_)  \
    SRV_CFG_T_(X, "cluster-config-file", cluster_config_file, "nodes.conf", 0) \
    SRV_CFG_T_(X, "cluster-announce-hostname", cluster_announce_hostname, "",  \
               SRV_CFG_R_)                                                     \
    SRV_CFG_T_(X, "appendfilename", appendfilename, "appendonly.aof", 0)       \
    SRV_CFG_T_(X, "appenddirname", appenddirname, "appendonlydir", 0)          \
    SRV_CFG_T_(X, "server_cpulist", server_cpulist, "", 0)                     \
    SRV_CFG_T_(X, "bio_cpulist", bio_cpulist, "", 0)                           \
    SRV_CFG_T_(X, "aof_rewrite_cpulist", aof_rewrite_cpulist, "", 0)           \
    SRV_CFG_T_(X, "bgsave_cpulist", bgsave_cpulist, "", 0)                     \
    SRV_CFG_T_(X, "ignore-warnings", ignore_warnings, "", SRV_CFG_R_)          \
    SRV_CFG_T_(X, "proc-title-template", proc_title_template,                  \
               "{title} {listen-addr} {server-mode}", SRV_CFG_R_)              \
    SRV_CFG_T_(X, "bind-source-addr", bind_source_addr, "", SRV_CFG_R_)        \
    SRV_CFG_T_(X, "tls-client-cert-file", tls_client_cert_file, "",            \
               SRV_CFG_R_)                                                     \
    SRV_CFG_T_(X, "tls-client-key-file", tls_client_key_file, "", SRV_CFG_R_)  \
    SRV_CFG_T_(X, "tls-client-key-file-pass", tls_client_key_file_pass, "",    \
               SRV_CFG_R_)                                                     \
    SRV_CFG_X_(X, "repl-diskless-load", repl_diskless_load, SRV_CFG_ENUM,      \
               "disabled", SRV_ENUM_REPL_DISKLESS_LOAD, 0, SRV_CFG_R_)         \
    SRV_CFG_X_(X, "maxmemory-policy", maxmemory_policy, SRV_CFG_ENUM,          \
               "noeviction", SRV_ENUM_MAXMEMORY_POLICY, 0, SRV_CFG_R_)         \
    SRV_CFG_X_(X, "oom-score-adj", oom_score_adj, SRV_CFG_ENUM, "no",          \
               SRV_ENUM_OOM_SCORE_ADJ, 0, SRV_CFG_R_)                          \
    SRV_CFG_X_(X, "sanitize-dump-payload", sanitize_dump_payload,              \
               SRV_CFG_ENUM, "no", SRV_ENUM_SANITIZE, 0, SRV_CFG_R_)           \
    SRV_CFG_X_(X, "enable-protected-configs", enable_protected_configs,        \
               SRV_CFG_ENUM, "no", SRV_ENUM_PROTECTED, 0, 0)                   \
    SRV_CFG_X_(X, "enable-module-command", enable_module_command,              \
               SRV_CFG_ENUM, "no", SRV_ENUM_PROTECTED, 0, 0)                   \
    SRV_CFG_X_(X, "cluster-preferred-endpoint-type",                           \
               cluster_preferred_endpoint_type, SRV_CFG_ENUM, "ip",            \
               SRV_ENUM_ENDPOINT, 0, SRV_CFG_R_)                               \
    SRV_CFG_X_(X, "propagation-error-behavior", propagation_error_behavior,    \
               SRV_CFG_ENUM, "ignore", SRV_ENUM_PROPAGATION_ERROR, 0,          \
               SRV_CFG_R_)                                                     \
    SRV_CFG_I_(X, "io-threads", io_threads, "1", 1, 128, 0)                    \
    SRV_CFG_I_(X, "auto-aof-rewrite-percentage", auto_aof_rewrite_percentage,  \
               "100", 0, SRV_CFG_INT_MAX, SRV_CFG_R_)                          \
    SRV_CFG_I_(X, "cluster-replica-validity-factor",                           \
               cluster_replica_validity_factor, "10", 0, SRV_CFG_INT_MAX,      \
               SRV_CFG_R_)                                                     \
    SRV_CFG_I_(A, "cluster-slave-validity-factor",                             \
               cluster_replica_validity_factor, "10", 0, SRV_CFG_INT_MAX,      \
               SRV_CFG_R_ | SRV_CFG_ALIAS)                                     \
    SRV_CFG_I_(X, "cluster-migration-barrier", cluster_migration_barrier, "1", \
               0, SRV_CFG_INT_MAX, SRV_CFG_R_)                                 \
    SRV_CFG_I_(X, "active-defrag-cycle-min", active_defrag_cycle_min, "1", 1,  \
               99, SRV_CFG_R_)                                                 \
    SRV_CFG_I_(X, "active-defrag-cycle-max", active_defrag_cycle_max, "25", 1, \
               99, SRV_CFG_R_)                                                 \
    SRV_CFG_I_(X, "active-defrag-threshold-lower",                             \
               active_defrag_threshold_lower, "10", 0, 1000, SRV_CFG_R_)       \
    SRV_CFG_I_(X, "active-defrag-threshold-upper",                             \
               active_defrag_threshold_upper, "100", 0, 1000, SRV_CFG_R_)      \
    SRV_CFG_I_(X, "lfu-log-factor", lfu_log_factor, "10", 0, SRV_CFG_INT_MAX,  \
               SRV_CFG_R_)                                                     \
    SRV_CFG_I_(X, "lfu-decay-time", lfu_decay_time, "1", 0, SRV_CFG_INT_MAX,   \
               SRV_CFG_R_)                                                     \
    SRV_CFG_I_(X, "replica-priority", replica_priority, "100", 0,              \
               SRV_CFG_INT_MAX, SRV_CFG_R_)                                    \
    SRV_CFG_I_(A, "slave-priority", replica_priority, "100", 0,                \
               SRV_CFG_INT_MAX, SRV_CFG_R_ | SRV_CFG_ALIAS)                    \
    SRV_CFG_I_(X, "repl-diskless-sync-delay", repl_diskless_sync_delay, "5",   \
               0, SRV_CFG_INT_MAX, SRV_CFG_R_)                                 \
    SRV_CFG_I_(X, "maxmemory-samples", maxmemory_samples, "5", 1,              \
               SRV_CFG_INT_MAX, SRV_CFG_R_)                                    \
    SRV_CFG_I_(X, "maxmemory-eviction-tenacity", maxmemory_eviction_tenacity,  \
               "10", 0, 100, SRV_CFG_R_)                                       \
    SRV_CFG_I_(X, "replica-announce-port", replica_announce_port, "0", 0,      \
               65535, SRV_CFG_R_)                                              \
    SRV_CFG_I_(A, "slave-announce-port", replica_announce_port, "0", 0, 65535, \
               SRV_CFG_R_ | SRV_CFG_ALIAS)                                     \
    SRV_CFG_I_(X, "cluster-port", cluster_port, "0", 0, 65535, 0)              \
    SRV_CFG_I_(X, "cluster-announce-bus-port", cluster_announce_bus_port, "0", \
               0, 65535, SRV_CFG_R_)                                           \
    SRV_CFG_I_(X, "cluster-announce-port", cluster_announce_port, "0", 0,      \
               65535, SRV_CFG_R_)                                              \
    SRV_CFG_I_(X, "cluster-announce-tls-port", cluster_announce_tls_port, "0", \
               0, 65535, SRV_CFG_R_)                                           \
    SRV_CFG_I_(X, "repl-timeout", repl_timeout, "60", 1, SRV_CFG_INT_MAX,      \
               SRV_CFG_R_)                                                     \
    SRV_CFG_I_(X, "repl-ping-replica-period", repl_ping_replica_period, "10",  \
               1, SRV_CFG_INT_MAX, SRV_CFG_R_)                                 \
    SRV_CFG_I_(A, "repl-ping-slave-period", repl_ping_replica_period, "10", 1, \
               SRV_CFG_INT_MAX, SRV_CFG_R_ | SRV_CFG_ALIAS)                    \
    SRV_CFG_I_(X, "list-compress-depth", list_compress_depth, "0", 0,          \
               SRV_CFG_INT_MAX, SRV_CFG_R_)                                    \
    SRV_CFG_I_(X, "active-expire-effort", active_expire_effort, "1", 1, 10,    \
               SRV_CFG_R_)                                                     \
    SRV_CFG_I_(X, "min-replicas-to-write", min_replicas_to_write, "0", 0,      \
               SRV_CFG_INT_MAX, SRV_CFG_R_)                                    \
    SRV_CFG_I_(A, "min-slaves-to-write", min_replicas_to_write, "0", 0,        \
               SRV_CFG_INT_MAX, SRV_CFG_R_ | SRV_CFG_ALIAS)                    \
    SRV_CFG_I_(X, "min-replicas-max-lag", min_replicas_max_lag, "10", 0,       \
               SRV_CFG_INT_MAX, SRV_CFG_R_)                                    \
    SRV_CFG_I_(A, "min-slaves-max-lag", min_replicas_max_lag, "10", 0,         \
               SRV_CFG_INT_MAX, SRV_CFG_R_ | SRV_CFG_ALIAS)                    \
    SRV_CFG_I_(X, "repl-diskless-sync-max-replicas",                           \
               repl_diskless_sync_max_replicas, "0", 0, SRV_CFG_INT_MAX,       \
               SRV_CFG_R_)                                                     \
    SRV_CFG_I_(X, "active-defrag-max-scan-fields",                             \
               active_defrag_max_scan_fields, "1000", 1, SRV_CFG_LLONG_MAX,    \
               SRV_CFG_R_)                                                     \
    SRV_CFG_I_(X, "cluster-node-timeout", cluster_node_timeout, "15000", 0,    \
               SRV_CFG_LLONG_MAX, SRV_CFG_R_)                                  \
    SRV_CFG_I_(X, "stream-node-max-entries", stream_node_max_entries, "100",   \
               0, SRV_CFG_LLONG_MAX, SRV_CFG_R_)                               \
    SRV_CFG_I_(X, "tracking-table-max-keys", tracking_table_max_keys,          \
               "1000000", 0, SRV_CFG_LLONG_MAX, SRV_CFG_R_)                    \
    SRV_CFG_I_(X, "repl-backlog-ttl", repl_backlog_ttl, "3600", 0,             \
               SRV_CFG_LLONG_MAX, SRV_CFG_R_)                                  \
    SRV_CFG_I_(X, "socket-mark-id", socket_mark_id, "0", 0, SRV_CFG_UINT_MAX,  \
               0)                                                              \
    SRV_CFG_M_(X, "repl-backlog-size", repl_backlog_size, "1048576", 1,        \
               SRV_CFG_LLONG_MAX, SRV_CFG_R_)                                  \
    SRV_CFG_X_(X, "cluster-link-sendbuf-limit", cluster_link_sendbuf_limit,    \
               SRV_CFG_UBYTES, "0", 0, 0, SRV_CFG_R_)                          \
    SRV_CFG_M_(X, "active-defrag-ignore-bytes", active_defrag_ignore_bytes,    \
               "104857600", 1, SRV_CFG_LLONG_MAX, SRV_CFG_R_)                  \
    SRV_CFG_M_(X, "stream-node-max-bytes", stream_node_max_bytes, "4096", 0,   \
               SRV_CFG_LLONG_MAX, SRV_CFG_R_)                                  \
    SRV_CFG_X_(X, "maxmemory-clients", maxmemory_clients, SRV_CFG_BYTES_PCT,   \
               "0", -100, SRV_CFG_LLONG_MAX, SRV_CFG_R_)                       \
    SRV_CFG_M_(X, "auto-aof-rewrite-min-size", auto_aof_rewrite_min_size,      \
               "67108864", 0, SRV_CFG_LLONG_MAX, SRV_CFG_R_)                   \
    SRV_CFG_X_(X, "oom-score-adj-values", oom_score_adj_values,                \
               SRV_CFG_SPECIAL, "0 200 800", SRV_SPECIAL_OOMV, 0,              \
               SRV_CFG_R_ | SRV_CFG_MULTIARG)                                  \
    SRV_CFG_X_(X, "shutdown-on-sigint", shutdown_on_sigint, SRV_CFG_SPECIAL,   \
               "default", SRV_SPECIAL_SHUTDOWN, 0,                             \
               SRV_CFG_R_ | SRV_CFG_MULTIARG)                                  \
    SRV_CFG_X_(X, "shutdown-on-sigterm", shutdown_on_sigterm, SRV_CFG_SPECIAL, \
               "default", SRV_SPECIAL_SHUTDOWN, 0,                             \
               SRV_CFG_R_ | SRV_CFG_MULTIARG)                                  \
    SRV_CFG_X_(X, "replicaof", replicaof, SRV_CFG_SPECIAL, "",                 \
               SRV_SPECIAL_REPLICAOF, 0, SRV_CFG_MULTIARG)                     \
    SRV_CFG_X_(A, "slaveof", replicaof, SRV_CFG_SPECIAL, "",                   \
               SRV_SPECIAL_REPLICAOF, 0, SRV_CFG_MULTIARG | SRV_CFG_ALIAS)

/* The rows with a field (A rows have none). */
#define SRV_CFG_FIELD_X_(n, f, k, d, lo, hi, fl) SRV_CFG_FIELD_##k(f)
#define SRV_CFG_FIELD_A_(n, f, k, d, lo, hi, fl)
#define SRV_CONFIG_REDIS_FIELDS \
    SRV_CONFIG_REDIS_DIRECTIVES(SRV_CFG_FIELD_X_, SRV_CFG_FIELD_A_)

/*
 * The value tables of SRV_CFG_ENUM directives: name -> value, the first
 * name of a value is the one CONFIG GET prints (Redis's oom-score-adj has
 * "yes" and "relative" for one value).
 */
typedef struct srv_cfg_enum_value {
    const char *name;
    long long value;
} srv_cfg_enum_value;

/* Table `id` (enum srv_cfg_enum), terminated by a NULL name. */
const srv_cfg_enum_value *srv_config_enum_table(int id);

/*
 * Check and canonicalise the value of a SRV_CFG_SPECIAL directive of
 * checker `id` (enum srv_cfg_special): `words` are its nwords arguments.
 * `cur` is the current value (save in a file adds to it unless
 * `replace`). On success
 * writes the canonical text into out (SRV_CFG_TEXT_MAX bytes) and returns
 * 0; on error returns -1 with Redis's reason in err.
 */
/*
 * Checks of single Redis parameters beyond their kind's (what Redis's own
 * refuses: activedefrag yes without its allocator,
 * a proc-title-template with unknown variables). 0, or -1 with the reason
 * in err.
 */
int srv_config_redis_check(const char *name, const char *value, char *err,
                           size_t errlen);

/* A Redis parameter's value as Redis keeps it (repl-backlog-size is at
 * least 16 kB). */
long long srv_config_redis_clamp(const char *name, long long v);

int srv_config_special_parse(int id, const char *const *words, int nwords,
                             const char *cur, int replace, char *out, char *err,
                             size_t errlen);

#endif
