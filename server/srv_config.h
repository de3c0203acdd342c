/*
 * srv_config.h - the server's configuration: one table of directives (an
 * X-macro) drives defaults, parsing of the redis.conf-style file and the
 * command-line overrides, CONFIG GET and CONFIG SET. The master parses it
 * once and publishes it in a shared region (srv_cfgshm.h); each process
 * reads its own copy (srv_her.cfg), which srv_config_refresh keeps in step
 * with what CONFIG SET publishes (see "The live configuration" below).
 */
#ifndef SRV_CONFIG_H
#define SRV_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#include "server/srv_config_redis.h"
#include "server/srv_resp.h"
#include "server/srv_role.h"

#define SRV_CONFIG_ERR_SIZE 512
#define SRV_PATH_MAX 4096

/* Kinds of directive values. */
enum srv_cfg_kind {
    SRV_CFG_INT,    /* integer in [min, max] */
    SRV_CFG_BYTES,  /* integer with optional k/kb/m/mb/g/gb unit */
    SRV_CFG_STRING, /* one word */
    SRV_CFG_WORDS,  /* one or more words kept space-separated (bind) */
    SRV_CFG_OCTAL,  /* file mode (unixsocketperm) */
    SRV_CFG_LOGLEVEL,
    SRV_CFG_SYNC, /* always | everysec | no */
    SRV_CFG_YESNO,
    SRV_CFG_DEBUGMODE, /* no | yes | local */
    /* ==== issue 15: Redis 7.0's kinds (srv_config_redis.h) ==== */
    SRV_CFG_ENUM,        /* one of a value table: `min` names it (enum
                          * srv_cfg_enum), the field holds its value */
    SRV_CFG_TEXT,        /* any text, at most SRV_CFG_TEXT_MAX - 1 bytes */
    SRV_CFG_UBYTES,      /* a memory value up to 2^64 - 1 (maxmemory) */
    SRV_CFG_BYTES_PCT,   /* a memory value or "N%" (stored as -N) */
    SRV_CFG_HZ,          /* an integer clamped into [1, 500] as Redis's hz */
    SRV_CFG_APPENDONLY,  /* yes | no, mapped to the sync level */
    SRV_CFG_APPENDFSYNC, /* always | everysec | no: the level appendonly
                          * yes gives */
    SRV_CFG_SPECIAL,     /* text checked by a parser of srv_config_redis.c
                          * named by `min` (enum srv_cfg_special) */
    SRV_CFG_CHOICE,      /* one word of the default's "first|second|...",
                          * kept as its index (the first is the default) */
    SRV_CFG_NOTIFY,      /* keyspace event letters (srv_notify.h) */
    SRV_CFG_OBUF,        /* client-output-buffer-limit: class hard soft
                          * seconds, for the classes named */
};

enum srv_debug_mode { SRV_DEBUG_NO, SRV_DEBUG_YES, SRV_DEBUG_LOCAL };

enum srv_sync { SRV_SYNC_NO, SRV_SYNC_EVERYSEC, SRV_SYNC_ALWAYS };

/* client-output-buffer-limit's classes (Redis's order) and fields. */
enum srv_obuf_class { SRV_OBUF_NORMAL, SRV_OBUF_REPLICA, SRV_OBUF_PUBSUB };
#define SRV_OBUF_CLASSES 3
#define SRV_OBUF_FIELDS 3 /* hard, soft, soft seconds */
#define SRV_OBUF_HARD 0
#define SRV_OBUF_SOFT 1
#define SRV_OBUF_SECONDS 2

/* Flags of a directive. */
#define SRV_CFG_RUNTIME 0x1 /* CONFIG SET may change it */
#define SRV_CFG_ALIAS                             \
    0x2 /* another name of a directive (listed by \
         * CONFIG GET, as Redis lists its aliases) */
#define SRV_CFG_PROTECTED                                       \
    0x4                      /* Redis's protected configs (dir, \
                              * dbfilename): CONFIG SET refuses them */
#define SRV_CFG_MULTIARG 0x8 /* CONFIG SET splits the value into words */

/*
 * X(name, field, kind, default, min, max, flags). Strings default to the
 * text given; numbers to the number.
 */
#define SRV_CONFIG_DIRECTIVES(X)                                               \
    X("bind", bind, SRV_CFG_WORDS, "127.0.0.1", 0, 0, 0)                       \
    X("port", port, SRV_CFG_INT, "6379", 0, 65535, 0)                          \
    X("unixsocket", unixsocket, SRV_CFG_STRING, "", 0, 0, 0)                   \
    X("unixsocketperm", unixsocketperm, SRV_CFG_OCTAL, "0", 0, 0777, 0)        \
    X("dir", dir, SRV_CFG_STRING, "./var", 0, 0, SRV_CFG_PROTECTED)            \
    X("workers", workers, SRV_CFG_INT, "0", 0, 256, 0)                         \
    X("databases", databases, SRV_CFG_INT, "16", 1, 4096, 0)                   \
    X("maxclients", maxclients, SRV_CFG_INT, "10000", 1, 4294967295ll,         \
      SRV_CFG_RUNTIME)                                                         \
    X("timeout", timeout, SRV_CFG_INT, "0", 0, 2147483647, SRV_CFG_RUNTIME)    \
    X("tcp-keepalive", tcp_keepalive, SRV_CFG_INT, "300", 0, 2147483647,       \
      SRV_CFG_RUNTIME)                                                         \
    X("tcp-backlog", tcp_backlog, SRV_CFG_INT, "511", 1, 65535, 0)             \
    X("loglevel", loglevel, SRV_CFG_LOGLEVEL, "notice", 0, 0, SRV_CFG_RUNTIME) \
    X("logfile", logfile, SRV_CFG_STRING, "", 0, 0, 0)                         \
    X("pidfile", pidfile, SRV_CFG_STRING, "", 0, 0, 0)                         \
    X("proto-max-bulk-len", proto_max_bulk_len, SRV_CFG_BYTES, "512mb",        \
      1024 * 1024, 0x7fffffffffffffffll, SRV_CFG_RUNTIME)                      \
    X("client-query-buffer-limit", client_query_buffer_limit, SRV_CFG_BYTES,   \
      "1gb", 1024 * 1024, 0x7fffffffffffffffll, SRV_CFG_RUNTIME)               \
    X("requirepass", requirepass, SRV_CFG_STRING, "", 0, 0, SRV_CFG_RUNTIME)   \
    X("maxdisk", maxdisk, SRV_CFG_BYTES, "64gb", 1024 * 1024,                  \
      0x7fffffffffffffffll, 0)                                                 \
    X("sync", sync, SRV_CFG_SYNC, "everysec", 0, 0, SRV_CFG_RUNTIME)           \
    X("enable-debug-command", enable_debug_command, SRV_CFG_DEBUGMODE, "no",   \
      0, 0, 0)                                                                 \
    X("dbfilename", dbfilename, SRV_CFG_STRING, "backup.mdb", 0, 0,            \
      SRV_CFG_PROTECTED)                                                       \
    X("lmdb-writemap", lmdb_writemap, SRV_CFG_YESNO, "no", 0, 0, 0)            \
    X("hz", hz, SRV_CFG_HZ, "10", 0, 2147483647, SRV_CFG_RUNTIME)              \
    X("syncer-thread", syncer_thread, SRV_CFG_YESNO, "no", 0, 0, 0)            \
    X("reaper-batch", reaper_batch, SRV_CFG_INT, "1000", 1, 1000000, 0)        \
    X("cache-mb", cache_mb, SRV_CFG_INT, "64", 0, 1048576, SRV_CFG_RUNTIME)    \
    X("cache-stripes", cache_stripes, SRV_CFG_INT, "64", 1, 4096, 0)           \
    X("compress-threshold", compress_threshold, SRV_CFG_BYTES, "0", 0,         \
      0x7fffffffffffffffll, 0)                                                 \
    X("compress-level", compress_level, SRV_CFG_INT, "1", -7, 19, 0)           \
    /* ==== issue 11 ==== */                                                   \
    X("notify-keyspace-events", notify_keyspace_events, SRV_CFG_NOTIFY, "", 0, \
      0, SRV_CFG_RUNTIME)                                                      \
    X("client-output-buffer-limit", client_output_buffer_limit, SRV_CFG_OBUF,  \
      "normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60",   \
      0, 0, SRV_CFG_RUNTIME)                                                   \
    /* ==== issue 12 ==== */                                                   \
    X("busy-reply-threshold", busy_reply_threshold, SRV_CFG_INT, "5000", 0,    \
      0x7fffffffffffffffll, SRV_CFG_RUNTIME)                                   \
    X("lua-time-limit", busy_reply_threshold, SRV_CFG_INT, "5000", 0,          \
      0x7fffffffffffffffll, SRV_CFG_RUNTIME | SRV_CFG_ALIAS)                   \
    X("lua-memory-limit", lua_memory_limit, SRV_CFG_BYTES, "128mb", 0,         \
      0x7fffffffffffffffll, SRV_CFG_RUNTIME)                                   \
    /* ==== issue 13 ==== */                                                   \
    /* ==== issue 14 ==== */                                                   \
    /* issue 14 (i14a): HyperLogLog and the encodings OBJECT reports */        \
    X("hll-sparse-max-bytes", hll_sparse_max_bytes, SRV_CFG_BYTES, "3000", 0,  \
      0x7fffffffffffffffll, SRV_CFG_RUNTIME)                                   \
    X("hash-max-listpack-entries", hash_max_listpack_entries, SRV_CFG_INT,     \
      "512", 0, 0x7fffffffffffffffll, SRV_CFG_RUNTIME)                         \
    X("hash-max-ziplist-entries", hash_max_listpack_entries, SRV_CFG_INT,      \
      "512", 0, 0x7fffffffffffffffll, SRV_CFG_RUNTIME | SRV_CFG_ALIAS)         \
    X("hash-max-listpack-value", hash_max_listpack_value, SRV_CFG_BYTES, "64", \
      0, 0x7fffffffffffffffll, SRV_CFG_RUNTIME)                                \
    X("hash-max-ziplist-value", hash_max_listpack_value, SRV_CFG_BYTES, "64",  \
      0, 0x7fffffffffffffffll, SRV_CFG_RUNTIME | SRV_CFG_ALIAS)                \
    X("zset-max-listpack-entries", zset_max_listpack_entries, SRV_CFG_INT,     \
      "128", 0, 0x7fffffffffffffffll, SRV_CFG_RUNTIME)                         \
    X("zset-max-ziplist-entries", zset_max_listpack_entries, SRV_CFG_INT,      \
      "128", 0, 0x7fffffffffffffffll, SRV_CFG_RUNTIME | SRV_CFG_ALIAS)         \
    X("zset-max-listpack-value", zset_max_listpack_value, SRV_CFG_BYTES, "64", \
      0, 0x7fffffffffffffffll, SRV_CFG_RUNTIME)                                \
    X("zset-max-ziplist-value", zset_max_listpack_value, SRV_CFG_BYTES, "64",  \
      0, 0x7fffffffffffffffll, SRV_CFG_RUNTIME | SRV_CFG_ALIAS)                \
    X("set-max-intset-entries", set_max_intset_entries, SRV_CFG_INT, "512", 0, \
      0x7fffffffffffffffll, SRV_CFG_RUNTIME)                                   \
    X("list-max-listpack-size", list_max_listpack_size, SRV_CFG_INT, "-2",     \
      -2147483648ll, 2147483647, SRV_CFG_RUNTIME)                              \
    X("list-max-ziplist-size", list_max_listpack_size, SRV_CFG_INT, "-2",      \
      -2147483648ll, 2147483647, SRV_CFG_RUNTIME | SRV_CFG_ALIAS)              \
    /* ==== issue 15 ==== */                                                   \
    SRV_CONFIG_OPS_DIRECTIVES(X)                                               \
    SRV_CONFIG_REDIS_DIRECTIVES(X, X)                                          \
    /* ==== issue 16 ==== */                                                   \
    X("aclfile", aclfile, SRV_CFG_STRING, "", 0, 0, 0)                         \
    X("acllog-max-len", acllog_max_len, SRV_CFG_INT, "128", 0,                 \
      0x7fffffffffffffffll, SRV_CFG_RUNTIME)                                   \
    X("acl-pubsub-default", acl_pubsub_default, SRV_CFG_ENUM, "resetchannels", \
      SRV_ENUM_ACL_PUBSUB, 0, SRV_CFG_RUNTIME)                                 \
    X("protected-mode", protected_mode, SRV_CFG_YESNO, "yes", 0, 0,            \
      SRV_CFG_RUNTIME)                                                         \
    X("tls-port", tls_port, SRV_CFG_INT, "0", 0, 65535, 0)                     \
    X("tls-cert-file", tls_cert_file, SRV_CFG_STRING, "", 0, 0, 0)             \
    X("tls-key-file", tls_key_file, SRV_CFG_STRING, "", 0, 0, 0)               \
    X("tls-key-file-pass", tls_key_file_pass, SRV_CFG_STRING, "", 0, 0, 0)     \
    X("tls-dh-params-file", tls_dh_params_file, SRV_CFG_STRING, "", 0, 0, 0)   \
    X("tls-ca-cert-file", tls_ca_cert_file, SRV_CFG_STRING, "", 0, 0, 0)       \
    X("tls-ca-cert-dir", tls_ca_cert_dir, SRV_CFG_STRING, "", 0, 0, 0)         \
    X("tls-auth-clients", tls_auth_clients, SRV_CFG_CHOICE, "yes|no|optional", \
      0, 0, 0)                                                                 \
    X("tls-protocols", tls_protocols, SRV_CFG_WORDS, "", 0, 0, 0)              \
    X("tls-ciphers", tls_ciphers, SRV_CFG_STRING, "", 0, 0, 0)                 \
    X("tls-ciphersuites", tls_ciphersuites, SRV_CFG_STRING, "", 0, 0, 0)       \
    X("tls-prefer-server-ciphers", tls_prefer_server_ciphers, SRV_CFG_YESNO,   \
      "no", 0, 0, 0)                                                           \
    X("tls-session-caching", tls_session_caching, SRV_CFG_YESNO, "yes", 0, 0,  \
      0)                                                                       \
    X("tls-session-cache-size", tls_session_cache_size, SRV_CFG_INT, "20480",  \
      0, 2147483647, 0)                                                        \
    X("tls-session-cache-timeout", tls_session_cache_timeout, SRV_CFG_INT,     \
      "300", 0, 2147483647, 0)                                                 \
    X("tls-replication", tls_replication, SRV_CFG_YESNO, "no", 0, 0, 0)        \
    X("tls-cluster", tls_cluster, SRV_CFG_YESNO, "no", 0, 0, 0)                \
    X("client-reply-limit", client_reply_limit, SRV_CFG_BYTES, "1gb",          \
      1024 * 1024, 0x7fffffffffffffffll, SRV_CFG_RUNTIME)                      \
    X("client-reply-backlog", client_reply_backlog, SRV_CFG_BYTES, "64mb",     \
      64 * 1024, 0x7fffffffffffffffll, SRV_CFG_RUNTIME)                        \
    /* ==== issue 17 ==== */                                                   \
    /* ==== end of the directives ==== */

typedef struct srv_config {
    char bind[SRV_PATH_MAX];
    long long port;
    char unixsocket[SRV_PATH_MAX];
    long long unixsocketperm;
    char dir[SRV_PATH_MAX];
    long long workers;
    long long databases;
    long long maxclients;
    long long timeout;
    long long tcp_keepalive;
    long long tcp_backlog;
    long long loglevel;
    char logfile[SRV_PATH_MAX];
    char pidfile[SRV_PATH_MAX];
    long long proto_max_bulk_len;
    long long client_query_buffer_limit;
    char requirepass[SRV_PATH_MAX];
    long long maxdisk;
    long long sync;
    long long lmdb_writemap;
    char dbfilename[SRV_PATH_MAX];
    long long enable_debug_command;
    long long hz;
    long long reaper_batch;
    long long syncer_thread;
    long long cache_mb;
    long long cache_stripes;
    long long compress_threshold;
    long long compress_level;
    /* ==== issue 11 ==== */
    long long notify_keyspace_events; /* SRV_NOTIFY_* flags */
    /* per class (enum srv_obuf_class): hard bytes, soft bytes, soft
     * seconds; 0 = no limit */
    long long client_output_buffer_limit[SRV_OBUF_CLASSES * SRV_OBUF_FIELDS];
    /* ==== issue 12 ==== */
    long long busy_reply_threshold; /* ms a script runs before BUSY */
    long long lua_memory_limit;     /* bytes a script may grow Lua by */
    /* ==== issue 13 ==== */
    /* ==== issue 14 ==== */
    /* issue 14 (i14a) */
    long long hll_sparse_max_bytes;
    long long hash_max_listpack_entries;
    long long hash_max_listpack_value;
    long long zset_max_listpack_entries;
    long long zset_max_listpack_value;
    long long set_max_intset_entries;
    long long list_max_listpack_size;
    /* ==== issue 15 ==== */
    SRV_CONFIG_OPS_FIELDS
    SRV_CONFIG_REDIS_FIELDS
    /* ==== issue 16 ==== */
    char aclfile[SRV_PATH_MAX];
    long long acllog_max_len;
    long long acl_pubsub_default; /* 0 resetchannels, 1 allchannels */
    long long protected_mode;
    long long tls_port;
    char tls_cert_file[SRV_PATH_MAX];
    char tls_key_file[SRV_PATH_MAX];
    char tls_key_file_pass[SRV_PATH_MAX];
    char tls_dh_params_file[SRV_PATH_MAX];
    char tls_ca_cert_file[SRV_PATH_MAX];
    char tls_ca_cert_dir[SRV_PATH_MAX];
    long long tls_auth_clients; /* 0 yes, 1 no, 2 optional */
    char tls_protocols[SRV_PATH_MAX];
    char tls_ciphers[SRV_PATH_MAX];
    char tls_ciphersuites[SRV_PATH_MAX];
    long long tls_prefer_server_ciphers;
    long long tls_session_caching;
    long long tls_session_cache_size;
    long long tls_session_cache_timeout;
    long long tls_replication;
    long long tls_cluster;
    long long client_reply_limit;   /* a connection whose replies would
                                     * pass it is closed */
    long long client_reply_backlog; /* unsent replies above it: the
                                     * connection's input waits */
    /* ==== issue 17 ==== */
    char config_file[SRV_PATH_MAX]; /* absolute path, "" if none */
} srv_config;

/* Fill *cfg with every default. */
void srv_config_defaults(srv_config *cfg);

/*
 * Load `path` (a redis.conf-style file). On error returns -1 and writes
 * "file 'PATH', line N: 'directive' ..." into err.
 */
int srv_config_load_file(srv_config *cfg, const char *path, char *err,
                         size_t errlen);

/*
 * Apply command-line overrides: argv holds "--name value..." groups.
 * Returns -1 with a message in err on the first bad one.
 */
int srv_config_load_args(srv_config *cfg, int argc, char **argv, char *err,
                         size_t errlen);

/*
 * Set one directive from `nargs` words (CONFIG SET passes one). With
 * `runtime`, only SRV_CFG_RUNTIME directives are accepted. Returns 0, or
 * -1 with the reason in err.
 */
int srv_config_set(srv_config *cfg, const char *name, const char **args,
                   int nargs, int runtime, char *err, size_t errlen);

/*
 * Call fn(ctx, name, value) for each directive whose name matches the
 * glob `pattern` (CONFIG GET), value as text.
 */
void srv_config_each(const srv_config *cfg, const char *pattern, size_t plen,
                     void (*fn)(void *ctx, const char *name, const char *value),
                     void *ctx);

/* Number of workers to run: the setting, or one per online CPU. */
int srv_config_workers(const srv_config *cfg);

/* workers-max 0: this many times the workers at start, at least
 * SRV_WORKERS_MAX_MIN. */
#define SRV_WORKERS_MAX_FACTOR 4
#define SRV_WORKERS_MAX_MIN 16

/*
 * The most workers the tree may grow to (WORKERS n of the admin socket):
 * workers-max, or its default above, never fewer than srv_config_workers
 * nor more than SRV_WORKERS_LIMIT. The shared regions have a slot for
 * each from the start.
 */
int srv_config_workers_max(const srv_config *cfg);

/* ==== issue 15: CONFIG GET, SET and REWRITE as Redis 7.0 ==== */

/*
 * CONFIG GET pattern [pattern ...]: call fn(ctx, name, value) once for
 * each directive (aliases included, as Redis) whose name matches any of
 * the globs (any case), in table order.
 */
void srv_config_get_many(
    const srv_config *cfg, const srv_slice *patterns, int npatterns,
    void (*fn)(void *ctx, const char *name, const char *value), void *ctx);

/* The value of directive `name` as CONFIG GET prints it, into out; -1 if
 * there is no such directive. */
int srv_config_get_one(const srv_config *cfg, const char *name, char *out,
                       size_t size);

/*
 * CONFIG SET's checks and changes of `npairs` name/value pairs (pairs[2i]
 * the name, pairs[2i+1] the value) applied to *cfg, the caller's copy of
 * the published configuration (srv_config_begin): unknown names, names not
 * changeable at run time and names given twice are refused before any
 * value is looked at; then each value is checked and set. On error returns
 * -1 with the whole error reply in err ("ERR CONFIG SET failed (possibly
 * related to argument 'x') - reason", Redis's texts) and *cfg part
 * changed: drop it (srv_config_abort). Values of SRV_CFG_MULTIARG
 * directives are split into words as Redis splits them.
 */
int srv_config_set_pairs(srv_config *cfg, const srv_slice *pairs, int npairs,
                         char *err, size_t errlen);

/*
 * Call fn(ctx, name, runtime) for each directive whose value differs
 * between *a and *b (aliases not repeated); `runtime`: CONFIG SET may
 * change it (else it needs a restart). For a reload.
 */
void srv_config_diff(const srv_config *a, const srv_config *b,
                     void (*fn)(void *ctx, const char *name, int runtime),
                     void *ctx);

/*
 * CONFIG REWRITE: rewrite the config file at `path` to hold *cfg, as
 * Redis does: comments, blank lines, unknown lines and the order kept,
 * each directive's first line replaced by its current value (later lines
 * of it dropped), directives the file lacks appended after a "# Generated
 * by CONFIG REWRITE" line if they differ from their defaults. The new
 * file is written beside the old one, flushed and renamed over it.
 * 0, or -1 with the reason in err.
 */
int srv_config_rewrite(const srv_config *cfg, const char *path, char *err,
                       size_t errlen);

/* Copy the SRV_CFG_RUNTIME directives of *src over those of *dst; the
 * others (fixed at start) are left alone. */
void srv_config_copy_runtime(srv_config *dst, const srv_config *src);

/*
 * ---- The live configuration ----
 * Every process reads its own copy, *srv_her.cfg: the master's parse,
 * inherited across fork, then kept in step with the shared region
 * (srv_her.cfgshm) by srv_config_refresh, which each process calls from
 * its loop (worker tick, reaper tick, syncer and broker loops, master
 * loop) and which applies what a process applies once (the log level).
 * Readers of srv_her.cfg so never see a value change under them, and a
 * change made by CONFIG SET reaches every process. Without a region (an
 * embedded worker) srv_her.cfg is the only copy and changes go straight
 * into it.
 */

/*
 * Publish *srv_her.cfg in a new shared region with an acknowledgement
 * record per stats slot (`nslots`). The master, before it forks. 0 or the
 * codes of srv_cfgshm_create.
 */
int srv_config_share(unsigned nslots);

/*
 * Check the inherited region (magic, version, size). A child, after fork,
 * once srv_self is its record. 0 or the codes of srv_cfgshm_attach.
 */
int srv_config_attach(void);

/*
 * The master: child *p was forked (p->pid set) or died (p->pid 0). Forked
 * children whose role has SRV_ROLE_CONFIRMS are waited for by
 * srv_config_commit until they have applied a change.
 */
void srv_config_track(const srv_proc *p);

/*
 * Bring this process's copy up to date: if CONFIG SET published a newer
 * generation, copy its runtime directives into *srv_her.cfg, apply the
 * log level, acknowledge the generation (children) and log it at verbose.
 * One atomic load when nothing changed. Any process, from its main thread
 * only. Returns 1 if something was applied, 0 if not, or the codes of
 * srv_cfgshm_read (the copy is kept).
 */
int srv_config_refresh(void);

/*
 * Start a change: take the writer lock and copy the published
 * configuration into *next for the caller to change (srv_config_set),
 * then srv_config_commit or srv_config_abort. Hold it briefly: no network
 * I/O in between. Returns 0, or the codes of srv_cfgshm_lock (not locked).
 */
int srv_config_begin(srv_config *next);

/* Drop a change begun with srv_config_begin (releases the lock). */
void srv_config_abort(void);

/*
 * Publish *next (begun with srv_config_begin), release the lock, apply it
 * here, then wait until every other child that confirms (workers, the
 * broker) has applied it too, for at most a few of their ticks (a child
 * busy past that applies it at its next tick; the wait is logged). When
 * this returns 0, a command on any connection sees the change. Returns 0,
 * or how many children had not confirmed by the deadline.
 */
int srv_config_commit(const srv_config *next);

#endif
