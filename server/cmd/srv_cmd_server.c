/*
 * srv_cmd_server.c - server commands: DBSIZE FLUSHDB FLUSHALL TIME
 * SHUTDOWN ROLE LASTSAVE SAVE BGSAVE DEBUG (CONFIG: srv_cmd_config.c,
 * INFO: srv_cmd_info.c).
 */
#include "server/cmd/srv_args.h"
#include "server/cmd/srv_cmd.h"
#include "server/cmd/srv_multi.h"
#include "server/cmd/srv_script.h"
#include "server/cmd/srv_txn.h"
#include "server/srv_block.h"
#include "server/srv_config.h"
#include "server/srv_conn.h"
#include "server/srv_heritage.h"
#include "server/srv_keys.h"
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
/* DEBUG REGISTER-SLEEP takes at most a minute. */
#define DEBUG_SLEEP_MAX_MS 60000
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
    if (c->flags & SRV_CONN_IN_TXN) {
        /* Inside EXEC or a script: in the transaction's own write transaction.
         */
        struct st_txn *t = srv_txn_write_or_reply(c);
        if (!t)
            return;
        srv_keys_flushed(c);
        rc = st_keyspace_flush_txn(t, db);
    } else {
        srv_keys_flushed(c); /* with the flush's first transaction */
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
        st_env_stat st;
        if (st_env_stat_get(env, &st) == 0)
            atomic_store(&srv_her.stats->last_save_txn, (int64_t)st.last_txn);
        atomic_fetch_add(&srv_her.stats->saves, 1);
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

/* Start the background save: 0, EBUSY (one is running), or after
 * replying the error of a thread that could not start (-1). */
static int start_bgsave(srv_conn *c)
{
    pthread_attr_t attr;
    pthread_t tid;
    int64_t none = 0;

    if (!atomic_compare_exchange_strong(&srv_her.stats->save_in_progress, &none,
                                        getpid()))
        return EBUSY;
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
        return -1;
    }
    return 0;
}

void srv_cmd_bgsave(srv_conn *c)
{
    int rc;

    if (c->argc > 2 ||
        (c->argc == 2 &&
         !srv_util_streq(c->argv[1].ptr, c->argv[1].len, "schedule"))) {
        srv_reply_error(c, SRV_ERR_SYNTAX);
        return;
    }
    if ((rc = start_bgsave(c)) == EBUSY)
        srv_reply_error(c, "ERR Background save already in progress");
    else if (rc == 0)
        srv_reply_simple(c, "Background saving started");
}

/* There is no append-only file: every write is in LMDB at the sync level
 * appendonly/appendfsync map to. What a rewrite is for, a compact file
 * on disk that holds everything, is the background save's flush, so
 * BGREWRITEAOF starts that, with Redis's replies (a save already running
 * does it: "scheduled", as Redis answers beside a running child). */
void srv_cmd_bgrewriteaof(srv_conn *c)
{
    int rc = start_bgsave(c);

    if (rc == EBUSY)
        srv_reply_simple(c, "Background append only file rewriting scheduled");
    else if (rc == 0)
        srv_reply_simple(c, "Background append only file rewriting started");
}

void srv_cmd_lastsave(srv_conn *c) { srv_reply_int(c, last_save_s()); }

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
    srv_script_stop_all(); /* a busy script would hold its worker */
    kill(srv_her.master_pid, SIGTERM);
    /* As Redis: no reply; the connection closes with the server. */
    c->flags |= SRV_CONN_CLOSE_ASAP;
}

/* ---- DEBUG (tests and diagnosis; off unless enable-debug-command) ---- */

/* May c run a command that enable-debug-command or enable-module-command
 * (`mode`: no, yes, local) guards? */
static int guarded_allowed(srv_conn *c, long long mode)
{
    if (mode == SRV_DEBUG_YES)
        return 1;
    if (mode == SRV_DEBUG_LOCAL)
        return (c->flags & SRV_CONN_UNIX) ||
               strncmp(c->addr, "127.", strlen("127.")) == 0 ||
               strncmp(c->addr, "::1:", strlen("::1:")) == 0;
    return 0;
}

static int debug_allowed(srv_conn *c)
{
    return guarded_allowed(c, srv_her.cfg->enable_debug_command);
}

/* ---- MODULE ---- */

void srv_cmd_module_help(srv_conn *c)
{
    static const char *const help[] = {
        "MODULE <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "LIST",
        "    Return a list of loaded modules.",
        "LOAD <path> [<arg> ...]",
        "    Load a module library from <path>, passing to it any optional "
        "arguments.",
        "LOADEX <path> [[CONFIG NAME VALUE] [CONFIG NAME VALUE]] [ARGS ...]",
        "    Load a module library from <path>, while passing it module "
        "configurations and optional arguments.",
        "UNLOAD <name>",
        "    Unload a module.",
        "HELP",
        "    Prints this help.",
    };

    srv_reply_lines(c, help, sizeof help / sizeof help[0]);
}

void srv_cmd_module_list(srv_conn *c) { srv_reply_array(c, 0); }

/* LOAD, LOADEX, UNLOAD: refused as Redis refuses them by default; where
 * enable-module-command allows them, they fail as Redis's do for a
 * library it cannot load, or a name it has not loaded. */
static int module_allowed_or_reply(srv_conn *c)
{
    if (guarded_allowed(c, srv_her.cfg->enable_module_command))
        return 1;
    srv_reply_error(c, "ERR MODULE command not allowed. If the "
                       "enable-module-command option is set to \"local\", "
                       "you can run it from a local connection, otherwise "
                       "you need to set this option in the configuration "
                       "file, and then restart the server.");
    return 0;
}

static void module_load(srv_conn *c)
{
    if (!module_allowed_or_reply(c))
        return;
    srv_log(SRV_LOG_WARNING, 0,
            "Module %.*s failed to load: larder does not load Redis modules",
            (int)c->argv[2].len, c->argv[2].ptr);
    srv_reply_error(c, "ERR Error loading the extension. Please check the "
                       "server logs.");
}

void srv_cmd_module_load(srv_conn *c) { module_load(c); }

void srv_cmd_module_loadex(srv_conn *c) { module_load(c); }

void srv_cmd_module_unload(srv_conn *c)
{
    if (module_allowed_or_reply(c))
        srv_reply_error(c, "ERR Error unloading module: no such module with "
                           "that name");
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
 * DEBUG REGISTER-SLEEP <ms>: the next turn of this worker in which a
 * client blocks sleeps ms after the commit (srv_block.h).
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
    } else if (srv_util_streq(sub->ptr, sub->len, "register-sleep") &&
               c->argc == 3) {
        long long ms;
        if (srv_args_ll_or_reply(c, &c->argv[2], &ms))
            return;
        if (ms < 0 || ms > DEBUG_SLEEP_MAX_MS) {
            srv_reply_error(c, "ERR value is out of range");
            return;
        }
        srv_block_debug_register_sleep(ms);
        srv_reply_ok(c);
    } else {
        srv_args_subcommand_error(c);
    }
}
