/*
 * srv_script_lua.c - the Lua engine (see the header): the state and its
 * sandbox, the redis library, compiling, running, error texts.
 *
 * Read-only tables without a patched Lua: every protected table T (the
 * globals, each library) is reached only through an empty proxy whose
 * metatable sends reads to T (__index) and refuses writes (__newindex);
 * the state's globals are replaced by the globals' proxy, so chunks that
 * loadstring makes see the same protection. The base functions that would
 * see through a proxy (pairs, next, ipairs, rawget, rawset, setmetatable,
 * getmetatable, unpack, rawequal aside) are wrapped to act on T, or to
 * refuse, as Redis's read-only tables do.
 */
#include "server/cmd/srv_script_lua.h"
#include "server/cmd/srv_lua_pool.h"
#include "server/cmd/srv_script_conv.h"
#include "server/cmd/srv_script_libs.h"
#include "server/cmd/srv_sha1.h"
#include "server/srv_heritage.h"
#include "server/srv_reply.h"
#include "server/srv_util.h"

#include <lauxlib.h>
#include <lua-bitop.h>
#include <lua-cjson.h>
#include <lua.h>
#include <lualib.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ERR_MAX 1024
#define ARGV_STATIC 16
#define NUM_MAX 32
#define EXACT_INT_MAX 9007199254740992.0 /* 2^53 */
#define MSG_READONLY "Attempt to modify a readonly table"
#define MSG_NOGLOBAL "Script attempted to access nonexistent global variable"
#define MSG_BADARGS "ERR wrong number or type of arguments"
#define MSG_ARGTYPE \
    "ERR Lua redis lib command arguments must be strings or integers"
#define CHUNK_SCRIPT "@user_script"
#define CHUNK_FUNCTION "@user_function"
/* Registry keys. */
#define REG_PROXIES "larder.proxies" /* proxy -> real table (weak keys) */
#define REG_GLOBALS "larder.globals" /* the real globals table */
#define REG_ENGINE "larder.engine"
#define LUA_BYTECODE_MARK '\033'

struct srv_lua {
    lua_State *L;
    enum srv_lua_kind kind;
    srv_lua_pool pool; /* its small blocks, kept for the next run */
    size_t used;       /* bytes allocated */
    size_t limit;      /* refuse growth past this during a run (0: none) */
    int running;
    int resp;    /* redis.setresp of the running script */
    int stopped; /* interrupt or abort: raise again on every hook */
    char stop_msg[ERR_MAX];
    const char *name;
    const srv_lua_host *host;
    void *ctx;
    /* FUNCTION LOAD */
    int loading;
    srv_lua_register_fn *reg;
    void *reg_ctx;
    char reg_err[ERR_MAX];
    int reg_failed;
    srv_slice argv_static[ARGV_STATIC];
};

/* ---- memory ---- */

static void *lua_alloc(void *ud, void *ptr, size_t osize, size_t nsize)
{
    srv_lua *l = ud;

    if (nsize == 0) {
        srv_lua_pool_realloc(&l->pool, ptr, osize, 0);
        l->used -= osize;
        return NULL;
    }
    if (nsize > osize && l->running && l->limit &&
        l->used + (nsize - osize) > l->limit)
        return NULL; /* Lua raises "not enough memory" */
    void *p = srv_lua_pool_realloc(&l->pool, ptr, osize, nsize);
    if (p)
        l->used = l->used - osize + nsize;
    return p;
}

size_t srv_lua_memory(const srv_lua *l) { return l->used; }

static srv_lua *engine_of(lua_State *L)
{
    void *ud;

    lua_getallocf(L, &ud);
    return ud;
}

/* ---- read-only tables ---- */

/* Raise msg at the position of the Lua code `level` frames up. */
static int raise_at(lua_State *L, int level, const char *msg)
{
    luaL_where(L, level);
    lua_pushstring(L, msg);
    lua_concat(L, 2);
    return lua_error(L);
}

static int ro_newindex(lua_State *L) { return raise_at(L, 1, MSG_READONLY); }

/* The real table behind proxy value at idx, pushed; or idx's value. */
static void push_real(lua_State *L, int idx)
{
    if (idx < 0)
        idx = lua_gettop(L) + idx + 1;
    if (lua_type(L, idx) == LUA_TTABLE) {
        lua_getfield(L, LUA_REGISTRYINDEX, REG_PROXIES);
        lua_pushvalue(L, idx);
        lua_rawget(L, -2);
        lua_remove(L, -2);
        if (!lua_isnil(L, -1))
            return;
        lua_pop(L, 1);
    }
    lua_pushvalue(L, idx);
}

static int is_proxy(lua_State *L, int idx)
{
    int yes;

    if (lua_type(L, idx) != LUA_TTABLE)
        return 0;
    push_real(L, idx);
    yes = !lua_rawequal(L, -1, idx);
    lua_pop(L, 1);
    return yes;
}

/* Replace the table at the top by its read-only proxy. */
static void make_readonly(lua_State *L)
{
    int real = lua_gettop(L);

    lua_newtable(L); /* the proxy */
    lua_newtable(L); /* its metatable */
    lua_pushvalue(L, real);
    lua_setfield(L, -2, "__index");
    lua_pushcfunction(L, ro_newindex);
    lua_setfield(L, -2, "__newindex");
    lua_pushboolean(L, 0);
    lua_setfield(L, -2, "__metatable");
    lua_setmetatable(L, -2);
    lua_getfield(L, LUA_REGISTRYINDEX, REG_PROXIES);
    lua_pushvalue(L, -2);
    lua_pushvalue(L, real);
    lua_rawset(L, -3);
    lua_pop(L, 1);
    lua_replace(L, real);
}

/* next / pairs / ipairs / rawget / rawset / setmetatable / getmetatable /
 * unpack acting on the real table behind a proxy. */
static int sb_next(lua_State *L)
{
    luaL_checktype(L, 1, LUA_TTABLE);
    push_real(L, 1);
    lua_replace(L, 1);
    lua_settop(L, 2);
    if (lua_next(L, 1))
        return 2;
    lua_pushnil(L);
    return 1;
}

static int sb_pairs(lua_State *L)
{
    luaL_checktype(L, 1, LUA_TTABLE);
    lua_pushcfunction(L, sb_next);
    push_real(L, 1);
    lua_pushnil(L);
    return 3;
}

static int ipairs_step(lua_State *L)
{
    int i = (int)luaL_checkinteger(L, 2) + 1;

    lua_pushinteger(L, i);
    lua_rawgeti(L, 1, i);
    return lua_isnil(L, -1) ? 0 : 2;
}

static int sb_ipairs(lua_State *L)
{
    luaL_checktype(L, 1, LUA_TTABLE);
    lua_pushcfunction(L, ipairs_step);
    push_real(L, 1);
    lua_pushinteger(L, 0);
    return 3;
}

static int sb_rawget(lua_State *L)
{
    luaL_checktype(L, 1, LUA_TTABLE);
    luaL_checkany(L, 2);
    push_real(L, 1);
    lua_pushvalue(L, 2);
    lua_rawget(L, -2);
    return 1;
}

static int sb_rawset(lua_State *L)
{
    luaL_checktype(L, 1, LUA_TTABLE);
    luaL_checkany(L, 2);
    luaL_checkany(L, 3);
    if (is_proxy(L, 1)) {
        lua_pushstring(L, MSG_READONLY);
        return lua_error(L);
    }
    lua_settop(L, 3);
    lua_rawset(L, 1);
    return 1;
}

static int sb_setmetatable(lua_State *L)
{
    int t = lua_type(L, 2);

    luaL_checktype(L, 1, LUA_TTABLE);
    luaL_argcheck(L, t == LUA_TNIL || t == LUA_TTABLE, 2,
                  "nil or table expected");
    if (is_proxy(L, 1)) {
        lua_pushstring(L, MSG_READONLY);
        return lua_error(L);
    }
    if (luaL_getmetafield(L, 1, "__metatable"))
        luaL_error(L, "cannot change a protected metatable");
    lua_settop(L, 2);
    lua_setmetatable(L, 1);
    return 1;
}

static int sb_unpack(lua_State *L)
{
    int i, e, n;

    luaL_checktype(L, 1, LUA_TTABLE);
    push_real(L, 1);
    lua_replace(L, 1);
    i = (int)luaL_optinteger(L, 2, 1);
    e = lua_isnoneornil(L, 3) ? (int)lua_objlen(L, 1)
                              : (int)luaL_checkinteger(L, 3);
    if (i > e)
        return 0;
    n = e - i + 1;
    if (n <= 0 || !lua_checkstack(L, n))
        return luaL_error(L, "too many results to unpack");
    lua_rawgeti(L, 1, i);
    while (i++ < e)
        lua_rawgeti(L, 1, i);
    return n;
}

/* loadstring / load without precompiled chunks. */
static int sb_loadstring(lua_State *L)
{
    size_t n;
    const char *s = luaL_checklstring(L, 1, &n);
    const char *chunk = luaL_optstring(L, 2, s);

    if (n > 0 && s[0] == LUA_BYTECODE_MARK) {
        lua_pushnil(L);
        lua_pushstring(L, "binary chunks are not allowed");
        return 2;
    }
    if (luaL_loadbuffer(L, s, n, chunk) == 0)
        return 1;
    lua_pushnil(L);
    lua_insert(L, -2);
    return 2;
}

static int sb_load(lua_State *L)
{
    if (lua_type(L, 1) == LUA_TSTRING)
        return sb_loadstring(L);
    /* load(function): gather the pieces, then the same check */
    luaL_Buffer b;
    luaL_checktype(L, 1, LUA_TFUNCTION);
    luaL_buffinit(L, &b);
    for (;;) {
        lua_pushvalue(L, 1);
        lua_call(L, 0, 1);
        if (lua_isnil(L, -1) ||
            (lua_isstring(L, -1) && lua_objlen(L, -1) == 0)) {
            lua_pop(L, 1);
            break;
        }
        if (!lua_isstring(L, -1))
            return luaL_error(L, "reader function must return a string");
        luaL_addvalue(&b);
    }
    luaL_pushresult(&b);
    lua_replace(L, 1);
    return sb_loadstring(L);
}

/* The globals' __index: a read of an absent global is an error. */
static int no_global(lua_State *L)
{
    char msg[ERR_MAX];
    const char *name = lua_tostring(L, 2);

    snprintf(msg, sizeof msg, "%s '%s'", MSG_NOGLOBAL, name ? name : "?");
    return raise_at(L, 1, msg);
}

/* The debug library's __redis__err__handler stands for Redis's. */
static int err_handler_global(lua_State *L) { return lua_gettop(L); }

/* ---- the redis library ---- */

/* Raise a plain error from the redis library, as Redis does: no position
 * (the reply then says "ERR <msg> script: ..."). */
static int raise_plain(lua_State *L, const char *msg)
{
    lua_pushstring(L, msg);
    return lua_error(L);
}

/* Raise a Redis error as redis.call does: the text as it is. */
static int raise_redis(lua_State *L, const char *msg, size_t n)
{
    lua_pushlstring(L, msg, n);
    return lua_error(L);
}

/* Push {err=msg}, Redis's error table, msg given with or without '-'. */
static void push_error_table(lua_State *L, const char *msg, size_t n)
{
    if (n && msg[0] == '-') {
        msg++;
        n--;
    }
    lua_newtable(L);
    lua_pushstring(L, "err");
    lua_pushlstring(L, msg, n);
    lua_rawset(L, -3);
}

static void hook(lua_State *L, lua_Debug *ar);

static int redis_generic_call(lua_State *L, int raise)
{
    srv_lua *l = engine_of(L);
    int argc = lua_gettop(L);
    srv_slice *argv = l->argv_static;
    const char *reply, *err;
    size_t len;
    int abort = 0;

    if (argc == 0) {
        const char *m = "ERR Please specify at least one argument for this "
                        "redis lib call";
        if (raise)
            return raise_redis(L, m, strlen(m));
        push_error_table(L, m, strlen(m));
        return 1;
    }
    if (l->loading) /* a library's redis table has no call at load */
        return raise_at(L, 1,
                        raise ? MSG_NOGLOBAL " 'call'"
                              : MSG_NOGLOBAL " 'pcall'");
    if (!l->host || !l->host->call) {
        const char *m = "ERR redis.call is not allowed from this context";
        return raise_redis(L, m, strlen(m));
    }
    if (!lua_checkstack(L, argc + 2)) /* numbers' strings, the vector */
        return raise_plain(L, "ERR too many arguments for redis.call");
    if (argc > ARGV_STATIC)
        argv = lua_newuserdata(L, (size_t)argc * sizeof *argv);
    for (int i = 0; i < argc; i++) {
        int t = lua_type(L, i + 1);
        if (t != LUA_TSTRING && t != LUA_TNUMBER) {
            if (raise)
                return raise_redis(L, MSG_ARGTYPE, strlen(MSG_ARGTYPE));
            push_error_table(L, MSG_ARGTYPE, strlen(MSG_ARGTYPE));
            return 1;
        }
        if (t == LUA_TNUMBER) {
            /* as Redis: %.17g, not Lua's %.14g (kept on the stack); a
             * whole number below 2^53 prints the same as an integer */
            char num[NUM_MAX];
            lua_Number d = lua_tonumber(L, i + 1);
            if (d < EXACT_INT_MAX && d > -EXACT_INT_MAX &&
                d == (lua_Number)(long long)d && !(d == 0 && signbit(d)))
                lua_pushlstring(L, num,
                                (size_t)srv_util_ll2str(num, (long long)d));
            else {
                snprintf(num, sizeof num, "%.17g", d);
                lua_pushstring(L, num);
            }
            argv[i].ptr = (char *)lua_tolstring(L, -1, &argv[i].len);
        } else {
            argv[i].ptr = (char *)lua_tolstring(L, i + 1, &argv[i].len);
        }
    }
    err = l->host->call(l->ctx, argc, argv, l->resp, &reply, &len, &abort);
    if (err) {
        if (raise)
            return raise_redis(L, err, strlen(err));
        push_error_table(L, err, strlen(err));
        return 1;
    }
    if (abort) {
        /* The transaction is lost: the script ends with this error. */
        const char *e = len > 1 && reply[0] == '-' ? reply + 1 : reply;
        size_t n = len >= 2 && reply[0] == '-' ? len - 3 : len;
        l->stopped = 1;
        snprintf(l->stop_msg, sizeof l->stop_msg, "%.*s", (int)n, e);
        lua_sethook(L, hook, LUA_MASKCOUNT, 1); /* no pcall survives it */
        return raise_redis(L, l->stop_msg, strlen(l->stop_msg));
    }
    if (raise && len > 0 && reply[0] == '-') {
        /* the error without '-' and CRLF */
        return raise_redis(L, reply + 1, len >= 3 ? len - 3 : 0);
    }
    if (!srv_script_resp_to_lua(L, reply, len))
        return raise_plain(L, "ERR malformed reply from the command");
    return 1;
}

static int redis_call(lua_State *L) { return redis_generic_call(L, 1); }
static int redis_pcall(lua_State *L) { return redis_generic_call(L, 0); }

static int redis_sha1hex(lua_State *L)
{
    char hex[SRV_SHA1_HEX_LEN + 1];
    size_t n;
    const char *s;

    if (lua_gettop(L) != 1)
        return raise_plain(L, "wrong number of arguments");
    s = lua_tolstring(L, 1, &n);
    srv_sha1_hex(s ? s : "", s ? n : 0, hex);
    lua_pushstring(L, hex);
    return 1;
}

static int redis_error_reply(lua_State *L)
{
    size_t n;
    const char *s;

    if (lua_gettop(L) != 1 || lua_type(L, 1) != LUA_TSTRING) {
        push_error_table(L, MSG_BADARGS, strlen(MSG_BADARGS));
        return 1;
    }
    s = lua_tolstring(L, 1, &n);
    if (n && s[0] == '-') {
        s++;
        n--;
    }
    if (!memchr(s, ' ', n)) {
        lua_pushstring(L, "ERR ");
        lua_pushlstring(L, s, n);
        lua_concat(L, 2);
        s = lua_tolstring(L, -1, &n);
    }
    push_error_table(L, s, n);
    return 1;
}

static int redis_status_reply(lua_State *L)
{
    size_t n;
    const char *s;

    if (lua_gettop(L) != 1 || lua_type(L, 1) != LUA_TSTRING) {
        push_error_table(L, MSG_BADARGS, strlen(MSG_BADARGS));
        return 1;
    }
    s = lua_tolstring(L, 1, &n);
    lua_newtable(L);
    lua_pushstring(L, "ok");
    lua_pushlstring(L, s, n);
    lua_rawset(L, -3);
    return 1;
}

static int redis_log(lua_State *L)
{
    srv_lua *l = engine_of(L);
    int argc = lua_gettop(L), level;
    luaL_Buffer b;

    if (argc < 2)
        return raise_plain(L, "redis.log() requires two arguments or more.");
    if (!lua_isnumber(L, 1))
        return raise_plain(L, "First argument must be a number (log level).");
    level = (int)lua_tonumber(L, 1);
    if (level < SRV_LUA_LOG_DEBUG || level > SRV_LUA_LOG_WARNING)
        return raise_plain(L, "Invalid debug level.");
    luaL_buffinit(L, &b);
    for (int i = 2; i <= argc; i++) {
        size_t n;
        const char *s = lua_tolstring(L, i, &n);
        if (!s)
            continue;
        if (i > 2)
            luaL_addchar(&b, ' ');
        luaL_addlstring(&b, s, n);
    }
    luaL_pushresult(&b);
    if (l->host && l->host->log) {
        size_t n;
        const char *s = lua_tolstring(L, -1, &n);
        l->host->log(l->ctx, level, s, n);
    }
    return 0;
}

static int redis_setresp(lua_State *L)
{
    srv_lua *l = engine_of(L);
    int v;

    if (lua_gettop(L) != 1)
        return raise_plain(L, "redis.setresp() requires one argument.");
    v = (int)lua_tonumber(L, 1);
    if (v != 2 && v != 3)
        return raise_plain(L, "RESP version must be 2 or 3.");
    l->resp = v;
    return 0;
}

static int redis_noop(lua_State *L) { return 0; }
static int redis_true(lua_State *L)
{
    lua_pushboolean(L, 1);
    return 1;
}

static int redis_set_repl(lua_State *L)
{
    if (lua_gettop(L) != 1)
        return raise_plain(L, "redis.set_repl() requires two arguments.");
    int flags = (int)lua_tonumber(L, 1);
    if (flags & ~3) /* REPL_AOF | REPL_SLAVE */
        return raise_plain(L, "Invalid replication flags. Use REPL_AOF, "
                              "REPL_REPLICA, REPL_ALL or REPL_NONE.");
    return 0;
}

static int redis_acl_check_cmd(lua_State *L)
{
    srv_lua *l = engine_of(L);

    if (lua_gettop(L) < 1)
        return raise_plain(L, "ERR Please specify at least one argument for "
                              "this redis lib call");
    (void)l;
    lua_pushboolean(L, 1); /* no ACL users yet: the default user may */
    return 1;
}

/* ---- redis.register_function (FUNCTION LOAD only) ---- */

static const struct {
    const char *name;
    unsigned bit;
} flag_names[] = {
    { "no-writes", SRV_LUA_FLAG_NO_WRITES },
    { "allow-oom", SRV_LUA_FLAG_ALLOW_OOM },
    { "allow-stale", SRV_LUA_FLAG_ALLOW_STALE },
    { "no-cluster", SRV_LUA_FLAG_NO_CLUSTER },
    { "allow-cross-slot-keys", SRV_LUA_FLAG_ALLOW_CROSS_SLOT },
};
#define NFLAGS (sizeof flag_names / sizeof flag_names[0])

const char *srv_lua_flag_name(unsigned bit)
{
    for (size_t i = 0; i < NFLAGS; i++)
        if (flag_names[i].bit == bit)
            return flag_names[i].name;
    return NULL;
}

static int flag_bit(const char *s, size_t n, unsigned *bit)
{
    for (size_t i = 0; i < NFLAGS; i++)
        if (strlen(flag_names[i].name) == n &&
            memcmp(flag_names[i].name, s, n) == 0) {
            *bit = flag_names[i].bit;
            return 0;
        }
    return -1;
}

/* A refused registration: "ERR <msg>", no position (Redis's). */
static int reg_fail(lua_State *L, const char *msg)
{
    lua_pushfstring(L, "ERR %s", msg);
    return lua_error(L);
}

static int redis_register_function(lua_State *L)
{
    srv_lua *l = engine_of(L);
    srv_lua_fn fn = { 0 };
    int argc = lua_gettop(L);

    if (!l->loading)
        return reg_fail(L, "redis.register_function can only be called on "
                           "FUNCTION LOAD command");
    if (argc == 2) {
        if (lua_type(L, 1) != LUA_TSTRING)
            return reg_fail(L, "first argument to redis.register_function "
                               "must be a string");
        if (lua_type(L, 2) != LUA_TFUNCTION)
            return reg_fail(L, "second argument to redis.register_function "
                               "must be a function");
        lua_pushvalue(L, 1);
        lua_pushvalue(L, 2);
    } else if (argc == 1) {
        if (lua_type(L, 1) != LUA_TTABLE)
            return reg_fail(L, "calling redis.register_function with a "
                               "single argument is only applicable to Lua "
                               "table (representing named arguments).");
        lua_pushnil(L); /* name */
        lua_pushnil(L); /* callback */
        lua_pushnil(L);
        while (lua_next(L, 1)) {
            const char *k = lua_type(L, -2) == LUA_TSTRING ? lua_tostring(L, -2)
                                                           : NULL;
            if (!k)
                return reg_fail(L, "named argument key given to "
                                   "redis.register_function is not a string");
            if (!strcmp(k, "function_name")) {
                if (lua_type(L, -1) != LUA_TSTRING)
                    return reg_fail(L, "function_name argument given to "
                                       "redis.register_function must be a "
                                       "string");
                lua_replace(L, 2);
            } else if (!strcmp(k, "callback")) {
                if (lua_type(L, -1) != LUA_TFUNCTION)
                    return reg_fail(L, "callback argument given to "
                                       "redis.register_function must be a "
                                       "function");
                lua_replace(L, 3);
            } else if (!strcmp(k, "description")) {
                if (lua_type(L, -1) != LUA_TSTRING)
                    return reg_fail(L, "description argument given to "
                                       "redis.register_function must be a "
                                       "string");
                fn.desc = (char *)lua_tostring(L, -1);
                lua_pop(L, 1);
            } else if (!strcmp(k, "flags")) {
                if (lua_type(L, -1) != LUA_TTABLE)
                    return reg_fail(L, "flags argument to "
                                       "redis.register_function must be a "
                                       "table representing function flags");
                for (int i = 1;; i++) {
                    size_t n;
                    unsigned bit;
                    lua_rawgeti(L, -1, i);
                    if (lua_isnil(L, -1)) {
                        lua_pop(L, 1);
                        break;
                    }
                    const char *f = lua_type(L, -1) == LUA_TSTRING
                                        ? lua_tolstring(L, -1, &n)
                                        : NULL;
                    if (!f || flag_bit(f, n, &bit))
                        return reg_fail(L, "unknown flag given");
                    fn.flags |= bit;
                    lua_pop(L, 1);
                }
                lua_pop(L, 1);
            } else {
                return reg_fail(L, "unknown argument given to "
                                   "redis.register_function");
            }
        }
        if (lua_isnil(L, 2))
            return reg_fail(L, "redis.register_function must get a "
                               "function name argument");
        if (lua_isnil(L, 3))
            return reg_fail(L, "redis.register_function must get a "
                               "callback argument");
        lua_pushvalue(L, 2);
        lua_pushvalue(L, 3);
    } else {
        return reg_fail(L, "wrong number of arguments to "
                           "redis.register_function");
    }
    /* name, callback at the top */
    fn.name = (char *)lua_tostring(L, -2);
    fn.ref = luaL_ref(L, LUA_REGISTRYINDEX);
    if (l->reg(l->reg_ctx, &fn, l->reg_err, sizeof l->reg_err)) {
        luaL_unref(L, LUA_REGISTRYINDEX, fn.ref);
        l->reg_failed = 1;
        return reg_fail(L, l->reg_err);
    }
    return 0;
}

/* ---- setting the state up ---- */

static void set_fn(lua_State *L, const char *name, lua_CFunction f)
{
    lua_pushcfunction(L, f);
    lua_setfield(L, -2, name);
}

static void set_int(lua_State *L, const char *name, lua_Number v)
{
    lua_pushnumber(L, v);
    lua_setfield(L, -2, name);
}

/* The redis table, on top of the real globals at index g. */
static void open_redis(lua_State *L, int g)
{
    int major = 0, minor = 0, patch = 0;

    lua_newtable(L);
    set_fn(L, "call", redis_call);
    set_fn(L, "pcall", redis_pcall);
    set_fn(L, "log", redis_log);
    set_fn(L, "sha1hex", redis_sha1hex);
    set_fn(L, "error_reply", redis_error_reply);
    set_fn(L, "status_reply", redis_status_reply);
    set_fn(L, "setresp", redis_setresp);
    set_fn(L, "set_repl", redis_set_repl);
    set_fn(L, "replicate_commands", redis_true);
    set_fn(L, "breakpoint", redis_noop);
    set_fn(L, "debug", redis_noop);
    set_fn(L, "acl_check_cmd", redis_acl_check_cmd);
    set_fn(L, "register_function", redis_register_function);
    set_int(L, "LOG_DEBUG", SRV_LUA_LOG_DEBUG);
    set_int(L, "LOG_VERBOSE", SRV_LUA_LOG_VERBOSE);
    set_int(L, "LOG_NOTICE", SRV_LUA_LOG_NOTICE);
    set_int(L, "LOG_WARNING", SRV_LUA_LOG_WARNING);
    set_int(L, "REPL_NONE", 0);
    set_int(L, "REPL_AOF", 1);
    set_int(L, "REPL_SLAVE", 2);
    set_int(L, "REPL_REPLICA", 2);
    set_int(L, "REPL_ALL", 3);
    lua_pushstring(L, SRV_REDIS_VERSION);
    lua_setfield(L, -2, "REDIS_VERSION");
    sscanf(SRV_REDIS_VERSION, "%d.%d.%d", &major, &minor, &patch);
    set_int(L, "REDIS_VERSION_NUM", (major << 16) | (minor << 8) | patch);
    make_readonly(L);
    lua_setfield(L, g, "redis");
}

/* Open library `open` and store it read-only in globals as `name`. */
static void open_lib(lua_State *L, int g, const char *name, lua_CFunction open)
{
    lua_pushcfunction(L, open);
    lua_pushstring(L, name);
    lua_call(L, 1, 1);
    make_readonly(L);
    lua_setfield(L, g, name);
}

static const char *const base_removed[] = {
    "dofile", "loadfile", "print",    "getfenv", "setfenv",
    "module", "require",  "newproxy", NULL,
};

static int setup(lua_State *L)
{
    srv_lua *l = engine_of(L);
    int g;

    lua_newtable(L);
    lua_setfield(L, LUA_REGISTRYINDEX, REG_PROXIES);
    lua_getfield(L, LUA_REGISTRYINDEX, REG_PROXIES);
    lua_newtable(L);
    lua_pushstring(L, "k");
    lua_setfield(L, -2, "__mode");
    lua_setmetatable(L, -2);
    lua_pop(L, 1);

    lua_pushcfunction(L, luaopen_base);
    lua_pushstring(L, "");
    lua_call(L, 1, 0);
    lua_pushvalue(L, LUA_GLOBALSINDEX);
    g = lua_gettop(L);
    lua_pushvalue(L, g);
    lua_setfield(L, LUA_REGISTRYINDEX, REG_GLOBALS);
    for (int i = 0; base_removed[i]; i++) {
        lua_pushnil(L);
        lua_setfield(L, g, base_removed[i]);
    }
    set_fn(L, "pairs", sb_pairs);
    set_fn(L, "next", sb_next);
    set_fn(L, "ipairs", sb_ipairs);
    set_fn(L, "rawget", sb_rawget);
    set_fn(L, "rawset", sb_rawset);
    set_fn(L, "setmetatable", sb_setmetatable);
    set_fn(L, "unpack", sb_unpack);
    set_fn(L, "loadstring", sb_loadstring);
    set_fn(L, "load", sb_load);
    set_fn(L, "__redis__err__handler", err_handler_global);
    /* coroutine came with the base library: protect it too */
    lua_getfield(L, g, "coroutine");
    make_readonly(L);
    lua_setfield(L, g, "coroutine");
    open_lib(L, g, LUA_TABLIBNAME, luaopen_table);
    open_lib(L, g, LUA_STRLIBNAME, luaopen_string);
    open_lib(L, g, LUA_MATHLIBNAME, luaopen_math);
    open_lib(L, g, "cjson", luaopen_cjson);
    open_lib(L, g, "bit", luaopen_bit);
    open_lib(L, g, "struct", srv_script_luaopen_struct);
    open_lib(L, g, "cmsgpack", srv_script_luaopen_cmsgpack);
    open_redis(L, g);

    /* The string metatable's __index is the string library: hand out a
     * read-only view of it. */
    lua_pushstring(L, "");
    lua_getmetatable(L, -1);
    lua_newtable(L);
    lua_getfield(L, g, LUA_STRLIBNAME);
    lua_setfield(L, -2, "__index");
    make_readonly(L);
    lua_setfield(L, -2, "__metatable");
    lua_pop(L, 2);

    /* Absent globals are errors; then the globals themselves read-only. */
    lua_newtable(L);
    lua_pushcfunction(L, no_global);
    lua_setfield(L, -2, "__index");
    lua_setmetatable(L, g);
    lua_pushvalue(L, g);
    make_readonly(L);
    lua_pushvalue(L, -1);
    lua_setfield(L, g, "_G"); /* _G is the read-only view */
    lua_replace(L, LUA_GLOBALSINDEX);
    lua_pushlightuserdata(L, l);
    lua_setfield(L, LUA_REGISTRYINDEX, REG_ENGINE);
    lua_settop(L, 0);
    return 0;
}

srv_lua *srv_lua_create(enum srv_lua_kind kind)
{
    srv_lua *l = calloc(1, sizeof *l);

    if (!l)
        return NULL;
    l->kind = kind;
    l->resp = 2;
    srv_lua_pool_init(&l->pool);
    if (!(l->L = lua_newstate(lua_alloc, l))) {
        free(l);
        return NULL;
    }
    if (lua_cpcall(l->L, setup, NULL)) {
        lua_close(l->L);
        srv_lua_pool_fini(&l->pool);
        free(l);
        return NULL;
    }
    return l;
}

void srv_lua_destroy(srv_lua **lp)
{
    srv_lua *l = *lp;

    if (!l)
        return;
    lua_close(l->L);
    srv_lua_pool_fini(&l->pool);
    free(l);
    *lp = NULL;
}

void srv_lua_unref(srv_lua *l, int ref)
{
    luaL_unref(l->L, LUA_REGISTRYINDEX, ref);
}

/* ---- shebang ---- */

int srv_lua_shebang(const char *body, size_t len, unsigned *flags, size_t *skip,
                    char *err, size_t errlen)
{
    const char *nl, *p, *end;

    *flags = 0;
    *skip = 0;
    if (len < 2 || body[0] != '#' || body[1] != '!')
        return 0;
    if (!(nl = memchr(body, '\n', len))) {
        snprintf(err, errlen, "ERR Invalid script shebang");
        return -1;
    }
    *skip = (size_t)(nl - body);
    *flags = SRV_LUA_FLAG_SHEBANG;
    p = body;
    end = nl;
    /* the first word: the engine */
    const char *w = p;
    while (p < end && *p != ' ' && *p != '\t')
        p++;
    if ((size_t)(p - w) != 5 || memcmp(w, "#!lua", 5) != 0) {
        snprintf(err, errlen, "ERR Unexpected engine in script shebang: %.*s",
                 (int)(p - w), w);
        return -1;
    }
    while (p < end) {
        while (p < end && (*p == ' ' || *p == '\t' || *p == '\r'))
            p++;
        if (p == end)
            break;
        w = p;
        while (p < end && *p != ' ' && *p != '\t' && *p != '\r')
            p++;
        if ((size_t)(p - w) < 6 || memcmp(w, "flags=", 6) != 0) {
            snprintf(err, errlen, "ERR Unknown lua shebang option: %.*s",
                     (int)(p - w), w);
            return -1;
        }
        for (const char *f = w + 6; f < p;) {
            const char *c = memchr(f, ',', (size_t)(p - f));
            size_t n = c ? (size_t)(c - f) : (size_t)(p - f);
            unsigned bit;
            if (n > 0 && flag_bit(f, n, &bit)) {
                snprintf(err, errlen,
                         "ERR Unexpected flag in script shebang: %.*s", (int)n,
                         f);
                return -1;
            }
            if (n > 0)
                *flags |= bit;
            f += n + (c ? 1 : 0);
        }
    }
    return 0;
}

/* ---- compiling ---- */

int srv_lua_compile(srv_lua *l, const char *body, size_t len, int *ref,
                    char *err, size_t errlen)
{
    lua_State *L = l->L;
    unsigned flags;
    size_t skip;

    if (srv_lua_shebang(body, len, &flags, &skip, err, errlen))
        return -1;
    if (luaL_loadbuffer(L, body + skip, len - skip, CHUNK_SCRIPT)) {
        snprintf(err, errlen, "ERR Error compiling script (new function): %s",
                 lua_tostring(L, -1));
        lua_pop(L, 1);
        return -1;
    }
    *ref = luaL_ref(L, LUA_REGISTRYINDEX);
    return 0;
}

/* ---- running ---- */

static void hook(lua_State *L, lua_Debug *ar)
{
    srv_lua *l = engine_of(L);
    const char *msg;

    if (l->stopped) {
        lua_pushstring(L, l->stop_msg);
        lua_error(L);
    }
    if (l->host && l->host->interrupt && (msg = l->host->interrupt(l->ctx))) {
        /* Raised again at every instruction from now on, so a pcall in
         * the script cannot swallow it. */
        l->stopped = 1;
        snprintf(l->stop_msg, sizeof l->stop_msg, "%s", msg);
        lua_sethook(L, hook, LUA_MASKCOUNT, 1);
        lua_pushstring(L, l->stop_msg);
        lua_error(L);
    }
}

/*
 * The error handler of a run: turn the error value into Redis's reply
 * text, "<error> script: <name>, on <source>:<line>.". A string raised by
 * redis.call is already an error reply; any other string gets "ERR ".
 */
static int on_error(lua_State *L)
{
    srv_lua *l = engine_of(L);
    lua_Debug ar;
    luaL_Buffer b;
    int by_call = 0, line = -1;
    char where[ERR_MAX] = "";

    if (lua_getstack(L, 1, &ar) && lua_getinfo(L, "f", &ar)) {
        lua_CFunction f = lua_tocfunction(L, -1);
        by_call = f == redis_call || f == redis_pcall;
        lua_pop(L, 1);
    }
    for (int level = 1; level <= 2; level++) {
        if (!lua_getstack(L, level, &ar) || !lua_getinfo(L, "Sl", &ar))
            break;
        if (ar.currentline >= 0 && strcmp(ar.what, "C") != 0) {
            line = ar.currentline;
            snprintf(where, sizeof where, "%s", ar.source);
            break;
        }
    }
    luaL_buffinit(L, &b);
    if (lua_type(L, 1) == LUA_TTABLE) {
        lua_pushstring(L, "err");
        lua_rawget(L, 1);
        if (lua_isstring(L, -1))
            luaL_addvalue(&b);
        else {
            lua_pop(L, 1);
            luaL_addstring(&b, "ERR unknown error");
        }
    } else {
        if (!by_call)
            luaL_addstring(&b, "ERR ");
        lua_pushvalue(L, 1);
        if (!lua_isstring(L, -1)) {
            lua_pop(L, 1);
            lua_pushstring(L, lua_isnil(L, 1) ? "nil" : luaL_typename(L, 1));
        }
        luaL_addvalue(&b);
    }
    luaL_addstring(&b, " script: ");
    luaL_addstring(&b, l->name ? l->name : "?");
    if (line >= 0) {
        char tail[ERR_MAX + 32];
        snprintf(tail, sizeof tail, ", on %s:%d.", where, line);
        luaL_addstring(&b, tail);
    } else {
        luaL_addstring(&b, ".");
    }
    luaL_pushresult(&b);
    return 1;
}

/* t = {items...} of slices, at the top. */
static void push_slices(lua_State *L, int n, const srv_slice *v)
{
    lua_createtable(L, n, 0);
    for (int i = 0; i < n; i++) {
        lua_pushlstring(L, v[i].ptr, v[i].len);
        lua_rawseti(L, -2, i + 1);
    }
}

typedef struct run_args {
    int ref, nkeys, nargs;
    const srv_slice *keys, *args;
    int nargs_call; /* arguments the function is called with */
} run_args;

/* In protected mode: set up the call (KEYS/ARGV or the arguments). */
static int prepare(lua_State *L)
{
    srv_lua *l = engine_of(L);
    run_args *a = lua_touserdata(L, 1);

    lua_settop(L, 0);
    lua_pushcfunction(L, on_error);
    lua_rawgeti(L, LUA_REGISTRYINDEX, a->ref);
    push_slices(L, a->nkeys, a->keys);
    push_slices(L, a->nargs, a->args);
    if (l->kind == SRV_LUA_EVAL) {
        lua_getfield(L, LUA_REGISTRYINDEX, REG_GLOBALS);
        lua_pushvalue(L, -3);
        lua_setfield(L, -2, "KEYS");
        lua_pushvalue(L, -2);
        lua_setfield(L, -2, "ARGV");
        lua_pop(L, 3);
        a->nargs_call = 0;
    } else {
        a->nargs_call = 2;
    }
    return lua_gettop(L);
}

int srv_lua_run(srv_lua *l, int ref, const char *name, int nkeys,
                const srv_slice *keys, int nargs, const srv_slice *args,
                size_t mem_limit, const srv_lua_host *host, void *ctx,
                srv_conn *c)
{
    lua_State *L = l->L;
    run_args a = { ref, nkeys, nargs, keys, args, 0 };
    int rc, stopped;

    l->host = host;
    l->ctx = ctx;
    l->name = name;
    l->resp = 2;
    l->stopped = 0;
    l->running = 1;
    l->limit = mem_limit ? l->used + mem_limit : 0;
    lua_settop(L, 0);
    /* Set up in protected mode (allocations may fail), then call. */
    lua_pushcfunction(L, prepare);
    lua_pushlightuserdata(L, &a);
    if (lua_pcall(L, 1, LUA_MULTRET, 0)) {
        lua_settop(L, 0);
        l->running = 0;
        srv_reply_error(c, "ERR not enough memory to run the script");
        return 0;
    }
    /* stack: on_error, function[, KEYS, ARGV] */
    lua_sethook(L, hook, LUA_MASKCOUNT, SRV_LUA_HOOK_EVERY);
    rc = lua_pcall(L, a.nargs_call, 1, 1);
    lua_sethook(L, NULL, 0, 0);
    stopped = l->stopped;
    l->running = 0;
    if (rc == 0) {
        srv_script_lua_reply(L, -1, c, l->resp);
    } else if (rc == LUA_ERRMEM) {
        srv_reply_errorf(c,
                         "ERR Lua script exceeded lua-memory-limit (%zu "
                         "bytes) script: %s",
                         mem_limit, name);
    } else {
        size_t n;
        const char *s = lua_tolstring(L, -1, &n);
        srv_reply_error(c, s ? s : "ERR unknown script error");
    }
    lua_settop(L, 0);
    if (l->kind == SRV_LUA_EVAL) {
        /* KEYS and ARGV go with the run */
        lua_getfield(L, LUA_REGISTRYINDEX, REG_GLOBALS);
        lua_pushnil(L);
        lua_setfield(L, -2, "KEYS");
        lua_pushnil(L);
        lua_setfield(L, -2, "ARGV");
        lua_pop(L, 1);
    }
    if (rc == LUA_ERRMEM)
        lua_gc(L, LUA_GCCOLLECT, 0);
    l->host = NULL;
    l->ctx = NULL;
    l->limit = 0;
    return stopped;
}

/* ---- FUNCTION LOAD ---- */

int srv_lua_load_library(srv_lua *l, const char *code, size_t len,
                         srv_lua_register_fn *reg, void *ctx, char *err,
                         size_t errlen)
{
    lua_State *L = l->L;
    int rc;
    size_t skip = 0;

    /* the metadata line is the caller's; keep its newline for lines */
    if (len >= 2 && code[0] == '#' && code[1] == '!') {
        const char *nl = memchr(code, '\n', len);
        skip = nl ? (size_t)(nl - code) : len;
    }
    lua_settop(L, 0);
    if (luaL_loadbuffer(L, code + skip, len - skip, CHUNK_FUNCTION)) {
        snprintf(err, errlen, "ERR Error compiling function: %s",
                 lua_tostring(L, -1));
        lua_settop(L, 0);
        return -1;
    }
    l->loading = 1;
    l->reg = reg;
    l->reg_ctx = ctx;
    l->reg_failed = 0;
    l->running = 1;
    l->stopped = 0;
    l->host = NULL;
    l->limit = 0;
    lua_sethook(L, hook, LUA_MASKCOUNT, SRV_LUA_HOOK_EVERY);
    rc = lua_pcall(L, 0, 0, 0);
    lua_sethook(L, NULL, 0, 0);
    l->loading = 0;
    l->running = 0;
    if (rc) {
        const char *s = lua_tostring(L, -1);
        if (!s)
            s = "?";
        snprintf(err, errlen, "ERR Error registering functions: %s%s",
                 strncmp(s, "ERR ", 4) == 0 ? "" : "ERR ", s);
        lua_settop(L, 0);
        return -1;
    }
    lua_settop(L, 0);
    return 0;
}
