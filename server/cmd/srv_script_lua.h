/*
 * srv_script_lua.h - the Lua engine of scripting: a Lua 5.1 state with
 * Redis 7.0's sandbox (the libraries string, table, math, base without
 * its file and environment functions, cjson, bit, struct, cmsgpack; the
 * globals and every library table read-only), the redis library
 * (call, pcall, error_reply, status_reply, sha1hex, log, setresp,
 * set_repl, replicate_commands, register_function, ...), compiling and
 * running scripts and functions with Redis's error texts, a memory cap
 * per run and a count hook that lets the caller stop a script.
 *
 * One engine per worker and kind (EVAL scripts, function libraries), on
 * the worker's thread only. The engine knows nothing of connections'
 * commands: redis.call goes to the host the caller hands to each run.
 */
#ifndef SRV_SCRIPT_LUA_H
#define SRV_SCRIPT_LUA_H

#include <stddef.h>

#include "server/srv_conn.h"

typedef struct srv_lua srv_lua;

enum srv_lua_kind { SRV_LUA_EVAL, SRV_LUA_FUNCTIONS };

/* Instructions between two calls of the host's interrupt. */
#define SRV_LUA_HOOK_EVERY 100000

/* redis.log levels (Redis's LL_*). */
enum {
    SRV_LUA_LOG_DEBUG,
    SRV_LUA_LOG_VERBOSE,
    SRV_LUA_LOG_NOTICE,
    SRV_LUA_LOG_WARNING
};

/* What the engine asks of its caller during a run. */
typedef struct srv_lua_host {
    /*
     * redis.call / redis.pcall of argv[0..argc): NULL with *reply and *len
     * the command's whole RESP reply in protocol `resp` (valid until the
     * next call), or an error text ("ERR ...", no '-') for a command the
     * script may not run. `abort`, when set, means the script must end
     * now with that reply's error (its transaction is lost).
     */
    const char *(*call)(void *ctx, int argc, const srv_slice *argv, int resp,
                        const char **reply, size_t *len, int *abort);
    /* Every SRV_LUA_HOOK_EVERY instructions: NULL to go on, or the error
     * text ("ERR ...") that ends the script (SCRIPT KILL). */
    const char *(*interrupt)(void *ctx);
    /* redis.log */
    void (*log)(void *ctx, int level, const char *msg, size_t len);
} srv_lua_host;

/* A function a library registers (FUNCTION LOAD). */
#define SRV_LUA_FLAG_NO_WRITES 0x01u
#define SRV_LUA_FLAG_ALLOW_OOM 0x02u
#define SRV_LUA_FLAG_ALLOW_STALE 0x04u
#define SRV_LUA_FLAG_NO_CLUSTER 0x08u
#define SRV_LUA_FLAG_ALLOW_CROSS_SLOT 0x10u
/* (a script with a shebang line: Redis's flags apply, not the
 * compatibility defaults) */
#define SRV_LUA_FLAG_SHEBANG 0x100u

typedef struct srv_lua_fn {
    char *name;
    char *desc; /* or NULL */
    unsigned flags;
    int ref; /* the callback, in the engine's registry */
} srv_lua_fn;

/* Called per registered function during srv_lua_load_library; non-zero
 * refuses it (with the error text in err). */
typedef int srv_lua_register_fn(void *ctx, const srv_lua_fn *fn, char *err,
                                size_t errlen);

/* A new engine of `kind`; NULL when out of memory. */
srv_lua *srv_lua_create(enum srv_lua_kind kind);
void srv_lua_destroy(srv_lua **l);

/* Bytes the engine's Lua state holds now. */
size_t srv_lua_memory(const srv_lua *l);

/*
 * Parse the flags of a script's shebang line ("#!lua flags=no-writes,
 * allow-oom"): *flags gets SRV_LUA_FLAG_* (SHEBANG included) and *skip
 * the length of the line, or 0 and 0 for a body without one. -1 with err
 * filled (Redis's text) for a bad shebang.
 */
int srv_lua_shebang(const char *body, size_t len, unsigned *flags, size_t *skip,
                    char *err, size_t errlen);

/* A flag's name ("no-writes") from its bit, for FUNCTION LIST. */
const char *srv_lua_flag_name(unsigned bit);

/*
 * Compile a script body as the chunk "@user_script" (EVAL): 0 and *ref,
 * its function in the registry; -1 with "ERR Error compiling script (new
 * function): ..." in err.
 */
int srv_lua_compile(srv_lua *l, const char *body, size_t len, int *ref,
                    char *err, size_t errlen);

/* Forget a compiled function or registered callback. */
void srv_lua_unref(srv_lua *l, int ref);

/*
 * Run a library's code (FUNCTION LOAD, a FUNCTIONS engine) with
 * redis.register_function calling `reg` for each function. 0, or -1 with
 * Redis's error text in err (the functions registered so far stay
 * referenced: the caller unrefs them).
 */
int srv_lua_load_library(srv_lua *l, const char *code, size_t len,
                         srv_lua_register_fn *reg, void *ctx, char *err,
                         size_t errlen);

/*
 * Run the function `ref` (an EVAL script: with KEYS and ARGV as globals;
 * a function: called with the KEYS and ARGV tables) and reply its result
 * or error to c in c's protocol. `name` is what errors cite ("script:
 * <name>"): the SHA1 or the function's name. `mem_limit` bounds the bytes
 * the state may grow to during the run (0: no bound). The host answers
 * redis.call. Returns 0, or 1 when the run ended by the host's abort or
 * interrupt (the caller's transaction must not keep its writes).
 */
int srv_lua_run(srv_lua *l, int ref, const char *name, int nkeys,
                const srv_slice *keys, int nargs, const srv_slice *args,
                size_t mem_limit, const srv_lua_host *host, void *ctx,
                srv_conn *c);

#endif
