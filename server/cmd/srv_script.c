/*
 * srv_script.c - scripting as a session feature (see the header): the
 * per-worker script cache over the shared one in LMDB, a run's
 * transaction and inner commands, kills and BUSY across workers.
 *
 * The script cache. Bodies live in LMDB (st_script.h), written in the
 * transaction of the EVAL or SCRIPT LOAD that brought them, so that once
 * a client has the reply every worker finds the script; each worker
 * compiles what it runs once and keeps the function by SHA1. SCRIPT FLUSH
 * empties LMDB's table and, once committed, bumps the region's cache
 * generation: every worker drops its compiled scripts when it sees a new
 * one. The table is emptied at boot: Redis's script cache is volatile and
 * clients expect NOSCRIPT after a restart (they answer it with EVAL), and
 * a cache that never empties would keep every script ever sent.
 *
 * A run. A script that may write runs in the group's write transaction
 * (begun before it, so what it reads is what it writes over: no other
 * writer can commit in between); a read-only one (EVAL_RO, no-writes) in
 * the group's read snapshot. Its inner commands run through the
 * dispatcher like EXEC's queue, their replies captured in a scratch
 * buffer and converted for Lua. A killed script poisons the group: its
 * transaction is aborted, and when it carried other connections' writes
 * too they replay, while the killed command answers its error instead of
 * running again (the connection's hook state remembers where it was).
 * A script that has not written yet runs read-first (see srv_script_run).
 *
 * Long scripts. Every worker takes the region's write gate before its
 * group's write transaction and holds it until that ends; a writer on
 * another worker waits for it a slice at a time and answers BUSY once
 * the script holding it has run busy-reply-threshold, while readers go on
 * from their snapshots. Past the threshold the script's own worker also
 * answers its other clients from the count hook (srv_worker_serve_busy):
 * SCRIPT KILL / FUNCTION KILL, SHUTDOWN, else BUSY. A kill from any
 * worker reaches the hook through the region; the script is stopped even
 * after it wrote (beyond Redis's UNKILLABLE), since its transaction is
 * aborted.
 *
 * PUBLISH inside a script answers every worker's receiver count at once
 * and its message waits for the script's commit (srv_pubsub.h): a killed
 * script's messages are never delivered.
 *
 * A command of another client that ran before a long script in the
 * same loop turn is answered at once, as Redis answers it: a script
 * whose last run here was long (SRV_SCRIPT_LONG_MS) runs after the
 * group's finished work is committed and its replies written (the
 * service's solo); on a first long run, release_others lets the others'
 * reads go, or has the group replay with the script last. Under sync
 * always such replies may still wait for the flush until the script
 * ends (the worker hears of it in its loop).
 */
#include "server/cmd/srv_script.h"
#include "server/cmd/srv_args.h"
#include "server/cmd/srv_cmd.h"
#include "server/cmd/srv_dispatch.h"
#include "server/cmd/srv_script_lua.h"
#include "server/cmd/srv_scriptgate.h"
#include "server/cmd/srv_sha1.h"
#include "server/cmd/srv_txn.h"
#include "server/srv_ask.h"
#include "server/srv_bproto.h"
#include "server/srv_dict.h"
#include "server/srv_group.h"
#include "server/srv_heritage.h"
#include "server/srv_hooks.h"
#include "server/srv_log.h"
#include "server/srv_pubsub.h"
#include "server/srv_reply.h"
#include "server/srv_scriptshm.h"
#include "server/srv_util.h"
#include "server/srv_worker.h"
#include "storage/st_err.h"
#include "storage/st_script.h"
#include "storage/st_txn.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define ERR_MAX 1024
/* Past the threshold, the worker's other clients are answered this
 * often. */
#define BUSY_SERVE_MS 100
#define SCRATCH_KEEP (64 * 1024)
/* A running script answers other workers' questions this often. */
#define ANSWER_EVERY_MS 10

static const char MSG_KILLED[] = "Script killed by user with SCRIPT KILL...";
static const char MSG_RUN_ALONE[] = "ERR the script runs again, alone";
static const char MSG_NOSCRIPT[] = "NOSCRIPT No matching script. Please use "
                                   "EVAL.";

/* A compiled script of this worker. */
typedef struct script {
    int ref;
    unsigned flags;   /* SRV_LUA_FLAG_* of its shebang */
    unsigned learned; /* SRV_SCRIPT_LEARNED_* */
    int in_lmdb;      /* seen in LMDB (no need to store it) */
} script;

/* The running script's context (one at a time per worker). */
typedef struct run {
    srv_conn *c;
    int ro;            /* read-only: write commands refused */
    int upgradable;    /* read-first: a write command restarts the run */
    int restart;       /* ... and one did */
    unsigned *learned; /* the script's memory (SRV_SCRIPT_LEARNED_*) */
    int function;
    int killed;  /* the interrupt fired */
    uint64_t id; /* in the region */
    int64_t started;
    int warned;          /* the slow-script warning was logged */
    int killed_here;     /* SCRIPT / FUNCTION KILL from this worker */
    int released;        /* the others' replies were let go (or not) */
    int run_alone;       /* stopped to run again after the others */
    int64_t served_at;   /* the worker last answered its other clients */
    int64_t answered_at; /* ... other workers' questions */
    const char *name;
} run;

static struct {
    srv_lua *eval;
    srv_dict scripts; /* SHA1 -> script */
    /* functions whose last run here was long (FCALL's solo; the
     * function table is srv_script_fn.c's, above this module) */
    srv_dict long_fns;
    unsigned nlong;  /* compiled scripts whose last run was long */
    uint64_t gen;    /* region's cache generation the dict matches */
    srv_buf scratch; /* an inner command's reply */
    run *cur;
} sc;

/* ---- the connection's hooks ---- */

typedef struct conn_state {
    int killed_valid;   /* the command at killed_at was killed */
    uint64_t killed_at; /* its offset in the connection's input */
    char killed_err[ERR_MAX];
    int flush_pending; /* SCRIPT FLUSH commits with the group */
} conn_state;

static const srv_hooks script_hooks;

static conn_state *state_of(srv_conn *c)
{
    conn_state *s = srv_hooks_state(&c->hooks, &script_hooks);

    if (s)
        return s;
    if (!(s = calloc(1, sizeof *s)))
        return NULL;
    if (srv_hooks_attach(&c->hooks, &script_hooks, s)) {
        free(s);
        return NULL;
    }
    return s;
}

static int is_script_cmd(const srv_command *cmd)
{
    return cmd &&
           (!strcmp(cmd->name, "eval") || !strcmp(cmd->name, "evalsha") ||
            !strcmp(cmd->name, "fcall"));
}

/* A replay reaches the command that was killed: it answers its error. */
static int on_intercept(srv_conn *c, void *state)
{
    conn_state *s = state;

    if (!s->killed_valid || s->killed_at != c->in_dropped + c->in_done ||
        !is_script_cmd(c->cmd))
        return 0;
    s->killed_valid = 0;
    srv_reply_error(c, s->killed_err);
    return 1;
}

static void on_committed(srv_conn *c, void *state)
{
    conn_state *s = state;

    if (s->flush_pending) {
        s->flush_pending = 0;
        if (srv_her.scripts)
            atomic_fetch_add(&srv_her.scripts->cache_gen, 1);
    }
}

static void on_rewind(srv_conn *c, void *state)
{
    ((conn_state *)state)->flush_pending = 0;
}

static void on_close(srv_conn *c, void *state) { free(state); }

static const srv_hooks script_hooks = {
    .name = "script",
    .committed = on_committed,
    .rewind = on_rewind,
    .close = on_close,
    .intercept = on_intercept,
};

/* ---- the per-worker cache ---- */

static void free_entry(srv_dict_entry *e)
{
    script *s = e->val;

    if (sc.eval)
        srv_lua_unref(sc.eval, s->ref);
    if (s->learned & SRV_SCRIPT_LEARNED_LONG)
        sc.nlong--;
    free(s);
}

/* Drop the compiled scripts when another worker flushed the cache. */
static void sync_generation(void)
{
    uint64_t g = srv_her.scripts ? atomic_load(&srv_her.scripts->cache_gen)
                                 : sc.gen;

    if (g != sc.gen) {
        srv_dict_clear(&sc.scripts, free_entry);
        sc.gen = g;
    }
}

static srv_lua *eval_engine(void)
{
    if (!sc.eval)
        sc.eval = srv_lua_create(SRV_LUA_EVAL);
    return sc.eval;
}

static script *find_script(const char *sha)
{
    srv_dict_entry *e = srv_dict_find(&sc.scripts, sha, SRV_SHA1_HEX_LEN,
                                      srv_dict_hash(sha, SRV_SHA1_HEX_LEN));
    return e ? e->val : NULL;
}

/* Compile body as script sha: the new entry, or NULL after replying. */
static script *add_script(srv_conn *c, const char *sha, const char *body,
                          size_t len)
{
    char err[ERR_MAX];
    size_t skip;
    unsigned flags;
    srv_lua *l = eval_engine();
    script *s;
    srv_dict_entry *e;

    if (!l) {
        srv_reply_error(c, "ERR out of memory");
        return NULL;
    }
    if (srv_lua_shebang(body, len, &flags, &skip, err, sizeof err)) {
        srv_reply_error(c, err);
        return NULL;
    }
    if (!(s = calloc(1, sizeof *s))) {
        srv_reply_error(c, "ERR out of memory");
        return NULL;
    }
    if (srv_lua_compile(l, body, len, &s->ref, err, sizeof err)) {
        free(s);
        srv_reply_error(c, err);
        return NULL;
    }
    s->flags = flags;
    if (!(e = srv_dict_add(&sc.scripts, sha, SRV_SHA1_HEX_LEN,
                           srv_dict_hash(sha, SRV_SHA1_HEX_LEN)))) {
        srv_lua_unref(l, s->ref);
        free(s);
        srv_reply_error(c, "ERR out of memory");
        return NULL;
    }
    e->val = s;
    return s;
}

/* Make sure LMDB has the body (so other workers find it): in a write
 * transaction store it, else look. 0, or a storage code. */
static int store_body(srv_conn *c, struct st_txn *t, script *s, const char *sha,
                      const char *body, size_t len)
{
    const uint8_t *b;
    size_t n;
    int rc;

    if (s->in_lmdb)
        return 0;
    rc = st_script_get(t, sha, &b, &n);
    if (rc == 0) {
        s->in_lmdb = 1;
        return 0;
    }
    if (rc != ST_ENOTFOUND)
        return rc;
    return st_script_put(t, sha, body, len);
}

/* ---- numkeys ---- */

int srv_script_numkeys_or_reply(srv_conn *c, int fcall, long long *n)
{
    if (!srv_util_str2ll(c->argv[2].ptr, c->argv[2].len, n)) {
        srv_reply_error(c, fcall ? "ERR Bad number of keys provided"
                                 : SRV_ERR_NOT_INT);
        return -1;
    }
    if (*n > c->argc - 3) {
        srv_reply_error(c, fcall ? "ERR Number of keys can't be greater than "
                                   "number of args"
                                 : "ERR Number of keys can't be greater than "
                                   "number of args");
        return -1;
    }
    if (*n < 0) {
        srv_reply_error(c, "ERR Number of keys can't be negative");
        return -1;
    }
    return 0;
}

/* ---- inner commands ---- */

static int in_slot(void) { return srv_her.scripts != NULL; }

/* redis.call / redis.pcall: check the command as a script may run it,
 * run it through the dispatcher into the scratch buffer. */
static const char *script_call(void *ctx, int argc, const srv_slice *argv,
                               int resp, const char **reply, size_t *len,
                               int *abort)
{
    run *r = ctx;
    srv_conn *c = r->c;
    const srv_command *cmd = srv_cmd_lookup(argv[0].ptr, argv[0].len);
    srv_group *g = &c->worker->group;

    if (!cmd)
        return "ERR Unknown Redis command called from script";
    if (cmd->nsubs && argc >= 2) {
        const srv_command *sub = srv_cmd_lookup_sub(cmd, argv[1].ptr,
                                                    argv[1].len);
        if (!sub)
            return "ERR Unknown Redis command called from script";
        cmd = sub;
    }
    if (!cmd->proc || (cmd->arity > 0 && argc != cmd->arity) ||
        (cmd->arity < 0 && argc < -cmd->arity))
        return "ERR Wrong number of args calling Redis command from script";
    if (cmd->flags & F_NOSCRIPT)
        return "ERR This Redis command is not allowed from script";
    if (r->ro && (cmd->flags & F_WRITE))
        return "ERR Write commands are not allowed from read-only scripts.";
    if (r->upgradable && (cmd->flags & (F_WRITE | F_WRITE_TXN | F_NOREPLAY))) {
        /* stop the read-first attempt before anything happens */
        static const char restart[] = "-ERR the script runs again\r\n";
        *r->learned |= SRV_SCRIPT_LEARNED_WRITES;
        r->restart = 1;
        *reply = restart;
        *len = sizeof restart - 1;
        *abort = 1;
        return NULL;
    }

    /* Run it as EXEC runs its queue: the connection's argument vector,
     * protocol and output swapped for the script's. */
    int argc0 = c->argc, resp0 = c->resp;
    srv_slice *argv0 = c->argv;
    const srv_command *cmd0 = c->cmd;
    unsigned flags0 = c->flags;
    srv_buf out0 = c->out;

    sc.scratch.len = 0;
    c->out = sc.scratch;
    c->argc = argc;
    c->argv = (srv_slice *)argv;
    c->cmd = cmd;
    c->resp = resp;
    c->flags = (c->flags & ~SRV_CONN_IN_EXEC) | SRV_CONN_IN_SCRIPT;
    srv_dispatch_run(c);
    sc.scratch = c->out;
    c->out = out0;
    c->flags = (c->flags & ~(SRV_CONN_IN_SCRIPT | SRV_CONN_IN_EXEC)) |
               (flags0 & (SRV_CONN_IN_SCRIPT | SRV_CONN_IN_EXEC));
    c->argc = argc0;
    c->argv = argv0;
    c->cmd = cmd0;
    c->resp = resp0;
    if (sc.scratch.len == 0) { /* a bug: every command replies here */
        static const char none[] = "-ERR the command gave no reply\r\n";
        srv_log(SRV_LOG_WARNING, 0, "%s gave no reply in a script", cmd->name);
        srv_buf_append(&sc.scratch, none, sizeof none - 1);
    }
    if ((cmd->flags & F_WRITE) && in_slot() && !r->ro)
        srv_scriptshm_mark(srv_her.scripts, c->worker->index,
                           SRV_SCRIPTSHM_WROTE);
    *reply = sc.scratch.data;
    *len = sc.scratch.len;
    *abort = g->poisoned;
    return NULL;
}

static int64_t threshold_ms(void) { return srv_her.cfg->busy_reply_threshold; }

/*
 * Past the threshold, this worker's other clients get answers too (as
 * Redis gives them while a script runs): SCRIPT KILL / FUNCTION KILL stop
 * the script, SHUTDOWN stops the server, anything else is BUSY.
 */
static int busy_answer(srv_conn *c, void *arg)
{
    run *r = arg;
    const srv_command *cmd = c->cmd, *sub = NULL;

    if (!cmd)
        return 0;
    if (cmd->nsubs && c->argc == 2)
        sub = srv_cmd_lookup_sub(cmd, c->argv[1].ptr, c->argv[1].len);
    if (sub && (!strcmp(sub->name, "script|kill") ||
                !strcmp(sub->name, "function|kill"))) {
        int function = !strcmp(sub->name, "function|kill");
        if (function != r->function) {
            srv_reply_error(c, function ? SRV_SCRIPTGATE_BUSY_EVAL
                                        : SRV_SCRIPTGATE_BUSY_FUNCTION);
        } else {
            r->killed_here = 1;
            srv_reply_ok(c);
        }
        return 1;
    }
    if (!strcmp(cmd->name, "shutdown")) {
        c->cmd = cmd;
        cmd->proc(c);
        return 1;
    }
    return 0;
}

/*
 * The script has run SRV_SCRIPT_LONG_MS on its first long run here (a
 * known long one ran after the others' commit, see script_solo): the
 * other members' replies must not wait for its end. When nothing this
 * turn wrote, what they read is committed already: they are taken as
 * committed and written now. When they wrote, their writes share the
 * script's transaction: the script stops (1) and the group replays, the
 * others first, one transaction each, then the script, which is now
 * known to run long. Under sync always the replies may still wait for
 * the flush, which the worker learns in its loop.
 */
static int release_others(run *r)
{
    srv_conn *c = r->c;
    srv_group *g = &c->worker->group;
    int what = srv_group_others_pending(g, c);

    r->released = 1;
    if (what & SRV_GROUP_OTHERS_UNCOMMITTED) {
        if (g->writes > 0 && g->wtxn && !c->single && r->learned) {
            r->run_alone = 1; /* (run_in marks it long: it ran 1 ms) */
            return 1;
        }
        if (g->writes > 0)
            return 0; /* no way to let them go: they wait */
        srv_group_commit_reads(g, c);
    }
    if (what)
        srv_worker_write_group(c->worker, c);
    return 0;
}

static const char *script_interrupt(void *ctx)
{
    run *r = ctx;
    int64_t now = srv_util_monotonic_ms();

    if (!r->warned && threshold_ms() > 0 && now - r->started > threshold_ms()) {
        r->warned = 1;
        srv_log(SRV_LOG_WARNING, 0,
                "Slow script detected: still in execution after %lld "
                "milliseconds. You can try killing the script using the "
                "%s command. Script name is: %s.",
                (long long)(now - r->started),
                r->function ? "FUNCTION KILL" : "SCRIPT KILL", r->name);
    }
    if (!r->released && now - r->started >= SRV_SCRIPT_LONG_MS &&
        release_others(r))
        return MSG_RUN_ALONE;
    if (now - r->answered_at >= ANSWER_EVERY_MS) {
        /* Other workers' questions that only read this one's state (who
         * would receive a message): a script of theirs may wait for it. */
        r->answered_at = now;
        srv_ask_answer_waiting();
    }
    if (threshold_ms() > 0 && now - r->started > threshold_ms() &&
        now - r->served_at >= BUSY_SERVE_MS) {
        r->served_at = now;
        srv_worker_serve_busy(r->c->worker, busy_answer, r,
                              r->function ? SRV_SCRIPTGATE_BUSY_FUNCTION
                                          : SRV_SCRIPTGATE_BUSY_EVAL);
    }
    if (r->killed_here ||
        (in_slot() &&
         srv_scriptshm_killed(srv_her.scripts, r->c->worker->index, r->id))) {
        r->killed = 1;
        srv_log(SRV_LOG_WARNING, 0, "Script killed by user with %s.",
                r->function ? "FUNCTION KILL" : "SCRIPT KILL");
        return MSG_KILLED;
    }
    return NULL;
}

static void script_log(void *ctx, int level, const char *msg, size_t len)
{
    static const int map[] = { SRV_LOG_DEBUG, SRV_LOG_VERBOSE, SRV_LOG_NOTICE,
                               SRV_LOG_WARNING };

    srv_log(map[level], 0, "%.*s", (int)len, msg);
}

static const srv_lua_host host = {
    .call = script_call,
    .interrupt = script_interrupt,
    .log = script_log,
};

/* ---- running ---- */

/* Most functions remembered as long; past it the memory starts again
 * (deleted functions' names would otherwise stay). */
#define LONG_FNS_MAX 1024

static void remember_long_fn(const char *name, int is_long)
{
    size_t n = strlen(name);
    uint64_t h = srv_dict_hash(name, n);
    srv_dict_entry *e = srv_dict_find(&sc.long_fns, name, n, h);

    if (is_long && !e) {
        if (sc.long_fns.count >= LONG_FNS_MAX)
            srv_dict_clear(&sc.long_fns, NULL);
        srv_dict_add(&sc.long_fns, name, n, h); /* (none: not solo) */
    } else if (!is_long && e) {
        srv_dict_remove(&sc.long_fns, e);
    }
}

/* One run of the script in transaction t; 1 if it must run again in the
 * write transaction (a read-first attempt met a write command). */
static int run_in(srv_conn *c, srv_lua *engine, int ref, const char *name,
                  int function, int ro, int upgradable, unsigned *learned,
                  struct st_txn *t, int nkeys, const srv_slice *keys, int nargs,
                  const srv_slice *args)
{
    run r = { 0 };
    srv_group *g = &c->worker->group;
    unsigned db0 = c->db;
    size_t mark = c->out.len, held = srv_pubsub_held(c);
    int stopped;

    r.c = c;
    r.ro = ro;
    r.upgradable = upgradable;
    r.learned = learned;
    r.function = function;
    r.name = name;
    r.started = r.answered_at = srv_util_monotonic_ms();
    if (in_slot())
        r.id = srv_scriptshm_begin(srv_her.scripts, c->worker->index,
                                   (function ? SRV_SCRIPTSHM_FUNCTION : 0) |
                                       (st_txn_is_write(t) ? SRV_SCRIPTSHM_WRITE
                                                           : 0),
                                   name, r.started);
    sc.cur = &r;
    stopped = srv_lua_run(engine, ref, name, nkeys, keys, nargs, args,
                          (size_t)srv_her.cfg->lua_memory_limit, &host, &r, c);
    sc.cur = NULL;
    if (in_slot())
        srv_scriptshm_end(srv_her.scripts, c->worker->index);
    c->db = db0; /* SELECT inside a script is the script's own */
    if (learned) {
        unsigned was = *learned & SRV_SCRIPT_LEARNED_LONG;
        if (srv_util_monotonic_ms() - r.started >= SRV_SCRIPT_LONG_MS)
            *learned |= SRV_SCRIPT_LEARNED_LONG;
        else
            *learned &= ~SRV_SCRIPT_LEARNED_LONG;
        if (function)
            remember_long_fn(name, *learned & SRV_SCRIPT_LEARNED_LONG);
        else if (was != (*learned & SRV_SCRIPT_LEARNED_LONG))
            sc.nlong += was ? -1u : 1u;
    }
    srv_buf_trim(&sc.scratch, SCRATCH_KEEP);
    if (r.restart) {
        /* the attempt's reply and messages go; it wrote nothing */
        c->out.len = mark;
        srv_pubsub_unhold(c, held);
        return 1;
    }
    if (stopped && r.run_alone) {
        /* The group's transaction goes: its members replay, the script
         * after the others' replies are written (release_others). */
        c->out.len = mark;
        srv_pubsub_unhold(c, held);
        srv_group_poison(g);
        return 0;
    }
    if (stopped && r.killed) {
        /* Nothing it did may remain: abort the transaction it wrote in
         * (the group replays the others it carried), drop the messages
         * it published, and answer the kill where a replay would run the
         * script again. */
        conn_state *s = state_of(c);
        srv_pubsub_unhold(c, held);
        if (s && c->out.len > mark) {
            size_t n = c->out.len - mark - 3; /* "-" ... "\r\n" */
            if (n >= sizeof s->killed_err)
                n = sizeof s->killed_err - 1;
            memcpy(s->killed_err, c->out.data + mark + 1, n);
            s->killed_err[n] = '\0';
            s->killed_at = c->in_dropped + c->in_done;
            s->killed_valid = 1;
        }
        if (g->wtxn)
            srv_group_poison(g);
    }
    return 0;
}

void srv_script_run(srv_conn *c, srv_lua *engine, int ref, const char *name,
                    unsigned flags, unsigned *learned, int function, int ro,
                    int nkeys, const srv_slice *keys, int nargs,
                    const srv_slice *args)
{
    struct st_txn *t;

    if ((flags & SRV_LUA_FLAG_SHEBANG) || function) {
        if (!(flags & SRV_LUA_FLAG_NO_WRITES) && ro) {
            srv_reply_error(c, "ERR Can not execute a script with write flag "
                               "using *_ro command.");
            return;
        }
        if (flags & SRV_LUA_FLAG_NO_WRITES)
            ro = 1;
    }
    if (sc.cur) { /* a script calling EVAL: refused before, never here */
        srv_reply_error(c, "ERR This Redis command is not allowed from script");
        return;
    }
    /*
     * A script that may write but has not written yet runs first in the
     * read snapshot, where it takes no write lock: scripts that only read
     * then run on every worker at once, from the cache. At its first
     * write command the attempt stops (it changed nothing) and the script
     * runs again from the start in the write transaction; the script
     * remembers that it writes and starts there from then on.
     */
    if (!ro && learned && !(*learned & SRV_SCRIPT_LEARNED_WRITES)) {
        if (!(t = srv_txn_read_or_reply(c)))
            return;
        if (!run_in(c, engine, ref, name, function, 0, !st_txn_is_write(t),
                    learned, t, nkeys, keys, nargs, args))
            return;
    }
    t = ro ? srv_txn_read_or_reply(c) : srv_txn_write_or_reply(c);
    if (t)
        run_in(c, engine, ref, name, function, ro, 0, learned, t, nkeys, keys,
               nargs, args);
}

/* ---- EVAL and EVALSHA ---- */

unsigned srv_script_declared_flags(unsigned f, unsigned sflags)
{
    f &= ~(F_WRITE | F_MAY_REPLICATE | F_DENYOOM | F_STALE);
    if (!(sflags & (SRV_LUA_FLAG_ALLOW_OOM | SRV_LUA_FLAG_NO_WRITES)))
        f |= F_DENYOOM;
    if (!(sflags & SRV_LUA_FLAG_NO_WRITES))
        f |= F_WRITE;
    if (sflags & SRV_LUA_FLAG_ALLOW_STALE)
        f |= F_STALE;
    return f;
}

static void lower_sha(char *dst, const srv_slice *a);

unsigned srv_script_eval_flags(const srv_conn *c)
{
    const srv_command *cmd = c->cmd;
    const char *n = cmd->name;
    char sha[SRV_SHA1_HEX_LEN + 1], err[ERR_MAX];
    unsigned sflags;
    size_t skip;
    int by_sha;
    script *s;

    if (c->argc < 2)
        return cmd->flags;
    by_sha = strcmp(n, "evalsha") == 0 || strcmp(n, "evalsha_ro") == 0;
    if (!by_sha && strcmp(n, "eval") != 0 && strcmp(n, "eval_ro") != 0)
        return cmd->flags;
    if (by_sha && c->argv[1].len != SRV_SHA1_HEX_LEN)
        return cmd->flags;
    if (by_sha)
        lower_sha(sha, &c->argv[1]);
    else
        srv_sha1_hex(c->argv[1].ptr, c->argv[1].len, sha);
    sync_generation();
    if ((s = find_script(sha))) {
        sflags = s->flags;
    } else {
        /* Not compiled here (yet): its body, from the cache every worker
         * shares for EVALSHA, the argument for EVAL. */
        const char *body = c->argv[1].ptr;
        size_t len = c->argv[1].len;
        if (by_sha) {
            int rc = 0;
            struct st_txn *t = srv_group_read_txn(&c->worker->group, &rc);
            const uint8_t *b;
            if (!t || st_script_get(t, sha, &b, &len))
                return cmd->flags; /* NOSCRIPT, answered by EVALSHA */
            body = (const char *)b;
        }
        if (srv_lua_shebang(body, len, &sflags, &skip, err, sizeof err))
            return cmd->flags; /* a bad shebang: EVAL answers it */
    }
    return (sflags & SRV_LUA_FLAG_SHEBANG)
               ? srv_script_declared_flags(cmd->flags, sflags)
               : cmd->flags;
}

static void lower_sha(char *dst, const srv_slice *a)
{
    for (size_t i = 0; i < SRV_SHA1_HEX_LEN; i++)
        dst[i] = (char)tolower((unsigned char)a->ptr[i]);
    dst[SRV_SHA1_HEX_LEN] = '\0';
}

void srv_script_eval(srv_conn *c, int by_sha, int ro)
{
    char sha[SRV_SHA1_HEX_LEN + 1];
    long long nkeys;
    script *s;
    int rc;

    /* EVAL checks numkeys first; EVALSHA finds its script first (Redis
     * answers NOSCRIPT whatever numkeys says). */
    if (!by_sha && srv_script_numkeys_or_reply(c, 0, &nkeys))
        return;
    if (by_sha) {
        if (c->argv[1].len != SRV_SHA1_HEX_LEN) {
            srv_reply_error(c, MSG_NOSCRIPT);
            return;
        }
        lower_sha(sha, &c->argv[1]);
    } else {
        srv_sha1_hex(c->argv[1].ptr, c->argv[1].len, sha);
    }
    sync_generation();
    if (!(s = find_script(sha))) {
        if (by_sha) {
            struct st_txn *t = srv_txn_read_or_reply(c);
            const uint8_t *body;
            size_t len;
            if (!t)
                return;
            rc = st_script_get(t, sha, &body, &len);
            if (rc == ST_ENOTFOUND) {
                srv_reply_error(c, MSG_NOSCRIPT);
                return;
            }
            if (rc) {
                srv_txn_error(c, rc);
                return;
            }
            if (!(s = add_script(c, sha, (const char *)body, len)))
                return;
            s->in_lmdb = 1;
        } else if (!(s = add_script(c, sha, c->argv[1].ptr, c->argv[1].len))) {
            return;
        }
    }
    if (by_sha && srv_script_numkeys_or_reply(c, 0, &nkeys))
        return;
    if (!by_sha && !s->in_lmdb) {
        /* Keep the body where every worker finds it, in the transaction
         * the script runs in (a read-only run that finds it missing takes
         * the write transaction for it). */
        int read_only = ro || (s->flags & SRV_LUA_FLAG_NO_WRITES);
        struct st_txn *t = read_only ? srv_txn_read_or_reply(c)
                                     : srv_txn_write_or_reply(c);
        if (!t)
            return;
        if (!st_txn_is_write(t)) {
            const uint8_t *b;
            size_t n;
            if ((rc = st_script_get(t, sha, &b, &n)) == 0)
                s->in_lmdb = 1;
            else if (rc != ST_ENOTFOUND) {
                srv_txn_error(c, rc);
                return;
            } else if (!(t = srv_txn_write_or_reply(c))) {
                return;
            }
        }
        if (st_txn_is_write(t) &&
            (rc = store_body(c, t, s, sha, c->argv[1].ptr, c->argv[1].len))) {
            srv_txn_error(c, rc);
            return;
        }
    }
    srv_script_run(c, sc.eval, s->ref, sha, s->flags, &s->learned, 0, ro,
                   (int)nkeys, c->argv + 3, c->argc - 3 - (int)nkeys,
                   c->argv + 3 + nkeys);
}

/* ---- SCRIPT ---- */

void srv_script_load(srv_conn *c)
{
    char sha[SRV_SHA1_HEX_LEN + 1];
    const srv_slice *body = &c->argv[2];
    struct st_txn *t;
    script *s;
    int rc;

    srv_sha1_hex(body->ptr, body->len, sha);
    sync_generation();
    if (!(s = find_script(sha)) &&
        !(s = add_script(c, sha, body->ptr, body->len)))
        return;
    if (!s->in_lmdb) {
        if (!(t = srv_txn_write_or_reply(c)))
            return;
        if ((rc = store_body(c, t, s, sha, body->ptr, body->len))) {
            srv_txn_error(c, rc);
            return;
        }
    }
    srv_reply_bulk(c, sha, SRV_SHA1_HEX_LEN);
}

void srv_script_exists(srv_conn *c)
{
    struct st_txn *t = srv_txn_read_or_reply(c);

    if (!t)
        return;
    sync_generation();
    srv_reply_array(c, c->argc - 2);
    for (int i = 2; i < c->argc; i++) {
        char sha[SRV_SHA1_HEX_LEN + 1];
        const uint8_t *b;
        size_t n;
        int found = 0;
        if (c->argv[i].len == SRV_SHA1_HEX_LEN) {
            lower_sha(sha, &c->argv[i]);
            found = find_script(sha) != NULL ||
                    st_script_get(t, sha, &b, &n) == 0;
        }
        srv_reply_int(c, found);
    }
}

void srv_script_flush(srv_conn *c)
{
    struct st_txn *t;
    conn_state *s;
    int rc;

    if (c->argc > 3 ||
        (c->argc == 3 &&
         !srv_util_streq(c->argv[2].ptr, c->argv[2].len, "async") &&
         !srv_util_streq(c->argv[2].ptr, c->argv[2].len, "sync"))) {
        srv_reply_error(c, "ERR SCRIPT FLUSH only support SYNC|ASYNC option");
        return;
    }
    if (!(s = state_of(c))) {
        srv_reply_error(c, "ERR out of memory");
        return;
    }
    if (!(t = srv_txn_write_or_reply(c)))
        return;
    if ((rc = st_script_flush(t))) {
        srv_txn_error(c, rc);
        return;
    }
    srv_dict_clear(&sc.scripts, free_entry);
    s->flush_pending = 1;
    srv_group_commit_after(&c->worker->group);
    srv_reply_ok(c);
}

void srv_script_kill(srv_conn *c, int function)
{
    srv_scriptshm_run r;

    if (!in_slot() ||
        !srv_scriptshm_find(srv_her.scripts, c->worker->index, &r)) {
        srv_reply_error(c, "NOTBUSY No scripts in execution right now.");
        return;
    }
    if (!!(r.flags & SRV_SCRIPTSHM_FUNCTION) != function) {
        srv_reply_error(c, function ? SRV_SCRIPTGATE_BUSY_EVAL
                                    : SRV_SCRIPTGATE_BUSY_FUNCTION);
        return;
    }
    /* Beyond Redis: a script that wrote can be killed too, since its
     * transaction is aborted (UNKILLABLE never happens). */
    if (!srv_scriptshm_kill(srv_her.scripts, &r)) {
        srv_reply_error(c, "NOTBUSY No scripts in execution right now.");
        return;
    }
    srv_reply_ok(c);
}

void srv_script_stop_all(void)
{
    if (srv_her.scripts)
        srv_scriptshm_kill_all(srv_her.scripts);
}

int srv_script_running(char *name, size_t size, long long *ms, int *function)
{
    srv_scriptshm_run r;

    if (sc.cur) { /* this worker's own (FUNCTION STATS from a script) */
        snprintf(name, size, "%s", sc.cur->name);
        *ms = srv_util_monotonic_ms() - sc.cur->started;
        *function = sc.cur->function;
        return 1;
    }
    if (!in_slot() || !srv_scriptshm_find(srv_her.scripts, -1, &r))
        return 0;
    snprintf(name, size, "%s", r.name);
    *ms = srv_util_monotonic_ms() - r.started_ms;
    *function = !!(r.flags & SRV_SCRIPTSHM_FUNCTION);
    return 1;
}

/* ---- BUSY across workers ---- */

/* ---- PUBLISH's count: every worker's receivers ---- */

/* How long a script's PUBLISH waits for every worker's count before it
 * takes this worker's (logged). A worker answers within its loop turn,
 * or every ANSWER_EVERY_MS of a long script of its own. */
#define COUNT_WAIT_MS 1000
/* A receivers question: the kind (one byte), then the channel. */
#define RECEIVERS_HEAD 1

static int receivers_part(const char *q, size_t qlen, srv_buf *part)
{
    long long n = 0;

    if (qlen >= RECEIVERS_HEAD && (unsigned char)q[0] < SRV_PS_KINDS)
        n = srv_pubsub_receivers_here((unsigned char)q[0], q + RECEIVERS_HEAD,
                                      qlen - RECEIVERS_HEAD);
    return srv_ask_put_count(part, (uint64_t)n);
}

static int count_receivers(int kind, const char *ch, size_t chlen, long long *n)
{
    static srv_buf q, ans;
    unsigned char k = (unsigned char)kind;
    int rc;

    q.len = 0;
    if (srv_buf_append(&q, &k, RECEIVERS_HEAD) || srv_buf_append(&q, ch, chlen))
        return -1;
    rc = srv_ask_wait(SRV_BP_Q_RECEIVERS, q.data, q.len, COUNT_WAIT_MS, &ans);
    srv_buf_trim(&q, SCRATCH_KEEP);
    if (rc) {
        srv_log(SRV_LOG_WARNING, 0,
                "PUBLISH in a script: no count from every worker within %d "
                "ms, this worker's given",
                COUNT_WAIT_MS);
        return -1;
    }
    *n = (long long)srv_ask_count(ans.data, ans.len);
    return 0;
}

/* ---- the service ---- */

/*
 * The service's solo: c's command is a script or function whose last
 * run here was long (SRV_SCRIPT_LONG_MS). Looked up as the command will
 * find it; one it does not know yet is not (its first run teaches).
 */
static int script_solo(srv_conn *c)
{
    const char *n = c->cmd->name;
    char sha[SRV_SHA1_HEX_LEN + 1];
    script *s;

    if ((sc.nlong == 0 && sc.long_fns.count == 0) || c->argc < 2 ||
        (n[0] != 'e' && n[0] != 'f'))
        return 0; /* (no long one: the common case, at no cost) */
    if (!strcmp(n, "fcall") || !strcmp(n, "fcall_ro"))
        return srv_dict_find(&sc.long_fns, c->argv[1].ptr, c->argv[1].len,
                             srv_dict_hash(c->argv[1].ptr, c->argv[1].len)) !=
               NULL;
    if (!strcmp(n, "evalsha") || !strcmp(n, "evalsha_ro")) {
        if (c->argv[1].len != SRV_SHA1_HEX_LEN)
            return 0;
        lower_sha(sha, &c->argv[1]);
    } else if (!strcmp(n, "eval") || !strcmp(n, "eval_ro")) {
        srv_sha1_hex(c->argv[1].ptr, c->argv[1].len, sha);
    } else {
        return 0;
    }
    sync_generation();
    return (s = find_script(sha)) && (s->learned & SRV_SCRIPT_LEARNED_LONG);
}

static void service_start(srv_worker *w)
{
    srv_ask_register_anytime(SRV_BP_Q_RECEIVERS, receivers_part);
    srv_pubsub_set_counter(count_receivers);
    if (srv_her.scripts && srv_scriptshm_check(srv_her.scripts) == 0 &&
        w->index < (int)srv_her.scripts->nslots)
        srv_scriptshm_reset_slot(srv_her.scripts, w->index);
    else
        srv_her.scripts = NULL; /* no region: worker-local only */
}

const srv_service srv_script_service = {
    .name = "script",
    .start = service_start,
    .solo = script_solo,
};

/* ---- the master ---- */

int srv_script_master_init(struct st_env *env, unsigned nslots)
{
    struct st_txn *t;
    uint64_t n = 0;
    int rc = st_txn_begin(env, 0, &t);

    /* Look first: a boot with nothing cached writes (and syncs) nothing. */
    if (rc)
        return rc;
    rc = st_script_count(t, &n);
    st_txn_commit(&t);
    if (rc)
        return rc;
    if (n > 0) {
        if ((rc = st_txn_begin(env, 1, &t)))
            return rc;
        if ((rc = st_script_flush(t))) {
            st_txn_abort(&t);
            return rc;
        }
        if ((rc = st_txn_commit(&t)))
            return rc;
    }
    if (!(srv_her.scripts = srv_scriptshm_create(nslots)))
        return errno;
    return 0;
}
