/*
 * srv_script.h - scripting as a session feature: the script cache (shared
 * by every worker through LMDB, compiled per worker), running a script or
 * function against a connection in one storage transaction (the group's
 * write transaction, or its read snapshot for read-only scripts), the
 * inner commands of redis.call through the dispatcher, SCRIPT KILL /
 * FUNCTION KILL from any worker (the run's transaction is aborted, so a
 * killed script leaves nothing), and BUSY for writers on other workers
 * past busy-reply-threshold.
 *
 * Everything runs on the connection's worker thread. The handlers are in
 * srv_cmd_script.c; the function libraries in srv_script_fn.c.
 */
#ifndef SRV_SCRIPT_H
#define SRV_SCRIPT_H

#include "server/srv_conn.h"

struct srv_lua;
struct st_env;

/* EVAL, EVALSHA (by_sha), and their _RO forms (ro). */
void srv_script_eval(srv_conn *c, int by_sha, int ro);

/* SCRIPT LOAD / EXISTS / FLUSH / KILL. */
void srv_script_load(srv_conn *c);
void srv_script_exists(srv_conn *c);
void srv_script_flush(srv_conn *c);
/* SCRIPT KILL (function 0) or FUNCTION KILL (function 1). */
void srv_script_kill(srv_conn *c, int function);

/* FCALL / FCALL_RO (ro) and the FUNCTION subcommands (srv_script_fn.c). */
void srv_script_fcall(srv_conn *c, int ro);
void srv_script_function_load(srv_conn *c);
void srv_script_function_delete(srv_conn *c);
void srv_script_function_flush(srv_conn *c);
void srv_script_function_list(srv_conn *c);
void srv_script_function_stats(srv_conn *c);
void srv_script_function_dump(srv_conn *c);
void srv_script_function_restore(srv_conn *c);

/* What a script's runs taught: it has run a write command; its last run
 * took SRV_SCRIPT_LONG_MS or more. */
#define SRV_SCRIPT_LEARNED_WRITES 0x1u
#define SRV_SCRIPT_LEARNED_LONG 0x2u
/*
 * A script that ran this long (or more) last time runs after what the
 * group finished before it is committed and its replies written: it
 * would hold them that long. A shorter one shares the group's commit (a
 * commit of its own would cost more than the wait saves).
 */
#define SRV_SCRIPT_LONG_MS 1

/*
 * Run a compiled function of `engine` for c: `flags` are its
 * SRV_LUA_FLAG_*, `function` says FCALL (else EVAL), `ro` the _RO form;
 * `learned` (the script's, kept by the caller; may be NULL) lets a script
 * that never wrote run read-first (see srv_script.c). Checks the flags
 * against the form, opens the transaction, replies.
 */
void srv_script_run(srv_conn *c, struct srv_lua *engine, int ref,
                    const char *name, unsigned flags, unsigned *learned,
                    int function, int ro, int nkeys, const srv_slice *keys,
                    int nargs, const srv_slice *args);

/* The worker service: at start, claim the worker's record in the
 * scripting region (a dead predecessor may have left a run in it). */
extern const struct srv_service srv_script_service;

/* SHUTDOWN: ask every running script to stop. */
void srv_script_stop_all(void);

/* The name and age of a script running on any worker, for FUNCTION
 * STATS: 1 and *name / *ms, or 0. */
int srv_script_running(char *name, size_t size, long long *ms, int *function);

/*
 * The master at boot, before forking: empty the script cache (volatile,
 * as Redis's) in env and create the scripting region with a slot for
 * each of `nslots` workers (workers-max: the pool may grow to it while
 * running). 0, or an error code (errno or storage).
 */
int srv_script_master_init(struct st_env *env, unsigned nslots);

/*
 * c's command flags as this call of it has them: a scripting command
 * (EVAL, EVALSHA, FCALL and their _RO forms) whose script or function
 * declares flags (a shebang line; a function always) writes unless it
 * says no-writes, and may replicate no more than that (Redis's rule);
 * one that declares none, or that this worker does not know (yet), has
 * its row's flags. Other commands: their row's flags. CLIENT PAUSE WRITE
 * asks. (srv_script_fn.c; the EVAL forms' part is srv_script_eval_flags.)
 */
unsigned srv_script_call_flags(const srv_conn *c);
unsigned srv_script_eval_flags(const srv_conn *c);

/* Command flags `f` of a script that declared SRV_LUA_FLAG_* `sflags`. */
unsigned srv_script_declared_flags(unsigned f, unsigned sflags);

/* Parse numkeys at argv[2] against argc - 3 arguments: 0 and *n, or -1
 * after replying Redis's error (`fcall` picks FCALL's texts). */
int srv_script_numkeys_or_reply(srv_conn *c, int fcall, long long *n);

#endif
